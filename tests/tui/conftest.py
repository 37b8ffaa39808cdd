"""TUI fixtures: a demo store built once by the runtime with a pinned clock, and app helpers."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
from textual import events
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen
from textual.worker import WorkerCancelled

from agenttui.demo.build import build_demo
from agenttui.runs.statuses.status import RunStatus
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.runs_model import RunRow

#: The demo's clock: far enough ahead that its sleeping run still sleeps whenever tests run.
FIXED_NOW = datetime(2031, 3, 14, 9, 26, tzinfo=UTC)
BULK_TURNS = 40


async def _build(path: Path) -> None:
    store = await SQLiteStore.open(path)
    try:
        await build_demo(store, bulk_turns=BULK_TURNS, clock=lambda: FIXED_NOW)
    finally:
        await store.close()


@pytest.fixture(scope="session")
def demo_db_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    asyncio.run(_build(path))
    return path


@pytest.fixture
def demo_db(demo_db_template: Path, tmp_path: Path) -> Path:
    """A private copy of the demo store (tests may write to it)."""
    path = tmp_path / "demo.db"
    shutil.copy(demo_db_template, path)
    return path


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until every worker but the endless change feed is done, and the screen has caught up."""
    app = pilot.app
    for _ in range(50):
        busy = [w for w in app.workers if w.group != "tail" and not w.is_finished]
        if not busy:
            # A message still queued may start the next worker (the last batch of run ids listed,
            # then its statuses read): done only when a turn of the loop starts none.
            await pilot.pause()
            if not [w for w in app.workers if w.group != "tail" and not w.is_finished]:
                break
            continue
        try:
            await app.workers.wait_for_complete(busy)
        except WorkerCancelled:
            pass  # an exclusive worker a newer one replaced (a pane reading for a cursor that moved on)
        await pilot.pause()
    await pilot.pause()


async def wait_for_screen(pilot: Pilot[Any], screen_type: type) -> None:
    """Wait (bounded, by message-loop turns, not wall time) until the app shows ``screen_type``."""
    for _ in range(200):
        if isinstance(pilot.app.screen, screen_type):
            return
        await pilot.pause()
    raise AssertionError(f"{screen_type.__name__} never showed; the screen is {pilot.app.screen!r}")


async def until(pilot: Pilot[Any], condition: Callable[[], object], what: str, turns: int = 600) -> None:
    """Wait, in bounded message-loop turns, for ``condition``: the app's own timers drive it."""
    for _ in range(turns):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def type_ahead(app: App[Any], keys: str) -> None:
    """Post ``keys`` at once, as a paste or a slow SSH link delivers them: no pause between."""
    for char in keys:
        key = {"/": "slash", "\r": "enter", "\x1b": "escape"}.get(char, char)
        app.post_message(events.Key(key, char))


ScreenT = TypeVar("ScreenT", bound=Screen[Any])


def notices(app: App[Any]) -> list[str]:
    """The notifications the app has shown and not yet expired (Textual lists them only privately)."""
    return [n.message for n in app._notifications]


def screen_of(app: App[Any], screen_type: type[ScreenT]) -> ScreenT:
    """The screen ``app`` shows, asserted to be a ``screen_type``: ``app.screen`` as the test knows it."""
    screen = app.screen
    assert isinstance(screen, screen_type), f"the screen is {screen!r}, not a {screen_type.__name__}"
    return screen


def status_of(row: RunRow) -> RunStatus:
    """A listed run's status, asserted computed: what a test reads once the app has settled."""
    assert row.status is not None, f"{row.run_id}'s status is still being computed"
    return row.status
