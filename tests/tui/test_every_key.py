"""Every key a screen's footer offers does something a person sees, or says why it does not: the
runs list, a run, a replay (and a refused one), a diff, a comparison and help, walked key by key
with Pilot over the demo store."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input
from textual.widgets._footer import FooterKey  # not exported by textual.widgets; the pin holds it

from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.compare import CompareScreen
from agenttui.tui.screens.diff import DiffScreen
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.key_footer import KeyFooter
from tests.tui.conftest import notices, wait_for_screen

#: Wide, so the footer offers as many keys as it can.
SIZE = (200, 40)
NOT_PRESSED = {"quit"}
"""Quit ends the app (tests/tui/test_app.py proves it does)."""


async def calm(pilot: Pilot[Any]) -> None:
    """Let the workers a key started finish, but not those waiting on a dialog (a menu, a prompt)."""
    app = pilot.app
    for _ in range(20):
        busy = [w for w in app.workers if w.group != "tail" and not w.is_finished]
        if not busy:
            break
        try:
            await asyncio.wait_for(app.workers.wait_for_complete(busy), 0.5)
        except (TimeoutError, Exception):  # a worker waiting on a dialog, or one cancelled: enough
            break
    for _ in range(3):
        await pilot.pause()


async def select(pilot: Pilot[Any], run_id: str) -> RunsScreen:
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.pause()
    return screen


async def runs_list(pilot: Pilot[Any]) -> None:
    pass


async def run_screen(pilot: Pilot[Any]) -> None:
    await select(pilot, "refund-a1002")
    await pilot.press("enter")
    await wait_for_screen(pilot, RunScreen)


async def replay(pilot: Pilot[Any], run_id: str = "refund-a1002") -> None:
    await select(pilot, run_id)
    await pilot.press("enter")
    await wait_for_screen(pilot, RunScreen)
    await calm(pilot)
    await pilot.press("R")
    await wait_for_screen(pilot, ReplayScreen)


async def refused_replay(pilot: Pilot[Any]) -> None:
    await replay(pilot, "reply-a1006")


async def diff(pilot: Pilot[Any]) -> None:
    await pilot.press("U")  # no marks left from before
    await select(pilot, "refund-a1002")
    await pilot.press("m")
    await select(pilot, "refund-a1003-denied")
    await pilot.press("m", "d")
    await wait_for_screen(pilot, DiffScreen)


async def compare(pilot: Pilot[Any]) -> None:
    await pilot.press("U")
    await select(pilot, "refund-a1002")
    await pilot.press("m")
    await select(pilot, "refund-a1003-denied")
    await pilot.press("c")
    await wait_for_screen(pilot, CompareScreen)


async def help_screen(pilot: Pilot[Any]) -> None:
    await pilot.press("question_mark")
    await wait_for_screen(pilot, HelpScreen)


SCREENS: dict[str, tuple[Callable[[Pilot[Any]], Awaitable[None]], type[Screen[Any]]]] = {
    "runs list": (runs_list, RunsScreen),
    "run": (run_screen, RunScreen),
    "replay": (replay, ReplayScreen),
    "refused replay": (refused_replay, ReplayScreen),
    "diff": (diff, DiffScreen),
    "compare": (compare, CompareScreen),
    "help": (help_screen, HelpScreen),
}


def offered(screen: Screen[Any]) -> list[tuple[str, str]]:
    """The keys the footer shows, as (key, action); a modal with no footer (help), the keys it
    binds and shows."""
    footers = screen.query(KeyFooter)
    if footers:
        return [(key.key, key.action) for key in footers.first().query(FooterKey)]
    return [(b.key, b.action) for b in Binding.make_bindings(type(screen).BINDINGS) if b.show]


async def looks(pilot: Pilot[Any]) -> tuple[Screen[Any], int, str]:
    """What a person sees: the screen on top, what has the focus, and the screen's picture."""
    app = pilot.app
    for _ in range(20):
        try:
            return (app.screen, id(app.screen.focused), app.export_screenshot())
        except TypeError:  # a screen just pushed is not laid out yet
            await pilot.pause()
    raise AssertionError(f"{app.screen!r} never painted")


