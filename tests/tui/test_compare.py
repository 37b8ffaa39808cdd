"""The compare screen, driven: opened from the runs list (m, then c) or pushed on any two runs in
any two stores, the first difference selected, n/N between differences, s and v, esc back."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Static

from agenttui.journal import Journal
from agenttui.replay.compare import Side
from agenttui.stores.base import Store
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.compare import CompareScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.compare_view import CompareView
from tests.tui.conftest import notices, screen_of, settle, wait_for_screen

NARROW, WIDE = (80, 24), (160, 48)


async def select(pilot: Pilot[Any], run_id: str) -> RunsScreen:
    screen = screen_of(pilot.app, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.pause()
    return screen


async def compare_from_the_runs_list(pilot: Pilot[Any], left: str, right: str) -> CompareScreen:
    await settle(pilot)
    await select(pilot, left)
    await pilot.press("m")
    await select(pilot, right)
    await pilot.press("c")
    await wait_for_screen(pilot, CompareScreen)
    await settle(pilot)
    return screen_of(pilot.app, CompareScreen)


def cursor_line(screen: CompareScreen) -> tuple[int, str | None, str]:
    """The turn, the step name and the side of the line under the cursor."""
    line = screen.query_one(CompareView).current
    assert line is not None
    return line.turn.number, None if line.row is None else line.row.name, line.side


def text_of(screen: CompareScreen, selector: str) -> str:
    if selector == "#compare-detail":  # a group of texts: printed as the pane shows it
        line = screen.query_one(CompareView).current
        assert line is not None
        console = Console(width=200, file=io.StringIO(), record=True)
        console.print(screen.detail(line))
        return console.export_text()
    return str(screen.query_one(selector, Static).render())


@pytest.mark.parametrize("size", [NARROW, WIDE])
async def test_opened_from_the_runs_list_on_the_first_difference(demo_db: Path, size: tuple[int, int]) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=size) as pilot:
        screen = await compare_from_the_runs_list(pilot, "refund-a1002", "refund-a1003-denied")
        assert (screen.left.run_id, screen.right.run_id) == ("refund-a1002", "refund-a1003-denied")
        assert cursor_line(screen)[:2] == (0, "run:start")
        assert screen.query_one(CompareView).interleaved == (size == NARROW)
        title = text_of(screen, "#compare-title")
        assert "first: turn 0 · run:start: different payload" in title
        assert "tokens 2,672 → 1,672 (-1,000)" in title
        assert "run:start: different payload" in text_of(screen, "#compare-detail")


async def test_n_and_N_move_between_differences_and_esc_goes_back(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        screen = await compare_from_the_runs_list(pilot, "refund-a1002", "refund-a1003-denied")
        await pilot.press("n")
        assert cursor_line(screen)[:2] == (1, "@llm/0")
        await pilot.press("n", "n")
        assert cursor_line(screen)[:2] == (2, "@llm/1")
        assert "turn 2 · tokens 692 → 692 (+0)" in text_of(screen, "#compare-detail")
        await pilot.press("N")
        assert cursor_line(screen)[:2] == (1, "tool:call_0_0")
        await pilot.press("escape")
        await wait_for_screen(pilot, RunsScreen)


async def test_y_copies_the_step_name_and_warns_on_a_heading(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE, notifications=True) as pilot:
        screen = await compare_from_the_runs_list(pilot, "refund-a1002", "refund-a1003-denied")
        await pilot.press("y")
        assert app.clipboard == "run:start"
        view = screen.query_one(CompareView)
        view.cursor = next(i for i, line in enumerate(view.items) if line.row is None)
        await pilot.pause()
        await pilot.press("y")
        assert app.clipboard == "run:start"
        assert any("no record under the cursor (a turn's heading)" in n for n in notices(app))


async def test_interleaved_a_changed_record_is_one_difference_on_two_lines(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        screen = await compare_from_the_runs_list(pilot, "refund-a1002", "refund-a1003-denied")
        assert cursor_line(screen) == (0, "run:start", "left")
        await pilot.press("n")
        assert cursor_line(screen) == (1, "@llm/0", "left")
        await pilot.press("v")  # two columns, asked for on a narrow terminal: the cursor stays on its row
        assert not screen.query_one(CompareView).interleaved
        assert cursor_line(screen) == (1, "@llm/0", "both")


async def test_identical_runs_say_so_and_s_folds_them_away(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        store = app.store
        assert store is not None
        # The same run against a copy of itself in a scratch store: a fork that changed nothing.
        scratch = MemStore()
        async for entry in store.load("refund-a1002"):
            await scratch.insert("fork", entry.name, entry.data)
        app.push_screen(CompareScreen(Side(store, "refund-a1002", "original"), Side(scratch, "fork", "fork")))
        await wait_for_screen(pilot, CompareScreen)
        await settle(pilot)
        screen = screen_of(app, CompareScreen)
        assert "✓ the same" in text_of(screen, "#compare-title")
        await pilot.press("s")
        view = screen.query_one(CompareView)
        assert len(view.items) == 1 and view.items[0].folded == 5
        await pilot.press("n")
        assert "no difference after this one" in [n.message for n in app._notifications]


async def test_c_without_a_mark_says_what_to_do(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        assert any("mark a run with m" in n.message for n in app._notifications)


async def test_a_fork_in_a_scratch_store_against_its_original(store: Store, demo_db: Path) -> None:
    """Any two stores, neither the app's: the original on each store kind, the fork in memory."""
    from agenttui.agent import Call
    from agenttui.demo.desk import demo_model, desk_agent, turns

    lookup = ("Looking it up.", [Call("lookup_order", {"order_id": "A-1004"})])
    await desk_agent(demo_model(turns(lookup, ("Eligible.", []))), store).run("original", "A-1004?")
    scratch = MemStore()
    await desk_agent(demo_model(turns(lookup, ("Not eligible.", []))), scratch).run("fork", "A-1004?")
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        app.push_screen(CompareScreen(Side(store, "original", "original"), Side(scratch, "fork", "fork")))
        await wait_for_screen(pilot, CompareScreen)
        await settle(pilot)
        screen = screen_of(app, CompareScreen)
        assert cursor_line(screen)[:2] == (2, "@llm/1")
        assert "first: turn 2 · @llm/1: different model output" in text_of(screen, "#compare-title")
        assert len(await Journal(scratch).history("fork")) == len(await Journal(store).history("original"))


async def test_the_palette_offers_compare(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        screen = await compare_from_the_runs_list(pilot, "refund-a1002", "refund-a1003-denied")
        from agenttui.tui.commands import AgentTuiCommands

        titles = [title for title, _, _ in AgentTuiCommands(screen)._commands()]
        assert "compare: Next difference" in titles and "compare: Differing turns only / every turn" in titles


async def test_a_sqlite_store_is_read_for_both_sides(tmp_path: Path) -> None:
    """Two runs of one SQLite file, the app's store not involved: each side names its store."""
    from agenttui.demo.desk import demo_model, desk_agent, turns

    path = tmp_path / "two.db"
    store = await SQLiteStore.open(path)
    try:
        await desk_agent(demo_model(turns(("One.", []))), store).run("a", "hi")
        await desk_agent(demo_model(turns(("Two.", []))), store).run("b", "hi")
    finally:
        await store.close()
    app = AgentTuiApp(str(path), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        screen = await compare_from_the_runs_list(pilot, "a", "b")
        assert cursor_line(screen)[:2] == (1, "@llm/0")
