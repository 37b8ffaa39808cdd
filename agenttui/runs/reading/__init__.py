"""One run as a viewer reads it: a compact row per record, the records read back on demand and
the conversation as it stood at any record (``view``); finding text in it, names from the rows
and content read back page by page (``search``); and its tree of sub-runs, for flowchart frames
(``tree``)."""
