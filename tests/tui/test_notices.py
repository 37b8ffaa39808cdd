"""Notifications at 80x24 never cover what a person acts on: a dialog's buttons, the status bar,
the search's count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.errors import NoWidget
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Button
from textual.widgets._toast import Toast, ToastRack  # Textual exports neither; the pin holds them

from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ConfirmDialog
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.widgets.status_bar import StatusBar
from tests.tui.conftest import screen_of, settle, wait_for_screen

SIZE = (80, 24)
NOTICES = [
    ("the bundle was written whole: 1 run, 12 records", "Exported"),
    ("the store's file was replaced: reloaded from the new file", "Store"),
    ("a name is needed: nothing written", "Save"),
    ("the command copied to the clipboard", "Copied"),
    ("that run is not listed under the filter in force", "Filter"),
]


def toast_regions(rack: ToastRack) -> list[Region]:
    """Where toasts show on the screen: each one's region as the rack clips it (one scrolled out of
    it shows nowhere)."""
    shown = []
    for toast in rack.query(Toast):
        try:
            geometry = rack.screen.find_widget(toast)
        except NoWidget:
            continue
        shown.append(geometry.region.intersection(geometry.clip))
    return shown


async def shown(pilot: Pilot[Any]) -> None:
    """Wait until the toasts are mounted and laid out (a few turns of the loop)."""
    for _ in range(5):
        await pilot.pause()


def overlapping(toasts: list[Region], regions: list[Region]) -> list[tuple[Region, Region]]:
    return [(toast, region) for toast in toasts for region in regions if toast.overlaps(region)]


async def test_notices_cover_neither_a_dialogs_buttons_nor_the_status_bar(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        status_bar = app.screen.query_one(StatusBar).region
        app.push_screen(ConfirmDialog("Replace an existing file?", "/tmp/b.db\n(12 bytes) is replaced.",
                                      "agenttui export demo.db refund-a1002 -o /tmp/b.db --force",
                                      heading="The file:", yes="Replace (w)"))  # fmt: skip
        await wait_for_screen(pilot, ConfirmDialog)
        for message, title in NOTICES:
            app.notify(message, title=title, timeout=30)
        await shown(pilot)
        dialog = app.screen
        toasts = toast_regions(dialog.get_child_by_type(ToastRack))
        assert any(toasts), "no toast showed"
        buttons = [button.region for button in dialog.query(Button)]
        assert len(buttons) == 2 and all(buttons)
        assert overlapping(toasts, [*buttons, status_bar]) == []


async def test_notices_leave_the_search_count_readable(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        app.open_run("refund-a1002")
        await settle(pilot)
        screen = screen_of(app, RunScreen)
        await pilot.press("slash", *"refund", "enter")
        await settle(pilot)
        for message, title in NOTICES:
            app.notify(message, title=title, timeout=30)
        await shown(pilot)
        count = screen.query_one("#find-count").region
        assert count and "hit" in str(screen.query_one("#find-count").render())
        toasts = toast_regions(screen.get_child_by_type(ToastRack))
        assert any(toasts), "no toast showed"
        assert overlapping(toasts, [count, screen.query_one(StatusBar).region]) == []
