"""SVG snapshots of the real app over the demo store: every screen, pane and dialog at 120x36.

Deterministic by construction: the demo store is built with a pinned clock (tests/tui/conftest.py),
the app does not tail, every ``run_before`` waits for the app's workers instead of sleeping, and a
focused Input's cursor is frozen. The store is opened by a path relative to tmp_path (the working
directory during the test), so the status bar and a confirmation's command line say ``demo.db``
whatever tmp_path is.

Regenerate with ``python -m pytest tests/tui/test_snapshots.py --snapshot-update`` and look at
every image before accepting it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens import export
from agenttui.tui.screens.compare import CompareScreen
from agenttui.tui.screens.dialogs import ChoiceDialog, ConfirmDialog, PromptDialog
from agenttui.tui.screens.export import ExportDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from tests.tui.conftest import screen_of, settle, wait_for_screen

SIZE = (120, 36)
DEMO_AGENT = "agenttui.demo.build:factory"

Snap = Callable[..., bool]


@pytest.fixture
def app(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> AgentTuiApp:
    """The app on the demo store, named relative to the working directory.

    The app shows the store as it was given (status bar, a confirmation's command line), and
    tmp_path differs on every run: from inside it, the name is always ``demo.db``.
    """
    monkeypatch.chdir(demo_db.parent)
    return AgentTuiApp(demo_db.name, tail=False, agent_spec=DEMO_AGENT)


def freeze_cursors(pilot: Pilot[Any]) -> None:
    """No blinking cursor in a snapshot: stop every Input's blink on the screen shown."""
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False


async def select_run(pilot: Pilot[Any], run_id: str) -> None:
    """Move the runs list's cursor onto ``run_id`` with the keys a person would press."""
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    index = next(i for i, row in enumerate(screen.table.items) if row.run_id == run_id)
    await pilot.press("g", *["j"] * index)
    assert screen.table.current is not None and screen.table.current.run_id == run_id


async def open_run(pilot: Pilot[Any], run_id: str) -> RunScreen:
    await select_run(pilot, run_id)
    await pilot.press("enter")
    await wait_for_screen(pilot, RunScreen)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RunScreen) and screen.run_id == run_id
    return screen


async def on_record_3(pilot: Pilot[Any]) -> None:
    screen = await open_run(pilot, "refund-a1002")
    await pilot.press("j", "j", "j")
    await settle(pilot)
    assert screen.journal_list.cursor == 3


def then(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    """``run_before`` for refund-a1002's run screen on record 3, after pressing ``keys``."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await on_record_3(pilot)
        await pilot.press(*keys)
        await settle(pilot)

    return run_before


def test_runs_screen(snap_compare: Snap, app: AgentTuiApp) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        assert screen_of(pilot.app, RunsScreen).model.pending == 0

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_run_screen_inspector(snap_compare: Snap, app: AgentTuiApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=on_record_3)


def test_run_screen_state_at_step(snap_compare: Snap, app: AgentTuiApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=then("c"))


def test_run_screen_flowchart(snap_compare: Snap, app: AgentTuiApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=then("w"))


def test_help_screen(snap_compare: Snap, app: AgentTuiApp) -> None:
    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_command_palette(snap_compare: Snap, app: AgentTuiApp) -> None:
    """On refund-a1002's run screen, where the palette has replay actions to offer."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await on_record_3(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        freeze_cursors(pilot)
        await pilot.press(*"replay")
        await settle(pilot)  # the palette searches in a worker

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def replay_two_turns(*keys: str) -> Callable[[Pilot[Any]], Awaitable[None]]:
    async def run_before(pilot: Pilot[Any]) -> None:
        await open_run(pilot, "refund-a1002")
        await pilot.press("R")
        await wait_for_screen(pilot, ReplayScreen)
        await settle(pilot)
        for _ in range(2):
            await pilot.press("n")
            await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ReplayScreen) and screen.session is not None
        assert screen.session.progress.turn == 2
        await pilot.press(*keys)
        await settle(pilot)

    return run_before


def test_replay_events(snap_compare: Snap, app: AgentTuiApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=replay_two_turns())


def test_replay_diff(snap_compare: Snap, app: AgentTuiApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=replay_two_turns("2"))


def test_replay_flowchart(snap_compare: Snap, app: AgentTuiApp) -> None:
    assert snap_compare(app, terminal_size=SIZE, run_before=replay_two_turns("3"))


def test_confirm_approval(snap_compare: Snap, app: AgentTuiApp) -> None:
    """``a`` on a run awaiting approval: the dialog names what will be written, and the CLI twin."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await select_run(pilot, "refund-a1005")
        await pilot.press("a")
        # Not settle: the operate worker waits for this dialog's answer until the app exits.
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


NARROW = (80, 24)
CONFIRM_SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]


@pytest.mark.parametrize("size", CONFIRM_SIZES)
def test_confirm_approval_at(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    """``a`` on the run awaiting approval: the tool, the refund's arguments in full, the turn that
    asked for it and why it waits, above what will be written, the command and the buttons."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await select_run(pilot, "refund-a1005")
        await pilot.press("a")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", CONFIRM_SIZES)
