"""Untrusted content in the TUI is shown, never obeyed: every pane, read off the screen as drawn.

The records are written by the runtime (a scripted model, tools returning hostile values) into a
real SQLite store; the app is driven with Pilot through every pane that shows record content,
and what the compositor would send to the terminal is checked cell row by cell row.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from rich.segment import Segment
from textual.app import App
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from agenttui.agent.factory import AgentSetup
from agenttui.agent.loop import Agent
from agenttui.agent.pauses import PendingApproval
from agenttui.agent.scripted import Call, ScriptedModel, Turn
from agenttui.agent.tools import ToolOutput, tool
from agenttui.journal import Journal, Record, StepKind, encode_record
from agenttui.journal.codec import go_json
from agenttui.render.diff import DiffRow, RowState
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.dialogs import ChoiceDialog, ConfirmDialog, ErrorDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.diff_view import DiffView, diff_detail
from agenttui.tui.widgets.events_view import EventsView
from agenttui.tui.widgets.flowchart_view import FlowchartView
from agenttui.tui.widgets.inspector import ConversationView, RecordInspector
from agenttui.tui.widgets.journal_list import JournalList
from tests.tui.conftest import settle, until, wait_for_screen

SIZE = (140, 40)

# What a terminal could act on if it reached it: C0 controls, DEL, C1 (0x9b is CSI, 0x85 NEL),
# and the bidi marks, embeddings, overrides and isolates that reorder what a terminal shows.
TERMINAL_ACTIVE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# One hostile piece a line, so each shows whole in a pane (a wrapped "click me" could not be found).
HOSTILE_LINES = [
    "[@click=app.quit]click me[/]",
    "[bold]x[/] [link=http://evil.example]x[/link]",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\",
    "\x1b]52;c;ZXZpbA==\x07",  # OSC 52: write the clipboard
    "\x9b2J \x85 \x00\x08\x7f\r",
    "\u202eevil\u202c \u2066iso\u2069",
]
HOSTILE = "\n".join(HOSTILE_LINES)
# How the pieces must look on screen: markup as its literal text, controls as visible escapes.
SHOWN_LITERALLY = [
    "[@click=app.quit]click me[/]",
    "[bold]x[/] [link=http://evil.example]x[/link]",
    r"\x1b[31mred\x1b[0m",
    r"\x1b]52;c;ZXZpbA==\x07",
    r"\u202eevil\u202c \u2066iso\u2069",
]

RUN_ESCAPES = "esc\x1b[2J\x1b]0;t\x07\u202e\x9b"
RUN_MARKUP = "[@click=app.quit]click me[/]"
RUN_PENDING = "wait\u2066[link=http://evil.example]x[/link]\x85"
RUN_HUGE = "huge-value"
RUN_DEEP = "deep-value"
HOSTILE_TOOL = "look\x1b[31mup[bold]x[/]\u202e"
HOSTILE_CALL = "call\x1b[2J[b]"
CALL_SHOWN = r"look\x1b[31mup[bold]x[/]\u202e (call\x1b[2J[b])"
HUGE = "x" * 10_000_000
READABLE_DEPTH = 500
ABYSS_DEPTH = 10_000


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def hostile_script() -> list[Turn]:
    return [Turn(HOSTILE, [Call(HOSTILE_TOOL, {"q": HOSTILE}, id=HOSTILE_CALL)], reasoning=HOSTILE), Turn(HOSTILE)]


@tool(name=HOSTILE_TOOL, read_only=True)
async def hostile_tool(args: dict[str, Any]) -> dict[str, Any]:
    """Echoes hostile content back, as a compromised tool would."""
    return {"echo": HOSTILE}


@tool(name=HOSTILE_TOOL, read_only=True)
async def changed_hostile_tool(args: dict[str, Any]) -> dict[str, Any]:
    """Today's version of the tool: its result differs, so a replay diverges on hostile lines."""
    return {"echo": HOSTILE, "today": HOSTILE}


