"""SVG snapshots of incident mode over a Go-shaped incident store (tests/incident.py): the marked
list, the marked runs' action menu, the confirmation and the final summary, at 80x24 and 120x40.

The store is named relative to tmp_path (the working directory), the app does not tail, every
``run_before`` waits for workers, and the progress dialog's clock is held still, so its runs a
second read the same on every run. Regenerate with ``--snapshot-update`` and look at each image.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agenttui.runs.recovery.operations import Resolve
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens import bulk
from agenttui.tui.screens.bulk import BulkConfirm, BulkMenu
from agenttui.tui.screens.dialogs import ChoiceList
from tests.incident import make_store
from tests.tui.conftest import screen_of, settle, wait_for_screen
from tests.tui.test_incident import finished

Snap = Callable[..., bool]
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AgentTuiApp:
    make_store(tmp_path / "incident.db")
    monkeypatch.chdir(tmp_path)
    ticks: Iterator[float] = iter([0.0])
    monkeypatch.setattr(bulk, "clock", lambda: next(ticks, 4.0))  # started at 0, every later look at 4 s
    return AgentTuiApp("incident.db", tail=False)


async def marked(pilot: Pilot[Any]) -> None:
    """The refunds and one run awaiting approval marked; the cursor on ship-0."""
    await settle(pilot)
    await pilot.press("slash", *"refund", "enter", "M", "escape")
    await settle(pilot)
    await pilot.press("g", "j", "j", "m", "G", "k")
    await settle(pilot)


async def menu(pilot: Pilot[Any]) -> None:
    await marked(pilot)
    await pilot.press("o")
    await wait_for_screen(pilot, BulkMenu)
    await pilot.pause()


async def confirmation(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.press("slash", *"refund", "enter", "M", "escape")
    await settle(pilot)
    await pilot.press("o")
    await wait_for_screen(pilot, BulkMenu)
    options = screen_of(pilot.app, BulkMenu)
    options.query_one(ChoiceList).highlighted = next(
        i for i, fit in enumerate(options.fitted) if fit.choice.label.startswith("Cancel")
    )
    await pilot.press("enter")
    await wait_for_screen(pilot, BulkConfirm)
    await pilot.pause()


async def summary(pilot: Pilot[Any]) -> None:
    """The summary of a cancel whose refund-3 someone resolved after the preview: skipped."""
    await confirmation(pilot)
    other = await SQLiteStore.open(Path("incident.db"))
    try:
        await Resolve("refund-3", "toolu_05", False).apply(other)
    finally:
        await other.close()
    await pilot.press("w")
    await finished(pilot)


def scene(steps: Callable[[Pilot[Any]], Awaitable[None]]) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await steps(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES)
def test_marked_runs(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=scene(marked))


@pytest.mark.parametrize("size", SIZES)
def test_marked_runs_menu(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=scene(menu))


@pytest.mark.parametrize("size", SIZES)
def test_bulk_confirmation(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=scene(confirmation))


@pytest.mark.parametrize("size", SIZES)
def test_bulk_summary(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=scene(summary))
