"""agenttui: debug durable AI-agent runs from a terminal.

The package root stays light: it never imports the TUI, Textual or Rich.
"""

__version__ = "0.1.0.dev0"
