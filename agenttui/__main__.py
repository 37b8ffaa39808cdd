"""``python -m agenttui``: the same as the ``agenttui`` command."""

from agenttui.cli import entry

entry()
