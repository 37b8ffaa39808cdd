"""Replay mode: re-drive a run offline one model turn per key, with event, diff and flowchart panes;
fork it at a model turn or tool result (what-if), and run to the end or to a breakpoint."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, ProgressBar, Static, TabPane
from textual.worker import Worker, WorkerState

from agenttui.agent.events import AgentEvent
from agenttui.agent.factory import AgentSetup
from agenttui.journal.describe import printable, printable_id
from agenttui.journal.record import Record
from agenttui.render.diff import JournalDiff, RowState
from agenttui.render.flow import DONE, FlowStep, unfinished
from agenttui.replay.breakpoints import Breakpoint, BreakpointHit, parse_breakpoint
from agenttui.replay.session import ReplayProgress, ReplaySession, ReplayState
from agenttui.replay.verdict import Verdict, VerdictKind
from agenttui.runs.reading.view import RecordRows, RunView
from agenttui.runs.statuses.chart_end import chart_end
from agenttui.runs.statuses.status import RunStatus
from agenttui.tui.keymap import key_of
from agenttui.tui.screens.base import VIEW_STYLES, StoreScreen
from agenttui.tui.widgets.diff_view import DiffView, diff_detail
from agenttui.tui.widgets.events_view import EventsView
from agenttui.tui.widgets.fitting_tabs import FittingTabs
from agenttui.tui.widgets.flowchart_view import FlowchartView
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.journal_list import JournalList
from agenttui.tui.widgets.key_footer import KeyFooter
from agenttui.tui.widgets.scrolling_pane import ScrollingPane
from agenttui.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from agenttui.replay.fork import ForkSession
    from agenttui.runs.cost.lens import Spend

#: Events of a replayed turn are posted at most this often (see ``EventBatches``).
EVENTS_SECONDS = 0.05


class EventBatches:
    """Posts a replayed turn's events as they happen, at most every ``EVENTS_SECONDS``: a
    recorded turn's events all come within a millisecond and make one message (one repaint of
    the events pane, not one per event), while your code's slow tool still streams."""

    def __init__(self, post: Callable[[Message], object]) -> None:
        self._post = post
        self._held: list[AgentEvent] = []
        self._last_post = time.monotonic()

    def __call__(self, event: AgentEvent) -> None:
        self._held.append(event)
        if time.monotonic() - self._last_post > EVENTS_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self._held:
            self._post(ReplayScreen.EventsEmitted(self._held))
            self._held = []
        self._last_post = time.monotonic()


#: Running to the end shows where it is at most this often: a turn takes milliseconds, a paint of
#: the screen tens of them (painting every turn of the demo's 2,000-turn run took 36 times as
#: long as the replay itself).
FRAME_SECONDS = 0.25


