"""Long explanations at 80x24: wrapped at words on as many lines as the pane allows, only the last
line cut, and the whole text one key away (``W``): a fork's reason for stopping, an unreadable
run's header, the runs list's details, the help's status legend and the diff's header."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.diff import DiffScreen
from agenttui.tui.screens.explain import ExplanationScreen
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from tests.tui.conftest import screen_of, settle, wait_for_screen
from tests.tui.test_fork import FINE, back_to, open_editor, replace_text, replay_to_turn

NARROW = (80, 24)
Snap = Callable[..., bool]
REASON = "the recording cannot answer @llm/1: turn 1 is asked after call_0_0 (lookup_order) returned"


def rendered(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector).render())


async def forked(pilot: Pilot[Any]) -> ReplayScreen:
    """refund-a1002 forked at tool:call_0_0 with another result: the recording cannot answer on."""
    screen = await replay_to_turn(pilot, 2)
    editor = await open_editor(pilot, 3)
    await replace_text(pilot, editor, FINE)
    await pilot.press("ctrl+s")
    await settle(pilot)
    await back_to(pilot, screen)
    return screen


async def test_a_forks_reason_for_stopping_wraps_at_words_and_W_shows_it_whole(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        screen = await forked(pilot)
        session = screen.session
        assert session is not None and session.progress.reason.startswith(REASON)
        header = rendered(screen, "#replay-verdict")
        lines = header.splitlines()
        # Every word the header shows is a whole word of the reason, each line's start too.
        words = set(f"≠ the fork stopped: {session.progress.reason}".split())
        reason_lines = lines
        assert len(reason_lines) == 3 and reason_lines[-1].endswith("…"), header
        for line in reason_lines[:-1]:
            assert all(word in words for word in line.split()), line
        assert f"≠ the fork stopped: {REASON}" in header.replace("\n", " ")
        await pilot.press("W")
        await wait_for_screen(pilot, ExplanationScreen)
        assert session.progress.reason in rendered(app.screen, "#explain-text").replace("\n", " ")
        await pilot.press("escape")
        assert app.screen is screen


async def test_an_unreadable_runs_header_wraps_at_words(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        app.open_run("lookup-a1001-damaged")
        await settle(pilot)
        screen = screen_of(app, RunScreen)
        header = rendered(screen, "#run-title")
        # Whole, at words, on the lines it needs (it was cut mid-word on one line).
        assert "Unterminated string starting at: line 1 column 51 (char 50)" in header.replace("\n", " ")
        assert "…" not in header


async def test_W_on_the_runs_list_shows_the_detail_the_list_cuts(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1005-approved")
        await pilot.pause()
        await pilot.press("W")
        await wait_for_screen(pilot, ExplanationScreen)
        assert rendered(app.screen, "#explain-text") == "refund_payment (call_1_0) approved: re-drive to go on"


async def test_the_help_legend_never_parts_an_icon_from_its_word(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await wait_for_screen(pilot, HelpScreen)
        await pilot.pause()
        legend = rendered(app.screen, "#help-statuses").splitlines()
        assert len(legend) > 1
        for line in legend:
            assert line.split()[-1] not in "✓✗⊘⊖‼?…◷▷▶■○!", line  # a line never ends on an icon alone
        assert "⊘ cancelled" in " ".join(legend)


async def test_the_diff_header_wraps_between_its_items(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=NARROW) as pilot:
        await settle(pilot)
        app.push_screen(DiffScreen("refund-a1002", "refund-a1003-denied"))
        await wait_for_screen(pilot, DiffScreen)
        await settle(pilot)
        header = rendered(app.screen, "#diff-title")
        for item in (" same", " changed", " only left", " only right"):
            assert any(item in line for line in header.splitlines()), (item, header)
        assert all(not line.rstrip().endswith(("·", "only")) for line in header.splitlines()), header


# -- snapshots at 80x24 ------------------------------------------------------------------------


@pytest.fixture
def app(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> AgentTuiApp:
    monkeypatch.chdir(demo_db.parent)  # the status bar says demo.db, whatever tmp_path is
    return AgentTuiApp(demo_db.name, tail=False)


async def fork_stopped(pilot: Pilot[Any]) -> None:
    await forked(pilot)


async def unreadable_run(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    assert isinstance(pilot.app, AgentTuiApp)
    pilot.app.open_run("lookup-a1001-damaged")
    await settle(pilot)


async def whole_detail(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    screen = screen_of(pilot.app, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "refund-a1004-halted")
    await pilot.press("W")
    await wait_for_screen(pilot, ExplanationScreen)


async def help_legend(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.press("question_mark")
    await wait_for_screen(pilot, HelpScreen)
    await pilot.press("G")


async def diff_header(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    pilot.app.push_screen(DiffScreen("refund-a1002", "refund-a1003-denied"))
    await wait_for_screen(pilot, DiffScreen)
    await settle(pilot)


@pytest.mark.parametrize("view", [fork_stopped, unreadable_run, whole_detail, help_legend, diff_header],
                         ids=lambda view: view.__name__)  # fmt: skip
def test_snapshot_at_80x24(snap_compare: Snap, app: AgentTuiApp, view: Callable[..., Any]) -> None:
    assert snap_compare(app, terminal_size=NARROW, run_before=view)
