"""The run screen: the stepped journal of one run, the record inspector and time travel."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import TabbedContent, TabPane

from agenttui.journal.describe import printable, printable_id
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record
from agenttui.render.bulk import ObjectsSetAside, give_back_free_memory, older_objects_set_aside
from agenttui.render.flow import FlowStep, unfinished
from agenttui.runs.reading.search import Hits, Needle, row_hits, search_content
from agenttui.runs.reading.tree import sub_run_steps
from agenttui.runs.reading.view import RecordRows, RunView, utterance
from agenttui.runs.recovery.operations import replay_command
from agenttui.runs.statuses.chart_end import chart_end
from agenttui.runs.statuses.status import RunStatus, statuses
from agenttui.stores import describe_url
from agenttui.stores.base import seq_order
from agenttui.tui.keymap import key_of
from agenttui.tui.messages import StoreChanged, StoreOpened
from agenttui.tui.screens.base import VIEW_STYLES, StoreScreen
from agenttui.tui.screens.dialogs import ConfirmDialog
from agenttui.tui.widgets.cost_view import CostView
from agenttui.tui.widgets.events_view import EventsView, RunEventLines
from agenttui.tui.widgets.find_bar import FindBar
from agenttui.tui.widgets.fitting_tabs import FittingTabs
from agenttui.tui.widgets.flowchart_view import FlowchartView
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.inspector import ConversationView, RecordInspector, record_value
from agenttui.tui.widgets.journal_list import JournalList
from agenttui.tui.widgets.key_footer import KeyFooter
from agenttui.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from agenttui.agent.factory import AgentSetup
    from agenttui.runs.cost.lens import RunCost

#: Records are handed to the list in batches: the first as soon as it fills a screen
#: (``SCREENFUL``) or ``BATCH_SECONDS`` have passed; then, while a long run loads, each batch
#: waits twice as long as the one before, up to ``BATCH_SECONDS_MAX``. Every batch lays the
#: screen out and paints it again (a new screenful while G pulls the cursor to the end, 15-30 ms
#: of CPU): at one batch every 50 ms, a 50,000-record run took 100 of them; at one every 0.25 s,
#: 36 on a busy machine, half a second of CPU. The header's count still moves every second.
SCREENFUL = 100
BATCH_SECONDS = 0.05
BATCH_SECONDS_MAX = 1.0
BATCH_RECORDS_MAX = 5000
"""A batch is handed on at this many records, however soon: its decoded records are all held
until it is handled (10,000 of the 50,000-record run, a second's worth, added 25 MB to the peak)."""
PROGRESS_SECONDS = 0.1
"""A pane's read back says how far it has got at most this often: each word of it lays the
screen out again (40 a conversation of a long run, when each record read said so)."""
#: The panes' labels where their full ones do not all fit beside the journal (at 100 columns).
SHORT_PANE_LABELS = {"inspector": "Record", "conversation": "State", "flow": "Flow"}
#: Each pane's binding, whose key its tab shows.
PANE_KEYS = {
    "inspector": "run.inspector",
    "conversation": "run.conversation",
    "events": "run.events",
    "flow": "run.flowchart",
    "cost": "run.cost",
}


class RunScreen(StoreScreen):
    """One run. ``j/k`` step through records; the panes follow the cursor; ``enter`` opens the
    record in the inspector, ``esc`` comes back to the journal (and from there to the runs)."""

    CSS_PATH = VIEW_STYLES

    @dataclass
    class RecordsLoaded(Message):
        """A batch of a run's records, in commit order, each with its seq."""

        entries: list[tuple[int, Record]]
        tail: bool = False
        """True for records that arrived while watching (not the initial load)."""
        last: bool = False
        """The load that read this batch has read to the end of the journal."""

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

    @dataclass
    class CostRead(Message):
        """What the run cost, turn by turn, for the cost pane; ``prices``: where the prices come from."""

        cost: RunCost
        prices: str

    @dataclass
    class ReadProgress(Message):
        """A pane's read back is under way: ``done`` of ``total`` records read for record ``index``."""

        pane: str
        index: int
        done: int
        total: int

    @dataclass
    class HitsFound(Message):
        """A page of a content search: the hits in it (maybe none) and how far the search has read."""

        hits: Hits
        indices: list[int]
        searched: int
        done: bool

    AUTO_FOCUS = "#journal"
    BINDINGS = [
        Binding("escape", "back", "Back", id="run.back"),
        Binding("f", "toggle_follow", "Follow", id="run.follow"),
        Binding("r", "toggle_raw", "Raw", id="inspector.raw"),
        Binding("y", "copy", "Copy", show=False, id="run.copy"),
        Binding("i", "show_pane('inspector')", "Inspector", id="run.inspector"),
        Binding("c", "show_pane('conversation')", "State at step", id="run.conversation"),
        Binding("v", "show_pane('events')", "Events", show=False, id="run.events"),
        Binding("w", "show_pane('flow')", "Flowchart", id="run.flowchart"),
        Binding("dollar_sign", "show_pane('cost')", "Cost", show=False, id="run.cost"),
        Binding("p", "toggle_panes", "Panes", show=False, id="run.toggle-panes"),
        Binding("R", "replay", "Replay", id="run.replay"),
        Binding("Y", "replay_with_agent", "Replay with your agent", show=False, id="run.replay-agent"),
        Binding("L", "replay_live", "Replay with your agent, side effects live", show=False, id="run.replay-live"),
        Binding("slash", "find('search')", "Search", id="run.search"),
        Binding("n", "next_hit", "Next hit", show=False, id="run.next-hit"),
        Binding("N", "previous_hit", "Previous hit", show=False, id="run.previous-hit"),
        Binding("colon", "find('jump')", "Go to record", show=False, id="run.jump"),
        Binding("e", "toggle_expand", "Expand values", show=False, id="run.expand"),
        Binding("o", "operate", "Act on run", id="run.operate"),
        Binding("a", "operate('Approve')", "Approve", show=False, id="run.approve"),
        Binding("x", "operate('Deny')", "Deny", show=False, id="run.deny"),
        Binding("E", "export", "Export", id="run.export"),
    ]

    follow: reactive[bool] = reactive(False)
    """The cursor is on the newest record and stays there as records arrive (``f``); any move
    elsewhere stops it, and a finished run is never followed."""

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.view = RunView(run_id)
        """A row for each record read so far, their tool names and the seq to read on from."""
        self.events = RunEventLines(self.view.rows)
        """The events pane's lines, drawn from the rows."""
        self._one_load = asyncio.Lock()
        self._read_to = -1
        """The seq of the newest record a load has read (its batch may not be handled yet)."""
        self._framed = False
        """The sub-runs have been read (once, before the first record, for the flowchart)."""
        self._read_once = False
        """A load has read to the end: what later loads read arrived while watching."""
        self._loads_unhandled = 0
        """Loads whose last batch is not handled yet: a load that has read to its end may still
        have batches on their way to this screen, behind a key pressed meanwhile."""
        self._status_text = "loading…"
        self.status: RunStatus | None = None
        self.hits: Hits | None = None
        """The search the find bar started (``/``), while its bar is open."""
        self._jump_to_hit = False
        """Enter was pressed before any hit was found: go to the first one found."""
        self._cost_shown = False
        """The cost pane has shown the run's cost once (read again as the run grows)."""
        self._to_end = False
        """``G`` was pressed while the journal loads: the cursor goes on to the last record as
        batches arrive, until the load is done or the cursor moves elsewhere."""
        self._set_aside: ObjectsSetAside | None = None
        """What the run's first load made and the screen keeps (the flowchart's nodes, say), set
        aside from the collector's passes, batch by batch, until the screen closes."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="run-title")
        with Horizontal(id="run-body"):
            yield JournalList(id="journal")
            with FittingTabs(id="run-panes", initial="inspector", short_labels=SHORT_PANE_LABELS, keys=PANE_KEYS):
                with TabPane("Inspector", id="inspector"):
                    yield RecordInspector(id="record-inspector")
                with TabPane("State at step", id="conversation"):
                    yield ConversationView(id="conversation-view")
                with TabPane("Events", id="events"):
                    yield EventsView(id="events-view")
                with TabPane("Flowchart", id="flow"):
                    yield FlowchartView(id="run-flowchart")
                with TabPane("Cost", id="cost"):
                    yield CostView(id="cost-view")
        yield FindBar(id="find-bar")
        yield StatusBar(id="status-bar")
        yield KeyFooter()

    @property
    def journal_list(self) -> JournalList:
        return self.query_one(JournalList)

    @property
    def rows(self) -> RecordRows:
        """What the journal list shows of each record read so far."""
        return self.view.rows

    def on_mount(self) -> None:
        self._title()
        self.query_one(FlowchartView).set_end(unfinished("reading where the run stands…"))
        self.journal_list.empty_text = "Reading the journal…"
        self.journal_list.focus()
        if self.tui.store is not None:
            self.load_records()
        if self.tui.prices is not None:
            self.query_one(RecordInspector).show_costs(self.tui.prices)
        else:
            self._read_prices()

    @work(group="run-prices", exit_on_error=False)
    async def _read_prices(self) -> None:
        """Show costs once the prices are read. Without them (the library fails to load) the
        inspector shows no cost, and nothing else changes."""
        self.query_one(RecordInspector).show_costs(await self.tui.read_prices())

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
            after = max(self._read_to, self.view.last_seq, key=seq_order)
            self._loads_unhandled += 1
            try:
                with older_objects_set_aside():  # the runs list's rows, say: kept, and many
                    async for entry, record in Journal(self.store).entries(self.run_id, after=after):
                        batch.append((entry.seq, record))
                        self._read_to = entry.seq
                        full = len(batch) == (BATCH_RECORDS_MAX if posted else SCREENFUL)
                        if full or time.monotonic() - last_post > wait:
                            self.post_message(RunScreen.RecordsLoaded(batch, tail))
                            batch, last_post = [], time.monotonic()
                            wait = min(2 * wait, BATCH_SECONDS_MAX) if posted else wait
                            posted = True
            finally:  # also of a load that failed: the screen stops waiting for its end
                self.post_message(RunScreen.RecordsLoaded(batch, tail, last=True))
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
        if self.finished:
            self.follow = False  # it ended while followed: the cursor stays on its last record
        self._title()
        self.query_one(FlowchartView).set_end(chart_end(status))

    @property
    def finished(self) -> bool:
        """The run has ended (as last read): no record will arrive, there is nothing to follow."""
        return self.status is not None and self.status.state.finished

    def on_run_screen_records_loaded(self, message: RunScreen.RecordsLoaded) -> None:
        journal, view = self.journal_list, self.view
        before = len(view)
        turns_before = view.model_turns
        fresh = view.add_entries(message.entries)
        journal.show_rows(view.rows, before)
        self.query_one(FlowchartView).append(fresh)
        added = self.events.add_records(self.run_id, before, fresh, turns_before, view.tool_names)
        self.query_one(EventsView).show_run(self.events, added)
        if self.follow or self._to_end:
            if fresh:
                journal.cursor = len(view) - 1
        elif before == 0 and len(view):
            journal.cursor = 0
        if message.last:
            self._loads_unhandled -= 1
            if self._to_end:
                self._to_end = False
                self._show(journal.cursor)  # the panes waited for the last record (_show)
            if not message.tail:
                give_back_free_memory()  # the load is done: its batches, decoded and dropped, go back
        if fresh and self.query_one(TabbedContent).active == "cost":
            self._read_cost()  # the run grew: what it cost too
        if not self.tui.first_rows_shown.is_set():  # opened at start (--run): the first screen
            self.app.call_after_refresh(self.tui.first_rows_painted)
        if not len(view):
            self._status_text = "no records: this run does not exist (yet)"
            journal.empty_text = (
                f"No records: the store has no run with this id (yet). {key_of(self, 'run.back')} lists every run."
            )
        self._title()
        if not message.tail:  # not a live run's later records: they come a few at a time, for long
            if self._set_aside is None:
                self._set_aside = ObjectsSetAside()
            else:
                self._set_aside.again()

    def on_unmount(self) -> None:
        if self._set_aside is not None:
            self._set_aside.release()

    def on_run_screen_sub_runs_loaded(self, message: RunScreen.SubRunsLoaded) -> None:
        self.query_one(FlowchartView).load([], self.run_id, message.children)

    def on_store_changed(self, message: StoreChanged) -> None:
        if message.run_ids is None or self.run_id in message.run_ids:
            self.load_records()

    # -- the panes follow the cursor -----------------------------------------------------------

    @on(JournalList.CursorMoved, "#journal")  # events and other lists post CursorMoved too
    def cursor_moved(self, event: JournalList.CursorMoved) -> None:
        journal = self.journal_list
        # A move stops following, and G's pull to the end, unless it is onto the newest record
        # (where following puts it). A report the cursor has since left behind says nothing.
        if event.index == journal.cursor and journal.cursor != len(self.view) - 1:
            self._to_end = False
            if self.follow:
                self.follow = False
                self._title()
        self._show(event.index)
        if self.hits is not None:
            self._show_count()

    def on_journal_list_last_asked(self) -> None:
        # G means the last record: the last one read by now (batches handled while this message
        # bubbled up left the cursor where G put it, and its CursorMoved, arriving after, would
        # read as a move away from the end and stop the pull) and, while a load's batches are
        # still to come, the last once read. Whether the load has read to its end is not what
        # tells: its last batches may be on their way behind this message.
        self._to_end = self._loads_unhandled > 0
        if len(self.view):
            self.journal_list.cursor = len(self.view) - 1

    @on(JournalList.Chosen, "#journal")
    def open_record(self) -> None:
        """Enter on a record: the inspector shows it, and takes the keys (j/k scroll it, y copies
        its value, esc comes back)."""
        self.query_one("#run-panes").display = True
        self.show_pane("inspector")
        self.focus_now(self.query_one(RecordInspector))

    def _show(self, index: int) -> None:
        if not 0 <= index < len(self.view):
            return
        pane = self.query_one(TabbedContent).active
        # While G pulls the cursor to the end of a run still loading, the panes wait for the last
        # record: each batch's last one, read back and laid out, was shown only to be replaced.
        if pane in ("inspector", "conversation") and not self._to_end:
            wanted = [index] if pane == "inspector" else self.view.voices(index).indices
            records = self.view.cached(wanted)
            if records is None:
                if pane == "conversation":  # many records to read back: say so, never a blank pane
                    self.query_one(ConversationView).reading(index, 0, len(wanted))
                self.read_records(pane, index, wanted)
            else:
                self._show_records(pane, index, records)
        self.query_one(FlowchartView).select_record(index)

    @work(exclusive=True, group="run-read", exit_on_error=False)
    async def read_records(self, pane: str, index: int, wanted: list[int]) -> None:
        """Read back the records a pane shows for record ``index`` (the view keeps a few only)."""

        said = time.monotonic()

        def progress(done: int, total: int) -> None:
            nonlocal said
            if time.monotonic() - said >= PROGRESS_SECONDS:
                said = time.monotonic()
                self.post_message(RunScreen.ReadProgress(pane, index, done, total))

        records = await self.view.read(self.store, wanted, progress=progress if len(wanted) > 1 else None)
        self.post_message(RunScreen.RecordsRead(pane, index, records))

    def on_run_screen_read_progress(self, message: RunScreen.ReadProgress) -> None:
        if message.index == self.journal_list.cursor and message.pane == self.query_one(TabbedContent).active:
            self.query_one(ConversationView).reading(message.index, message.done, message.total)

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
        if self.query_one(TabbedContent).active == "cost":
            self._read_cost()
        self._show(self.journal_list.cursor)

    @work(exclusive=True, group="run-cost", exit_on_error=False)
    async def _read_cost(self) -> None:
        """What the run cost, its sub-runs rolled up, turn by turn (the cost pane)."""
        from agenttui.runs.cost.reading import store_costs

        if not self._cost_shown:
            self.query_one(CostView).reading()
        prices = await self.tui.read_prices()
        (cost,) = [cost async for cost in store_costs(self.store, [self.run_id], prices)]
        self.post_message(RunScreen.CostRead(cost, prices.describe()))

    def on_run_screen_cost_read(self, message: RunScreen.CostRead) -> None:
        self._cost_shown = True
        self.query_one(CostView).show(message.cost, message.prices)

    def _title(self) -> None:
        """The run, its size and where it stands: the status and what it waits on wrap onto a
        line of their own rather than being cut (``HeaderBar``)."""
        parts = [
            Text(f"run {printable_id(self.run_id)}", style="bold"),
            Text(f"{len(self.view):,} records" + (f" {follow}" if (follow := self._follow_text().strip()) else "")),
            Text(printable(self._status_text)),
        ]
        self.query_one("#run-title", HeaderBar).show(parts)

    # -- actions -----------------------------------------------------------------------------

    def _follow_text(self) -> str:
        """What the header says of following: nothing for a finished run (it cannot be followed)."""
        if self.finished:
            return ""
        return "   · following" if self.follow else "   · not following"

    def action_back(self) -> None:
        """Close the find line first, if it shows (stopping its search), as k9s clears a filter; from a
        pane, back to the journal; from the journal, back to the runs."""
        if self.find_bar.display:
            self.find_bar.action_close()
        elif self.focused is not None and self.focused is not self.journal_list:
            self.focus_now(self.journal_list)
        else:
            self.app.pop_screen()

    def action_toggle_follow(self) -> None:
        if self.status is None:  # read once the journal is: G goes to its end meanwhile
            self.notify("the run's status is still being read: whether it can be followed, too", severity="warning")
            return
        if self.finished and not self.follow:
            self.notify(f"a {self.status.state.value} run gets no new records: nothing to follow", timeout=3)
            return
        self.follow = not self.follow
        if self.follow and len(self.view):
            self.journal_list.cursor = len(self.view) - 1
        self._title()
        self.notify("following: the cursor stays on the newest record" if self.follow else "not following",
                    timeout=2)  # fmt: skip

    def action_toggle_raw(self) -> None:
        """The inspector's stored bytes and uncut values, shown from wherever the focus is."""
        inspector = self.query_one(RecordInspector)
        inspector.show_raw = not inspector.show_raw
        if self.query_one(TabbedContent).active != "inspector" or not self.query_one("#run-panes").display:
            self.query_one("#run-panes").display = True
            self.show_pane("inspector")
        self.notify("raw bytes and values uncut" if inspector.show_raw else "values cut to a readable length",
                    timeout=2)  # fmt: skip

    def action_copy(self) -> None:
        """y: the value of the record the inspector shows when it has the focus, else the record's name."""
        from agenttui.tui.clipboard import copy_text

        inspector = self.query_one(RecordInspector)
        if self.focused is inspector and (shown := inspector.shown) is not None:
            record, index = shown
            copy_text(self, record_value(record), f"record #{index}'s value")
            return
        row = self.journal_list.current
        if row is None:
            self.notify("no record to copy yet", severity="warning")
            return
        copy_text(self, row.name, "the record's name")

    def action_copy_run_id(self) -> None:
        from agenttui.tui.clipboard import copy_text

        copy_text(self, self.run_id, "the run id")

    def action_show_pane(self, pane: str) -> None:
        self.show_pane(pane)

    def action_operate(self, pick: str | None = None) -> None:
        if self.status is None:  # its records are still being read: read its status first, now
            self._operate_once_read(pick)
            return
        self.tui.operate(self.status, pick)

    @work(exclusive=True, group="run-operate", exit_on_error=False)
    async def _operate_once_read(self, pick: str | None) -> None:
        (status,) = await statuses(self.store, [self.run_id])
        self.post_message(RunScreen.StatusRead(status))
        self.tui.operate(status, pick)

    def action_export(self) -> None:
        """Export this run (and its sub-runs) to a bundle file."""
        from agenttui.tui.export_plan import one_run
        from agenttui.tui.screens.export import ExportDialog

        if self.tui.store is None:
            self.notify("the store is still opening", severity="warning")
            return
        self.app.push_screen(ExportDialog(self.store, describe_url(self.tui.url), [one_run(self.run_id, "this run")]))

    def action_replay(self) -> None:
        self._replay()

    def _replay(self, setup: AgentSetup | None = None, live: Sequence[str] = ()) -> None:
        # Imported on the first replay: the replay screen brings the agent loop (a twentieth of
        # the run screen's start, for a key many never press).
        from agenttui.tui.screens.replay import ReplayScreen

        self.app.push_screen(ReplayScreen(self.run_id, setup, live_tools=live))

    def _agent_setup(self) -> AgentSetup | None:
        factory = self.tui.agent_factory
        if factory is None:
            self.notify("start agenttui with --agent module:factory to replay with your code", severity="warning")
            return None
        return factory(self.run_id)

    def action_replay_with_agent(self) -> None:
        """Your tools run; those not read-only are served from the recording: nothing fires."""
        if (setup := self._agent_setup()) is not None:
            self._replay(setup)

    def action_replay_live(self) -> None:
        """Your tools run, side effects and all, once a person has confirmed each one by name."""
        if (setup := self._agent_setup()) is None:
            return
        live = [t.name for t in setup.tools if not t.safety.read_only]
        if not live:
            self._replay(setup)
            return
        command = replay_command(describe_url(self.tui.url), self.run_id, self.tui.agent_spec or "", live)

        def chosen(go: bool | None) -> None:
            if go:
                self._replay(setup, live)

        dialog = ConfirmDialog(f"Replay {self.run_id} with your tools' side effects live", "\n".join(f"  {n}" for n in live), command,
                               heading="Will run for real, side effects and all (into a replay store, never this one):", yes="Run them")  # fmt: skip
        self.app.push_screen(dialog, chosen)

    def action_toggle_expand(self) -> None:
        """Show long values whole, in place, in the inspector and the conversation (and cut again)."""
        inspector, conversation = self.query_one(RecordInspector), self.query_one(ConversationView)
        inspector.expand = conversation.expand = not inspector.expand
        self.notify("long values shown whole (e cuts them again)" if inspector.expand else "long values cut", timeout=2)

    def action_toggle_panes(self) -> None:
        panes = self.query_one("#run-panes")
        panes.display = not panes.display

    # -- finding records: / searches, n and N walk the hits, : goes to a record -------------------

    @property
    def find_bar(self) -> FindBar:
        return self.query_one(FindBar)

    def action_find(self, mode: str) -> None:
        self.find_bar.open("jump" if mode == "jump" else "search", last=max(0, len(self.view) - 1))
        if mode != "jump" and self.hits is not None:
            self._show_count()

    @on(FindBar.Changed)
    def search_changed(self, event: FindBar.Changed) -> None:
        """Search as the query is typed: names and summaries at once, content in a worker that
        a newer query cancels."""
        self.workers.cancel_group(self, "run-search")
        self._jump_to_hit = False
        needle = Needle(event.query)
        if not needle:
            self._set_hits(None)
            return
        hits = Hits(needle, len(self.view))
        hits.add(row_hits(self.view.rows, needle))
        self._set_hits(hits)
        self.search(hits)

    @work(exclusive=True, group="run-search", exit_on_error=False)
    async def search(self, hits: Hits) -> None:
        """Search the content of the records the list holds, a page at a time: a long run's
        records are read back from the store, never held at once."""
        upto = self.view.last_seq
        async for page in search_content(self.store, self.run_id, hits.needle, upto_seq=upto):
            self.post_message(RunScreen.HitsFound(hits, page.hits, page.searched, done=False))
        self.post_message(RunScreen.HitsFound(hits, [], hits.total, done=True))

    def on_run_screen_hits_found(self, message: RunScreen.HitsFound) -> None:
        hits = message.hits
        if hits is not self.hits:
            return  # a search the bar has moved on from
        hits.searched, hits.done = min(message.searched, hits.total), message.done
        if hits.add(message.indices):
            self.journal_list.refresh_items()
        if self._jump_to_hit and len(hits):
            self._jump_to_hit = False
            self._go_to_hit(hits.after(self.journal_list.cursor - 1))
        elif self._jump_to_hit and hits.done:
            self._jump_to_hit = False
            self.notify(f"no record holds “{printable(hits.needle.query)}”", severity="warning", timeout=3)
        self._show_count()

    @on(FindBar.Submitted)
    def find_submitted(self, event: FindBar.Submitted) -> None:
        journal = self.journal_list
        journal.focus()
        if event.mode == "jump":
            self._leave_jump()
            if event.value:
                self._go_to_record(int(event.value))
            return
        hits = self.hits
        if hits is None:
            return
        if len(hits):
            self._go_to_hit(hits.after(journal.cursor - 1))
        elif not hits.done:
            self._jump_to_hit = True  # the first hit the content search finds
        else:
            self.notify(f"no record holds “{printable(hits.needle.query)}”", severity="warning", timeout=3)

    def _leave_jump(self) -> None:
        """The bar goes back to the search it showed before ``:``, or away if there was none."""
        if self.hits is not None:
            self.find_bar.open("search", focus=False)
            self._show_count()
        else:
            self.find_bar.display = False

    @on(FindBar.Closed)
    def find_closed(self, event: FindBar.Closed) -> None:
        self.journal_list.focus()
        if event.mode == "jump":
            self._leave_jump()
            return
        self.workers.cancel_group(self, "run-search")
        self._jump_to_hit = False
        self._set_hits(None)

    def action_next_hit(self) -> None:
        self._step_hit(forward=True)

    def action_previous_hit(self) -> None:
        self._step_hit(forward=False)

    def _step_hit(self, *, forward: bool) -> None:
        hits, cursor = self.hits, self.journal_list.cursor
        if hits is None:
            search, forth, back = (key_of(self, f"run.{key}") for key in ("search", "next-hit", "previous-hit"))
            self.notify(f"{search} searches the run first; then {forth} and {back} walk its hits", timeout=3)
            return
        target = hits.after(cursor) if forward else hits.before(cursor)
        if target is None:
            self.notify("no hits yet: still searching" if not hits.done else "no hits", timeout=2)
            return
        if (target <= cursor) if forward else (target >= cursor):
            self.notify("search wrapped to the " + ("first hit" if forward else "last hit"), timeout=2)
        self._go_to_hit(target)

    def _go_to_hit(self, index: int | None) -> None:
        if index is not None:
            self.journal_list.cursor = index
            self._show_count()

    def _go_to_record(self, index: int) -> None:
        if not 0 <= index < len(self.view):
            self.notify(f"no record #{index:,}: this run has 0 to {len(self.view) - 1:,}", severity="warning")
            return
        self.journal_list.cursor = index

    def _set_hits(self, hits: Hits | None) -> None:
        self.hits = hits
        self.journal_list.marked = hits if hits is not None else frozenset()
        self.journal_list.refresh_items()
        self._show_count()

    def _show_count(self) -> None:
        self.find_bar.set_count(self.hits.count(self.journal_list.cursor) if self.hits is not None else "")
