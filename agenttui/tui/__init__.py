"""The Textual app: the TUI over one store (``app.py``)."""

READY_META = "agenttui-ready"
"""What a served app tells its server (``agenttui serve``) once its first rows are painted, as a
meta packet of Textual's web driver: the server then sends it its page's size."""
