"""Incident mode on the runs list, driven with Pilot at 80x24 over a SQLite store of Go-shaped
runs (tests/incident.py): marks that outlive filters and live updates, the menu of the actions
that fit every marked run, the confirmation and its command, and the progress of the apply:
stopped with esc, its skipped runs opened from the summary."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Button, Static

from agenttui.journal import keys
from agenttui.runs.recovery.lease import new_holder
from agenttui.runs.recovery.operations import Cancel
from agenttui.runs.selection import batch
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import run_status
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.commands import LOCAL_ONLY, TITLES
from agenttui.tui.screens.bulk import BulkConfirm, BulkMenu, BulkProgress
from agenttui.tui.screens.dialogs import ChoiceList, CommandLine
from agenttui.tui.screens.diff import DiffScreen
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.runs_table import MARK
from tests.incident import HALTED, make_store, write_runs
from tests.tui.conftest import notices, screen_of, settle, until, wait_for_screen
from tests.tui.test_app import shown

SIZE = (80, 24)
REFUNDS = [f"refund-{n}" for n in range(6)]


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The incident's store, named relative to the working directory (so commands say incident.db)."""
    path = tmp_path / "incident.db"
    make_store(path)
    monkeypatch.chdir(tmp_path)
    return path


@pytest.fixture
async def other_handle(store_path: Path) -> AsyncIterator[SQLiteStore]:
    """Another writer on the same file: a worker, another on-call engineer."""
    store = await SQLiteStore.open(store_path)
    yield store
    await store.close()


async def stored(path: Path) -> dict[str, list[tuple[str, bytes]]]:
    store = await SQLiteStore.open(path, read_only=True)
    try:
        return {run_id: [(e.name, e.data) async for e in store.load(run_id)] async for run_id in store.runs()}
    finally:
        await store.close()


def runs_screen(pilot: Pilot[Any]) -> RunsScreen:
    return screen_of(pilot.app, RunsScreen)


def counts_line(screen: RunsScreen) -> str:
    return str(screen.query_one("#runs-counts", Static).render())


def row_text(screen: RunsScreen, run_id: str) -> str:
    table = screen.table
    index = next(i for i, row in enumerate(table.items) if row.run_id == run_id)
    return table.render_item(table.items[index], index, 80).plain


async def put_cursor(pilot: Pilot[Any], run_id: str) -> None:
    screen = runs_screen(pilot)
    screen.table.cursor = next(i for i, row in enumerate(screen.table.items) if row.run_id == run_id)
    await pilot.pause()


async def mark_refunds(pilot: Pilot[Any]) -> RunsScreen:
    """Filter to the refunds, M: every run shown marked; then the filter cleared."""
    await settle(pilot)
    await pilot.press("slash", *"refund", "enter", "M", "escape")
    await settle(pilot)
    return runs_screen(pilot)


async def choose(pilot: Pilot[Any], label: str) -> None:
    """Pick the marked runs' action whose label starts with ``label`` in the menu ``o`` opens."""
    await pilot.press("o")
    await wait_for_screen(pilot, BulkMenu)
    menu = screen_of(pilot.app, BulkMenu)
    menu.query_one(ChoiceList).highlighted = next(
        i for i, fit in enumerate(menu.fitted) if fit.choice.label.startswith(label)
    )
    await pilot.press("enter")


async def confirmed_cancel(pilot: Pilot[Any]) -> BulkConfirm:
    await choose(pilot, "Cancel the runs")
    await wait_for_screen(pilot, BulkConfirm)
    await pilot.pause()
    return screen_of(pilot.app, BulkConfirm)


async def finished(pilot: Pilot[Any]) -> BulkProgress:
    await wait_for_screen(pilot, BulkProgress)
    progress = screen_of(pilot.app, BulkProgress)
    await until(pilot, lambda: progress.finished, "the bulk action to finish")
    await pilot.pause()
    return progress


