"""The one confirmation before a write, driven with Pilot over the demo store at 80x24: every write
to one run shows what its step is (the tool, its arguments in full, the turn that asked for it, why
the run waits), what it writes and the command; its body scrolls and its buttons stay in view; a
cancel asks for its reason, recorded in run:cancelled, in the bulk confirmation too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static

from agenttui.journal import Journal, keys
from agenttui.runs.statuses.status import run_status
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.bulk import BulkConfirm
from agenttui.tui.screens.dialogs import CommandLine, ConfirmDialog
from agenttui.tui.screens.runs import RunsScreen
from tests.tui.conftest import notices, screen_of, settle, wait_for_screen
from tests.tui.test_incident import confirmed_cancel, finished, mark_refunds, store_path

__all__ = ["store_path"]  # the incident's store, a fixture of this module's too

SIZE = (80, 24)
DEMO_AGENT = "agenttui.demo.build:factory"


def text_of(dialog: ConfirmDialog, selector: str) -> str:
    return str(dialog.query_one(selector, Static).render())


async def confirmation(pilot: Pilot[Any], run_id: str, pick: str) -> ConfirmDialog:
    """The confirmation of the operation of ``run_id`` whose label starts with ``pick``."""
    app = pilot.app
    assert isinstance(app, AgentTuiApp) and app.store is not None
    app.operate(await run_status(app.store, run_id), pick)
    await wait_for_screen(pilot, ConfirmDialog)
    await pilot.pause()
    return screen_of(app, ConfirmDialog)


async def cancel_record(path: Path, run_id: str) -> object:
    store = await SQLiteStore.open(path, read_only=True)
    try:
        records = await Journal(store).history(run_id)
    finally:
        await store.close()
    cancelled = next(r for r in records if r.name == keys.RUN_CANCELLED)
    assert cancelled.result is not None
    return json.loads(cancelled.result)


def buttons_in_view(dialog: ConfirmDialog | BulkConfirm, size: tuple[int, int]) -> None:
    """Both buttons drawn on the screen, inside the dialog's border (a dialog taller than the
    screen clips its last rows: the buttons)."""
    inside = dialog.query_one("#dialog").region.bottom - 1
    for button in dialog.query(Button):
        assert 0 < button.region.bottom <= min(size[1], inside) and button.region.height == 1, button.label


async def test_the_approval_says_what_is_approved_the_tool_its_arguments_the_turn_and_why(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dialog = await confirmation(pilot, "refund-a1005", "Approve")
        assert dialog.step is not None and dialog.step.tool_name == "refund_payment"
        title = text_of(dialog, "#dialog-title")
        assert title == "Approve refund_payment call call_1_0 of run refund-a1005"
        step = text_of(dialog, "#confirm-step")
        assert "Why it waits: run:start's policy gates refund_payment" in step
        assert "The call: refund_payment (call_1_0), asked in @llm/1:" in step
        assert '"amount": 64.1' in step  # the refund's amount, pretty, in full
        assert "The model said in @llm/1:\n  The order qualifies. Refunding $64.10." in step
        assert text_of(dialog, "#dialog-body") == "Will write:\napproval:call_1_0  approval  approved=true"
        assert dialog.command == f"agenttui approve {demo_db} refund-a1005 call_1_0"
        # At 80x24 the body scrolls (j) and what will be written, the command and the buttons stay.
        body = dialog.query_one("#confirm-body")
        assert body.max_scroll_y > 0
        await pilot.press("j", "j")
        assert body.scroll_y == 2
        buttons_in_view(dialog, SIZE)
        assert dialog.query_one("#dialog-body").region.bottom < dialog.query_one(CommandLine).region.y
        await pilot.press("y")
        await pilot.pause()
        assert app.clipboard == dialog.command
        await pilot.press("n")
        await settle(pilot)


@pytest.mark.parametrize(
    ("run_id", "pick", "tool", "why"),
    [
        ("refund-a1005", "Deny", "refund_payment", "Why it waits: run:start's policy gates refund_payment"),
        ("refund-a1004-halted", "It did not fire", "refund_payment", "Why it waits: outcome unknown: an attempt"),
        ("refund-a1001-stalled", "Cancel", "", "Why it waits: stalled: its driver stopped between steps"),
        ("refund-a1005-approved", "Re-drive", "refund_payment", "Why it waits: ready: refund_payment (call_1_0)"),
        ("refund-a1005-approved", "Release", "", ""),
    ],
)
async def test_every_write_to_one_run_shows_its_step(
    demo_db: Path, run_id: str, pick: str, tool: str, why: str
) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.store is not None
        if pick == "Release":
            # A lapsed lease: a driver died holding it.
            writer = await SQLiteStore.open(demo_db)
            assert await writer.acquire_lease(run_id, "dead-driver", ttl=-60)
            await writer.close()
        dialog = await confirmation(pilot, run_id, pick)
        step = text_of(dialog, "#confirm-step")
        assert why in step
        assert (f"The call: {tool} (call_1_0)" in step) == bool(tool)
        assert text_of(dialog, "#dialog-body").startswith("Will write:\n")
        buttons_in_view(dialog, SIZE)
        await pilot.press("n")
        await settle(pilot)


async def test_the_cancel_dialog_asks_for_a_reason_and_records_it(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dialog = await confirmation(pilot, "refund-a1001-stalled", "Cancel")
        assert [str(b.label) for b in dialog.query(Button)] == ["Write it (w)", "Back, write nothing (n)"]
        reason = dialog.query_one("#confirm-reason", Input)
        assert reason.value == "cancelled from agenttui"
        await pilot.press("tab")
        assert dialog.focused is reason
        await pilot.press("ctrl+u", *"duplicate of a1002 (q)", "enter")
        assert dialog.focused is dialog.query_one("#confirm-body")  # back where w, n and y answer
        assert dialog.command == f"agenttui cancel {demo_db} refund-a1001-stalled --reason 'duplicate of a1002 (q)'"
        assert dialog.query_one(CommandLine).command == dialog.command
        assert '{"reason": "duplicate of a1002 (q)"}' in text_of(dialog, "#dialog-body")
        buttons_in_view(dialog, SIZE)
        await pilot.press("w")
        await settle(pilot)
        assert isinstance(app.screen, RunsScreen)
    assert await cancel_record(demo_db, "refund-a1001-stalled") == {"reason": "duplicate of a1002 (q)"}


async def test_the_bulk_cancel_asks_for_a_reason_too(store_path: Path) -> None:
    path = store_path
    app = AgentTuiApp(path.name, tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await mark_refunds(pilot)
        dialog = await confirmed_cancel(pilot)
        await pilot.press("tab", "ctrl+u", *"card processor outage", "enter")
        assert dialog.command.endswith("--reason 'card processor outage' --yes")
        assert 'run:cancelled  value  {"reason": "card processor outage"}' in str(
            dialog.query_one("#bulk-preview", Static).render()
        )
        buttons_in_view(dialog, SIZE)
        await pilot.press("w")
        progress = await finished(pilot)
        assert progress.tally.done == 6
        assert not [n for n in notices(app) if "error" in n.lower()]
    assert await cancel_record(path, "refund-0") == {"reason": "card processor outage"}


async def test_the_answer_confirmation_keeps_its_buttons_in_view_with_its_command_scrolled(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.store is not None
        app.operate(await run_status(app.store, "question-a1001"), "Answer")
        await pilot.pause()
        await pilot.pause()
        await pilot.press(*"store credit for the walnut lamp, please", "enter")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("right")
        await pilot.pause()
        dialog = screen_of(app, ConfirmDialog)
        assert "The question: Refund to your card, or as store credit?" in text_of(dialog, "#confirm-step")
        buttons_in_view(dialog, SIZE)
        await pilot.press("n")
        await settle(pilot)


async def test_an_app_told_to_quit_mid_redrive_releases_the_runs_lease(demo_db: Path) -> None:
    """What a closed browser tab's app is told (and SIGTERM, SIGHUP): quit. A re-drive under way
    is cancelled and its lease released on the way out, not left to lapse."""
    import sqlite3

    def lease_holders() -> list[str]:
        with sqlite3.connect(f"file:{demo_db}?mode=ro", uri=True) as conn:
            return [
                row[0] for row in conn.execute("SELECT holder FROM bide_leases WHERE run_id = 'refund-a1001-stalled'")
            ]

    app = AgentTuiApp(str(demo_db), tail=False, agent_spec="tests.agent.slow_agent:factory")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await confirmation(pilot, "refund-a1001-stalled", "Re-drive")
        await pilot.press("w")
        for _ in range(600):  # the drive takes the lease, then waits on its slow model
            if lease_holders():
                break
            await pilot.pause(0.05)
        assert lease_holders()
        app.exit()
    assert lease_holders() == []


async def test_quitting_waits_for_a_cancelled_workers_cleanup(demo_db: Path) -> None:
    """Textual cancels workers on the way out without waiting for them; the app waits, bounded,
    so a cleanup that writes (a drive's lease release) lands before the app is gone."""
    import asyncio

    unwound: list[str] = []
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        started = asyncio.Event()

        async def holds_then_releases() -> None:
            try:
                started.set()
                await asyncio.Event().wait()
            finally:
                await asyncio.sleep(0.2)  # a release round trip slower than the way out
                unwound.append("released")

        app.run_worker(holds_then_releases(), group="test-cleanup")
        await started.wait()
        app.exit()
    assert unwound == ["released"]
