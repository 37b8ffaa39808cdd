"""The demo store fixtures of the TUI tests serve the hardening tests too."""

from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401
