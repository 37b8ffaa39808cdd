"""The runs screen's filter bar reads a filter expression (``runs.where``) as well as plain words."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from agenttui.runs.selection.where import Where
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.runs_model import RunsModel
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.header_bar import HeaderBar
from tests.tui.conftest import screen_of, settle, status_of

SIZE = (160, 40)


def header(screen: RunsScreen) -> str:
    content = screen.query_one("#runs-counts", HeaderBar).content
    assert isinstance(content, Text)
    return content.plain


async def test_an_expression_a_bad_one_and_plain_words(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        everything = len(screen.table.items)
        await pilot.press("slash", *"status=halted,sleeping")
        shown = {status_of(row).state for row in screen.table.items}
        assert shown == {RunState.HALTED, RunState.SLEEPING} and len(screen.table.items) >= 2
        assert "bad filter" not in header(screen)
        # A typo on the way: the error shows, inert, and no run is listed (or marked) meanwhile:
        # never more runs than the filter typed asks for, as the CLI refuses the same text.
        await pilot.press("ctrl+u", *"stauts=halted")
        assert screen.query_one("#runs-filter").has_focus  # typing goes on
        assert "bad filter: at column 1: unknown field 'stauts' (did you mean 'status'?)" in header(screen)
        assert len(screen.table.items) == 0
        assert screen.table.empty_text.startswith("No run is listed while the filter does not parse")
        await pilot.press("enter", "M")  # mark every run shown: none is
        assert not screen.table.marks
        await pilot.press("slash", "ctrl+u", *"status=halted not sub")
        assert {status_of(row).state for row in screen.table.items} == {RunState.HALTED}
        # Plain words still find runs by id, status or pending item.
        await pilot.press("ctrl+u", *"a1004")
        assert [r.run_id for r in screen.table.items] == ["eligibility-a1004", "refund-a1004-halted"]
        assert "bad filter" not in header(screen)
        await pilot.press("escape")
        assert len(screen.table.items) == everything


def where_of(model: RunsModel) -> Where | None:
    """``model.where`` read afresh (not narrowed by an earlier look)."""
    return model.where


def test_the_model_parses_once_a_change_and_reads_lines_cheaply() -> None:
    model = RunsModel()
    model.add_runs(["a", "a>c1", "b", "c"])
    model.set_statuses(
        [
            RunStatus("a", RunState.HALTED, tool_name="refund_payment", tool_use_id="c1"),
            RunStatus("a>c1", RunState.COMPLETE),
            RunStatus("b", RunState.HALTED, steps=40),
        ]
    )
    model.text_filter = "status=halted tool=refund_*"
    where = model.where
    assert where is not None and model.where is where  # parsed once for the same text
    assert list(model.rows().run_ids()) == ["a"]
    model.text_filter = "steps>=40"  # a plain line (no call, no lease) is read through a stand-in
    assert list(model.rows().run_ids()) == ["b"]
    model.text_filter = "sub"  # a root shows when a sub-run of it matches
    assert list(model.rows().run_ids()) == ["a"]
    model.text_filter = "status=halted and"
    assert where_of(model) is None and model.filter_error.startswith("at column 18: expected a condition after 'and'")
    assert list(model.rows().run_ids()) == []
    model.text_filter = "halted"  # plain words: not an expression, no error
    assert where_of(model) is None and model.filter_error == "" and list(model.rows().run_ids()) == ["a", "b"]