def diverging_factory(run_id: str) -> AgentSetup:
    """``--agent`` for the replay test: the changed tool, so the diff pane shows hostile payloads."""
    return AgentSetup([changed_hostile_tool])


DIVERGING_AGENT = f"{__name__}:diverging_factory"


@tool(name=HOSTILE_TOOL, needs_approval=True)
async def gated_hostile_tool(args: dict[str, Any]) -> dict[str, Any]:
    """The same tool behind an approval gate: its run waits for a person, who sees its name."""
    return {"echo": HOSTILE}


@tool(name="fetch_page", read_only=True)
async def huge_tool(args: dict[str, Any]) -> str:
    return HUGE


@tool(name="parse_tree", read_only=True)
async def deep_tool(args: dict[str, Any]) -> ToolOutput:
    return ToolOutput(None, raw=_deep(READABLE_DEPTH))


async def _build(path: Path) -> None:
    store = await SQLiteStore.open(path)
    try:
        for run_id in (RUN_ESCAPES, RUN_MARKUP):
            await Agent(ScriptedModel(hostile_script()), store, hostile_tool).run(run_id, HOSTILE)
        with pytest.raises(PendingApproval):  # the state wanted: waiting for a person to decide
            await Agent(ScriptedModel(hostile_script()), store, gated_hostile_tool).run(RUN_PENDING, HOSTILE)
        huge_turns = [Turn("Fetching the page.", [Call("fetch_page")]), Turn("Fetched.")]
        await Agent(ScriptedModel(huge_turns), store, huge_tool).run(RUN_HUGE, "fetch it")
        deep_turns = [Turn("Parsing.", [Call("parse_tree")]), Turn("Parsed.")]
        await Agent(ScriptedModel(deep_turns), store, deep_tool).run(RUN_DEEP, "parse it")
        # Python's writer refuses JSON nested deeper than its parser reads (about 1,000 levels), but
        # a Go writer stores up to 10,000: such a record reaches the store the way another SDK puts it.
        placeholder = Record("note:abyss", StepKind.VALUE, result=b'"abyss"', salt=os.urandom(32))
        await store.insert(
            RUN_DEEP, placeholder.name, encode_record(placeholder).replace(b'"abyss"', _deep(ABYSS_DEPTH))
        )
        assert len(await Journal(store).history(RUN_DEEP)) == 7
    finally:
        await store.close()


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store every test here reads (the app opens it read-only, replays write to memory)."""
    path = tmp_path_factory.mktemp("hostile") / "hostile.db"
    asyncio.run(_build(path))
    return path


# -- reading the screen ------------------------------------------------------------------------


def drawn(app: App[Any]) -> list[list[Segment]]:
    """Every cell row of the screen as the compositor draws it for the terminal, toasts included.

    Public Textual offers only an SVG export; the compositor's strips are what the driver writes.
    """
    return [list(strip) for strip in app.screen._compositor.render_strips()]


def screen_rows(app: App[Any]) -> list[str]:
    return ["".join(segment.text for segment in row) for row in drawn(app)]


def screen_text(app: App[Any]) -> str:
    return "\n".join(screen_rows(app))


def shown_in(app: App[Any], widget: Widget) -> str:
    """The text drawn in ``widget``'s region of the screen (every cell here is one character wide)."""
    region = widget.region
    return "\n".join(row[region.x : region.right] for row in screen_rows(app)[region.y : region.bottom])


