"""Dialogs that inform, driven with Pilot at 80x24 over the demo store: the CLI command on one
line that ``y`` copies, the question an answer answers, what recover-all will touch, and the
re-drive offered once a decision or an answer is written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static

from agenttui.journal import Journal, Record, StepKind
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import CommandLine, ConfirmDialog, PromptDialog
from agenttui.tui.screens.recover import RecoverProgress
from agenttui.tui.screens.runs import RunsScreen
from tests.tui.conftest import notices, screen_of, settle, until, wait_for_screen

SIZE = (80, 24)
DEMO_AGENT = "agenttui.demo.build:factory"


async def names(path: Path, run_id: str) -> list[str]:
    store = await SQLiteStore.open(path, read_only=True)
    try:
        return [r.name for r in await Journal(store).history(run_id)]
    finally:
        await store.close()


async def press_on(pilot: Pilot[Any], run_id: str, *keys: str) -> None:
    screen = screen_of(pilot.app, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.press(*keys)


def text_of(app: AgentTuiApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def offered_redrive(pilot: Pilot[Any]) -> ConfirmDialog:
    await until(
        pilot,
        lambda: isinstance(pilot.app.screen, ConfirmDialog) and pilot.app.screen.lead.endswith("re-drive it now?"),
        "the re-drive offer",
    )
    return screen_of(pilot.app, ConfirmDialog)


async def test_the_command_stays_on_one_line_and_y_copies_it(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await press_on(pilot, "question-a1001", "o", "enter")
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press(*"store credit for the walnut lamp, please", "enter")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.pause()
        dialog = screen_of(app, ConfirmDialog)
        line = dialog.query_one(CommandLine)
        command = dialog.command
        assert command.startswith(f"agenttui answer {demo_db} question-a1001 ask-call_1_0 ")
        # Wider than an 80-column dialog, and still one line: it scrolls sideways instead of wrapping.
        assert len(command) > line.region.width
        assert line.virtual_size.width >= len(command) and line.query_one("#command-text").region.height == 1
        await pilot.press("right", "right")
        await pilot.pause()
        assert line.scroll_x == 16
        await pilot.press("y")  # copies: never the write it would be in a yes/no dialog
        await pilot.pause()
        assert app.clipboard == command
        assert f"copied the command: {len(command):,} characters (OSC 52)" in notices(app)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")
        await settle(pilot)
    assert demo_db.read_bytes() == before


async def test_a_command_quoting_control_characters_is_not_copied(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.push_screen(ConfirmDialog("Cancel", "run:cancelled", "agenttui cancel demo.db 'run\x1b[2J'"))
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("y")
        await pilot.pause()
        assert app.clipboard == ""
        assert any(n.startswith("not copied") for n in notices(app))


async def test_the_answer_dialog_shows_the_question_and_the_call(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_on(pilot, "question-a1001", "o", "enter")
        await wait_for_screen(pilot, PromptDialog)
        await pilot.pause()
        body = text_of(app, "#dialog-body")
        assert "ask_customer (call_1_0) asks for an answer to ask-call_1_0." in body
        assert "The question: Refund to your card, or as store credit?" in body
        assert "The agent said: Before I refund: card or store credit?" in body
        assert 'The call\'s arguments: {"question":"Refund to your card, or as store credit?"}' in body
        assert "interrupt:ask-call_1_0" in body
        await pilot.press("escape")
        await settle(pilot)


async def test_recover_all_previews_the_runs_it_will_touch_and_touches_only_those(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("R")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.pause()
        body = text_of(app, "#dialog-body").splitlines()
        assert body[1] == "re-drives 6 unfinished runs, each under its lease:"
        counts = {line.split()[1]: (int(line.split()[0]), line.split()[2]) for line in body[2:8]}
        assert counts == {
            "ready": (1, "refund-a1005-approved"),
            "stalled": (1, "refund-a1001-stalled"),
            "halted": (1, "refund-a1004-halted"),
            "awaiting-approval": (1, "refund-a1005"),
            "awaiting-input": (1, "question-a1001"),
            "sleeping": (1, "settlement-a1002"),
        }
        assert body[8] == "leaves alone 4: 1 unreadable, 1 in-flight, 1 not-started, 1 cancelling"
        assert body[9] == "  unreadable, which a drive refuses: lookup-a1001-damaged"
        # A run that turns up after the preview is not the pass's to touch: it waits for the next.
        writer = await SQLiteStore.open(demo_db)
        await Journal(writer).append("late-arrival", Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}'))
        await writer.close()
        await pilot.press("w")
        await wait_for_screen(pilot, RecoverProgress)
        await until(pilot, lambda: screen_of(app, RecoverProgress)._done, "recover to finish")
        assert text_of(app, "#dialog-body").startswith("recovered 6 runs (5 paused again), skipped 0, 0 errors")
        await pilot.press("escape")
        await settle(pilot)
    assert await names(demo_db, "late-arrival") == ["@journal", "run:start"]
    assert "@llm/1" in await names(demo_db, "refund-a1001-stalled")


async def test_after_an_approval_a_redrive_is_offered_and_drives_the_run(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_on(pilot, "refund-a1005", "a")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        offer = await offered_redrive(pilot)
        assert offer.lead.startswith("approved: wrote approval:call_1_0.")
        assert offer.command.startswith(f"agenttui redrive {demo_db} refund-a1005 --agent {DEMO_AGENT}")
        await pilot.press("w")
        await settle(pilot)
    assert (await names(demo_db, "refund-a1005"))[-1] == "run:complete"


async def test_after_a_denial_the_offer_can_be_declined(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await press_on(pilot, "refund-a1005", "x")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await offered_redrive(pilot)
        await pilot.press("n")
        await settle(pilot)
    assert (await names(demo_db, "refund-a1005"))[-1] == "approval:call_1_0"  # the decision alone


async def test_without_an_agent_a_decision_says_how_to_go_on(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await press_on(pilot, "refund-a1005", "a")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("w")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmDialog)
        assert any("refund-a1005 is ready: re-drive it" in n for n in notices(app))
