"""The command line: ``agenttui STORE`` opens the TUI; every view also runs non-interactively.

The frame (the group, exit codes, errors) is ``app``; the commands live by kind in ``launch``,
``views``, ``cost``, ``replay``, ``fork``, ``compare``, ``actions``, ``bundle``, ``index``, ``config``, ``mcp`` and ``serve``, each imported here so
that it registers with ``main``.
"""

from agenttui.cli import actions, bundle, compare, config, cost, fork, index, launch, mcp, replay, serve, views  # noqa: F401  (each registers its commands)
from agenttui.cli.app import EXIT_CODES, entry, main, mask_process_title

__all__ = ["EXIT_CODES", "entry", "main", "mask_process_title"]
