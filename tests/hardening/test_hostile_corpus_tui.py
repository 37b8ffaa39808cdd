"""The hostile corpus in the TUI: every store opens, every run of it opens in every pane and
replays, and nothing crashes the app or escapes its error hub as an unexpected error.

Errors the core means to show (a damaged page: ``Store error``) may open their dialog; an error of
any other kind (a ``TypeError`` from a value of the wrong type) is a bug the corpus found.
"""

from __future__ import annotations

import contextlib
import os
import pty
import select
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from textual.message import Message
from textual.pilot import Pilot
from textual.worker import Worker, WorkerState

from agenttui.errors import AgentTuiError
from agenttui.runs.statuses.state import RunState
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ErrorDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from tests.hardening.hostile_corpus import CorpusStore, build_postgres_schema
from tests.pg import PostgresCluster
from tests.tui.conftest import notices, screen_of, settle, status_of

SIZE = (110, 30)
SQLITE_STORES = ["escapes", "huge", "foreign", "legacy", "damaged-index", "damaged-data", "other-app"]


class FailedWorkers(list[BaseException]):
    """A ``message_hook`` noting the error of every worker that failed (on its way to the error hub)."""

    def __call__(self, message: Message) -> None:
        if not isinstance(message, Worker.StateChanged) or message.state != WorkerState.ERROR:
            return
        if message.worker.error is not None:
            self.append(message.worker.error)

    def unexpected(self) -> list[str]:
        """Failures the core did not mean to show: anything but an ``AgentTuiError``."""
        return [f"{type(error).__name__}: {error}" for error in self if not isinstance(error, AgentTuiError)]


def app_over(path: Path) -> AgentTuiApp:
    app = AgentTuiApp(str(path), tail=False)
    app.animation_level = "none"  # tab underlines slide; Pilot would wait for each
    return app


async def step(app: AgentTuiApp, pilot: Pilot[Any], key: str | None = None) -> bool:
    """Press ``key`` (None: nothing), wait for the app, close an error dialog it showed; False
    once the app is no longer running (an exception closed it: ``run_test`` raises it)."""
    if key is not None:
        await pilot.press(key)
    await settle(pilot)
    while app.is_running and isinstance(app.screen, ErrorDialog):
        app.pop_screen()
        await settle(pilot)
    return app.is_running


#: Runs of a damaged store replayed to their end (it lists the damaged one first): a replay is the
#: slowest thing to draw, and its other runs differ from these only in their ids.
REPLAYED_OF_DAMAGED = 3


async def browse(app: AgentTuiApp, pilot: Pilot[Any], run_ids: list[str], replayed: int | None = None) -> None:
    """Every run: opened, each pane shown (inspector, state at step, events, flowchart), replayed
    to its end (the first ``replayed`` runs, if given), and back to the runs list."""
    for n, run_id in enumerate(run_ids):
        app.open_run(run_id)
        if not await step(app, pilot):
            return
        if isinstance(app.screen, RunScreen):
            for key in ("G", "i", "c", "v", "w", "g", *("R" * (replayed is None or n < replayed))):
                if not await step(app, pilot, key):
                    return
        if isinstance(app.screen, ReplayScreen) and not await step(app, pilot, "e"):
            return
        while not isinstance(app.screen, RunsScreen):
            if not await step(app, pilot, "escape"):
                return


