from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures: the demo store, a copy a test)
