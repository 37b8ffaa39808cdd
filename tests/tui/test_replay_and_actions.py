"""Replay mode, the diff and flowchart panes, and recover actions, driven with Pilot."""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static, TabbedContent

from agenttui.agent.events import ModelEvent
from agenttui.agent.model import Finish
from agenttui.journal import Journal
from agenttui.journal.record import Usage
from agenttui.render import DONE, FlowKind, Role
from agenttui.runs.statuses.status import RunState, run_status
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ChoiceDialog, ConfirmDialog, PromptDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.diff_view import DiffView
from agenttui.tui.widgets.events_view import EventsView, event_line
from agenttui.tui.widgets.flowchart_view import FlowchartView
from agenttui.tui.widgets.journal_list import JournalList
from tests.tui.conftest import screen_of, settle, status_of, type_ahead, until, wait_for_screen

SIZE = (140, 40)
DEMO_AGENT = "agenttui.demo.build:factory"
CHANGED_AGENT = "tests.tui.changed_agent:factory"


async def open_replay(pilot: Pilot[Any], run_id: str, key: str = "R") -> ReplayScreen:
    assert isinstance(pilot.app, AgentTuiApp)
    pilot.app.open_run(run_id)
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ReplayScreen)
    return screen


async def names(path: Path, run_id: str) -> list[str]:
    store = await SQLiteStore.open(path, read_only=True)
    try:
        return [r.name for r in await Journal(store).history(run_id)]
    finally:
        await store.close()