def exported(renderable: object, width: int = 1000) -> str:
    """A renderable as the plain text a console this wide prints."""
    console = Console(width=width, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def assert_inert(app: App[Any], where: str) -> None:
    """Nothing on screen a terminal would act on, no markup turned into a link or an action, and
    the app alive with no error dialog: a valid record, however hostile, is no error."""
    assert app.is_running and app.return_code is None, where
    assert not any(isinstance(screen, ErrorDialog) for screen in app.screen_stack), (where, screen_text(app))
    for y, row in enumerate(drawn(app)):
        line = "".join(segment.text for segment in row)
        for segment in row:
            assert segment.control is None, (where, y, line)
            assert not TERMINAL_ACTIVE.search(segment.text), (where, y, line)
            # agenttui draws no links and no action links of its own: any here came from content.
            style = segment.style
            assert style is None or (not style.link and "@click" not in style.meta), (where, y, line, style)


def assert_shows(text: str, where: str, pieces: list[str]) -> None:
    missing = [piece for piece in pieces if piece not in text]
    assert not missing, (where, missing, text)


async def click_text(pilot: Pilot[Any], needle: str, widget: Widget | None = None) -> None:
    """Click where ``needle`` first shows (in ``widget``): an action hidden in its markup would fire now."""
    app = pilot.app
    region = widget.region if widget is not None else app.screen.region
    for y, row in enumerate(screen_rows(app)[region.y : region.bottom], region.y):
        x = row.find(needle, region.x, region.right)
        if x >= 0:
            await pilot.click(offset=(x + 1, y))
            await pilot.pause()
            assert app.is_running and app.return_code is None, (needle, y, row)
            return
    raise AssertionError(f"{needle!r} is not on screen in {widget!r}")


def app_over(path: Path, **settings: Any) -> AgentTuiApp:
    """The app over the store at ``path``, without the live change feed: no other writer is about."""
    app = AgentTuiApp(str(path), tail=False, **settings)
    # Tab underlines slide for a third of a second per pane switch, and Pilot waits for them.
    app.animation_level = "none"
    return app


async def open_run(pilot: Pilot[Any], run_id: str) -> RunScreen:
    assert isinstance(pilot.app, AgentTuiApp)
    pilot.app.open_run(run_id)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, RunScreen) and screen.rows, screen
    return screen


async def show_pane(pilot: Pilot[Any], key: str) -> None:
    await pilot.press(key)
    await settle(pilot)


# -- the panes ---------------------------------------------------------------------------------


async def test_the_runs_screen_shows_hostile_run_ids_inert(hostile_db: Path) -> None:
    app = app_over(hostile_db)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        assert {row.run_id for row in screen.table.items} == {RUN_ESCAPES, RUN_MARKUP, RUN_PENDING, RUN_HUGE, RUN_DEEP}
        assert_inert(app, "runs")
        # The run column cuts long ids in the middle: what shows of each is its escaped form.
        assert_shows(shown_in(app, screen.table), "runs", [
            r"esc\x1b[2J\x1b]0;t", "[@click=app.quit]click", r"wait\u2066[link=…ple]x[/link]\x85", f"{CALL_SHOWN}…",
        ])  # fmt: skip
        await click_text(pilot, "[@click=app.quit]click", screen.table)
        # Marked runs are drawn with their mark, their ids as inert as ever; the header counts them.
        for run_id in (RUN_MARKUP, RUN_ESCAPES):
            screen.table.cursor = next(i for i, row in enumerate(screen.table.items) if row.run_id == run_id)
            await pilot.press("m")
            await pilot.pause()
        assert_inert(app, "runs, marked")
        assert_shows(screen_text(app), "marked", ["2 marked", "[@click=app.quit]click"])
        await click_text(pilot, "[@click=app.quit]click", screen.table)
        assert_inert(app, "runs, a marked row clicked")
        # The whole id shows where there is room: in the title of its run.
        screen.table.cursor = next(i for i, row in enumerate(screen.table.items) if row.run_id == RUN_ESCAPES)
        screen.table.focus()
        await pilot.press("enter")
        await wait_for_screen(pilot, RunScreen)
        await settle(pilot)
        assert_inert(app, "run with escapes in its id")
        assert_shows(
            shown_in(app, app.screen.query_one("#run-title")),
            "title",
            [r"run esc\x1b[2J\x1b]0;t\x07\u202e\x9b   6 records"],
        )


