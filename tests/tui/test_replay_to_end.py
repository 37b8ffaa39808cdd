"""Replay to the end in the TUI: the verdict the CLI gives, drawn a frame at a time, not a turn at a time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.widgets import Static

from agenttui.replay.verdict import VerdictKind
from agenttui.runs.statuses.status import RunState
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens import replay as replay_screen
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.widgets.events_view import EventsView
from agenttui.tui.widgets.journal_list import JournalList
from tests.gocorpus import COMPLETE, DIGESTS, MODEL, GoRun, call, final_turn, model, result, start, text
from tests.tui.conftest import settle, until

TURNS = 150
RUN_ID = "go-audit-long"


def long_audit() -> GoRun:
    """A Go run of ``TURNS`` lookups, a read-only call a turn, then an answer: as the SDK writes it."""
    records = [start('"Audit every open order, one lookup per turn."', ',"kind":"agent"')]
    for n in range(TURNS):
        call_id = f"toolu_{n:04d}"
        usage = f'"usage":{{"input_tokens":{100 + n},"output_tokens":9}},"finish":"tool_use",{MODEL},{DIGESTS}'
        records.append(model(n, text(f"Order {n}.") + "," + call(call_id, "lookup_order", f'{{"n":{n}}}'), usage))
        records.append(result(call_id, f'{{"order":{n},"state":"open"}}', ',"safety":{"read_only":true}'))
    records += [final_turn(TURNS, "Every order audited."), COMPLETE]
    return GoRun(RUN_ID, records, RunState.COMPLETE, VerdictKind.MATCHES, [])


@pytest.fixture
def long_run_db(tmp_path: Path) -> Path:
    import asyncio

    async def write(path: Path) -> None:
        store = await SQLiteStore.open(path)
        try:
            for name, data in long_audit().entries():
                assert (await store.insert(RUN_ID, name, data)).won
        finally:
            await store.close()

    path = tmp_path / "long.db"
    asyncio.run(write(path))
    return path


def cli_verdict(path: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "agenttui", "replay", str(path), RUN_ID, "--json"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


#: What redraws the replay screen while it moves: a turn's move, a frame of a run to the end, events.
SCREEN_UPDATES = (ReplayScreen.Advanced, ReplayScreen.Frame, ReplayScreen.EventsEmitted)


async def test_e_on_a_long_replay_gives_the_cli_verdict_in_a_bounded_number_of_updates(
    long_run_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No frame falls due on the way: whatever the machine's speed, the screen is updated only
    # when the replay stops (each turn used to post its events and its move: 300 updates here).
    monkeypatch.setattr(replay_screen, "FRAME_SECONDS", 3600.0)
    expected = cli_verdict(long_run_db)
    updates: list[Message] = []
    counting = False

    def hook(message: Message) -> None:
        if counting and isinstance(message, SCREEN_UPDATES) and all(message is not seen for seen in updates):
            updates.append(message)  # once, though a message that bubbles is handed on to the app

    app = AgentTuiApp(str(long_run_db), tail=False)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        app.open_run(RUN_ID)
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.session is not None
        counting = True
        await pilot.press("e")
        await until(pilot, lambda: screen.verdict is not None, "the verdict", turns=2400)
        await settle(pilot)
        counting = False

        verdict = screen.verdict
        assert verdict is not None
        assert (verdict.kind.value, verdict.summary()) == (expected["verdict"], expected["summary"])
        assert screen.session.progress.turn == expected["turns"] == TURNS + 1
        shown = str(screen.query_one("#replay-verdict", Static).render())
        assert verdict.summary() in shown
        # The end state is whole: every record replayed listed, every event shown.
        assert len(screen.query_one(JournalList).items) == len(long_audit().entries())
        kinds = [kind for kind, _ in screen.query_one(EventsView).items]
        assert kinds.count("turn") == 2 * (TURNS + 1) and kinds[-1] == "finished"
    assert len(updates) <= 3, f"{len(updates)} screen updates for one run to the end"


async def test_a_run_to_end_shows_its_progress_a_frame_at_a_time(
    long_run_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With frames due as often as a turn ends, each is one message: progress on the way, then the end."""
    app = AgentTuiApp(str(long_run_db), tail=False)
    frames: list[ReplayScreen.Frame] = []

    def hook(message: Message) -> None:
        if isinstance(message, ReplayScreen.Frame) and all(message is not seen for seen in frames):
            frames.append(message)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        app.open_run(RUN_ID)
        await settle(pilot)
        await pilot.press("R")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        monkeypatch.setattr(replay_screen, "FRAME_SECONDS", 0.0)
        await pilot.press("e")
        await until(pilot, lambda: screen.verdict is not None, "the verdict", turns=2400)
        await settle(pilot)
        turns = [frame.turn for frame in frames]
        assert turns == sorted(turns) and turns[-1] == TURNS + 1 and len(turns) > 2
        # Frames carry each event once, in order: together, every event of the replay.
        assert sum(len(frame.events) for frame in frames) == len(screen.query_one(EventsView).items)
