"""One key grammar: j/k/g/G, enter and esc in every list, pane, dialog and help; enter opens a
record; r and y from anywhere on a run; follow with one meaning; G during a load; h on a
sub-run; the palette's actions of every screen and opening a run by id. Pilot over real stores."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TabbedContent

from agenttui.journal import Journal, Record, StepKind
from agenttui.replay.compare import Side
from agenttui.stores.base import Entry
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.compare import CompareScreen
from agenttui.tui.screens.dialogs import ChoiceDialog, ChoiceList
from agenttui.tui.screens.diff import DiffScreen
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.compare_view import CompareView
from agenttui.tui.widgets.diff_view import DiffView
from agenttui.tui.widgets.inspector import RecordInspector
from agenttui.tui.widgets.journal_list import JournalList
from tests.tui.conftest import notices, screen_of, settle, until, wait_for_screen
from tests.tui.test_app import shown

SIZE = (80, 24)


def header(screen: RunScreen) -> str:
    return str(screen.query_one("#run-title").render())


def focus_of(screen: Screen[Any]) -> Widget | None:
    """What has the focus (a call: mypy would keep ``screen.focused`` narrowed across key presses)."""
    return screen.focused


def following(screen: RunScreen) -> bool:
    return screen.follow


async def select(pilot: Pilot[Any], run_id: str) -> RunsScreen:
    screen = screen_of(pilot.app, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.pause()
    return screen


async def open_run(pilot: Pilot[Any], run_id: str) -> RunScreen:
    app = pilot.app
    assert isinstance(app, AgentTuiApp)
    await settle(pilot)
    app.open_run(run_id)
    await settle(pilot)
    return screen_of(app, RunScreen)


# -- j/k/g/G in every list, pane, dialog and help: one table -----------------------------------

Position = Callable[[], int]
Setup = Callable[[Pilot[Any]], Awaitable[Position]]


async def runs_list(pilot: Pilot[Any]) -> Position:
    await settle(pilot)
    table = screen_of(pilot.app, RunsScreen).table
    return lambda: table.cursor


async def run_journal(pilot: Pilot[Any]) -> Position:
    journal = (await open_run(pilot, "refund-a1002")).journal_list
    return lambda: journal.cursor


async def inspector(pilot: Pilot[Any]) -> Position:
    screen = await open_run(pilot, "audit-bulk")
    await pilot.press("j", "j", "r", "enter")  # r from the journal: no need to focus the inspector
    await settle(pilot)
    pane = screen.query_one(RecordInspector)
    assert focus_of(screen) is pane and pane.show_raw and pane.max_scroll_y > 2
    return lambda: round(pane.scroll_y)


async def flowchart(pilot: Pilot[Any]) -> Position:
    screen = await open_run(pilot, "refund-a1002")
    await pilot.press("w", "tab", "tab")
    await settle(pilot)
    chart = screen.query_one("#run-flowchart")
    screen.set_focus(chart)
    await pilot.pause()
    return lambda: int(chart.cursor_row)  # type: ignore[attr-defined]  # FlowchartView's


async def help_screen(pilot: Pilot[Any]) -> Position:
    await open_run(pilot, "refund-a1002")  # the run screen's help is longer than 24 lines
    await pilot.press("question_mark")
    await wait_for_screen(pilot, HelpScreen)
    panel = pilot.app.screen.query_one("#help-panel", Widget)
    await pilot.pause()
    assert panel.max_scroll_y > 2
    return lambda: round(panel.scroll_y)


async def choice_menu(pilot: Pilot[Any]) -> Position:
    await settle(pilot)
    pilot.app.push_screen(ChoiceDialog("Act on run", ["Approve", "Deny", "Cancel the run"]))
    await wait_for_screen(pilot, ChoiceDialog)
    await pilot.pause()
    options = pilot.app.screen.query_one(ChoiceList)
    return lambda: options.highlighted or 0


async def diff_list(pilot: Pilot[Any]) -> Position:
    await settle(pilot)
    pilot.app.push_screen(DiffScreen("refund-a1002", "refund-a1003-denied"))
    await wait_for_screen(pilot, DiffScreen)
    await settle(pilot)
    view = pilot.app.screen.query_one(DiffView)
    return lambda: view.cursor


async def compare_list(pilot: Pilot[Any]) -> Position:
    await settle(pilot)
    store = pilot.app.store  # type: ignore[attr-defined]  # AgentTuiApp's
    left, right = Side(store, "refund-a1002", "a"), Side(store, "refund-a1003-denied", "b")
    pilot.app.push_screen(CompareScreen(left, right))
    await wait_for_screen(pilot, CompareScreen)
    await settle(pilot)
    view = pilot.app.screen.query_one(CompareView)
    return lambda: view.cursor


async def replay_journal(pilot: Pilot[Any]) -> Position:
    await open_run(pilot, "refund-a1002")
    await pilot.press("R")
    await wait_for_screen(pilot, ReplayScreen)
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)
    journal = pilot.app.screen.query_one(JournalList)
    return lambda: journal.cursor


WHERE: dict[str, Setup] = {
    "runs list": runs_list,
    "run journal": run_journal,
    "inspector": inspector,
    "flowchart": flowchart,
    "help": help_screen,
    "act-on-run menu": choice_menu,
    "diff": diff_list,
    "compare": compare_list,
    "replay journal": replay_journal,
}


@pytest.mark.parametrize("where", WHERE)
async def test_j_k_g_G_move_everywhere(demo_db: Path, where: str) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        position = await WHERE[where](pilot)
        await pilot.press("g")
        await pilot.pause()
        first = position()
        await pilot.press("G")
        await pilot.pause()
        last = position()
        assert last > first + 1, f"G moved nowhere in the {where}"
        await pilot.press("k")
        await pilot.pause()
        assert first < position() < last
        await pilot.press("g")
        await pilot.pause()
        assert position() == first
        await pilot.press("j")
        await pilot.pause()
        assert first < position() < last


async def test_enter_picks_and_esc_closes_the_act_on_run_menu(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    picked: list[int | None] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(ChoiceDialog("Act on run", ["Approve", "Deny", "Cancel the run"]), picked.append)
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("j", "enter")
        await wait_for_screen(pilot, RunsScreen)
        app.push_screen(ChoiceDialog("Act on run", ["Approve", "Deny"]), picked.append)
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("escape")
        await wait_for_screen(pilot, RunsScreen)
    assert picked == [1, None]


@pytest.mark.parametrize("key", ["escape", "enter", "question_mark"])
async def test_help_closes_with_esc_enter_and_question_mark(demo_db: Path, key: str) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await wait_for_screen(pilot, HelpScreen)
        await pilot.press(key)
        await wait_for_screen(pilot, RunsScreen)


# -- enter opens, esc comes back ----------------------------------------------------------------


async def test_enter_opens_a_record_in_the_inspector_and_esc_comes_back(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, "refund-a1002")
        await pilot.press("p", "c", "j", "j", "j", "enter")  # panes hidden, another pane shown
        await settle(pilot)
        pane = screen.query_one(RecordInspector)
        assert screen.query_one("#run-panes").display and screen.query_one(TabbedContent).active == "inspector"
        assert focus_of(screen) is pane and pane.shown is not None and pane.shown[1] == 3
        await pilot.press("escape")
        await pilot.pause()
        assert focus_of(screen) is screen.journal_list and app.screen is screen
        await pilot.press("escape")
        await wait_for_screen(pilot, RunsScreen)


async def test_enter_on_a_diff_step_opens_its_detail_and_esc_comes_back(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(DiffScreen("refund-a1002", "refund-a1003-denied"))
        await wait_for_screen(pilot, DiffScreen)
        await settle(pilot)
        screen = app.screen
        await pilot.press("enter")
        await pilot.pause()
        assert focus_of(screen) is screen.query_one("#diff-detail-scroll")
        await pilot.press("escape")
        await pilot.pause()
        assert focus_of(screen) is screen.query_one(DiffView)
        await pilot.press("escape")
        await wait_for_screen(pilot, RunsScreen)


async def test_enter_on_a_replayed_record_shows_its_step_in_the_diff(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await open_run(pilot, "refund-a1002")
        await pilot.press("R")
        await wait_for_screen(pilot, ReplayScreen)
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        screen = screen_of(app, ReplayScreen)
        await pilot.press("g", "enter")
        await pilot.pause()
        assert screen.query_one(TabbedContent).active == "diff"
        assert focus_of(screen) is screen.query_one(DiffView)
        await pilot.press("escape")
        await pilot.pause()
        assert focus_of(screen) is screen.query_one(JournalList)


# -- r and y ------------------------------------------------------------------------------------


async def test_r_shows_raw_bytes_from_the_journal_and_from_another_pane(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, "refund-a1005")
        await pilot.press("j", "j", "c")  # the state-at-step pane shows, the journal has the focus
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        pane = screen.query_one(RecordInspector)
        assert screen.query_one(TabbedContent).active == "inspector" and pane.show_raw
        assert focus_of(screen) is screen.journal_list  # the keys stay where they were
        assert "stored bytes" in shown(pane.query_one("#inspector-content"))
        await pilot.press("r")
        await pilot.pause()
        assert not pane.show_raw


async def test_y_copies_the_run_id_the_record_name_and_the_value(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await select(pilot, "refund-a1002")
        await pilot.press("y")
        assert app.clipboard == "refund-a1002"
        assert any("copied the run id: refund-a1002" in n for n in notices(app))
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("j", "j", "j", "y")  # tool:call_0_0
        assert app.clipboard == "tool:call_0_0"
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("y")
        assert app.clipboard.startswith("{") and "grace@example.com" in app.clipboard  # the result, as stored
        assert any("copied record #3's value" in n for n in notices(app))


async def test_y_refuses_what_a_terminal_cannot_show(tmp_path: Path) -> None:
    store = MemStore()
    await Journal(store).append("evil\x1b]52;c;x\x07", Record("run:start", StepKind.VALUE, result=b'"x"'))
    app = AgentTuiApp(store=store, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("y")
        assert app.clipboard == ""
        assert any("not copied" in n for n in notices(app))


# -- h on a sub-run -----------------------------------------------------------------------------


async def test_h_on_a_sub_run_goes_to_its_parent_and_then_folds_it(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await select(pilot, "eligibility-a1004")
        parent = screen.table.cursor
        await pilot.press("l", "j")
        assert screen.table.current is not None and screen.table.current.run_id == "eligibility-a1004>call_0_0"
        await pilot.press("h")
        await pilot.pause()
        assert screen.table.cursor == parent and not screen.table.items[parent].folded  # on its parent, unfolded
        await pilot.press("h")
        await pilot.pause()
        assert screen.table.cursor == parent and screen.table.items[parent].folded


# -- follow -------------------------------------------------------------------------------------


async def append(path: Path, run_id: str, name: str) -> None:
    writer = await SQLiteStore.open(path)
    try:
        await Journal(writer).append(run_id, Record(name, StepKind.VALUE, result=b'"noted"'))
    finally:
        await writer.close()


async def test_follow_keeps_the_cursor_on_the_newest_record_until_a_move(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db))  # tailing: another process's commits arrive
    async with app.run_test(size=(120, 30)) as pilot:
        screen = await open_run(pilot, "refund-a1005")
        journal = screen.journal_list
        assert not following(screen) and journal.cursor == 0 and "not following" in header(screen)
        await pilot.press("f")
        await pilot.pause()
        assert following(screen) and journal.cursor == len(screen.rows) - 1
        assert "following" in header(screen) and "not following" not in header(screen)
        await append(demo_db, "refund-a1005", "note-1")
        await until(pilot, lambda: len(screen.rows) == 6, "the first note")
        await pilot.pause()
        assert journal.cursor == 5 and following(screen)  # it stayed on the newest
        await pilot.press("k")  # any move stops it
        await pilot.pause()
        assert not following(screen) and "not following" in header(screen)
        await append(demo_db, "refund-a1005", "note-2")
        await until(pilot, lambda: len(screen.rows) == 7, "the second note")
        await pilot.pause()
        assert journal.cursor == 4  # left where it was put


async def test_a_finished_run_cannot_be_followed_and_does_not_claim_to_be(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        screen = await open_run(pilot, "refund-a1002")
        assert "following" not in header(screen)
        await pilot.press("f")
        await pilot.pause()
        assert not following(screen) and screen.journal_list.cursor == 0 and "following" not in header(screen)
        assert any("complete run gets no new records: nothing to follow" in n for n in notices(app))


# -- G during a load ----------------------------------------------------------------------------


class GatedStore(MemStore):
    """A store whose loads stop after ``open_for`` entries until ``gate`` is set: a long load, caught midway."""

    def __init__(self, open_for: int) -> None:
        super().__init__()
        self.open_for = open_for
        self.gate = asyncio.Event()

    async def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        count = 0
        async for entry in super().load(run_id, after):
            if count == self.open_for:
                await self.gate.wait()
            count += 1
            yield entry


@pytest.mark.parametrize("press_g", [True, False])
async def test_G_during_a_load_lands_on_the_last_record_once_loaded(press_g: bool) -> None:
    store = GatedStore(open_for=150)
    journal = Journal(store)
    for n in range(600):
        await journal.append("long", Record(f"step-{n}", StepKind.VALUE, result=b"1"))
    await journal.append("long", Record("run:complete", StepKind.VALUE))
    app = AgentTuiApp(store=store, tail=False, run_id="long")
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(pilot, RunScreen)
        screen = screen_of(app, RunScreen)
        await until(pilot, lambda: len(screen.rows) > 0, "the first batch")  # the rest wait on the gate
        await pilot.press("G" if press_g else "f")  # f: not before the status says it can be followed
        assert not following(screen)
        store.gate.set()
        await settle(pilot)
        assert len(screen.rows) == 602  # the header, 600 steps and the end marker
        assert screen.journal_list.cursor == (601 if press_g else 0)
        inspected = screen.query_one(RecordInspector).shown
        assert inspected is not None and inspected[1] == screen.journal_list.cursor  # the panes waited for it
        assert not following(screen)  # G is not follow: the run is finished


# -- the palette: every screen's actions, and a run by id ------------------------------------


async def palette(pilot: Pilot[Any], typed: str) -> None:
    await pilot.press("ctrl+p")
    await pilot.press(*typed)
    await pilot.pause(0.4)
    await pilot.press("enter")
    await settle(pilot)


async def test_the_palette_on_the_runs_list_replays_the_selected_run(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await select(pilot, "refund-a1002")
        await palette(pilot, "replay (recorded")
        await wait_for_screen(pilot, ReplayScreen)
        assert screen_of(app, ReplayScreen).run_id == "refund-a1002"
        await palette(pilot, "replay: run to the end")
        screen = screen_of(app, ReplayScreen)
        await until(pilot, lambda: screen.verdict is not None, "the verdict")
        assert screen.verdict is not None and screen.verdict.matches


async def test_the_palette_on_a_run_marks_it_on_the_runs_list(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await open_run(pilot, "refund-a1003-denied")
        await palette(pilot, "runs: mark or unmark")
        runs = screen_of(app, RunsScreen)
        assert list(runs.table.marks) == ["refund-a1003-denied"]
        assert runs.table.current is not None and runs.table.current.run_id == "refund-a1003-denied"


async def test_the_palette_says_what_an_action_needs(tmp_path: Path) -> None:
    app = AgentTuiApp(store=MemStore(), tail=False)  # no run to select
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        await settle(pilot)
        await palette(pilot, "replay (recorded")
        assert isinstance(app.screen, RunsScreen)
        assert any("select a run first" in n for n in notices(app))


async def test_the_palette_opens_a_run_by_id_fuzzily_even_a_folded_sub_run(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await palette(pilot, "elig1004call00")
        assert screen_of(app, RunScreen).run_id == "eligibility-a1004>call_0_0"


async def test_the_palette_opens_an_id_the_list_does_not_know(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await palette(pilot, "open brand-new-run")
        assert screen_of(app, RunScreen).run_id == "brand-new-run"