def test_cancel_dialog_at(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    """Cancel on the stalled run, from the menu: why it waits, the reason as a field, and a
    dismiss button that says it writes nothing."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await select_run(pilot, "refund-a1001-stalled")
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("G", "enter")  # the last choice: cancel, with no agent and no lease
        await wait_for_screen(pilot, ConfirmDialog)
        freeze_cursors(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_answer_prompt_at_80x24(snap_compare: Snap, app: AgentTuiApp) -> None:
    """``o`` on the run awaiting input, then Answer: the question, the agent's words, the call."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await select_run(pilot, "question-a1001")
        await pilot.press("o", "enter")
        await wait_for_screen(pilot, PromptDialog)
        freeze_cursors(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_confirm_answer_at_80x24(snap_compare: Snap, app: AgentTuiApp) -> None:
    """The answer's confirmation: its command wider than the dialog stays on one line, scrolled."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await select_run(pilot, "question-a1001")
        await pilot.press("o", "enter")
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press(*"store credit for the walnut lamp, please", "enter")
        await wait_for_screen(pilot, ConfirmDialog)
        await pilot.press("right")
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_recover_preview_at_80x24(snap_compare: Snap, app: AgentTuiApp) -> None:
    """``R``: the runs recover will touch, by status, and those it leaves alone, before it asks."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("R")
        await wait_for_screen(pilot, ConfirmDialog)
        pilot.app.clear_notifications()  # "reading the unfinished runs…" lasts a wall-clock while
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_export_dialog_at_80x24(snap_compare: Snap, app: AgentTuiApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """``E`` on a run with a sub-run, a redaction typed: the choices of runs, the file in full,
    and the command that writes the same bundle."""
    # The file's default directory is the working directory, which is tmp_path here: fixed, so
    # the path the dialog shows in full is the same on every run.
    monkeypatch.setattr(export, "working_directory", lambda: Path("/home/you/bundles"))

    async def run_before(pilot: Pilot[Any]) -> None:
        await select_run(pilot, "eligibility-a1004")
        await pilot.press("E")
        await wait_for_screen(pilot, ExportDialog)
        await pilot.press("tab", "tab", "tab", "tab", *"card_number")
        freeze_cursors(pilot)
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


async def replay_halted_run_live_to_its_end(pilot: Pilot[Any]) -> None:
    """The halted run replayed with its side effects live (confirmed with w), run to its end."""
    await open_run(pilot, "refund-a1004-halted")
    await pilot.press("L")
    await wait_for_screen(pilot, ConfirmDialog)
    await pilot.press("w")
    await wait_for_screen(pilot, ReplayScreen)
    await settle(pilot)
    await pilot.press("e")
    await settle(pilot)


def test_divergence_with_your_agent(snap_compare: Snap, app: AgentTuiApp) -> None:
    """The halted run replayed with the demo's agent, its side effects live as a person confirmed:
    its refund runs for real (into the replay's own store), so it diverges, and the status bar says
    the replay is live."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await replay_halted_run_live_to_its_end(pilot)
        await pilot.press("2")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ReplayScreen) and screen.diff is not None
        assert screen.diff.first_divergence is not None

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


# -- the three screens at the sizes a terminal over SSH has: 80x24, 100x30, 160x48 -------------

#: At each, the run id, its status and what it waits on stay readable, the footer keeps the keys
#: that fit (``?`` always), and the headers and the filter are never pushed off (issue 15).
SIZES = [(80, 24), (100, 30), (160, 48)]


@pytest.mark.parametrize("size", SIZES, ids=lambda size: "{}x{}".format(*size))
def test_runs_screen_at(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    """With a status filter and a text filter set: the filter state shows at every width."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("s", "slash", *"a100", "enter")  # needs attention, and "a100" in the text
        await settle(pilot)
        freeze_cursors(pilot)
        pilot.app.clear_notifications()  # "showing needs attention runs" would go in 2 s: not in the picture

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: "{}x{}".format(*size))
def test_run_screen_at(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    """A run awaiting approval: its title names the call it waits on, whole."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await open_run(pilot, "refund-a1005")
        await pilot.press("j", "j", "j")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: "{}x{}".format(*size))
def test_replay_screen_at(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    """The halted run replayed with its side effects live, to its divergence: the title, the
    verdict and the status bar's LIVE warning all show whole."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await replay_halted_run_live_to_its_end(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ReplayScreen) and screen.verdict is not None

    assert snap_compare(app, terminal_size=size, run_before=run_before)


async def compare_refunds(pilot: Pilot[Any]) -> None:
    """refund-a1002 marked, compared with refund-a1003-denied (the cursor's): the first difference selected."""
    await select_run(pilot, "refund-a1002")
    await pilot.press("m")
    await select_run(pilot, "refund-a1003-denied")
    await pilot.press("c")
    await wait_for_screen(pilot, CompareScreen)
    await settle(pilot)
    pilot.app.clear_notifications()  # "marked: …" would still show
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
def test_compare_screen(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    """Interleaved at 80 columns, two columns at 160; the next difference selected."""

    async def run_before(pilot: Pilot[Any]) -> None:
        await compare_refunds(pilot)
        await pilot.press("n")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