async def test_replay_turn_by_turn_to_the_end(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_replay(pilot, "refund-a1002")
        for turn in range(1, 5):
            await pilot.press("n")
            await settle(pilot)
            assert screen.session is not None and screen.session.progress.turn == turn
        assert screen.session is not None and screen.session.progress.state == "finished"
        assert screen.diff is not None and screen.diff.matches
        assert [r.name for r in screen.rows] == await names(demo_db, "refund-a1002") or {
            r.name for r in screen.rows
        } == set(await names(demo_db, "refund-a1002"))
        events = screen.query_one(EventsView).items
        kinds = [kind for kind, _ in events]
        assert kinds.count("turn") == 8 and kinds[-1] == "finished"  # turn started + assistant turn, four times
        assert any("tool refund_payment completed" in text for _, text in events)
    assert demo_db.read_bytes() == before  # a replay never writes to the store it reads


async def test_back_and_jump_replay_again_from_the_start(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_replay(pilot, "audit-bulk")
        journal = screen.query_one("#replayed-journal")
        assert journal.render_line(0).text.startswith("Nothing replayed yet: n replays the next turn")
        await pilot.press("n", "n", "n")
        await settle(pilot)
        assert screen.session is not None and screen.session.progress.turn == 3
        await pilot.press("b")
        await settle(pilot)
        assert screen.session.progress.turn == 2
        type_ahead(app, "t10\r")  # typed quickly: every key after the t goes into the prompt
        await settle(pilot)
        assert screen.session.progress.turn == 10
        type_ahead(app, "t3\x1b")  # escape closes the prompt without jumping, and stays
        await settle(pilot)
        assert app.screen is screen and screen.session.progress.turn == 10
        assert not screen.query_one("#replay-jump").display
        assert sum(r.kind == "model" for r in screen.rows) == 10
        await pilot.press("e")
        await settle(pilot)
        assert screen.session.progress.state == "finished" and screen.diff is not None and screen.diff.matches


async def test_a_changed_tool_diverges_at_the_right_step(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=CHANGED_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_replay(pilot, "refund-a1002", key="Y")
        await pilot.press("n")
        await settle(pilot)
        assert screen.diff is not None
        first = screen.diff.first_divergence
        assert first is not None and first.name == "tool:call_0_0" and first.reason == "different tool result"
        await pilot.press("2")
        await pilot.pause()
        detail = screen.query_one("#diff-detail", Static).content
        from rich.console import Console

        console = Console(width=120, record=True, file=io.StringIO())
        console.print(detail)
        text = console.export_text()
        assert '+      "warehouse": "EU-2"' in text or '"warehouse": "EU-2"' in text


async def test_pane_keys_switch_panes_while_a_pane_has_focus(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_replay(pilot, "refund-a1002")
        tabs = screen.query_one(TabbedContent)
        await pilot.press("2")
        screen.query_one(DiffView).focus()
        await pilot.pause()
        for key, pane in (("1", "events"), ("2", "diff"), ("3", "flow"), ("1", "events")):
            await pilot.press(key)
            await pilot.pause()
            assert tabs.active == pane, (key, tabs.active)


async def test_the_flowchart_cursor_follows_the_journal_and_back(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        app.open_run("refund-a1002")
        await settle(pilot)
        screen = app.screen
        await pilot.press("w")
        journal = screen.query_one(JournalList)
        flowchart = screen.query_one(FlowchartView)
        journal.cursor = 3  # tool:call_0_0
        await pilot.pause()
        assert flowchart.chart.record_for_row(flowchart.cursor_row) == 3
        flowchart.focus()
        await pilot.press("j", "j", "j", "j")
        await pilot.pause()
        assert journal.cursor == flowchart.chart.record_for_row(flowchart.cursor_row) != 3


def state_of(app: AgentTuiApp, run_id: str) -> RunState | None:
    row = next((r for r in screen_of(app, RunsScreen).table.items if r.run_id == run_id), None)
    return row.status.state if row is not None and row.status is not None else None


async def act(pilot: Pilot[Any], run_id: str, key: str, *, choose: int | None = None) -> None:
    """Select ``run_id`` in the runs list, press ``key``, pick a choice, confirm with y."""
    screen = screen_of(pilot.app, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.press(key)
    if choose is not None:
        await wait_for_screen(pilot, ChoiceDialog)
        for _ in range(choose):
            await pilot.press("down")
        await pilot.press("enter")
    await wait_for_screen(pilot, ConfirmDialog)
    await pilot.press("w")
    await settle(pilot)


async def test_approve_writes_once_and_the_status_changes_on_screen(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = await names(demo_db, "refund-a1005")
        await act(pilot, "refund-a1005", "a")
        assert await names(demo_db, "refund-a1005") == [*before, "approval:call_1_0"]
        await until(pilot, lambda: state_of(app, "refund-a1005") == RunState.READY, "the status to change on screen")
        await act(pilot, "refund-a1005", "o", choose=0)  # the only way on: re-drive? no agent: cancel is first
        assert (await names(demo_db, "refund-a1005"))[-1] == "run:cancelled"


async def test_deny_writes_the_decision(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await act(pilot, "refund-a1005", "x")
    # The decision alone, as the SDK's Approve writes it: the next drive records the denial.
    assert (await names(demo_db, "refund-a1005"))[-2:] == ["@llm/1", "approval:call_1_0"]


async def test_cancelling_the_confirmation_writes_nothing(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1005")
        await pilot.press("a")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("n")
        await settle(pilot)
    assert demo_db.read_bytes() == before


async def test_answer_resolve_and_redrive(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # answer the question
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "question-a1001")
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("enter")  # "Answer the question"
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press(*"store credit", "enter")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        # Answered, the run is ready: with an agent given, a re-drive is offered at once; not now.
        await until(
            pilot,
            lambda: isinstance(app.screen, ConfirmDialog) and app.screen.lead.endswith("re-drive it now?"),
            "the offer",
        )
        await pilot.press("n")
        await settle(pilot)
        assert (await names(demo_db, "question-a1001"))[-1] == "interrupt:ask-call_1_0"
        # resolve the halt as "did not fire", then re-drive it to completion with the demo agent
        await act(pilot, "refund-a1004-halted", "o", choose=0)
        assert (await names(demo_db, "refund-a1004-halted"))[-1].startswith("attempt:not-started:")
        # Resolved: its approval stands, and nothing is open but the call to try again.
        await until(
            pilot, lambda: state_of(app, "refund-a1004-halted") == RunState.READY, "the halt to read as resolved"
        )
        await act(pilot, "refund-a1004-halted", "o", choose=0)  # re-drive
        await until(
            pilot, lambda: state_of(app, "refund-a1004-halted") == RunState.COMPLETE, "the run to show complete"
        )


async def test_a_run_leased_elsewhere_is_refused_naming_the_holder(demo_db: Path) -> None:
    from agenttui.runs.recovery.choices import choices_for

    other = await SQLiteStore.open(demo_db)
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = {r.run_id: r for r in screen_of(app, RunsScreen).table.items}
        stale = status_of(rows["refund-a1001-stalled"])
        assert stale.state == RunState.STALLED
        # Another driver takes the run after the screen read it: the write is refused all the same.
        await other.acquire_lease("refund-a1001-stalled", "worker-9#abc", ttl=120)
        fresh = await run_status(other, "refund-a1001-stalled")
        assert fresh.state == RunState.IN_FLIGHT and not [
            c for c, _ in choices_for(fresh, DEMO_AGENT, None) if c.startswith(("Cancel", "Re-drive"))
        ]
        app.operate(stale, "Cancel")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
        from agenttui.tui.screens.dialogs import ErrorDialog

        assert isinstance(app.screen, ErrorDialog) and "worker-9#abc" in app.screen._message
    await other.close()
    assert (await names(demo_db, "refund-a1001-stalled"))[-1] != "run:cancelled"


async def test_two_apps_racing_one_approval_write_once(demo_db: Path) -> None:
    one, two = AgentTuiApp(str(demo_db), tail=False), AgentTuiApp(str(demo_db), tail=False)
    async with one.run_test(size=SIZE) as p1, two.run_test(size=SIZE) as p2:
        await settle(p1)
        await settle(p2)
        for pilot in (p1, p2):
            screen = screen_of(pilot.app, RunsScreen)
            screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1005")
            await pilot.press("a")
            await wait_for_screen(pilot, ConfirmDialog)
        await asyncio.gather(p1.press("w"), p2.press("w"))
        await settle(p1)
        await settle(p2)
    assert (await names(demo_db, "refund-a1005")).count("approval:call_1_0") == 1


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(("agent", "code"), [(None, 0), (DEMO_AGENT, 0), (CHANGED_AGENT, 3)])
def test_cli_replay_exit_codes(demo_db: Path, agent: str | None, code: int) -> None:
    result = cli("replay", str(demo_db), "refund-a1002", *(["--agent", agent] if agent else []))
    assert result.returncode == code, result.stdout + result.stderr
    if code == 3:
        assert "diverged at record 3 (tool:call_0_0): different tool result" in result.stdout


def test_cli_recover_names_each_run_that_paused_again(demo_db: Path) -> None:
    result = cli("recover", str(demo_db), "--agent", DEMO_AGENT)
    assert result.returncode == 5, result.stderr  # the damaged run failed
    lines = result.stdout.splitlines()
    # First, the runs whose drive runs a tool before the model is asked again, each with its call.
    assert lines[:2] == [
        "runs a tool first in 3 runs:",
        "  question-a1001: ask_customer (call_1_0) RUNS; then the model's turn @llm/2",
    ]
    lines = lines[lines.index("recovered 6 runs (5 paused again), skipped 3, 1 errors") :]
    # The approved run goes on to its end; the saga asked to roll back, the run never started and
    # the one another worker drives are left alone; the damaged run is an error.
    assert "  paused: run 'refund-a1001-stalled': refund_payment call 'call_1_0' awaits approval" in lines[1:], lines
    assert any(
        line.startswith("  error lookup-a1001-damaged: run 'lookup-a1001-damaged' holds an unreadable")
        for line in lines
    ), lines
    assert any(line.startswith("  skipped saga-a1003-cancelling: ") for line in lines), lines


def test_cli_replay_json(demo_db: Path) -> None:
    import json

    result = cli("replay", str(demo_db), "refund-a1002", "--agent", CHANGED_AGENT, "--json")
    assert result.returncode == 3
    verdict = json.loads(result.stdout)
    assert (verdict["verdict"], verdict["exit_code"]) == ("diverged", 3)
    divergence = verdict["divergence"]
    assert {k: divergence[k] for k in ("index", "step", "state", "reason")} == {
        "index": 3,
        "step": "tool:call_0_0",
        "state": "changed",
        "reason": "different tool result",
    }
    # both sides in full
    assert divergence["recorded"]["name"] == divergence["replayed"]["name"] == "tool:call_0_0"
    assert divergence["recorded"]["result"] != divergence["replayed"]["result"]


async def test_pressing_approve_twice_writes_once(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stale = next(status_of(r) for r in screen_of(app, RunsScreen).table.items if r.run_id == "refund-a1005")
        await act(pilot, "refund-a1005", "a")
        app.operate(stale, "Approve")  # the same status again, as a second press before the refresh
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
    assert (await names(demo_db, "refund-a1005")).count("approval:call_1_0") == 1


async def test_resolve_as_fired_records_the_confirmed_result(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1004-halted")
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("down", "enter")  # "It fired: record its result"
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press(*'{"refund_id": "rf_manual"}', "enter")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
    store = await SQLiteStore.open(demo_db, read_only=True)
    record = await Journal(store).get("refund-a1004-halted", "tool:call_1_0")
    await store.close()
    assert record is not None and record.reconciled and record.result == b'{"refund_id":"rf_manual"}'


async def test_a_bad_result_is_asked_again_with_what_was_typed_and_why(demo_db: Path) -> None:
    from textual.widgets import Input

    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1004-halted")
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("down", "enter")  # "It fired: record its result"
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press(*'{"refund_id": rf_manual}', "enter")  # not JSON: the id unquoted
        # The operation's worker waits on the question again (settle would wait for it).
        await until(pilot, lambda: bool(app.screen.query("#prompt-problem")), "the question asked again")
        again = screen_of(app, PromptDialog)  # the same question, not an error over the runs list
        field = again.query_one(Input)
        assert field.value == '{"refund_id": rf_manual}'
        assert "not valid JSON" in str(again.query_one("#prompt-problem").render())
        field.value = '{"refund_id": "rf_manual"}'
        await pilot.press("enter")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
    store = await SQLiteStore.open(demo_db, read_only=True)
    record = await Journal(store).get("refund-a1004-halted", "tool:call_1_0")
    await store.close()
    assert record is not None and record.result == b'{"refund_id":"rf_manual"}'


async def test_recover_every_unfinished_run_with_progress(demo_db: Path) -> None:
    from agenttui.tui.screens.recover import RecoverProgress

    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await wait_for_screen(pilot, RecoverProgress)
        await settle(pilot)
        await until(pilot, lambda: screen_of(app, RecoverProgress)._done, "recover to finish")
        body = str(app.screen.query_one("#dialog-body").render())
        assert (
            "paused: run 'refund-a1001-stalled': refund_payment call 'call_1_0' awaits approval" in body
        )  # which, and why
        await pilot.press("escape")
        await until(
            pilot,
            lambda: state_of(app, "refund-a1001-stalled") == RunState.AWAITING_APPROVAL,
            "the stalled run to move on",
        )
    # The stalled run went on to its approval; the paused ones paused again; the halted one halted.
    assert "@llm/1" in await names(demo_db, "refund-a1001-stalled")


async def test_release_a_lapsed_lease(demo_db: Path) -> None:
    other = await SQLiteStore.open(demo_db)
    await other.acquire_lease("refund-a1001-stalled", "dead-worker#1", ttl=0.01)
    await other.close()
    await asyncio.sleep(0.05)  # the lease lapses on the store's clock
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        status = next(
            status_of(r) for r in screen_of(app, RunsScreen).table.items if r.run_id == "refund-a1001-stalled"
        )
        assert status.lease_lapsed
        app.operate(status, "Release")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
    store = await SQLiteStore.open(demo_db, read_only=True)
    assert await store.get_lease("refund-a1001-stalled") is None
    await store.close()


def test_an_events_line_for_a_turn_end_with_or_without_usage() -> None:
    """A model may report no usage: the line says less, and the events pane does not fail."""
    assert event_line(ModelEvent("r", 0, Finish("stop"))) == ("delta", "  finish stop")
    assert event_line(ModelEvent("r", 0, Finish("stop", Usage(3, 4)))) == ("delta", "  finish stop (3 in / 4 out)")


def visible_rows(flowchart: FlowchartView) -> range:
    top = round(flowchart.scroll_offset.y)
    return range(top, top + flowchart.scrollable_content_region.height)


async def test_the_replay_flowchart_highlights_the_turn_replayed_and_keeps_it_in_view(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_replay(pilot, "refund-a1002")
        await pilot.press("3")
        flowchart = screen.query_one(FlowchartView)
        for turn in (1, 2, 3):
            await pilot.press("n")
            await settle(pilot)
            chart = flowchart.chart
            assert chart.current_turn == turn - 1
            # The turn's nodes, drawn in the current role; the newest of them, selected, is in view.
            shown = chart.rows(0, chart.row_count, 80)
            current = [i for i, row in enumerate(shown) if any(span.role == Role.CURRENT for span in row)]
            assert current and min(current) > 2
            assert flowchart.cursor_row in visible_rows(flowchart)
            assert chart.record_for_row(flowchart.cursor_row) == len(screen.rows) - 1
            assert chart.end is not None and chart.end.label == f"replayed {turn} of 4 turns"
            assert chart.row_count - 1 in visible_rows(flowchart)  # and where the replay stands, under it
        await pilot.press("e")
        await settle(pilot)
        assert flowchart.chart.end == DONE
        assert flowchart.chart.row_count - 1 in visible_rows(flowchart)


async def test_a_halted_replay_ends_where_the_recording_stands(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_replay(pilot, "refund-a1004-halted")
        await pilot.press("3", "e")
        await settle(pilot)
        end = screen.query_one(FlowchartView).chart.end
        assert end is not None and end.label == "halted on refund_payment: outcome unknown" and end.failed


async def test_the_run_flowchart_ends_where_the_run_stands_and_shows_the_cursor_when_opened(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        app.open_run("refund-a1003-denied")
        await settle(pilot)
        screen = app.screen
        flowchart = screen.query_one(FlowchartView)
        assert flowchart.chart.end == DONE
        # The cursor moves to the end while another pane shows; the flowchart, shown, scrolls to it.
        await pilot.press("G")
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)
        assert flowchart.cursor_row in visible_rows(flowchart)
        assert flowchart.chart.row_count - 1 in visible_rows(flowchart)
        await pilot.press("escape")
        app.open_run("refund-a1004-halted")
        await settle(pilot)
        end = app.screen.query_one(FlowchartView).chart.end
        assert end is not None and end.kind == FlowKind.UNFINISHED and end.label.startswith("halted on refund_payment")


async def test_acting_on_a_run_whose_status_is_being_read_reads_it_then_acts(demo_db: Path) -> None:
    """The header may show a status the screen has not read yet (a long run's records come first):
    a key that acts on the run reads the status now and goes on, never "still being read"."""
    from agenttui.tui.screens.run import RunScreen

    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.open_run("refund-a1005")
        await wait_for_screen(pilot, RunScreen)
        await settle(pilot)
        run_screen = screen_of(app, RunScreen)
        run_screen.status = None  # as while its records are still being read
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)  # approve, deny...: the status was read, then acted on
        read = getattr(run_screen, "status")  # noqa: B009  (read anew: set to None just above)
        assert read is not None and read.state == RunState.AWAITING_APPROVAL
