"""The TUI in a browser (``agenttui serve``, ``server.py``): a front end like the terminal's, over
the same app, a process a tab."""

STORE_VARIABLE = "AGENTTUI_STORE"
"""Where ``agenttui open`` finds its store when none is given: ``serve`` names it there for each
tab's app, so that a password in the URL never reaches a command line."""
