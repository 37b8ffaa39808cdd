"""The run screen: the stepped journal of one run, the record inspector and time travel."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static, TabbedContent, TabPane

from agenttui.agent.factory import AgentSetup
from agenttui.journal.describe import printable, printable_id
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record
from agenttui.render.bulk import older_objects_set_aside
from agenttui.render.flow import FlowStep
from agenttui.replay.events import events_of
from agenttui.runs.operations import replay_command
from agenttui.runs.status import RunStatus, statuses
from agenttui.runs.tree import sub_run_steps
from agenttui.runs.view import RecordRow, RunView, utterance
from agenttui.stores import describe_url
from agenttui.tui.messages import StoreChanged, StoreOpened
from agenttui.tui.screens.base import StoreScreen
from agenttui.tui.screens.dialogs import ConfirmDialog
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.widgets.events_view import EventsView
from agenttui.tui.widgets.flowchart_view import FlowchartView
from agenttui.tui.widgets.inspector import ConversationView, RecordInspector
from agenttui.tui.widgets.journal_list import JournalList
from agenttui.tui.widgets.key_footer import KeyFooter
from agenttui.tui.widgets.status_bar import StatusBar

#: Records are handed to the list in batches: the first as soon as it fills a screen
#: (``SCREENFUL``) or ``BATCH_SECONDS`` have passed; then, while a long run loads, each batch
#: waits twice as long as the one before, up to ``BATCH_SECONDS_MAX``. Every batch lays the
#: screen out and paints it again: at one batch every 50 ms, a 50,000-record run took 100 of them.
SCREENFUL = 100
BATCH_SECONDS = 0.05
BATCH_SECONDS_MAX = 0.25


class RunScreen(StoreScreen):
    """One run. ``j/k`` step through records; the panes follow the cursor."""

    @dataclass
    class RecordsLoaded(Message):
        """A batch of a run's records, in commit order, each with its seq."""

        entries: list[tuple[int, Record]]
        tail: bool = False
        """True for records that arrived while watching (not the initial load)."""

    @dataclass
    class SubRunsLoaded(Message):
        """The flow steps of the run's sub-runs, so the flowchart can frame them (before any record)."""

        children: dict[str, list[FlowStep]]

    @dataclass
    class RecordsRead(Message):
        """Records read back from the store for a pane: the one inspected, or the voices of the
        conversation as of record ``index``."""

        pane: str
        index: int
        records: list[Record]

    @dataclass
    class StatusRead(Message):
        status: RunStatus

    AUTO_FOCUS = "#journal"
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="run.back"),
        Binding("f", "toggle_follow", "Follow", id="run.follow"),
        Binding("i", "show_pane('inspector')", "Inspector", id="run.inspector"),
        Binding("c", "show_pane('conversation')", "State at step", id="run.conversation"),
        Binding("v", "show_pane('events')", "Events", show=False, id="run.events"),
        Binding("w", "show_pane('flow')", "Flowchart", id="run.flowchart"),
        Binding("p", "toggle_panes", "Panes", show=False, id="run.toggle-panes"),
        Binding("R", "replay", "Replay", id="run.replay"),
        Binding("Y", "replay_with_agent", "Replay with your agent", show=False, id="run.replay-agent"),
        Binding("L", "replay_live", "Replay with your agent, side effects live", show=False, id="run.replay-live"),
        Binding("o", "operate", "Act on run", id="run.operate"),
        Binding("a", "operate('Approve')", "Approve", show=False, id="run.approve"),
        Binding("x", "operate('Deny')", "Deny", show=False, id="run.deny"),
    ]

    follow: reactive[bool] = reactive(True)
    """Keep the cursor on the newest record while it is there."""

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.view = RunView(run_id)
        """A row for each record read so far, their tool names and the seq to read on from."""
        self._one_load = asyncio.Lock()
        self._read_to = -1
        """The seq of the newest record a load has read (its batch may not be handled yet)."""
        self._framed = False
        """The sub-runs have been read (once, before the first record, for the flowchart)."""
        self._read_once = False
        """A load has read to the end: what later loads read arrived while watching."""
        self._status_text = "loading…"
        self.status: RunStatus | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="run-title")
        with Horizontal(id="run-body"):
            yield JournalList(id="journal")
            with TabbedContent(id="run-panes", initial="inspector"):
                with TabPane("Inspector", id="inspector"):
                    yield RecordInspector(id="record-inspector")
                with TabPane("State at step", id="conversation"):
                    yield ConversationView(id="conversation-view")
                with TabPane("Events", id="events"):
                    yield EventsView(id="events-view")
                with TabPane("Flowchart", id="flow"):
                    yield FlowchartView(id="run-flowchart")
        yield StatusBar(id="status-bar")
        yield KeyFooter()

    @property
    def journal_list(self) -> JournalList:
        return self.query_one(JournalList)

    @property
    def rows(self) -> list[RecordRow]:
        """What the journal list shows of each record read so far."""
        return self.view.rows

    def on_mount(self) -> None:
        self._title()
        self.journal_list.empty_text = "Reading the journal…"
        self.journal_list.focus()
        if self.tui.store is not None:
            self.load_records()

    def on_store_opened(self, message: StoreOpened) -> None:
        self.load_records()

    # -- loading and tailing -----------------------------------------------------------------

    @work(group="run-load", exit_on_error=False)
    async def load_records(self) -> None:
        """Read what is new since the last record read, in batches: a long run paints its first
        page before the rest is read. One load reads at a time: a change heard during the first
        load is read after it, from where it stopped."""
        async with self._one_load:
            if not self._framed:
                # The flowchart frames the sub-runs as each record arrives: it keeps no records
                # to draw again from, so it hears of the sub-runs first.
                children = await sub_run_steps(self.store, self.run_id)
                self._framed = True
                if children:
                    self.post_message(RunScreen.SubRunsLoaded(children))
            batch: list[tuple[int, Record]] = []
            last_post, wait, posted = time.monotonic(), BATCH_SECONDS, False
            tail = self._read_once
            after = max(self._read_to, self.view.last_seq)
            with older_objects_set_aside():  # the runs list's rows, say: kept, and many
                async for entry, record in Journal(self.store).entries(self.run_id, after=after):
                    batch.append((entry.seq, record))
                    self._read_to = entry.seq
                    if time.monotonic() - last_post > wait or (not posted and len(batch) == SCREENFUL):
                        self.post_message(RunScreen.RecordsLoaded(batch, tail))
                        batch, last_post = [], time.monotonic()
                        wait = min(2 * wait, BATCH_SECONDS_MAX) if posted else wait
                        posted = True
            self.post_message(RunScreen.RecordsLoaded(batch, tail))
            self._read_once = True
        self.refresh_status()

    @work(exclusive=True, group="run-status", exit_on_error=False)
    async def refresh_status(self) -> None:
        # From the store's summary where it decides (a finished run): read whole, a long run's
        # records would all be decoded again, and held at once.
        (status,) = await statuses(self.store, [self.run_id])
        self.post_message(RunScreen.StatusRead(status))

    def on_run_screen_status_read(self, message: RunScreen.StatusRead) -> None:
        status = self.status = message.status
        self._status_text = f"{status.state.icon} {status.state.value}" + (
            f" · {status.detail}" if status.detail else ""
        )
        self._title()

    def on_run_screen_records_loaded(self, message: RunScreen.RecordsLoaded) -> None:
        journal, view = self.journal_list, self.view
        at_end = journal.cursor >= len(view) - 1
        before = len(view)
        turns_before = view.model_turns
        fresh = view.add_entries(message.entries)
        journal.extend(view.rows[before:])
        self.query_one(FlowchartView).append(fresh)
        self.query_one(EventsView).add(events_of(self.run_id, fresh, first_turn=turns_before, names=view.tool_names))
        if before == 0 and len(view):
            journal.cursor = 0
        elif message.tail and self.follow and at_end and fresh:
            journal.cursor = len(view) - 1
        if not len(view):
            self._status_text = "no records: this run does not exist (yet)"
            journal.empty_text = "No records: the store has no run with this id (yet). esc lists every run."
        self._title()

    def on_run_screen_sub_runs_loaded(self, message: RunScreen.SubRunsLoaded) -> None:
        self.query_one(FlowchartView).load([], self.run_id, message.children)

    def on_store_changed(self, message: StoreChanged) -> None:
        if message.run_ids is None or self.run_id in message.run_ids:
            self.load_records()

    # -- the panes follow the cursor -----------------------------------------------------------

    @on(JournalList.CursorMoved, "#journal")  # events and other lists post CursorMoved too
    def cursor_moved(self, event: JournalList.CursorMoved) -> None:
        self._show(event.index)

    def _show(self, index: int) -> None:
        if not 0 <= index < len(self.view):
            return
        pane = self.query_one(TabbedContent).active
        if pane in ("inspector", "conversation"):
            wanted = [index] if pane == "inspector" else self.view.voices(index).indices
            records = self.view.cached(wanted)
            if records is None:
                self.read_records(pane, index, wanted)
            else:
                self._show_records(pane, index, records)
        self.query_one(FlowchartView).select_record(index)

    @work(exclusive=True, group="run-read", exit_on_error=False)
    async def read_records(self, pane: str, index: int, wanted: list[int]) -> None:
        """Read back the records a pane shows for record ``index`` (the view keeps a few only)."""
        self.post_message(RunScreen.RecordsRead(pane, index, await self.view.read(self.store, wanted)))

    def on_run_screen_records_read(self, message: RunScreen.RecordsRead) -> None:
        if message.index == self.journal_list.cursor and message.pane == self.query_one(TabbedContent).active:
            self._show_records(message.pane, message.index, message.records)

    def _show_records(self, pane: str, index: int, records: list[Record]) -> None:
        names = self.view.tool_names
        if pane == "inspector":
            self.query_one(RecordInspector).show(records[0], index, names)
            return
        voices = self.view.voices(index)
        said = [u for at, r in zip(voices.indices, records, strict=True) if (u := utterance(r, at, names)) is not None]
        self.query_one(ConversationView).show(said, index, voices.left_out)

    @on(FlowchartView.RecordSelected)
    def flowchart_moved(self, event: FlowchartView.RecordSelected) -> None:
        if event.record_index < len(self.view):
            self.journal_list.cursor = event.record_index

    @on(TabbedContent.TabActivated)
    def pane_changed(self) -> None:
        self._show(self.journal_list.cursor)

    def _title(self) -> None:
        line = Text(f" run {printable_id(self.run_id)}", style="bold")
        line.append(f"   {len(self.view):,} records   {printable(self._status_text)}")
        line.append("   · following" if self.follow else "")
        self.query_one("#run-title", Static).update(line, layout=False)  # one line, always

    # -- actions -----------------------------------------------------------------------------

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        self._title()
        self.notify("following new records" if self.follow else "not following", timeout=2)
        if self.follow and len(self.view):
            self.journal_list.cursor = len(self.view) - 1

    def action_show_pane(self, pane: str) -> None:
        self.show_pane(pane)

    def action_operate(self, pick: str | None = None) -> None:
        if self.status is None:
            self.notify("the run's status is still being read", severity="warning")
            return
        self.tui.operate(self.status, pick)

    def action_replay(self) -> None:
        self.app.push_screen(ReplayScreen(self.run_id))

    def _agent_setup(self) -> AgentSetup | None:
        factory = self.tui.agent_factory
        if factory is None:
            self.notify("start agenttui with --agent module:factory to replay with your code", severity="warning")
            return None
        return factory(self.run_id)

    def action_replay_with_agent(self) -> None:
        """Your tools run; those not read-only are served from the recording: nothing fires."""
        if (setup := self._agent_setup()) is not None:
            self.app.push_screen(ReplayScreen(self.run_id, setup))

    def action_replay_live(self) -> None:
        """Your tools run, side effects and all, once a person has confirmed each one by name."""
        if (setup := self._agent_setup()) is None:
            return
        live = [t.name for t in setup.tools if not t.safety.read_only]
        if not live:
            self.app.push_screen(ReplayScreen(self.run_id, setup))
            return
        command = replay_command(describe_url(self.tui.url), self.run_id, self.tui.agent_spec or "", live)

        def chosen(go: bool | None) -> None:
            if go:
                self.app.push_screen(ReplayScreen(self.run_id, setup, live_tools=live))

        dialog = ConfirmDialog(f"Replay {self.run_id} with your tools' side effects live", "\n".join(f"  {n}" for n in live), command,
                               heading="Will run for real, side effects and all (into a replay store, never this one):", yes="Run them (y)")  # fmt: skip
        self.app.push_screen(dialog, chosen)

    def action_toggle_panes(self) -> None:
        panes = self.query_one("#run-panes")
        panes.display = not panes.display