async def test_m_marks_M_marks_every_run_shown_and_U_clears(store_path: Path) -> None:
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        screen = runs_screen(pilot)
        await put_cursor(pilot, "ship-1")
        await pilot.press("m")
        assert list(screen.table.marks) == ["ship-1"]
        assert "1 marked" in counts_line(screen)
        assert row_text(screen, "ship-1").startswith(MARK)
        assert not row_text(screen, "ship-0").startswith(MARK)
        await pilot.press("m")  # again: unmarked
        assert not screen.table.marks and "marked" not in counts_line(screen)
        await pilot.press("m", "slash", *"refund", "enter", "M")
        await settle(pilot)
        assert list(screen.table.marks) == ["ship-1", *REFUNDS]  # more than two, the first mark kept
        assert "7 marked" in counts_line(screen)
        assert all(row_text(screen, run_id).startswith(MARK) for run_id in REFUNDS)
        await pilot.press("U")
        await pilot.pause()
        assert not screen.table.marks and "marked" not in counts_line(screen)
        assert not row_text(screen, "refund-0").startswith(MARK)


async def test_marks_survive_a_filter_change_and_a_live_update(store_path: Path, other_handle: SQLiteStore) -> None:
    app = AgentTuiApp(store_path.name)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = runs_screen(pilot)
        for run_id in ("refund-1", "gated-0"):
            await put_cursor(pilot, run_id)
            await pilot.press("m")
        await pilot.press("s")  # the status filter: "needs attention", then "paused"
        await pilot.press("slash", *"gated", "enter")
        await settle(pilot)
        assert [row.run_id for row in screen.table.items] == ["gated-0", "gated-1"]
        assert list(screen.table.marks) == ["refund-1", "gated-0"]
        assert "2 marked" in counts_line(screen)
        await pilot.press("escape", "s", "s", "s", "s")  # back to every run
        await settle(pilot)
        # Another handle writes: a new run arrives, a marked one is cancelled under the list.
        await write_runs(other_handle, {"refund-9": HALTED})
        await Cancel("refund-1", "by another engineer").apply(other_handle)
        await until(
            pilot,
            lambda: "refund-9" in screen.model.runs and screen.model.statuses["refund-1"] is not None
            and screen.model.statuses["refund-1"].state == RunState.CANCELLED,
            "the live update",
        )  # fmt: skip
        await pilot.pause()
        assert list(screen.table.marks) == ["refund-1", "gated-0"]
        assert row_text(screen, "refund-1").startswith(MARK) and row_text(screen, "gated-0").startswith(MARK)
        assert not row_text(screen, "refund-9").startswith(MARK)


async def test_the_menu_offers_only_the_actions_that_fit_every_marked_run(store_path: Path) -> None:
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for run_id in ("refund-0", "refund-1", "refund-2", "gated-0"):
            await put_cursor(pilot, run_id)
            await pilot.press("m")
        await pilot.press("o")
        await wait_for_screen(pilot, BulkMenu)
        menu = screen_of(pilot.app, BulkMenu)
        options = menu.query_one(ChoiceList)
        offered = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        enabled = [line for i, line in enumerate(offered) if not options.get_option_at_index(i).disabled]
        assert enabled == ["Cancel the runs"]  # the only action a halted and an approval-awaiting run share
        assert "Approve the pending call — 3 of 4 do not fit: it is halted: it awaits no approval" in offered
        assert (
            "It did not fire: retry the halted call — 1 of 4 do not fit: it is awaiting-approval: it has no call "
            "whose outcome is unknown"
        ) in offered
        assert "Release lapsed leases — 4 of 4 do not fit: it holds no lease" in offered
        assert options.highlighted == 0  # on the one that fits
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)


