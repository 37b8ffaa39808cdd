"""The demo store fixtures, for the store tests that read a demo store."""

from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures shared with the TUI tests)