async def test_every_run_pane_shows_hostile_records_inert(hostile_db: Path) -> None:
    app = app_over(hostile_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_run(pilot, RUN_MARKUP)
        names = [row.name for row in screen.rows]
        assert names[:3] == ["@journal", "run:start", "@llm/0"] and names[-1] == "run:complete"
        assert_inert(app, "journal and title")
        assert_shows(
            shown_in(app, screen.query_one("#run-title")), "title", ["run [@click=app.quit]click me[/]   6 records"]
        )
        await click_text(pilot, "click me", screen.query_one("#run-title"))
        journal = screen.query_one(JournalList)
        assert_shows(
            shown_in(app, journal), "journal list", ["[@click=app.quit]click me[/]", r"look\x1b[31mup[bold]x[/]\u202"]
        )

        inspector = screen.query_one(RecordInspector)
        for index in range(len(names)):
            journal.cursor = index
            await pilot.pause()
            assert_inert(app, f"inspector at #{index}")
        journal.cursor = names.index("@llm/0")
        await pilot.pause()
        assert_shows(shown_in(app, inspector), "inspector, model turn", [*SHOWN_LITERALLY, f"→ call {CALL_SHOWN}"])
        await click_text(pilot, "click me", inspector)
        await click_text(pilot, "click me", journal)
        inspector.focus()
        await pilot.press("r")  # the stored bytes, and values uncut
        await pilot.pause()
        assert inspector.show_raw
        assert_inert(app, "inspector, raw bytes")
        inspector.scroll_end(animate=False)
        await pilot.pause()
        assert_shows(shown_in(app, inspector), "inspector, raw bytes", ["stored bytes", r"\u001b[31mred\u001b[0m"])
        await pilot.press("r")

        journal.focus()
        await show_pane(pilot, "c")
        journal.cursor = len(names) - 1
        await pilot.pause()
        assert_inert(app, "state at step")
        conversation = screen.query_one(ConversationView)
        assert_shows(shown_in(app, conversation), "state at step, opened at the step", SHOWN_LITERALLY)
        conversation.scroll_home(animate=False)
        await pilot.pause()
        assert_shows(shown_in(app, conversation), "state at step", [f"as of record #{len(names) - 1}", "user"])
        await click_text(pilot, "click me", conversation)

        await show_pane(pilot, "v")
        assert_inert(app, "events")
        assert_shows(shown_in(app, screen.query_one(EventsView)), "events", [
            "assistant turn 0 (replayed): [@click=app.quit]click me[/] → look",
            r"tool look\x1b[31mup[bold]x[/]\u202e completed: {",
        ])  # fmt: skip
        await click_text(pilot, "click me", screen.query_one(EventsView))

        await show_pane(pilot, "w")
        for index in range(len(names)):
            journal.cursor = index
            await pilot.pause()
            assert_inert(app, f"flowchart at #{index}")
        # The flowchart labels only tool calls; its own stand-in for ESC is the control picture.
        assert_shows(
            shown_in(app, screen.query_one(FlowchartView)), "flowchart", [r"tool: look␛[31mup[bold]x[/]\u202e"]
        )
        assert isinstance(app.screen, RunScreen)


async def replay_to_divergence(pilot: Pilot[Any]) -> ReplayScreen:
    """Replay the markup run with today's tool to its end: it diverges on the hostile result."""
    await settle(pilot)
    await open_run(pilot, RUN_MARKUP)
    await pilot.press("Y")
    await wait_for_screen(pilot, ReplayScreen)
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, ReplayScreen)
    assert_inert(pilot.app, "replay, opened")
    await pilot.press("e")
    await settle(pilot)
    await until(pilot, lambda: screen.finished, "the replay to finish")
    first = screen.diff.first_divergence if screen.diff is not None else None
    assert first is not None and first.reason == "different tool result"
    await show_pane(pilot, "2")
    diff = screen.query_one(DiffView)
    diff.cursor = next(i for i, line in enumerate(diff.items) if line.first)
    await pilot.pause()
    return screen


