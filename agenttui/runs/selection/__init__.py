"""Many runs at once: the filter language that selects them (``where``: ``status=halted and
tool=refund_payment and idle<2h``, three-valued where a run's times are not known), and one
action on every run it selects or a person marked, previewed, then applied run by run under each
run's lease (``batch``)."""
