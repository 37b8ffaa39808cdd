"""The app is what its screens take it for: ``AgentTuiApp`` satisfies ``TuiHost``, the typed
interface through which screens reach the app without importing ``app.py``."""

from __future__ import annotations

from agenttui.tui.app import AgentTuiApp
from agenttui.tui.host import TuiHost


def as_host(app: AgentTuiApp) -> TuiHost:
    return app  # strict mypy checks this assignment: every member, with its type


def test_the_app_has_every_member_the_screens_use() -> None:
    app = AgentTuiApp(url=":memory:")
    members = set(TuiHost.__annotations__) | {
        name for name in vars(TuiHost) if not name.startswith("_") and callable(getattr(TuiHost, name))
    }
    assert members, "the protocol names nothing"
    assert [name for name in sorted(members) if not hasattr(as_host(app), name)] == []
