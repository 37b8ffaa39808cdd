"""What-if forks in the replay screen, driven with Pilot: the edit (checked inline), the fork it
replays, breakpoints set from the screen, and the source store untouched; snapshots at 80x24
and 160x48."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static, TextArea

from agenttui.replay.fork import ForkSession
from agenttui.replay.session import ReplayState
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import run_status
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ChoiceDialog
from agenttui.tui.screens.fork_editor import ForkEditor
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.widgets.diff_view import DiffView
from agenttui.tui.widgets.flowchart_view import FlowchartView
from tests.forks import APPROVED, APPROVED_REWORDED, save_as_before_the_mark, save_fork
from tests.tui.conftest import notices, screen_of, settle, status_of, type_ahead, wait_for_screen

RUN = "refund-a1002"
FINE = '{"order_id":"A-1002","status":"fine"}'
DEMO_AGENT = "agenttui.demo.build:factory"
Snap = Callable[..., bool]


async def replay_to_turn(pilot: Pilot[Any], turns: int, key: str = "R") -> ReplayScreen:
    assert isinstance(pilot.app, AgentTuiApp)
    await settle(pilot)
    pilot.app.open_run(RUN)
    await settle(pilot)
    await pilot.press(key)
    await settle(pilot)
    for _ in range(turns):
        await pilot.press("n")
        await settle(pilot)
    return screen_of(pilot.app, ReplayScreen)


async def open_editor(pilot: Pilot[Any], row: int) -> ForkEditor:
    """``f`` on journal row ``row`` (g, then j): the editor with the recorded value."""
    await pilot.press("g", *["j"] * row, "f")
    await wait_for_screen(pilot, ForkEditor)
    await pilot.pause()
    return screen_of(pilot.app, ForkEditor)


async def replace_text(pilot: Pilot[Any], editor: ForkEditor, text: str) -> None:
    """Select all (f7) and type ``text`` over it, as a person would."""
    await pilot.press("f7")
    type_ahead(pilot.app, text)
    await pilot.pause()
    assert editor.text == text


async def back_to(pilot: Pilot[Any], screen: ReplayScreen) -> None:
    """Back to the replay screen: a finished fork opens its comparison over it (esc leaves that)."""
    for _ in range(3):
        if pilot.app.screen is screen:
            return
        await pilot.press("escape")
        await settle(pilot)
    assert pilot.app.screen is screen


async def test_an_edit_is_checked_inline_then_forks_the_replay(demo_db: Path) -> None:
    before = demo_db.read_bytes()
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 2)
        editor = await open_editor(pilot, 3)  # tool:call_0_0
        assert '"status": "damaged"' in editor.text
        await replace_text(pilot, editor, '{"order_id": "A-1002", "status": ')
        await pilot.press("ctrl+s")
        await pilot.pause()
        error = editor.query_one("#fork-editor-error", Static)
        assert screen_of(app, ForkEditor) is editor and error.has_class("-error")
        assert "not valid JSON: Expecting value (line 1, column 34)" in str(error.render())
        await replace_text(pilot, editor, FINE)
        await pilot.press("ctrl+s")
        await settle(pilot)
        await back_to(pilot, screen)
        fork = screen.session
        assert isinstance(fork, ForkSession) and fork.edit.name == "tool:call_0_0"
        assert fork.progress.state == ReplayState.DIVERGED
        assert fork.progress.reason.startswith("the recording cannot answer @llm/1")
        assert [r.name for r in screen.rows][-1] == "tool:call_0_0"
        title = str(screen.query_one("#replay-title").render())
        assert "fork at tool:call_0_0" in title
        # The diff pane shows the fork against the run as recorded: the edit is where they part.
        first = [line.row.name for line in screen.query_one(DiffView).items if line.first and line.row]
        assert first == ["tool:call_0_0"]
        edited = next(i for i, r in enumerate(screen.rows) if r.name == "tool:call_0_0")
        assert edited in screen.query_one(FlowchartView).chart.changed  # the flowchart marks it too
    assert demo_db.read_bytes() == before  # a fork never writes its source


async def test_a_finished_fork_says_what_it_cost_against_the_recording(demo_db: Path) -> None:
    """The recording: 1,790 in, 600 cached, 282 out on claude-sonnet-4-5 = $0.00978; the fork
    stops after its first turn (380 in, 60 out = $0.00204): $0.00774 less."""
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 2)
        editor = await open_editor(pilot, 3)  # tool:call_0_0
        await replace_text(pilot, editor, FINE)
        await pilot.press("ctrl+s")
        await settle(pilot)
        await back_to(pilot, screen)
        await settle(pilot)
        title = str(screen.query_one("#replay-title").render())
        assert "cost $0.0098 recorded → $0.0020 forked (-$0.0077)" in title, title


async def test_saving_a_fork_into_the_store_asks_first_then_writes_a_new_run(demo_db: Path) -> None:
    from agenttui.journal import Journal
    from agenttui.stores.sqlite import SQLiteStore
    from agenttui.tui.screens.dialogs import ConfirmDialog

    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 4)
        editor = await open_editor(pilot, 10)  # @llm/3, the answer
        await replace_text(pilot, editor, '{"role":"assistant","parts":[{"type":"text","text":"Done."}]}')
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(screen.session, ForkSession) and screen.session.progress.state == ReplayState.FINISHED
        await back_to(pilot, screen)
        await pilot.press("s")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("j", "enter")  # as a new run in this store
        await wait_for_screen(pilot, ConfirmDialog)
        dialog = screen_of(app, ConfirmDialog)
        assert dialog.command.endswith("--set - --save") and f"{RUN}~fork-1" in str(
            dialog.query_one("#dialog-body", Static).render()
        )
        await pilot.press("w")
        await settle(pilot)
    store = await SQLiteStore.open(demo_db, read_only=True)
    try:
        saved = await Journal(store).history(f"{RUN}~fork-1")
        assert [r.name for r in saved][-3:] == ["@llm/3", "run:complete", "fork:origin"]
        assert saved[-3].message is not None and saved[-3].message.text == "Done."
        assert (await run_status(store, f"{RUN}~fork-1")).state == RunState.FORK
    finally:
        await store.close()


async def test_the_runs_list_shows_a_saved_fork_as_one_and_offers_nothing_to_do(demo_db: Path) -> None:
    from agenttui.stores.sqlite import SQLiteStore
    from agenttui.tui.screens.help import HelpScreen
    from agenttui.tui.screens.runs import RunsScreen

    store = await SQLiteStore.open(demo_db)
    try:
        fork_id = await save_fork(store, APPROVED, APPROVED_REWORDED)
        await save_as_before_the_mark(store, APPROVED, APPROVED_REWORDED, "old-fork")
    finally:
        await store.close()
    before = demo_db.read_bytes()
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        rows = {row.run_id: row for row in screen.table.items}
        for run_id in (fork_id, "old-fork"):
            status = status_of(rows[run_id])
            assert (status.state, status.fork_of) == (RunState.FORK, APPROVED), run_id
        assert status_of(rows[APPROVED]).state == RunState.READY  # the run forked reads as before
        assert screen.model.counts()[RunState.FORK] == 2
        screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == "old-fork")
        await pilot.press("o")  # act on it: nothing to re-drive, approve or cancel
        await settle(pilot)
        assert not isinstance(app.screen, ChoiceDialog)
        assert notices(app) == ["nothing to do for a fork run"]
        await pilot.press("question_mark")
        await wait_for_screen(pilot, HelpScreen)
        assert "⋔ fork" in str(app.screen.query_one("#help-statuses", Static).render())  # the legend names it
    assert demo_db.read_bytes() == before


async def test_ctrl_a_selects_the_whole_value_in_the_editor(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await replay_to_turn(pilot, 2)
        editor = await open_editor(pilot, 3)  # tool:call_0_0
        area = editor.query_one(TextArea)
        await pilot.press("down", "ctrl+a")
        assert area.selected_text == area.text != ""
        type_ahead(app, FINE)  # typed over the whole selection, as in any editor
        await pilot.pause()
        assert editor.text == FINE


async def test_esc_leaves_the_editor_and_nothing_is_forked(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 1)
        await open_editor(pilot, 2)  # @llm/0
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and not isinstance(screen.session, ForkSession)


async def test_a_fork_goes_live_when_asked(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec=DEMO_AGENT)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 4, key="Y")  # with the demo's agent, which has a model
        editor = await open_editor(pilot, 10)  # @llm/3, the answer
        await replace_text(pilot, editor, '{"role":"assistant","parts":[{"type":"text","text":"Done."}]}')
        await pilot.press("ctrl+s")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("j", "enter")  # go on live
        await settle(pilot)
        fork = screen.session
        assert isinstance(fork, ForkSession) and fork.live_model is not None
        assert fork.progress.state == ReplayState.FINISHED and fork.live_from is None  # the recording answered all


async def test_a_breakpoint_set_from_the_screen_stops_run_to_the_end(demo_db: Path) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 0)
        await pilot.press("u")
        type_ahead(app, "tokens>x\r")
        await settle(pilot)
        assert screen.breakpoints == [] and app.screen.focused is screen.query_one("#replay-until", Input)
        await pilot.press("escape")
        await pilot.press("u")
        type_ahead(app, "call:refund_payment amount=129\r")
        await settle(pilot)
        assert [b.text for b in screen.breakpoints] == ["call:refund_payment amount=129"]
        await pilot.press("e")
        await settle(pilot)
        session = screen.session
        assert session is not None and session.progress.breakpoint is not None and not session.done
        assert session.progress.turn == 2 and session.progress.breakpoint.why.startswith("turn 1 calls refund_payment")
        assert "until call:refund_payment amount=129" in str(screen.query_one("#replay-title").render())
        await pilot.press("u", "enter")  # an empty breakpoint clears them: e goes to the end
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert session.progress.state == ReplayState.FINISHED


# -- snapshots ---------------------------------------------------------------------------------


@pytest.fixture
def app(demo_db: Path, monkeypatch: pytest.MonkeyPatch) -> AgentTuiApp:
    monkeypatch.chdir(demo_db.parent)  # the status bar says demo.db, whatever tmp_path is
    return AgentTuiApp(demo_db.name, tail=False)


async def editing(pilot: Pilot[Any]) -> None:
    await replay_to_turn(pilot, 2)
    editor = await open_editor(pilot, 3)
    await replace_text(pilot, editor, '{"order_id": "A-1002", "status": ')
    await pilot.press("ctrl+s")
    await pilot.pause()


async def forked_to_a_breakpoint(pilot: Pilot[Any]) -> None:
    screen = await replay_to_turn(pilot, 1)
    await pilot.press("u")
    type_ahead(pilot.app, "kind:approval\r")
    await settle(pilot)
    editor = await open_editor(pilot, 2)  # @llm/0, reworded: the recording answers on
    text = json.dumps(json.loads(editor.text.replace("Let me look up order A-1002.", "Looking order A-1002 up.")))
    await replace_text(pilot, editor, text)
    await pilot.press("ctrl+s")
    await settle(pilot)
    assert screen.session is not None and screen.session.progress.breakpoint is not None
    pilot.app.clear_notifications()  # a snapshot of the screen, not of its toasts
    await pilot.pause()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_snapshot_fork_editor(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=editing)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_snapshot_fork_at_a_breakpoint(snap_compare: Snap, app: AgentTuiApp, size: tuple[int, int]) -> None:
    assert snap_compare(app, terminal_size=size, run_before=forked_to_a_breakpoint)


async def test_saving_a_fork_into_a_file_with_no_name_says_a_name_is_needed(
    demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agenttui.tui.screens.dialogs import PromptDialog

    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)  # where a relative name would land
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await replay_to_turn(pilot, 4)
        editor = await open_editor(pilot, 10)  # @llm/3, the answer
        await replace_text(pilot, editor, '{"role":"assistant","parts":[{"type":"text","text":"Done."}]}')
        await pilot.press("ctrl+s")
        await settle(pilot)
        await back_to(pilot, screen)
        await pilot.press("s")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("enter")  # into a new SQLite file
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press("enter")  # nothing typed: the greyed example is no name
        await settle(pilot)
        assert app.screen is screen
        assert any("a file name is needed: nothing written" in n for n in notices(app))
        assert list(here.iterdir()) == []

        # With a name, it is written, and said so.
        await pilot.press("s")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("enter")
        await wait_for_screen(pilot, PromptDialog)
        type_ahead(app, "what-if.db\r")
        await settle(pilot)
        assert (here / "what-if.db").is_file()
        assert any("what-if.db" in n for n in notices(app))
