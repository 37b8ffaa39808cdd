"""What a run is: its state in one word (``state``) and its status, derived from the journal and
the lease table alone (``status``); the status index that keeps runs' summaries in the user's
cache so a second look sums up only the runs that changed (``index``); many runs' statuses kept as
columns, for a list of 100,000 runs (``columns``), and read in the order a person needs them
(``scheduler``); where a run stands as its drawn flowchart's last node (``chart_end``); and
whether a run is a saved what-if fork, which nothing drives (``forks``).

Nothing is imported with the package: ``state`` alone must stay light (the runs list's first screen).
"""