async def test_replay_and_its_diff_show_hostile_records_inert(hostile_db: Path) -> None:
    app = app_over(hostile_db, agent_spec=DIVERGING_AGENT)
    async with app.run_test(size=SIZE) as pilot:
        screen = await replay_to_divergence(pilot)
        assert_inert(app, "replay, diff")
        assert_shows(
            shown_in(app, screen.query_one("#replay-title")), "replay title", ["replay [@click=app.quit]click me[/]"]
        )
        # The detail wraps and scrolls: its text is read whole, what is on screen is checked above.
        assert_shows(exported(screen.query_one("#diff-detail", Static).content), "diff detail", [
            '+    "today": "[@click=app.quit]click me[/]', r"\u001b[31mred\u001b[0m", r"\u202eevil\u202c \u2066iso\u2069",
        ])  # fmt: skip
        await click_text(pilot, "click me", screen.query_one("#diff-detail"))
        diff = screen.query_one(DiffView)
        diff.focus()
        for index in range(len(diff.items)):
            diff.cursor = index
            await pilot.pause()
            assert_inert(app, f"diff at line {index}")

        # Off the diff list first: hiding the focused widget moves focus into the diff pane again,
        # which makes the tabs switch straight back to it.
        screen.query_one(JournalList).focus()
        await show_pane(pilot, "1")
        assert_inert(app, "replay events")
        assert_shows(shown_in(app, screen.query_one(EventsView)), "replay events", [
            "  text: [@click=app.quit]click me[/]⏎[bold]x[/] [link=http://evil.ex",
            r"tool look\x1b[31mup[bold]x[/]\u202e completed: {",
        ])  # fmt: skip
        await click_text(pilot, "click me", screen.query_one(EventsView))

        await show_pane(pilot, "3")
        assert_inert(app, "replay flowchart")
        assert_shows(
            shown_in(app, screen.query_one(FlowchartView)), "replay flowchart", [r"tool: look␛[31mup[bold]x[/]\u202e"]
        )
        assert isinstance(app.screen, ReplayScreen)


def test_the_diff_detail_keeps_a_value_on_its_line() -> None:
    # The diff pane's own renderer on the two results the replay test diverges on, drawn as the pane would.
    def result(value: dict[str, Any]) -> Record:
        return Record("tool:c1", StepKind.TOOL_RESULT, tool_use_id="c1", result=go_json(value))

    row = DiffRow("tool:c1", RowState.CHANGED, result({"echo": HOSTILE}), result({"echo": HOSTILE, "today": HOSTILE}))
    assert r"\x9b2J \x85 \u0000" in exported(diff_detail(row), width=200)


async def test_acting_on_a_hostile_run_shows_its_dialogs_and_outcome_inert(hostile_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "hostile.db"
    shutil.copy(hostile_db, path)  # this test writes an approval
    app = app_over(path)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        screen.table.cursor = next(i for i, row in enumerate(screen.table.items) if row.run_id == RUN_PENDING)
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)
        assert_inert(app, "choice")
        run_shown = r"wait\u2066[link=http://evil.example]x[/link]\x85"
        assert_shows(screen_text(app), "choice", [f"Act on run {run_shown}", f"Approve {CALL_SHOWN}"])
        await pilot.press("enter")
        await wait_for_screen(pilot, ConfirmDialog)
        assert_inert(app, "confirm")
        assert_shows(screen_text(app), "confirm", [r"call call\x1b[2J[b] of run", run_shown, "agenttui approve"])
        await pilot.press("w")
        await settle(pilot)
        # The outcome's notification names the call and the run in its title.
        await until(pilot, lambda: "approved: wrote" in screen_text(app), "the outcome's notification")
        assert_inert(app, "outcome")
        assert_shows(screen_text(app), "outcome", [r"call\x1b[2J[b] of run", run_shown])  # the title wraps at the tool
    store = await SQLiteStore.open(path, read_only=True)
    try:
        assert (await Journal(store).history(RUN_PENDING))[-1].kind == StepKind.APPROVAL
    finally:
        await store.close()