async def back_to_runs(pilot: Pilot[Any], escape: str = "escape") -> None:
    """Back to the runs list, by ``escape`` (the key that goes back, as bound), else by popping."""
    app = pilot.app
    for _ in range(8):
        if isinstance(app.screen, RunsScreen):
            return
        await pilot.press(escape)
        await calm(pilot)
    while not isinstance(app.screen, RunsScreen):
        app.pop_screen()
        await pilot.pause()


@pytest.mark.parametrize("name", list(SCREENS))
async def test_every_key_the_footer_offers_shows_something_or_says_why_not(demo_db: Path, name: str) -> None:
    reach, kind = SCREENS[name]
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await calm(pilot)
        await reach(pilot)
        await calm(pilot)
        keys = [(key, action) for key, action in offered(app.screen) if action not in NOT_PRESSED]
        assert keys, f"the {name} screen's footer offers no key"
        silent = []
        for key, action in keys:
            if not isinstance(app.screen, kind):  # the last key left it: back to it, afresh
                await back_to_runs(pilot)
                await reach(pilot)
                await calm(pilot)
            before, said = await looks(pilot), list(notices(app))
            await pilot.press(key)
            await calm(pilot)
            if await looks(pilot) == before and notices(app) == said:
                silent.append(f"{key} ({action})")
            if isinstance(app.screen.focused, Input):  # a prompt the key opened (t, u, /) closes again
                await pilot.press("escape")
                await calm(pilot)
            # A dialog or menu the key opened closes again: the next key is the screen's.
            for _ in range(3):
                if isinstance(app.screen, kind) or app.screen is before[0] or len(app.screen_stack) <= 1:
                    break
                if not app.screen.is_modal:
                    break
                await pilot.press("escape")
                await calm(pilot)
        assert silent == [], f"on the {name} screen these keys did nothing and said nothing: {silent}"


def footer_actions(screen: Screen[Any]) -> set[str]:
    return {action for _, action in offered(screen)}


async def test_a_replay_with_no_fork_hides_save_and_compare_and_says_why(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await calm(pilot)
        await replay(pilot)
        await calm(pilot)
        assert {"save_fork", "compare"}.isdisjoint(footer_actions(app.screen))
        await pilot.press("s")
        await pilot.press("c")
        await calm(pilot)
        said = notices(app)
        assert "no fork to save: f forks the replay at the step under the cursor" in said
        assert "no fork to compare: f forks the replay at the step under the cursor" in said
        assert isinstance(app.screen, ReplayScreen)


async def test_a_refused_replay_offers_no_move_and_says_why_when_one_is_pressed(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await calm(pilot)
        await refused_replay(pilot)
        await calm(pilot)
        screen = app.screen
        assert isinstance(screen, ReplayScreen) and screen.verdict is not None
        assert {"next_turn", "run_to_end", "back_turn"}.isdisjoint(footer_actions(screen))
        for key in ("n", "e", "b"):
            before = len(notices(app))
            await pilot.press(key)
            await calm(pilot)
            assert len(notices(app)) == before + 1 and notices(app)[-1].startswith("not replayed: "), key


async def test_the_replay_header_says_it_waits_for_a_key_not_that_it_runs(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await calm(pilot)
        await replay(pilot)
        await pilot.press("n")
        await calm(pilot)
        title = str(app.screen.query_one("#replay-title").render())
        assert "turn 1 of 4" in title and "running" not in title
        assert "waiting: n next turn, e to the end" in title


async def test_esc_clears_a_status_filter(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await calm(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        everything = len(screen.table.items)
        await pilot.press("s")
        await calm(pilot)
        assert screen.model.status_filter != 0 and len(screen.table.items) < everything
        await pilot.press("escape")
        await calm(pilot)
        assert screen.model.status_filter == 0 and len(screen.table.items) == everything
        assert notices(app)[-1] == "showing all runs"
