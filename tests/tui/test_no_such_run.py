"""A run that is not in the store: ``--run`` refuses it as every command does, and a replay of a
run with no records says so instead of waiting for ever."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from textual.widgets import ProgressBar

from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ErrorDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from tests.tui.conftest import screen_of, settle, wait_for_screen


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=60
    )


def test_run_naming_no_run_exits_as_the_cli_does_before_the_tui_opens(demo_db: Path) -> None:
    opened = cli(str(demo_db), "--run", "nope")
    replayed = cli("replay", str(demo_db), "nope")
    assert (opened.returncode, opened.stderr) == (1, "agenttui: no run 'nope' in this store\n")
    assert (replayed.returncode, replayed.stderr) == (opened.returncode, opened.stderr)
    assert opened.stdout == ""  # the terminal never switched to the app's screen


async def test_replaying_a_run_with_no_records_says_so_and_never_waits(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        app.open_run("vanished")  # as a run deleted from under a list that still showed it
        await settle(pilot)
        screen_of(app, RunScreen)
        await pilot.press("R")
        await wait_for_screen(pilot, ErrorDialog)
        await settle(pilot)
        assert "no run 'vanished' in this store" in str(screen_of(app, ErrorDialog).query_one("#dialog-body").render())
        await pilot.press("escape")  # said once: one dialog
        await settle(pilot)
        replay = screen_of(app, ReplayScreen)
        assert not replay.query_one(ProgressBar).display  # no bar that waits for ever
        assert "not replayed: no run 'vanished' in this store" in str(replay.query_one("#replay-title").render())