async def shows_at_its_end(pilot: Pilot[Any], widget: Widget, text: str) -> None:
    """Scroll ``widget`` to its end until ``text`` shows there. One pause is not enough: on a busy
    machine (a parallel test run) the 10 MB record is still being read and laid out after it."""

    def at_its_end() -> bool:
        widget.scroll_end(animate=False, immediate=True)
        return text in shown_in(pilot.app, widget)

    await until(pilot, at_its_end, f"{text!r} at the end of the inspector")


async def test_a_ten_megabyte_value_opens_cut_with_a_way_to_see_more(hostile_db: Path) -> None:
    app = app_over(hostile_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        started = time.monotonic()
        screen = await open_run(pilot, RUN_HUGE)
        journal = screen.query_one(JournalList)
        journal.cursor = [row.name for row in screen.rows].index("tool:call_0_0")
        await pilot.pause()
        opened = time.monotonic() - started
        # Guards against freezes of minutes (the benchmarks time it): loose enough for a busy CI machine.
        assert opened < 20, f"opening a run with a 10 MB value took {opened:.1f} s"
        assert_inert(app, "huge value")
        listed = shown_in(app, journal)
        assert 'fetch_page: "xxxx' in listed and "x" * 200 not in listed  # the line is cut to the pane
        inspector = screen.query_one(RecordInspector)
        await shows_at_its_end(pilot, inspector, "more characters (e: expand in place)")
        for key in "er":  # expand in place (from the journal); the stored bytes too (in the inspector)
            started = time.monotonic()
            await pilot.press(key)
            await pilot.pause()
            # Before the pane drew at most FULL_LIMIT characters, this key froze the app for minutes.
            shown_all = time.monotonic() - started
            assert shown_all < 30, f"showing a 10 MB value took {shown_all:.1f} s ({key})"
            assert_inert(app, f"huge value, show all ({key})")
            await shows_at_its_end(pilot, inspector, "more characters (all of them: agenttui show --json)")
            inspector.focus()
        for pane in "cvw":
            await show_pane(pilot, pane)
            assert_inert(app, f"huge value, pane {pane}")


async def test_deeply_nested_json_shows_without_recursion_errors(hostile_db: Path) -> None:
    app = app_over(hostile_db)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await open_run(pilot, RUN_DEEP)
        names = [row.name for row in screen.rows]
        assert app.store is not None
        readable, abyss = await screen.view.read(app.store, [names.index("tool:call_0_0"), len(names) - 1])
        assert readable.result == _deep(READABLE_DEPTH) and not readable.unreadable
        assert abyss.name == "note:abyss" and abyss.unreadable  # deeper than the reader goes: shown so, not raised
        journal = screen.query_one(JournalList)
        for pane in "icw":  # the panes that follow the cursor (the events pane shows the run whole)
            await show_pane(pilot, pane)
            journal.focus()
            for index in range(len(names)):
                journal.cursor = index
                await pilot.pause()
                assert_inert(app, f"deep, pane {pane}, #{index}")
        await show_pane(pilot, "v")
        assert_inert(app, "deep, events")
        await show_pane(pilot, "i")
        inspector = screen.query_one(RecordInspector)
        assert_shows(shown_in(app, inspector), "deep, unreadable", ["unreadable: not a journal record", "[[[[[[[["])
        inspector.focus()
        await pilot.press("r")
        await pilot.pause()
        assert_inert(app, "deep, raw bytes")
        journal.cursor = names.index("tool:call_0_0")
        await pilot.pause()
        inspector.scroll_end(animate=False)
        await pilot.pause()
        assert_inert(app, "deep, readable, raw bytes")
        assert "[[[[[[[[" in shown_in(app, inspector)