class ReplayFrames:
    """Reports a run to the end a frame at a time: after a turn, if ``FRAME_SECONDS`` have passed
    since the last frame, one ``Frame`` message with where it is and the events since; the
    journal, the flowchart and the diff are drawn once, when it stops."""

    def __init__(self, post: Callable[[Message], object], session: ReplaySession) -> None:
        self._post = post
        self._session = session
        self._progress = session.progress
        self._shown = len(session.progress.events)
        self._last_post = time.monotonic()

    def __call__(self, turn: int) -> None:
        if time.monotonic() - self._last_post >= FRAME_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Post what is not shown yet (the last frame, before the replay's end is drawn)."""
        progress = self._session.progress
        if progress is not self._progress:  # the replay started from the top: a fresh list of events
            self._progress, self._shown = progress, 0
        events = progress.events[self._shown :]
        self._shown += len(events)
        self._post(ReplayScreen.Frame(progress.turn, progress.recorded_turns, events))
        self._last_post = time.monotonic()


def replay_end(progress: ReplayProgress, recorded: RunStatus) -> FlowStep:
    """Where the replayed run stands, as its flowchart's last node: the turns replayed while it
    runs; once it stops where the recording stops, where the recording stands (``chart_end``)."""
    state = progress.state
    if state == ReplayState.FINISHED:
        return DONE
    if state == ReplayState.PAUSED:
        return chart_end(recorded)
    if state in (ReplayState.DIVERGED, ReplayState.FAILED):
        return unfinished(f"{state.value}: {progress.reason}", failed=True)
    if state == ReplayState.REFUSED:
        return unfinished("not replayed")
    return unfinished(f"replayed {progress.turn} of {progress.recorded_turns} turns")


#: Each pane's binding, whose key its tab shows.
PANE_KEYS = {"events": "replay.events", "diff": "replay.diff", "flow": "replay.flowchart"}


class ReplayScreen(StoreScreen):
    """Replay of one run. ``n`` next turn, ``e`` to the end, ``b`` back one, ``t`` jump to a turn."""

    CSS_PATH = VIEW_STYLES

    @dataclass
    class EventsEmitted(Message):
        """Events the replayed agent emitted, in order."""

        events: list[AgentEvent]

    @dataclass
    class Advanced(Message):
        """The replay moved: where it is, and the replayed journal."""

        progress: ReplayProgress
        records: list[Record]
        restarted: bool

    @dataclass
    class Diffed(Message):
        """The replayed journal so far against the recording, and the verdict once the replay is done."""

        diff: JournalDiff
        verdict: Verdict | None
        shown: JournalDiff | None = None
        """What the diff pane shows when it is not ``diff``: a fork against the run as recorded."""

    @dataclass
    class Frame(Message):
        """Running to the end, a frame of it: how far it is, and the events since the last frame."""

        bubble = False
        turn: int
        recorded_turns: int
        events: list[AgentEvent]

    @dataclass
    class Stopped(Message):
        """Running to the end stopped at a breakpoint."""

        hit: BreakpointHit

    AUTO_FOCUS = "#replayed-journal"
    BINDINGS = [
        Binding("escape", "back", "Back", id="replay.back"),
        Binding("n,space", "next_turn", "Next turn", id="replay.next"),
        Binding("e", "run_to_end", "To end", id="replay.end"),
        Binding("b", "back_turn", "Back a turn", id="replay.previous"),
        # The prompt's keys act as they arrive, as the runs screen's filter does ("t10⏎" typed quickly).
        Binding("t", "jump_prompt", "Jump to turn", priority=True, id="replay.jump"),
        Binding("enter", "jump_done", "Jump", show=False, priority=True, id="replay.jump-done"),
        Binding("escape", "jump_cancel", "Cancel", show=False, priority=True, id="replay.jump-cancel"),
        Binding("f", "fork", "Fork here", id="replay.fork"),
        Binding("u", "until_prompt", "Breakpoint", priority=True, id="replay.until"),
        Binding("s", "save_fork", "Save fork", id="replay.save-fork"),
        Binding("c", "compare", "Compare", id="replay.compare"),
        Binding("1", "show_pane('events')", "Events", show=False, id="replay.events"),
        Binding("2", "show_pane('diff')", "Diff", show=False, id="replay.diff"),
        Binding("3", "show_pane('flow')", "Flowchart", show=False, id="replay.flowchart"),
        Binding("y", "copy", "Copy", show=False, id="replay.copy"),
    ]

    def __init__(self, run_id: str, setup: AgentSetup | None = None, *, live_tools: Sequence[str] = ()) -> None:
        super().__init__()
        self.run_id = run_id
        self.setup = setup
        self.live_tools = tuple(live_tools)
        """Your tools that run for real in this replay, as a person confirmed (none by default)."""
        self.session: ReplaySession | None = None
        self.view = RunView(run_id)
        """The replayed journal so far: a row for each record, and its tool names."""
        self.diff: JournalDiff | None = None
        self.verdict: Verdict | None = None
        """What the replay found, once it is done."""
        self._replay_costs: tuple[ReplaySession, Spend, Spend] | None = None
        """A finished replay or fork, what the recording cost and what the replay did (its
        sub-runs rolled up): a replay serves the recorded outputs, so it costs what the turns it
        reached did; a fork's edit and what follows it may cost more or less."""
        self._detail_shown: tuple[str, RowState, str] | None = None
        self._queued: str | None = None
        """A move asked for while the replay was busy (opening, or a turn under way): made next."""
        self.breakpoints: list[Breakpoint] = []
        """Where "to the end" stops (``u`` sets them; an empty one clears them)."""
        self._compared = False
        """The fork's comparison was opened once it finished (it opens by itself only once)."""
        self.not_opened: str | None = None
        """Why the recording could not be read (no such run, the store failed): nothing to replay."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="replay-title")
        yield ProgressBar(id="replay-progress", show_eta=False)
        yield HeaderBar(id="replay-verdict")
        yield Input(placeholder="jump to turn (0 = the start)", id="replay-jump", type="integer")
        yield Input(placeholder="breakpoint: tool:NAME · call:NAME K=V · kind:KIND · divergence · tokens>=N (empty clears)",
                    id="replay-until")  # fmt: skip
        with Horizontal(id="run-body"):
            yield JournalList(id="replayed-journal")
            with FittingTabs(id="replay-panes", initial="events", short_labels={"flow": "Flow"}, keys=PANE_KEYS):
                with TabPane("Events", id="events"):
                    yield EventsView(id="events-view")
                with TabPane("Diff", id="diff"), Vertical():
                    yield DiffView(id="diff-view")
                    with ScrollingPane(id="diff-detail-scroll"):
                        yield Static(id="diff-detail")
                with TabPane("Flowchart", id="flow"):
                    yield FlowchartView(id="replay-flowchart")
        yield StatusBar(id="status-bar")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#replay-jump").display = False
        self.query_one("#replay-until").display = False
        next_turn, to_end = key_of(self, "replay.next"), key_of(self, "replay.end")
        self.query_one(
            JournalList
        ).empty_text = f"Nothing replayed yet: {next_turn} replays the next turn, {to_end} runs to the end."
        if self.live_tools:  # the status bar says what this replay does to the world
            self.query_one(StatusBar).writes = f"LIVE side effects: {', '.join(self.live_tools)}"
        self.query_one(EventsView).empty_text = "No events yet."
        self._title()
        self.drive("open")

    @property
    def rows(self) -> RecordRows:
        """What the journal list shows of each replayed record."""
        return self.view.rows

    # -- the replay worker -------------------------------------------------------------------

    @work(exclusive=True, group="replay", exit_on_error=False)
    async def drive(self, what: str, turn: int = 0) -> None:
        """Move the replay; report events and the new position as messages."""
        if self.session is None:
            self.session = await ReplaySession.open(self.store, self.run_id, self.setup, live_tools=self.live_tools)
        session = self.session
        restarted = what in ("back", "jump", "jump-0")
        if what == "next":
            batches = EventBatches(self.post_message)
            await session.step(batches)
            batches.flush()
        elif what == "end":
            frames = ReplayFrames(self.post_message, session)
            await session.run_to_end(frames, self.breakpoints)
            frames.flush()
            if (hit := session.progress.breakpoint) is not None:
                self.post_message(ReplayScreen.Stopped(hit))
        elif what == "back":
            await session.back()
        elif what == "jump":
            await session.jump(turn)
        elif what == "jump-0":
            await session.jump(0)
        self.post_message(ReplayScreen.Advanced(session.progress, await session.replayed(), restarted))

    @work(exclusive=True, group="replay-diff", exit_on_error=False)
    async def diff_after_paint(self) -> None:
        """Diff the replay against the recording (a fork: the recording as it was) once the step is
        on screen.

        The diff walks the whole recording (tens of milliseconds for a long run): the step is
        painted first, and while turns follow each other faster than that, only the newest is
        diffed (a newer request cancels this one while it waits).
        """
        painted = asyncio.Event()
        self.call_after_refresh(painted.set)
        await painted.wait()
        if (session := self.session) is not None:
            diff = await session.diff()
            verdict = await session.verdict(diff) if session.done else None
            # The pane shows a fork against the run as it was recorded; the title still says
            # whether it follows the recording it replays (the edit in place).
            shown = await fork.diff_from_original() if (fork := self._fork()) is not None else None
            self.post_message(ReplayScreen.Diffed(diff, verdict, shown))

    def on_replay_screen_events_emitted(self, message: ReplayScreen.EventsEmitted) -> None:
        self.query_one(EventsView).add(message.events)

    def on_replay_screen_frame(self, message: ReplayScreen.Frame) -> None:
        """Where a run to the end is: the progress, the title, the events; the rest once it stops."""
        self.query_one(EventsView).add(message.events)
        bar = self.query_one(ProgressBar)
        bar.update(total=max(message.recorded_turns, 1), progress=min(message.turn, message.recorded_turns))
        self._title()

    def _restart_events(self, events: list[AgentEvent]) -> None:
        view = self.query_one(EventsView)
        view.set_items([])
        view.add(events)

    def on_replay_screen_advanced(self, message: ReplayScreen.Advanced) -> None:
        progress = message.progress
        journal = self.query_one(JournalList)
        flowchart = self.query_one(FlowchartView)
        if message.restarted:
            self.view.clear()
        before = len(self.view)
        new = message.records[before:]
        self.view.add(new)
        if message.restarted:
            self._detail_shown = None
            self._restart_events(list(progress.events))
            journal.set_items(self.view.rows[before:])
            flowchart.load(new, self.run_id)
        elif len(journal.items) != before:
            # A step of a replay the fork replaced came in late: the view has the new session's
            # records; show them afresh rather than append to the rows of the old one.
            journal.set_items(self.view.rows[0:])
            flowchart.load(message.records, self.run_id)
        else:
            journal.extend(self.view.rows[before:])
            flowchart.append(new)
        flowchart.show_turn(progress.turn - 1 if progress.turn else None)
        if self.session is not None:
            flowchart.set_end(replay_end(progress, self.session.recorded_status))
        if len(self.view):
            journal.cursor = len(self.view) - 1
        bar = self.query_one(ProgressBar)
        bar.update(total=max(progress.recorded_turns, 1), progress=min(progress.turn, progress.recorded_turns))
        bar.display, self.not_opened = True, None
        self._title()
        self.diff_after_paint()

    def on_replay_screen_diffed(self, message: ReplayScreen.Diffed) -> None:
        self.diff = message.diff
        self.verdict = message.verdict
        self._show_verdict()
        self.query_one(DiffView).show(message.shown or message.diff)
        if message.shown is not None:  # a fork: its nodes that differ from the run as recorded
            changed = (row.right_index for row in message.shown.rows if row.state.diverges)
            self.query_one(FlowchartView).mark_changed(i for i in changed if i is not None)
        self._title()
        if message.verdict is not None and self._fork() is not None and not self._compared:
            self._compared = True
            self.action_compare()

    def on_replay_screen_stopped(self, message: ReplayScreen.Stopped) -> None:
        self.notify(printable(message.hit.summary()), title="Breakpoint", timeout=6, markup=False)
        self._title()

    def _show_verdict(self) -> None:
        """The verdict on a line of its own under the title (it wraps on a narrow terminal)."""
        shown = self.query_one("#replay-verdict", HeaderBar)
        verdict = self.verdict
        shown.display = verdict is not None
        if verdict is None:
            return
        mark = {VerdictKind.DIVERGED: "≠", VerdictKind.REFUSED: "⊘"}.get(verdict.kind, "✓")
        text = f"{mark} {verdict.summary()}"
        if verdict.not_compared:
            text += f" · not compared: {', '.join(verdict.not_compared)}"
        matches, diverged = verdict.matches, verdict.kind == VerdictKind.DIVERGED
        if (fork := self._fork()) is not None:  # a fork is not judged against the recording: it says where it ended
            matches, diverged = fork.exit_code == 0, fork.exit_code != 0
            text = f"{'✓' if matches else '≠'} the fork {fork.outcome()}"
        session = self.session
        if (
            session is not None
            and session.done
            and (self._replay_costs is None or self._replay_costs[0] is not session)
        ):
            self._read_replay_costs(session)  # then the title says what it cost
        shown.show([Text(printable(text))])  # wrapped at words, its last line cut (W shows it whole)
        shown.set_class(matches, "-matches")
        shown.set_class(diverged, "-diverged")
        shown.set_class(verdict.kind == VerdictKind.REFUSED, "-refused")
        if verdict.kind == VerdictKind.REFUSED:
            self.query_one(JournalList).empty_text = "Not replayed: the line above says why."

    def _title(self) -> None:
        """Where the replay is, and why it stopped: parts that wrap onto their own lines rather
        than being cut (``HeaderBar``); the verdict has a line of its own below."""
        parts = [Text(f"replay {printable_id(self.run_id)}", style="bold")]
        session = self.session
        if session is None and self.not_opened is not None:
            parts.append(Text(f"not replayed: {printable(self.not_opened)}", style="bold"))
        elif session is None:
            parts.append(Text("reading the recording…"))
        else:
            progress = session.progress
            parts.append(Text(f"turn {progress.turn} of {progress.recorded_turns} · {session.mode}"))
            parts += fork_parts(session)
            if self._replay_costs is not None and self._replay_costs[0] is session:
                from agenttui.runs.cost.lens import cost_change

                forked = self._fork() is session
                _, recorded, replayed = self._replay_costs
                # A replay serves the recorded outputs: it costs what the recording did unless it
                # stopped short of its turns, and only then takes a line of an 80x24 screen to say so.
                if forked or replayed != recorded:
                    names = ("recorded", "forked" if forked else "replayed")
                    parts.append(Text(cost_change(recorded, replayed, names=names)))
            if self.breakpoints:
                parts.append(Text("until " + " | ".join(printable(b.text) for b in self.breakpoints)))
            if self.verdict is None and progress.breakpoint is not None and not session.done:
                parts.append(Text(printable(progress.breakpoint.summary()), style="bold"))
            elif self.verdict is None:
                parts.append(Text(self._state_text(progress)))
            if self.verdict is None and self.diff is not None:
                first = self.diff.first_divergence
                parts.append(Text("✓ matches the recording so far") if first is None
                             else Text(f"≠ diverges at {printable(first.name)}: {printable(first.reason)}", style="bold"))  # fmt: skip
        self.query_one("#replay-title", HeaderBar).show(parts)
        self.refresh_bindings()  # the keys that apply follow where the replay is (``unavailable``)

    def _state_text(self, progress: ReplayProgress) -> str:
        """Where the replay stands: between turns it waits for a key, and says which."""
        if progress.state in (ReplayState.READY, ReplayState.RUNNING) and not self._busy():
            return f"waiting: {key_of(self, 'replay.next')} next turn, {key_of(self, 'replay.end')} to the end"
        if progress.state == ReplayState.RUNNING:
            return "replaying…"
        return progress.state.value + (f" · {printable(progress.reason)}" if progress.reason else "")

    # -- panes follow each other -------------------------------------------------------------

    @on(JournalList.CursorMoved, "#replayed-journal")
    def journal_moved(self, event: JournalList.CursorMoved) -> None:
        self.query_one(FlowchartView).select_record(event.index)

    @on(FlowchartView.RecordSelected)
    def flowchart_moved(self, event: FlowchartView.RecordSelected) -> None:
        journal = self.query_one(JournalList)
        if event.record_index < len(journal.items):
            journal.cursor = event.record_index

    @on(DiffView.CursorMoved, "#diff-view")
    def diff_moved(self, event: DiffView.CursorMoved) -> None:
        line = self.query_one(DiffView).current
        row = None if line is None else line.row
        # The cursor reports after every step; the detail is rebuilt only when its row changed.
        shown = None if row is None else (row.name, row.state, row.reason)
        if shown == self._detail_shown:
            return
        self._detail_shown = shown
        self.query_one("#diff-detail", Static).update("" if row is None else diff_detail(row))

    @on(JournalList.Chosen, "#replayed-journal")
    def open_record(self, event: JournalList.Chosen) -> None:
        """Enter on a replayed record: the diff pane, on that step against the recording."""
        self.show_pane("diff")
        view = self.query_one(DiffView)
        name = self.view.rows[event.index].name
        at = next((i for i, line in enumerate(view.items) if line.row is not None and line.row.name == name), None)
        if at is None:
            self.notify("the step matches the recording (folded among the identical steps)", timeout=3)
        else:
            view.cursor = at
        self.focus_now(view)

    @on(DiffView.Chosen, "#diff-view")
    def open_detail(self) -> None:
        """Enter on a step of the diff: its detail takes the keys (j/k scroll it; esc comes back)."""
        self.focus_now(self.query_one("#diff-detail-scroll"))

    # -- actions -----------------------------------------------------------------------------

    def action_back(self) -> None:
        """From a pane, back to the replayed journal; from the journal, leave the replay."""
        self.back_to(self.query_one(JournalList))

    def action_copy(self) -> None:
        """y: the step name under the cursor of the diff when it has the focus, else of the journal."""
        if isinstance(self.focused, DiffView):
            line = self.focused.current
            name = None if line is None or line.row is None else line.row.name
        else:
            row = self.query_one(JournalList).current
            name = None if row is None else row.name
        self.copy_step_name(name, "no step under the cursor")

    def _busy(self) -> bool:
        return any(w.group == "replay" and not w.is_finished for w in self.workers)

    def _move(self, what: str) -> None:
        """Drive the replay now, or once the move under way is done (the newest ask wins)."""
        if self._busy():
            self._queued = what
        else:
            self.drive(what)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Textual calls StoreScreen's handler too (every class's in the MRO): calling it here as
        # well showed every error of a replay twice.
        if event.worker.group == "replay" and event.state == WorkerState.ERROR and self.session is None:
            # The recording could not be read (a run with no records: none, or gone): the bar
            # would wait for ever; the title says why instead (the error hub shows it in full).
            error = event.worker.error
            self.not_opened = getattr(error, "message", None) or str(error)
            self.query_one(ProgressBar).display = False
            self.query_one(JournalList).empty_text = "Not replayed: the line above says why."
            self._queued = None
            self._title()
        if event.worker.group == "replay" and event.state == WorkerState.SUCCESS and self._queued:
            what, self._queued = self._queued, None
            self.drive(what)
        elif event.worker.group == "replay" and event.state == WorkerState.SUCCESS:
            self._title()  # the move is done: the header says the replay waits, and for which keys

    def action_next_turn(self) -> None:
        self._move("next")

    def action_run_to_end(self) -> None:
        self._move("end")

    def action_back_turn(self) -> None:
        self._move("back")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("jump_prompt", "until_prompt", "jump_done", "jump_cancel"):
            in_prompt = self.focused in (self.query_one("#replay-jump"), self.query_one("#replay-until"))
            if in_prompt != (action not in ("jump_prompt", "until_prompt")):
                return False
        return super().check_action(action, parameters)

    def _fork_hint(self) -> str:
        return f"{key_of(self, 'replay.fork')} forks the replay at the step under the cursor"

    def unavailable(self, action: str) -> str | None:
        """A refused replay moves nowhere; a replay at its end goes no further, nor back from its
        start; a replay with no fork has none to save or compare."""
        if action in ("save_fork", "compare") and self._fork() is None:
            what = "save" if action == "save_fork" else "compare"
            return f"no fork to {what}: {self._fork_hint()}"
        if action not in ("next_turn", "run_to_end", "back_turn", "jump_prompt", "until_prompt", "fork"):
            return super().unavailable(action)
        if self.not_opened is not None:
            return f"not replayed: {self.not_opened}"
        session = self.session
        if session is None or self._busy() or self._queued:
            return None  # opening, or a move under way: the key's move is made next
        progress = session.progress
        if progress.state == ReplayState.REFUSED:
            return f"not replayed: {progress.reason}" if progress.reason else "not replayed: the line above says why"
        if action in ("next_turn", "run_to_end") and session.done:
            back, jump = key_of(self, "replay.previous"), key_of(self, "replay.jump")
            return f"the replay has ended ({progress.state.value}): {back} goes back a turn, {jump} jumps to one"
        if action == "back_turn" and progress.turn == 0:
            return f"at the start: no turn to go back to ({key_of(self, 'replay.next')} replays the first)"
        return None

    def action_jump_prompt(self) -> None:
        field = self.query_one("#replay-jump", Input)
        field.value = ""
        field.display = True
        self.focus_now(field)

    def action_jump_done(self) -> None:
        if self.focused is self.query_one("#replay-until"):
            self._until_done()
            return
        field = self._close_jump_prompt()
        # Digits typed just before the enter may still wait in the field's queue: read it after them.
        field.call_later(self._jump_to, field)

    def _jump_to(self, field: Input) -> None:
        if field.value.strip().isdigit():
            self.drive("jump", int(field.value))

    def action_jump_cancel(self) -> None:
        self._close_jump_prompt()

    def _close_jump_prompt(self) -> Input:
        for prompt in self.query("#replay-jump, #replay-until"):
            prompt.display = False
        self.focus_now(self.query_one(JournalList))
        return self.query_one("#replay-jump", Input)

    # -- breakpoints and forks ---------------------------------------------------------------

    def action_until_prompt(self) -> None:
        field = self.query_one("#replay-until", Input)
        field.value = ""
        field.display = True
        self.focus_now(field)

    def _until_done(self) -> None:
        field = self.query_one("#replay-until", Input)
        # As for the jump: read the field after the keys typed just before the enter.
        field.call_later(self._set_breakpoint, field)

    def _set_breakpoint(self, field: Input) -> None:
        from agenttui.replay.breakpoints import BadBreakpoint

        text = field.value.strip()
        if not text:
            self.breakpoints = []
            self.notify("breakpoints cleared", timeout=3)
        else:
            try:
                self.breakpoints.append(parse_breakpoint(text))
            except BadBreakpoint as bad:
                self.notify(printable(bad.message), title=bad.title, severity="error", markup=False)
                return  # the prompt stays, with what was typed, to be put right
            self.notify(f"e runs to the end or to: {printable(text)}", timeout=3, markup=False)
        self._close_jump_prompt()
        self._title()

    @work(exclusive=True, group="replay-costs", exit_on_error=False)
    async def _read_replay_costs(self, session: ReplaySession) -> None:
        """What the recording cost against what the replay or fork did (prices read in a thread
        the first time), then the title says it. Without prices the title stays as it was."""
        from agenttui.runs.cost.reading import store_costs

        prices = await self.tui.read_prices()
        (recorded,) = [cost.total async for cost in store_costs(self.store, [self.run_id], prices)]
        (replayed,) = [cost.total async for cost in store_costs(session.store, [self.run_id], prices)]
        if self.session is session:
            self._replay_costs = (session, recorded, replayed)
            self._title()

    def _fork(self) -> ForkSession | None:
        from agenttui.replay.fork import ForkSession

        return self.session if isinstance(self.session, ForkSession) else None

    def action_fork(self) -> None:
        row = self.query_one(JournalList).current
        if row is None:
            self.notify("replay to a model turn or tool result first, then fork there", severity="warning")
            return
        self.fork_at(row.name)

    @work(exclusive=True, group="fork", exit_on_error=False)
    async def fork_at(self, name: str) -> None:
        """Edit the recorded value of step ``name``, then replay the run again as a fork of it."""
        from agenttui.replay.edit import editable
        from agenttui.replay.fork import ForkSession
        from agenttui.tui.screens.dialogs import ChoiceDialog
        from agenttui.tui.screens.fork_editor import ForkEditor

        session = self.session
        if session is None:
            return
        fork = self._fork()
        recording = fork.original if fork is not None else session.recording  # a new edit starts from the recording
        record = next((r for r in recording if r.name == name), None)
        if record is None or (why := editable(record)):
            self.notify(
                printable(why if record else f"{name} is not in the recording"), severity="warning", markup=False
            )
            return
        value = await self.app.push_screen_wait(ForkEditor(record))
        if value is None:
            return
        live = False
        if self.setup is not None and self.setup.model is not None:
            choice = await self.app.push_screen_wait(ChoiceDialog("Where the recording cannot answer", [
                "Stop there and say why", "Go on live with your agent's model (turns marked LIVE)"]))  # fmt: skip
            if choice is None:
                return
            live = choice == 1
        forked = await ForkSession.create(self.store, self.run_id, name, value, self.setup, live=live)
        if self.session is not None:
            await self.session.aclose()
        self.session, self.verdict, self._compared = forked, None, False
        self._show_verdict()
        self._move("jump-0")
        self._queued = "end"

    def action_save_fork(self) -> None:
        self.save_fork()

    @work(exclusive=True, group="fork", exit_on_error=False)
    async def save_fork(self) -> None:
        """Keep the fork: in a new SQLite file, or, once confirmed, as a new run in this store."""
        from agenttui.replay.save import plan_save, save_into_file
        from agenttui.stores.files import FileTakenError
        from agenttui.tui.screens.dialogs import ChoiceDialog, PromptDialog

        fork = self._fork()
        if fork is None:
            self.notify(f"no fork to save: {self._fork_hint()}", severity="warning")
            return
        where = await self.app.push_screen_wait(ChoiceDialog(f"Save the fork of {self.run_id}",
            ["Into a new SQLite file…", "As a new run in this store (asks first)…"]))  # fmt: skip
        agent = self.tui.agent_spec or ""
        if where == 1:
            operation = await plan_save(fork, self.store, where="this store", live_agent=agent)
            await self.tui.confirm_and_apply(operation, operation.run_id)
            return
        if where != 0:
            return
        if refused := self.tui.writes_refused:  # a file on this machine is a write too
            self.notify(printable(f"nothing written: {refused}"), severity="warning", markup=False)
            return
        path = await self.app.push_screen_wait(
            PromptDialog("Save the fork", "A new SQLite file:", "its name or path, e.g. what-if.db")
        )
        if path is None:
            return  # esc: nothing asked of us
        if not (path := path.strip()):
            self.notify("a file name is needed: nothing written (s asks again)", severity="warning", timeout=6)
            return
        try:
            done = await save_into_file(fork, path, protect=[self.store.file_path], live_agent=agent)
        except FileTakenError:
            self.notify(
                f"{printable(path)} exists: nothing written (choose a new file)", severity="error", markup=False
            )
            return
        self.notify(printable(done), title="Fork saved", timeout=6, markup=False)

    def action_compare(self) -> None:
        """The fork beside the recording, turn by turn."""
        fork = self._fork()
        if fork is None:
            self.notify(f"no fork to compare: {self._fork_hint()}", severity="warning")
            return
        from agenttui.replay.compare import Side
        from agenttui.replay.verdict import REQUEST_DIGESTS
        from agenttui.tui.screens.compare import CompareScreen

        # A replay with recorded tools writes no attempt markers, and a changed prompt or tool
        # list is the replay's news, not the fork's: neither is a difference the fork made.
        self.app.push_screen(
            CompareScreen(
                Side(self.store, self.run_id, "recording"),
                Side(fork.store, self.run_id, "fork"),
                markers_optional=True,
                not_compared=tuple(REQUEST_DIGESTS),
            )
        )

    def action_show_pane(self, pane: str) -> None:
        self.show_pane(pane)

    @property
    def finished(self) -> bool:
        return self.session is not None and self.session.progress.state != ReplayState.RUNNING


def fork_parts(session: ReplaySession) -> list[Text]:
    """What the title says of a fork: where it was edited, and where it went live."""
    from agenttui.replay.fork import ForkSession

    if not isinstance(session, ForkSession):
        return []
    parts = [Text(f"fork at {printable(session.edit.name)}", style="bold")]
    if session.live_from is not None:
        parts.append(Text(f"LIVE from turn {session.live_from}", style="bold reverse"))
    return parts
