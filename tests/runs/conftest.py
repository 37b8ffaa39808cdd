"""The demo store fixtures, for the runs tests that read a demo run."""

from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures shared with the TUI tests)