async def test_cancel_on_six_marked_runs_writes_one_run_cancelled_each_and_y_copies_the_command(
    store_path: Path,
) -> None:
    before = await stored(store_path)
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await mark_refunds(pilot)
        dialog = await confirmed_cancel(pilot)
        preview = str(dialog.query_one("#bulk-preview", Static).render())
        assert "cancel: 6 runs marked (6 read)" in preview and "  6 halted" in preview
        assert "refund-0  run:cancelled" in preview and "... and 1 more" in preview
        where = " or ".join(f"id={run_id}" for run_id in REFUNDS)
        expected = f"agenttui cancel incident.db --where '{where}' --reason 'cancelled from agenttui' --yes"
        assert dialog.command == expected
        assert dialog.query_one(CommandLine).command == expected
        await pilot.press("y")
        await pilot.pause()
        assert app.clipboard == expected
        assert f"copied the command: {len(expected):,} characters (OSC 52)" in notices(app)
        assert await stored(store_path) == before  # nothing written before w
        await pilot.press("w")
        progress = await finished(pilot)
        assert progress.tally.done == 6
        assert "cancel: 6 done, 0 skipped, 0 failed of 6 runs" in str(progress.query_one("#bulk-summary").render())
        assert len(progress.recent) == 6
    after = await stored(store_path)
    for run_id in REFUNDS:
        cancels = [name for name, _ in after[run_id] if name == keys.RUN_CANCELLED]
        assert cancels == [keys.RUN_CANCELLED]
        assert after[run_id][: len(before[run_id])] == before[run_id]  # appended to, nothing else touched
    assert {run_id: entries for run_id, entries in after.items() if run_id not in REFUNDS} == {
        run_id: entries for run_id, entries in before.items() if run_id not in REFUNDS
    }


@pytest.mark.parametrize("key", ["q", "escape", "n"])
async def test_the_confirmation_closes_without_writing(store_path: Path, key: str) -> None:
    before = await stored(store_path)
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await mark_refunds(pilot)
        await confirmed_cancel(pilot)
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen) and app.is_running
        assert "nothing written" in notices(app)
    assert await stored(store_path) == before


async def test_esc_stops_the_action_after_the_current_run(store_path: Path, other_handle: SQLiteStore) -> None:
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await mark_refunds(pilot)
        await confirmed_cancel(pilot)
        # A driver takes refund-0 after the preview: the action comes back to it, and waits.
        assert await other_handle.acquire_lease("refund-0", new_holder(), 300)
        await pilot.press("w")
        await wait_for_screen(pilot, BulkProgress)
        progress = screen_of(app, BulkProgress)
        await until(pilot, lambda: progress.tally.count == 5, "the five runs not held")
        await pilot.press("escape")
        assert progress.stopping
        # The stop comes at the engine's next look, within a second: the line says so until then.
        await until(pilot, lambda: progress.finished, "the action to stop")
        assert "5 of 6 runs" in str(progress.query_one("#bulk-rate").render())
        assert "stopped after the current run" in str(progress.query_one("#bulk-rate").render())
        summary = str(progress.query_one("#bulk-summary").render())
        assert "cancel: 5 done, 0 skipped, 0 failed of 6 runs; stopped with 1 left" in summary
    assert (await run_status(other_handle, "refund-0")).state == RunState.IN_FLIGHT  # held, never written
    assert not [e async for e in other_handle.load("refund-0") if e.name == keys.RUN_CANCELLED]


async def test_the_summary_lists_a_skipped_run_and_enter_opens_it(
    store_path: Path, other_handle: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batch, "LEASE_PATIENCE", 0.2)
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await mark_refunds(pilot)
        await confirmed_cancel(pilot)
        holder = new_holder()
        assert await other_handle.acquire_lease("refund-3", holder, 300)
        await pilot.press("w")
        progress = await finished(pilot)
        assert [(o.run_id, o.result) for o in progress.problems] == [("refund-3", "skipped")]
        problems = progress.query_one("#bulk-problems", ChoiceList)
        assert problems.display and problems.has_focus
        assert holder in str(problems.get_option_at_index(0).prompt)
        assert "5 done, 1 skipped" in str(progress.query_one("#bulk-summary").render())
        await pilot.press("enter")
        await wait_for_screen(pilot, RunScreen)
        assert screen_of(app, RunScreen).run_id == "refund-3"
        await pilot.press("escape")  # back to the summary, then closed
        await wait_for_screen(pilot, BulkProgress)
        await pilot.press("escape")
        await wait_for_screen(pilot, RunsScreen)


