"""What a person does to a run, each write under the run's lease (``lease``): the journal writes
of approve, deny, answer, resolve a halt and cancel (``actions``); the operations a person
confirms, each describing what it will write and the CLI command that does the same
(``operations``); which of them fit a run and what the step they decide is (``choices``); what a
drive runs first, under the run's recorded policy (``drive_plan``); and recover, re-driving the
unfinished runs (``recover``)."""