def listing(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


@pytest.mark.parametrize("name", SQLITE_STORES)
async def test_every_run_of_a_hostile_store_opens_in_every_pane(
    name: str, hostile_corpus: dict[str, CorpusStore], tmp_path: Path
) -> None:
    store = hostile_corpus[name]
    path = tmp_path / Path(store.url).name
    shutil.copy(store.url, path)
    before = listing(tmp_path)
    app, failed = app_over(path), FailedWorkers()
    async with app.run_test(size=SIZE, notifications=True, message_hook=failed) as pilot:
        await settle(pilot)
        if name == "other-app":  # no journal: the app says so in one line and exits
            assert app.return_code == 2 and app.failure and "\n" not in app.failure
            return
        listed = [row.run_id for row in screen_of(app, RunsScreen).table.items]
        assert set(store.runs) <= set(listed), (store.runs, listed, notices(app))
        run_ids = [*store.runs, *(run_id for run_id in listed if run_id not in store.runs)]
        await browse(app, pilot, run_ids, REPLAYED_OF_DAMAGED if name.startswith("damaged") else None)
    assert app.return_code in (None, 0) and not failed.unexpected(), failed.unexpected()
    assert listing(tmp_path) == before


async def test_a_damaged_index_page_hides_no_run_and_is_said(
    hostile_corpus: dict[str, CorpusStore], tmp_path: Path
) -> None:
    """The runs list read nothing (0 runs) when one page of the ``(run_id, seq)`` index was
    damaged: it lists every run, reads their statuses, and a notification says the store is damaged."""
    store = hostile_corpus["damaged-index"]
    path = tmp_path / "damaged-index.db"
    shutil.copy(store.url, path)
    app, failed = app_over(path), FailedWorkers()
    async with app.run_test(size=SIZE, notifications=True, message_hook=failed) as pilot:
        await settle(pilot)
        rows = screen_of(app, RunsScreen).table.items
        assert sorted(row.run_id for row in rows) == sorted(store.runs)
        assert {status_of(row).state for row in rows} == {RunState.COMPLETE}
        damaged = [notice for notice in notices(app) if "an index of bide_steps is damaged" in notice]
        assert len(damaged) == 1, notices(app)
    assert not failed


@pytest.mark.postgres
async def test_every_run_of_a_hostile_postgres_schema_opens_in_every_pane(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    store = await build_postgres_schema(postgres_cluster.dsn, "hostile_tui_" + uuid.uuid4().hex[:8])
    app, failed = AgentTuiApp(store.url, tail=False), FailedWorkers()
    app.animation_level = "none"
    async with app.run_test(size=SIZE, notifications=True, message_hook=failed) as pilot:
        await settle(pilot)
        listed = [row.run_id for row in screen_of(app, RunsScreen).table.items]
        assert sorted(listed) == sorted(store.runs), notices(app)
        await browse(app, pilot, store.runs)
    assert app.return_code in (None, 0) and not failed.unexpected(), failed.unexpected()


@pytest.mark.parametrize("name", ["foreign", "damaged-index"])
def test_the_real_entry_point_opens_the_tui_and_quits(
    name: str, hostile_corpus: dict[str, CorpusStore], tmp_path: Path
) -> None:
    """``python -m agenttui STORE`` on a terminal (a pseudo-terminal): the runs list draws, ``q``
    quits with exit 0, and nothing is left beside the store."""
    path = tmp_path / Path(hostile_corpus[name].url).name
    shutil.copy(hostile_corpus[name].url, path)
    before = listing(tmp_path)
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "AGENTTUI_DEBUG"} | {"TERM": "xterm-256color"}
    process = subprocess.Popen(
        [sys.executable, "-m", "agenttui", str(path)],
        stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    drawn = b""
    try:
        deadline = time.monotonic() + 60
        # The runs list has drawn once the footer shows the quit key and a run's status.
        while b"complete" not in drawn and time.monotonic() < deadline and process.poll() is None:
            if select.select([leader], [], [], 0.5)[0]:
                drawn += os.read(leader, 65536)
        os.write(leader, b"q")
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                with contextlib.suppress(OSError):  # the terminal closes with the process
                    drawn += os.read(leader, 65536)
        assert process.wait(timeout=10) == 0, drawn[-2000:]
    finally:
        if process.poll() is None:
            process.kill()
        os.close(leader)
    assert b"complete" in drawn and b"Traceback" not in drawn
    assert listing(tmp_path) == before