async def test_a_with_marks_approves_every_marked_run_after_confirming(store_path: Path) -> None:
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        for run_id in ("gated-0", "gated-1"):
            await put_cursor(pilot, run_id)
            await pilot.press("m")
        await pilot.press("a")
        await wait_for_screen(pilot, BulkConfirm)
        dialog = screen_of(app, BulkConfirm)
        assert dialog.command == "agenttui approve incident.db --where 'id=gated-0 or id=gated-1' --yes"
        await pilot.press("w")
        progress = await finished(pilot)
        assert progress.tally.done == 2
        await pilot.press("escape")
        await settle(pilot)  # the list reads the approved runs again: ready now
        await put_cursor(pilot, "refund-0")
        await pilot.press("m", "a")  # approve fits none of them now: said, nothing asked
        await pilot.pause()
        assert any("Approve the pending call — 3 of 3 do not fit: it is ready" in n for n in notices(app))
        assert isinstance(app.screen, RunsScreen)
    store = await SQLiteStore.open(store_path, read_only=True)
    try:
        assert (await run_status(store, "gated-0")).state == RunState.READY
        assert (await run_status(store, "gated-1")).state == RunState.READY
    finally:
        await store.close()


async def test_diff_takes_the_two_newest_marks_and_says_what_to_do_with_fewer(store_path: Path) -> None:
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("d")
        assert any(n.startswith("no run is marked: mark two runs with m") for n in notices(app))
        for run_id in ("done-0", "ship-0", "ship-1"):
            await put_cursor(pilot, run_id)
            await pilot.press("m")
        await pilot.press("d")
        await wait_for_screen(pilot, DiffScreen)
        diff = screen_of(app, DiffScreen)
        assert (diff.left, diff.right) == ("ship-0", "ship-1")


async def test_every_incident_key_has_an_id_a_help_line_and_a_palette_title(store_path: Path) -> None:
    for dialog in (BulkMenu, BulkConfirm, BulkProgress):
        assert all(isinstance(b, Binding) and b.id for b in dialog.BINDINGS), dialog.__name__
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await wait_for_screen(pilot, HelpScreen)
        help_text = shown(app.screen.query_one("#help-bindings"))
    for binding in RunsScreen.BINDINGS:
        assert isinstance(binding, Binding) and binding.id, binding
        # The filter's own keys (enter closes it, esc clears it) are active, and listed, in the filter.
        # Listed in words (the palette's, less the screen's name), not by id.
        listed = binding.id in TITLES and TITLES[binding.id].partition(": ")[2][:40] in " ".join(help_text.split())
        assert binding.id in LOCAL_ONLY or listed, binding.id
    assert "Diff the two newest marked runs" in help_text and "Compare the marked run with this one" in help_text


async def test_marks_of_every_run_a_filter_expression_shows_give_the_command_that_filter(store_path: Path) -> None:
    app = AgentTuiApp(store_path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"status=halted tool=charge", "enter", "M")
        await settle(pilot)
        assert sorted(runs_screen(pilot).table.marks) == REFUNDS
        dialog = await confirmed_cancel(pilot)
        assert dialog.command == (
            "agenttui cancel incident.db --where 'status=halted tool=charge' --reason 'cancelled from agenttui' --yes"
        )


async def test_the_confirmation_and_the_progress_keep_their_keys_in_view_at_80x24(tmp_path: Path) -> None:
    """Long ids wrap the preview and many runs fill the log: each scrolls, and the buttons and
    the hint below stay on the screen."""
    path = tmp_path / "long.db"
    store = await SQLiteStore.open(path)
    await write_runs(store, {f"refund-{'x' * 50}-{n:03d}": HALTED for n in range(60)})
    await store.close()
    app = AgentTuiApp(str(path), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("M")
        dialog = await confirmed_cancel(pilot)
        for button in dialog.query(Button):
            assert button.region.bottom <= SIZE[1], button.label
        await pilot.press("w")
        progress = await finished(pilot)
        assert progress.query_one("#bulk-summary").region.bottom <= SIZE[1]
