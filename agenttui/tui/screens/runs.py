"""The runs screen: every run in the store with its status, live, filterable, foldable."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input

from agenttui.errors import StoreError, StoreLockedError
from agenttui.journal import keys
from agenttui.journal.inert import printable, printable_id
from agenttui.runs.statuses.scheduler import CLOCKED_STATES, StatusScheduler, clock_change_at
from agenttui.runs.statuses.state import RunState
from agenttui.stores.changes import WrittenSince
from agenttui.tui.keymap import key_of
from agenttui.tui.messages import (
    LOCK_RETRY_SECONDS,
    WAITING_FOR_LOCK,
    ConnectionChanged,
    StoreChanged,
    StoreOpened,
    StoreReopened,
)
from agenttui.tui.runs_model import RunsModel, ShownCost
from agenttui.tui.runs_paging import FIRST_PAGE_SCREENS, PAGE_RUNS, paging_where, parents_missing, wants_more
from agenttui.tui.screens.base import StoreScreen
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.key_footer import KeyFooter
from agenttui.tui.widgets.runs_table import RunsHeader, RunsTable
from agenttui.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from agenttui.config import View
    from agenttui.runs.cost.reading import StoreSpend
    from agenttui.runs.selection.indexed import Paging
    from agenttui.runs.statuses.columns import StatusColumns
    from agenttui.runs.statuses.status import RunStatus
    from agenttui.stores.base import LeaseInfo

#: The header's spend is summed again at most this many times while the status index lags the list.
SUMS_WHILE_LAGGING = 3
#: Run ids are posted to the screen in batches at most this often while they are listed.
BATCH_SECONDS = 0.1
#: Runs whose status moves with the clock are re-read at most this long after their lease lapses
#: or their sleep ends.
CLOCK_REFRESH_SECONDS = 5.0
#: While runs are listed and statuses computed, the rows are rebuilt at most this often, and at
#: most ``1 / ROWS_SHARE`` of the time: a rebuild of 100,000 rows takes about 0.1 s.
ROWS_SECONDS = 0.5
ROWS_SHARE = 10
#: Below this many runs a rebuild is cheap enough to do on every batch.
REBUILD_AT_ONCE = 5000
#: Commits reported within this long are applied as one refresh.
REFRESH_SECONDS = 0.25
#: A paged list's counts are made again on the database at most this often while commits come
#: (each count reads every run a lease or the clock decides: 0.3 s of a million-run store's server).
RECOUNT_SECONDS = 5.0


class RunsScreen(StoreScreen):
    """The run list. ``enter`` opens a run; ``/`` filters; ``s`` cycles status filters."""

    @dataclass
    class RunsListed(Message):
        """A batch of run ids, in order; ``done`` on the last batch."""

        run_ids: list[str]
        done: bool = False
        statuses: StatusColumns | None = None
        """Their statuses, where the status index vouched for them (a reopen), place by place."""

    @dataclass
    class RunsPaged(Message):
        """A page of runs read over the shared run index, with their statuses, in run id order."""

        statuses: list[RunStatus]
        paging: Paging
        """The read it is a page of: a page of a read since replaced is dropped."""

    @dataclass
    class RunsCounted(Message):
        """The runs a paged list selects, counted by status on the database."""

        counts: Counter[RunState]
        paging: Paging

    @dataclass
    class UnfinishedListed(Message):
        """Every run with no end marker: their statuses are computed first."""

        run_ids: set[str]

    @dataclass
    class StatusesComputed(Message):
        """Statuses of some runs, computed in the background."""

        statuses: list[RunStatus]

    @dataclass
    class CostsRead(Message):
        """Top-level runs' costs, their sub-runs rolled up; ``done`` on the last batch of every run's."""

        costs: dict[str, ShownCost]
        done: bool = False
        failed: str = ""
        """Why the costs could not be read ("" when they were)."""
        last: bool = False
        """The last batch of its read (of every run's, or of those seen)."""

    @dataclass
    class SpendSummed(Message):
        """What the store's runs cost together, as far as the status index keeps their tokens."""

        spend: StoreSpend | None

    @dataclass
    class LeasesMoved(Message):
        """Runs whose lease changed hands since their status was read."""

        run_ids: list[str]

    AUTO_FOCUS = "#runs-table"
    BINDINGS = [
        # The filter's keys are priority bindings: they act as the key arrives, before the keys
        # typed after it are sent on, so "/a1004⏎j" typed quickly filters, then moves down.
        Binding("slash", "filter", "Filter", priority=True, id="runs.filter"),
        Binding("enter", "filter_done", "Done", show=False, priority=True, id="runs.filter-done"),
        Binding("s", "cycle_status", "Status filter", id="runs.status-filter"),
        Binding("colon", "open_view", "Open a saved view", show=False, id="runs.open-view"),
        Binding("S", "switch_store", "Switch to another named store", show=False, id="runs.switch-store"),
        Binding("V", "save_view", "Save this view", show=False, id="runs.save-view"),
        Binding("escape", "clear_filter", "Clear filter", show=False, priority=True, id="runs.clear-filter"),
        Binding("ctrl+r", "reload", "Reload", show=False, id="runs.reload"),
        Binding("o", "operate", "Act on run", id="runs.operate"),
        Binding("a", "operate('Approve')", "Approve", show=False, id="runs.approve"),
        Binding("x", "operate('Deny')", "Deny", show=False, id="runs.deny"),
        Binding("m", "mark", "Mark or unmark", show=False, id="runs.mark"),
        Binding("M", "mark_shown", "Mark every run shown", show=False, id="runs.mark-shown"),
        Binding("U", "clear_marks", "Clear the marks", show=False, id="runs.clear-marks"),
        Binding("d", "diff_marked", "Diff the two newest marks", show=False, id="runs.diff"),
        Binding("c", "compare_marked", "Compare the newest mark with this", show=False, id="runs.compare"),
        Binding("R", "app.recover_all", "Recover all", show=False, id="runs.recover-all"),
        Binding("y", "copy_run_id", "Copy run id", show=False, id="runs.copy"),
        Binding("E", "export", "Export", id="runs.export"),
        Binding("dollar_sign", "sort_by_cost", "Sort by cost", show=False, id="runs.sort-cost"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.model = RunsModel()
        self.shown = self.model.rows()
        """The rows the table shows (``RunsModel.rows`` as last rebuilt)."""
        self._listed = False
        self._paging: Paging | None = None
        """Where the list stands over the shared run index (``runs_paging``); None: the store
        has none in use, and every run is listed."""
        self._counted: Counter[RunState] | None = None
        """A paged list's counts by status, from the database (None: being counted)."""
        self._counted_at = -RECOUNT_SECONDS
        """When the last count began (``time.monotonic``)."""
        self._recount_pending = False
        self._list_when_shown = False
        """The store opened while another screen covered this one (a run opened with ``--run``):
        the runs are listed once this screen shows, not behind that one."""
        # A lambda: a reload replaces the model.
        self.scheduler = StatusScheduler(lambda run_id: self.model.has_status(run_id))  # noqa: PLW0108
        """Which statuses to read next; a worker reads them (``_read_statuses``)."""
        self._dirty: set[str] | None = set()
        """Runs changed since the last refresh (None: unknown which, re-list); applied in bursts."""
        self._refresh_pending = False
        self._rows_pending = False
        self._rebuild_seconds = 0.0
        self._costs: str = ""
        """Every run's cost, for a sort by cost: "" not asked for yet, "reading" or "read"
        (``_want_every_cost``)."""
        self._costs_dirty: set[str] = set()
        """Top-level runs changed while every run's cost is read: read again after."""
        self._spend: StoreSpend | None = None
        """What the store's runs cost together (``_sum_spend``), for the header; None: not summed."""
        self._costs_asked: set[str] = set()
        """Top-level runs whose cost was asked for, seen without one (``_want_shown_costs``)."""
        self._sums_lagging = 0
        """Sums made again while the status index held fewer runs than the list."""
        self._scrolled_pending = False
        self._leases_written: WrittenSince | None = None
        """Whether anything was written since the lease holders were last checked."""
        self._clock_changes: dict[str, tuple[float, str]] = {}
        """Runs whose status moves with the clock: when time alone changes it (``clock_change_at``)
        and the live lease holder it names. Each is read again then, or sooner when its lease row
        changes hands, which no journal write says. Reading every one of them again every few
        seconds (2,700 of a production-shaped store's 100,000) kept the store busy for good, and
        the reads a person waits for behind it."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="runs-counts")
        yield Input(
            placeholder="filter: run id, status or pending item, or an expression: status=halted tool=charge idle<2h",
            id="runs-filter",
        )
        yield RunsHeader(id="runs-header")
        yield RunsTable(id="runs-table")
        yield StatusBar(id="status-bar")
        yield KeyFooter(after=self.tui.first_rows_shown)

    @property
    def table(self) -> RunsTable:
        return self.query_one(RunsTable)

    def on_mount(self) -> None:
        self.query_one("#runs-filter").display = False
        self._show_counts()
        self.table.empty_text = self._why_empty()
        self.set_interval(CLOCK_REFRESH_SECONDS, self._refresh_clocked)
        self.watch(self.table, "scroll_y", lambda _: self._scrolled(), init=False)
        self.watch(self.table, "columns", lambda _: self._want_shown_costs(), init=False)
        if self.tui.store is not None:
            self._list_runs()

    def on_store_opened(self, message: StoreOpened) -> None:
        self._list_runs()

    def _list_runs(self) -> None:
        """List the store's runs now if this screen shows, else once it does. Under a run opened
        from the command line, listing a large store, its statuses and costs would take the
        process's CPU and memory while the person reads that run: 100,000 runs' costs took more
        CPU than loading the 50,000-record run itself (benchmarks/tui.py, part b)."""
        if self._covered():
            self._list_when_shown = True
        else:
            self.load_runs()

    def _covered(self) -> bool:
        """Another screen, not a dialog, is over this one. (Textual's ``is_current`` goes by the
        screen's background, which a screen just pushed may not have been styled with yet.)"""
        stack = self.app.screen_stack
        above = stack[stack.index(self) + 1 :] if self in stack else []
        return any(not isinstance(screen, ModalScreen) for screen in above)

    def on_store_reopened(self, message: StoreReopened) -> None:
        self.action_reload()

    # -- loading -----------------------------------------------------------------------------

    @work(exclusive=True, group="runs-list", exit_on_error=False)
    async def load_runs(self) -> None:
        """List every run id (pages of the store's size), then compute statuses behind them.

        The first screenful is posted as soon as it is read. On a reopen (the status index holds
        the store's statuses) the rest comes at once, with every status the index vouches for
        (``kept_statuses``: a third of the work of reading them a page at a time); else in
        batches, their statuses read behind them."""
        from agenttui.runs.statuses.shared import in_use

        if await in_use(self.store):
            from agenttui.runs.selection.indexed import Paging

            self._paging = Paging(paging_where(self.model))
            self._count_runs()
            await self._read_page(FIRST_PAGE_SCREENS * max(self.size.height, 1))
            return
        self._paging = None
        if self.tui.first_rows_shown.is_set():
            self._list_unfinished()  # else once the first rows are on screen (_after_first_rows)
        listing = self._listing(first_screen=max(self.size.height, 1))
        first = await anext(listing, None)
        self.post_message(RunsScreen.RunsListed(first or [], done=first is None))
        if first is None:
            return
        # The rest is read while the first rows are painted (the store's thread is idle
        # meanwhile); on a store with no seq across runs (PostgreSQL) a reopen lists every run
        # with their validators, so there it is read only when needed. The status rules are
        # imported once the rows are on screen (benchmarks/startup.py).
        rest = _RestOfListing(listing)
        if self.store.INDEX_GLOBAL_SEQ:
            rest.start()
        try:
            await self.tui.first_rows_shown.wait()
            from agenttui.runs.statuses.status import kept_statuses, statuses_kept

            if await statuses_kept(self.store):
                kept = await kept_statuses(self.store, rest.every_run, after=first[-1])
                self.post_message(RunsScreen.StatusesComputed(kept.earlier))
                self.post_message(RunsScreen.RunsListed(kept.run_ids, done=True, statuses=kept.columns))
                return
            async for batch in rest.batches():
                self.post_message(RunsScreen.RunsListed(batch))
            self.post_message(RunsScreen.RunsListed([], done=True))
        finally:
            rest.cancel()

    async def _read_page(self, limit: int) -> None:
        """Read the paged list's next page (``limit`` runs), with the runs above the sub-runs
        among them that the list lacks; if the index went out of use, list every run instead."""
        from agenttui.runs.selection.indexed import next_candidates
        from agenttui.runs.statuses.status import statuses

        paging = self._paging
        assert paging is not None
        page = await next_candidates(self.store, paging, datetime.now(UTC), limit=limit)
        if page is None:
            self.call_later(self.action_reload)
            return
        if missing := parents_missing((status.run_id for status in page), self.model.runs):
            page = sorted([*page, *await statuses(self.store, missing)], key=lambda status: status.run_id)
        self.post_message(RunsScreen.RunsPaged(page, paging))

    @work(exclusive=True, group="runs-list", exit_on_error=False)
    async def _read_more(self) -> None:
        await self._read_page(PAGE_RUNS)

    def _want_more(self) -> None:
        """Read the paged list's next page when the rows on screen come near the end of those
        read (and the filter, if an expression, parses: else no row shows, however many are read)."""
        paging = self._paging
        if paging is None or paging.done or self.model.filter_error:
            return
        if any(worker.group == "runs-list" and not worker.is_finished for worker in self.workers):
            return
        table = self.table
        if wants_more(len(self.shown), round(table.scroll_offset.y) + table.size.height, table.size.height):
            self._read_more()

    def on_runs_screen_runs_paged(self, message: RunsScreen.RunsPaged) -> None:
        if message.paging is not self._paging:
            return  # a page of a read the filters have since replaced
        new = self.model.add_runs([status.run_id for status in message.statuses])
        self.model.set_statuses(message.statuses)
        self.table.measure(new)
        self._listed = message.paging.done
        self._note_clock_changes(message.statuses)
        self._refresh_rows()
        if not self.tui.first_rows_shown.is_set():
            self.app.call_after_refresh(self._after_first_rows, [])
        self.call_after_refresh(self._want_more)

    @work(exclusive=True, group="runs-counts", exit_on_error=False)
    async def _count_runs(self) -> None:
        """Count a paged list's runs by status on the database (``count_statuses``)."""
        from agenttui.runs.selection.indexed import count_statuses

        paging = self._paging
        if paging is None:
            return
        self._counted_at = time.monotonic()
        where = paging.where if paging.where.text else None
        self.post_message(RunsScreen.RunsCounted(await count_statuses(self.store, datetime.now(UTC), where), paging))

    def on_runs_screen_runs_counted(self, message: RunsScreen.RunsCounted) -> None:
        if message.paging is self._paging:
            self._counted = message.counts
            self._show_counts()

    async def _listing(self, *, first_screen: int) -> AsyncIterator[list[str]]:
        """Every run id, in batches: the first of ``first_screen`` runs, then one each
        ``BATCH_SECONDS``. While another process holds a lock, says so and goes on after it."""
        batch: list[str] = []
        last_post = time.monotonic()
        after, waited = "", False
        while True:
            try:
                # Page by page: a step a run was a tenth of a reopen's listing.
                async for page in self.store.run_pages(after=after):
                    batch += page
                    after = page[-1]
                    if first_screen and len(batch) >= first_screen:
                        yield batch[:first_screen]
                        batch, last_post, first_screen = batch[first_screen:], time.monotonic(), 0
                    if not first_screen and batch and time.monotonic() - last_post > BATCH_SECONDS:
                        yield batch
                        batch, last_post = [], time.monotonic()
                break
            except StoreLockedError:
                self.post_message(ConnectionChanged(WAITING_FOR_LOCK))
                waited = True
                await asyncio.sleep(LOCK_RETRY_SECONDS)
        if waited:
            self.post_message(ConnectionChanged("connected"))
        if batch:
            yield batch

    @work(exclusive=True, group="runs-unfinished", exit_on_error=False)
    async def _list_unfinished(self) -> None:
        """List the runs with no end marker, whose first reads go first: one query over the whole
        store (1-2 s of SQLite on 100,000 runs). Not on a reopen, where the status index holds
        every status and hands each on as fast as the one query would name them."""
        from agenttui.runs.statuses.status import statuses_kept

        if await statuses_kept(self.store):
            return
        unfinished = {run_id async for run_id in self.store.runs(exclude_holding=keys.END_MARKERS)}
        self.post_message(RunsScreen.UnfinishedListed(unfinished))

    def on_runs_screen_unfinished_listed(self, message: RunsScreen.UnfinishedListed) -> None:
        self.scheduler.unfinished_listed(message.run_ids)

    def compute_statuses(self, run_ids: list[str], *, urgent: bool = False) -> None:
        """Queue ``run_ids`` for a status read (``urgent``: ahead of other reads)."""
        self.scheduler.ask(run_ids, urgent=urgent)
        if not any(w.group == "runs-status" and not w.is_finished for w in self.workers):
            self._read_statuses()

    @work(group="runs-status", exit_on_error=False)
    async def _read_statuses(self) -> None:
        """Read the queued statuses, posting them in batches (one reader at a time)."""

        async def locked() -> None:
            self.post_message(ConnectionChanged(WAITING_FOR_LOCK))
            await asyncio.sleep(LOCK_RETRY_SECONDS)

        async for batch in self.scheduler.read(self.store, locked=locked):
            self.post_message(RunsScreen.StatusesComputed(batch))

    def on_runs_screen_runs_listed(self, message: RunsScreen.RunsListed) -> None:
        new = self.model.add_runs(message.run_ids, message.statuses)
        self.table.measure(new)
        self._listed = self._listed or message.done
        if message.statuses is not None:  # every status at once (a reopen): shown at once
            self._refresh_rows()
            self._note_clock_changes(self.model.statuses_in(CLOCKED_STATES))
            new = self.model.unread()  # those the index did not vouch for (asked again: harmless)
        elif new or message.done:
            self._rows_changed()
        if message.done:
            self._want_every_cost()
        if not self.tui.first_rows_shown.is_set():
            self.app.call_after_refresh(self._after_first_rows, new)
        elif new:
            self.compute_statuses(new)

    def _after_first_rows(self, new: list[str]) -> None:
        """The first rows are on screen: start what waited for that frame. Reading statuses
        decodes records on this loop, listing the unfinished runs takes a pass over the store
        (0.2 s of SQLite on 100,000 runs), the change feed imports its file watcher, and the app
        starts what waited for the frame (``first_rows_painted``)."""
        if not self.tui.first_rows_shown.is_set():  # a second batch may be listed before the frame
            self.tui.first_rows_painted()
            if self._paging is None:
                self._list_unfinished()
        if new:
            self.compute_statuses(new)

    def on_runs_screen_statuses_computed(self, message: RunsScreen.StatusesComputed) -> None:
        was_pending = self.model.pending
        self.model.set_statuses(message.statuses)
        if was_pending and not self.model.pending and self._listed:
            from agenttui.render.bulk import give_back_free_memory

            give_back_free_memory()  # the pass is done: what it read and dropped goes back
            if self._costs_asked:
                self._sum_spend()
        self._note_clock_changes(message.statuses)
        self._rows_changed()

    def _note_clock_changes(self, statuses: Iterable[RunStatus]) -> None:
        """Note when each status may change with the clock alone (``_clock_changes``)."""
        now, changes = time.time(), self._clock_changes
        for status in statuses:
            if (at := clock_change_at(status, now)) is not None:
                changes[status.run_id] = (at, status.lease_holder)
            else:
                changes.pop(status.run_id, None)

    def _rows_changed(self) -> None:
        """Rebuild the visible rows soon: at most every ``ROWS_SECONDS`` (or ``ROWS_SHARE`` times
        the last rebuild's time), however many batches arrive: keys must not wait."""
        if len(self.model.statuses) < REBUILD_AT_ONCE or not self.table.items:
            self._refresh_rows()  # cheap: a few thousand rows, or the very first screen
        elif not self._rows_pending:
            self._rows_pending = True
            self.set_timer(max(ROWS_SECONDS, ROWS_SHARE * self._rebuild_seconds), self._rebuild_rows)

    def _rebuild_rows(self) -> None:
        self._rows_pending = False
        started = time.perf_counter()
        self._refresh_rows()
        self._rebuild_seconds = time.perf_counter() - started

    def on_store_changed(self, message: StoreChanged) -> None:
        if message.run_ids is None or self._dirty is None:
            self._dirty = None
        else:
            self._dirty |= message.run_ids
        # Bursts of commits become one refresh per interval, and none while another screen is on
        # top: it is applied when this screen shows again.
        if self.is_active and not self._refresh_pending:
            self._refresh_pending = True
            self.set_timer(REFRESH_SECONDS, self._apply_changes)

    def on_screen_resume(self) -> None:
        self.table.focus()
        # Textual may resume a screen pushed at start after the screen pushed over it (--run):
        # still covered, it lists nothing yet.
        if self._list_when_shown and not self._covered():
            self._list_when_shown = False
            self._dirty = set()  # the listing reads them all
            self.load_runs()
        elif self._dirty is None or self._dirty:
            self._apply_changes()

    def _apply_changes(self) -> None:
        self._refresh_pending = False
        dirty, self._dirty = self._dirty, set()
        if self._paging is not None:
            self._apply_paged_changes(dirty)
            return
        if dirty is None:
            self._costs = ""  # read again once listed
            self._forget_costs()
            self.load_runs()  # re-list: new runs join, known runs refresh below
            self.compute_statuses([r for r in self.model.statuses if self._may_move(r)])
        elif dirty:
            self._costs_changed({keys.root_run_id(run_id) for run_id in dirty})
            new = self.model.add_runs(sorted(dirty))
            self.table.measure(new)
            self.compute_statuses(sorted(dirty), urgent=True)
            if new:
                self._refresh_rows()

    def _apply_paged_changes(self, dirty: set[str] | None) -> None:
        """Changes under a paged list: the runs it has read so far read again, those within its
        pages so far joined, the others left to their page; the counts made again."""
        paging = self._paging
        assert paging is not None
        if dirty is None:
            self.action_reload()
            return
        within = sorted(
            run_id for run_id in dirty if paging.done or run_id <= paging.after or run_id in self.model.runs
        )
        self._costs_changed({keys.root_run_id(run_id) for run_id in within})
        new = self.model.add_runs(within)
        self.table.measure(new)
        self.compute_statuses(within, urgent=True)
        if new:
            self._refresh_rows()
        self._recount_soon()

    def _recount_soon(self) -> None:
        """Count a paged list's runs again once ``RECOUNT_SECONDS`` have passed since the last
        count began: however many bursts of commits come meanwhile, one count."""
        if self._recount_pending:
            return
        self._recount_pending = True
        wait = max(0.0, self._counted_at + RECOUNT_SECONDS - time.monotonic())
        self.set_timer(wait, self._recount)

    def _recount(self) -> None:
        self._recount_pending = False
        self._count_runs()

    def _may_move(self, run_id: str) -> bool:
        status = self.model.statuses.get(run_id)
        return status is None or not status.state.finished

    def _refresh_clocked(self) -> None:
        now = time.time()
        if due := [run_id for run_id, (at, _) in self._clock_changes.items() if at <= now]:
            for run_id in due:
                del self._clock_changes[run_id]
            self.compute_statuses(due)
        if self._clock_changes and self.store.IMPLEMENTS_LEASES:
            self._check_leases({run_id: holder for run_id, (_, holder) in self._clock_changes.items()})

    @work(exclusive=True, group="runs-leases", exit_on_error=False)
    async def _check_leases(self, holders: dict[str, str]) -> None:
        """Find the runs whose live lease holder is no longer the one their status names (a
        driver let go of an in-flight run, or took up a sleeping one): one query for all."""
        if self._leases_written is None or self._leases_written.store is not self.store:
            self._leases_written = WrittenSince(self.store)
        if not await self._leases_written.anything():
            return  # no lease row changed: nothing written since the last look
        try:
            leases = await self.store.get_leases({keys.root_run_id(run_id) for run_id in holders})
        except StoreLockedError:
            return  # read again on the next tick
        except StoreError:  # the statuses say why the lease table cannot be read
            self.post_message(RunsScreen.LeasesMoved(list(holders)))
            return
        moved = [run_id for run_id, holder in holders.items() if _live_holder(leases, run_id) != holder]
        if moved:
            self.post_message(RunsScreen.LeasesMoved(moved))

    def on_runs_screen_leases_moved(self, message: RunsScreen.LeasesMoved) -> None:
        for run_id in message.run_ids:
            self._clock_changes.pop(run_id, None)
        self.compute_statuses(message.run_ids)

    # -- costs -------------------------------------------------------------------------------

    def _want_shown_costs(self) -> None:
        """Read the costs of the top-level runs on screen that have none yet, once the cost
        column shows and the listing is done, or a paged list has read their sub-runs (a cost
        rolls its sub-runs up): what a person sees, a screenful at a time, so an idle list prices
        nothing."""
        self._scrolled_pending = False
        paging = self._paging
        if not self.table.columns.counts or not (self._listed or paging) or self.tui.store is None:
            return
        wanted = self._shown_roots() - self._costs_asked - self.model.costs.keys()
        if paging is not None and not paging.done:  # the last run read may have sub-runs still unread
            wanted.discard(keys.root_run_id(paging.after))
        if wanted:
            self._costs_asked |= wanted
            self._read_costs(sorted(wanted))

    def _scrolled(self) -> None:
        """The rows on screen moved: their costs are asked for once the scrolling pauses (and a
        paged list reads on if they near its end)."""
        self._want_more()
        if not self._scrolled_pending:
            self._scrolled_pending = True
            self.set_timer(REFRESH_SECONDS, self._want_shown_costs)

    def _want_every_cost(self) -> None:
        """Read every run's cost once the list is sorted by cost, after the listing: a first look
        at a store's cost decodes every model turn; a second reads the tokens the status index
        keeps (``store_costs(turns=False)``)."""
        if self._costs or not self.model.by_cost or not self._listed or self.tui.store is None:
            return
        self._costs = "reading"
        self._read_costs(None)

    def _costs_changed(self, roots: set[str]) -> None:
        if self._costs == "read" or self._spend is not None:  # what the header sums is kept current
            self._read_costs(sorted(roots))
            return
        if self._costs == "reading":
            self._costs_dirty |= roots
        if seen := roots & self._costs_asked:
            self._read_costs(sorted(seen))

    @work(exclusive=True, group="runs-spend", exit_on_error=False)
    async def _sum_spend(self) -> None:
        """Sum what the store's runs cost for the header, in one pass over the status index."""
        from agenttui.runs.cost.reading import kept_spend

        if self.model.pending:
            return  # summed once every status is in: the index holds them all then
        prices = await self.tui.read_prices()
        self.post_message(RunsScreen.SpendSummed(await kept_spend(self.store, prices, runs=len(self.model.runs))))

    def on_runs_screen_spend_summed(self, message: RunsScreen.SpendSummed) -> None:
        self._spend = message.spend
        self._show_counts()
        if message.spend is not None and message.spend.unindexed and self._sums_lagging < SUMS_WHILE_LAGGING:
            # The index writes some statuses after they are shown: summed again once it has them.
            self._sums_lagging += 1
            self.set_timer(CLOCK_REFRESH_SECONDS, self._sum_spend)

    def _forget_costs(self) -> None:
        """The store changed, and which runs is not known: every cost read may be stale. Those on
        screen are read again; the others are dropped, and read when seen."""
        shown = self._shown_roots()
        self.model.costs = {run_id: cost for run_id, cost in self.model.costs.items() if run_id in shown}
        self._costs_asked = set(shown) if self.table.columns.counts else set()
        if self._costs_asked:
            self._read_costs(sorted(self._costs_asked))

    def _shown_roots(self) -> set[str]:
        """The top-level runs of the rows on screen."""
        table = self.table
        top = round(table.scroll_offset.y)
        rows = self.shown
        return {row.run_id for row in (rows[at] for at in range(top, min(len(rows), top + table.size.height)))
                if not row.depth}  # fmt: skip

    @work(group="runs-costs", exit_on_error=False)
    async def _read_costs(self, run_ids: list[str] | None) -> None:
        """The costs of ``run_ids`` (every top-level run: None), posted in batches."""
        from agenttui.runs.cost.reading import store_costs

        prices = await self.tui.read_prices()
        batch: dict[str, ShownCost] = {}
        posted = time.monotonic()
        while True:
            try:
                below = None if run_ids is None else self.model.sub_runs(run_ids)
                async for cost in store_costs(self.store, run_ids, prices, turns=False, below=below):
                    batch[cost.run_id] = ShownCost.of(cost)
                    if time.monotonic() - posted > BATCH_SECONDS:
                        self.post_message(RunsScreen.CostsRead(batch))
                        batch, posted = {}, time.monotonic()
                break
            except StoreLockedError:  # another process writes: read again once it is done
                await asyncio.sleep(LOCK_RETRY_SECONDS)
            except StoreError as exc:  # the status bar and the statuses say what the store does
                self.post_message(RunsScreen.CostsRead({}, failed=exc.message))
                return
        self.post_message(RunsScreen.CostsRead(batch, done=run_ids is None, last=True))

    def on_runs_screen_costs_read(self, message: RunsScreen.CostsRead) -> None:
        if message.failed:
            self._costs = ""  # read again when next asked for (the column shown, the sort)
            self.notify(f"costs could not be read: {printable(message.failed)}", severity="warning", timeout=5)
            return
        self.model.costs.update(message.costs)
        if message.last and (self._spend is None or self._spend.missing):
            self._sum_spend()  # what was read is kept in the index: the total covers more
        if message.done and self._costs == "reading":
            self._costs = "read"
            if self._costs_dirty:
                self._read_costs(sorted(self._costs_dirty))
                self._costs_dirty = set()
        if self.model.by_cost:
            self._rows_changed()
        else:
            self.table.refresh_items()
        self._show_counts()

    def action_sort_by_cost(self) -> None:
        """Top-level runs by cost, the largest first; again, in the listing's order."""
        self._sort(by_cost=not self.model.by_cost)

    def _sort(self, *, by_cost: bool) -> None:
        model = self.model
        model.by_cost = by_cost
        self._want_every_cost()
        self._refresh_rows()
        reading = " (costs being read…)" if model.by_cost and self._costs != "read" else ""
        self.notify(("sorted by cost, the largest first" if model.by_cost else "in the listing's order") + reading,
                    timeout=2)  # fmt: skip

    # -- view --------------------------------------------------------------------------------

    def _refresh_rows(self) -> None:
        table = self.table
        current = table.current
        rows = self.shown = self.model.rows()
        table.set_items(rows)
        if current is not None:
            index = rows.index_of(current.run_id)
            if index is not None and index != table.cursor:
                table.cursor = index
        table.empty_text = self._why_empty()
        self._show_counts()
        self._want_shown_costs()

    def _why_empty(self) -> str:
        """What an empty list means right now."""
        if not self._listed:
            return "Listing runs…"
        if not self.model.roots:
            return "No runs in this store yet."
        if self.model.filter_error:
            return f"No run is listed while the filter does not parse: fix it, or {key_of(self, 'runs.clear-filter')} clears it."
        clear, cycle = key_of(self, "runs.clear-filter"), key_of(self, "runs.status-filter")
        return f"No run matches the filter: {clear} clears the text, {cycle} cycles the status filter."

    def on_resize(self) -> None:
        self._show_counts()
        self._scrolled()  # more rows may show

    def _listed_total(self) -> tuple[Counter[RunState], Text]:
        """The top-level runs listed, by state, and how far the listing is."""
        total = Text(f"{len(self.model.roots):,} runs", style="bold")
        if not self._listed:
            total.append(" (listing…)", style="not bold")
        elif self.model.pending:
            total.append(f" ({self.model.pending:,} statuses to compute)", style="not bold")
        return self.model.counts(), total

    def _paged_total(self) -> tuple[Counter[RunState], Text]:
        """A paged list's runs by state, every one the filters select counted on the database
        (sub-runs too, as ``runs --count``), and how many of them were read so far."""
        counts = self._counted or Counter()
        total = Text(f"{counts.total():,} runs" if self._counted is not None else "counting runs…", style="bold")
        if not self._listed:
            total.append(f" ({len(self.model.runs):,} read, more as you scroll)", style="not bold")
        return counts, total

    def _show_counts(self) -> None:
        """The counts line: how many runs, how many in each state, and the filter in force. The
        filter is never pushed off: past the width it takes a line of its own (``HeaderBar``)."""
        counts, total = self._paged_total() if self._paging is not None else self._listed_total()
        present = [state for state in RunState if counts[state]]
        shown_filter = Text(f"filter: {self.model.filter_name}" + (" · by cost" if self.model.by_cost else ""))
        if self.model.text_filter:
            shown_filter.append(f" · /{printable(self.model.text_filter)}")
        if error := self.model.filter_error:  # no run is listed until it parses
            # What is wrong fits the header; what is accepted there is the field's tooltip.
            colour = self.app.get_css_variables().get("text-error", "")
            wrong = error.partition("; ")[0]
            shown_filter.append(f" · bad filter: {printable(wrong)}", style=f"bold {colour}".strip())
        self.query_one("#runs-filter").tooltip = printable(error) if error else None
        if self._spend is not None and self.table.columns.counts:
            total.append(f" · {spent_line(self._spend)}", style="not bold")
        named = " ".join(f" {s.icon} {counts[s]:,} {s.value}" for s in present)
        marks = self.table.marks
        marked = [Text(f"{len(marks):,} marked", style="bold")] if marks else []
        # Every state named while they fit the line with the rest; past that, icon and count
        # alone (? lists them).
        width = self.size.width - 2
        marked_width = sum(part.cell_len + 2 for part in marked)
        if total.cell_len + len(named) + shown_filter.cell_len + marked_width + 6 > width:
            named = " ".join(f"{s.icon}{counts[s]:,}" for s in present)
        self.query_one("#runs-counts", HeaderBar).show([total, Text(named), *marked, shown_filter])

    # -- actions -----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("filter", "filter_done"):
            # In the filter, "/" is text and enter closes it; elsewhere they open it and the run.
            # (``focused`` is set at once; ``has_focus`` follows a message later.)
            in_filter = self.focused is self.query_one("#runs-filter")
            return in_filter == (action == "filter_done")
        return super().check_action(action, parameters)

    def unavailable(self, action: str) -> str | None:
        if action == "sort_by_cost" and self._paging is not None:
            return "sorting by cost needs every run's cost: not over a shared run index, read a page at a time"
        return super().unavailable(action)

    def _saved_views(self) -> list[View]:
        """The views the config file saves for this store, by name."""
        from agenttui.config import user_config

        views = user_config().views.values()
        return sorted((view for view in views if view.offered_for(self.tui.url)), key=lambda view: view.name)

    def action_switch_store(self) -> None:
        """Pick another store the config file names, and open it in place of this one."""
        from agenttui.config import user_config
        from agenttui.stores import describe_url

        others = sorted(name for name in user_config().stores if name != self.tui.url)
        if not others:
            self.notify("the config file names no other store: [stores.NAME] url = ... (agenttui config path)",
                        severity="warning", timeout=5)  # fmt: skip
            return

        def chosen(index: int | None) -> None:
            if index is not None:
                self.tui.switch_store(others[index])

        from agenttui.tui.screens.dialogs import ChoiceDialog

        stores = user_config().stores
        choices = [f"{name}: {describe_url(stores[name].url)}" for name in others]
        self.app.push_screen(ChoiceDialog("Switch to another store", choices), chosen)

    def action_open_view(self) -> None:
        """Pick a saved view: its filter becomes the list's (the text filter, shown). With none, say
        where views are saved (the key stays listed: it is how a person learns of them)."""
        views = self._saved_views()
        if not views:
            self.notify("the config file saves no view for this store: [views.NAME] where = ... (agenttui config path)",
                        severity="warning", timeout=5)  # fmt: skip
            return

        def chosen(index: int | None) -> None:
            if index is not None:
                self.open_view(views[index])

        from agenttui.tui.screens.dialogs import ChoiceDialog

        choices = [f"{view.name}: {view.summary()}" for view in views]
        self.app.push_screen(ChoiceDialog("Open a saved view", choices), chosen)

    def open_view(self, view: View) -> None:
        """Show ``view``: its filter becomes the list's (the text filter, shown, to edit), its
        order and columns the list's."""
        field = self.query_one("#runs-filter", Input)
        field.value = view.where
        field.display = bool(view.where)
        self.table.choose_counts(view.columns)
        said = f"view {view.name}"
        if (view.sort == "cost") != self.model.by_cost:
            if (why := self.unavailable("sort_by_cost")) is not None:
                said += f" (not by cost: {why})"
            else:
                self._sort(by_cost=view.sort == "cost")
        self.notify(printable(said), timeout=3, markup=False)

    def action_save_view(self) -> None:
        """Save what the list shows (its filter, order and columns) as a view, under a name typed."""
        from agenttui.config import View

        where = self.query_one("#runs-filter", Input).value.strip()
        self.save_view(
            View("", where, sort="cost" if self.model.by_cost else "listing", columns=self.table.chosen_counts)
        )

    @work(exclusive=True, group="save-view", exit_on_error=False)
    async def save_view(self, view: View) -> None:
        """Ask a name for ``view`` (again, saying why, for one that will not do), then add it to
        the config file (``tui/saved_views.py``)."""
        from agenttui.config import STORE_NAME, config_path, user_config
        from agenttui.tui.saved_views import save_view
        from agenttui.tui.screens.dialogs import PromptDialog

        prompt = f"{view.summary()}\n\nis added to {config_path()} as [views.NAME]: the name?"
        name, problem = "", ""
        while True:
            dialog = PromptDialog("Save this view", prompt, "letters, digits, - and _", value=name, problem=problem)
            typed = await self.app.push_screen_wait(dialog)
            if typed is None:
                return
            name = typed.strip()
            if not STORE_NAME.fullmatch(name):
                problem = "a view's name is letters, digits, '-' and '_'"
            elif name in user_config().views:
                problem = f"the config file saves a view {name!r} already: choose another name"
            else:
                break
        path, line = await save_view(replace(view, name=name))
        user_config.cache_clear()
        opens = key_of(self, "runs.open-view")
        self.notify(printable(f"saved view {name} in {path}:{line} ({opens} opens it)"), timeout=5, markup=False)

    def explanation(self) -> tuple[str, str] | None:
        """The run under the cursor: its status and what it waits on, whole, when the list cut it."""
        row = self.table.current
        status = None if row is None else row.status
        if row is None or status is None or not status.detail or not self.table.cut_details.get(row.run_id):
            return None
        return f"{row.run_id}: {status.state.value}", status.detail

    def action_filter(self) -> None:
        field = self.query_one("#runs-filter", Input)
        field.display = True
        self.focus_now(field)

    def action_filter_done(self) -> None:
        self.focus_now(self.table)
        # Keys typed just before the enter may still wait in the field's queue: decide after them.
        self.query_one("#runs-filter").call_later(self._show_filter_while_set)

    def _show_filter_while_set(self) -> None:
        field = self.query_one("#runs-filter", Input)
        field.display = bool(field.value)

    def action_clear_filter(self) -> None:
        """Esc: the text filter first (and its line), then the status filter, as help says."""
        field = self.query_one("#runs-filter", Input)
        if not field.value and not field.display and self.model.status_filter:
            self.model.status_filter = 0
            self._filters_changed()
            self.notify(f"showing {self.model.filter_name} runs", timeout=2)
            return
        field.value = ""
        field.display = False
        self.focus_now(self.table)

    @on(Input.Changed, "#runs-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.model.text_filter = event.value.strip()
        self._filters_changed()

    def action_cycle_status(self) -> None:
        name = self.model.cycle_status_filter()
        self._filters_changed()
        self.notify(f"showing {name} runs", timeout=2)

    def _filters_changed(self) -> None:
        """Show what the filters select: of the runs listed, or, over the shared run index, read
        afresh as far as the database narrows them."""
        if self._paging is not None and self._paging.where.text != paging_where(self.model).text:
            self.action_reload()
        else:
            self._refresh_rows()
            self._want_more()

    def action_reload(self) -> None:
        by_cost = self.model.by_cost
        self.model = RunsModel(text_filter=self.model.text_filter, status_filter=self.model.status_filter)
        self.model.by_cost = by_cost
        self._clock_changes, self._costs, self._costs_asked, self._spend = {}, "", set(), None
        self._listed, self._counted = False, None
        self._refresh_rows()
        self.load_runs()

    @on(RunsTable.Chosen)
    def open_run(self, event: RunsTable.Chosen) -> None:
        if isinstance(event, RunsTable.FoldToggled):
            return
        row = self.table.items[event.index]
        self.tui.open_run(row.run_id)

    @on(RunsTable.CursorMoved)
    def table_cursor_moved(self) -> None:
        self.refresh_bindings()  # W shows when the run under the cursor has its detail cut
        self._want_more()

    @on(RunsTable.FoldToggled)
    def toggle_fold(self, event: RunsTable.FoldToggled) -> None:
        if not 0 <= event.index < len(self.table.items):
            self.notify("no run under the cursor (the filters show none)", severity="warning", timeout=3)
            return
        row = self.table.items[event.index]
        if not event.unfold and row.depth > 0 and (row.folded or not row.children):
            self.table.cursor = self._parent_index(event.index)  # h on a sub-run: to its parent
            return
        if not row.children:
            self.notify(f"{printable_id(row.run_id)} has no sub-runs to {'un' if event.unfold else ''}fold", timeout=3)
            return
        if row.folded != event.unfold:  # already as asked
            self.notify(
                f"{printable_id(row.run_id)}'s sub-runs are {'shown' if event.unfold else 'folded'} already", timeout=3
            )
            return
        self.model.toggle_fold(row.run_id, event.unfold)
        self._refresh_rows()

    def _parent_index(self, index: int) -> int:
        """The row of the run that the sub-run at ``index`` is listed under (the nearest row above
        it, one level up)."""
        depth = self.table.items[index].depth
        return next((i for i in range(index - 1, -1, -1) if self.table.items[i].depth < depth), index)

    def action_operate(self, pick: str | None = None) -> None:
        """Act on the marked runs, if any (``pick``: approve or deny them all), else on the run
        under the cursor."""
        if self.table.marks:
            lines = self.model.statuses
            marked = {}
            for run_id in self.table.marks:
                line = lines.get(run_id)
                marked[run_id] = None if line is None else line.status(run_id)
            self.tui.operate_marked(marked, self._shown_filter(), pick)
            return
        row = self.table.current
        if row is None or row.status is None:
            self.notify("no run selected, or its status is still being computed", severity="warning")
            return
        self.tui.operate(row.status, pick)

    def _shown_filter(self) -> str | None:
        """The filter in force, as the filter language's text, when the marks are exactly the
        runs it shows (``M``) and it is the only filter: the equivalent command selects by it."""
        where = self.model.where
        text = where.text if where is not None else ""
        if not text or self.model.status_filter != 0:
            return None
        return text if set(self.table.marks) == set(self.shown.run_ids()) else None

    def _marks_changed(self) -> None:
        self.table.refresh_items()
        self._show_counts()

    def action_mark(self) -> None:
        """Mark the run under the cursor, or unmark it."""
        row = self.table.current
        if row is None:
            return
        marks = self.table.marks
        if row.run_id in marks:
            del marks[row.run_id]
        else:
            marks[row.run_id] = None
        self._marks_changed()

    def action_mark_shown(self) -> None:
        """Mark every run the filters show (the marks already made stay)."""
        self.table.marks.update(dict.fromkeys(self.shown.run_ids()))
        self._marks_changed()  # the header says how many: no notice over the rows

    def action_clear_marks(self) -> None:
        self.table.marks.clear()
        self._marks_changed()

    def action_diff_marked(self) -> None:
        """The two newest marks, the older on the left."""
        from agenttui.tui.screens.diff import DiffScreen

        marks = list(self.table.marks)
        if len(marks) < 2:
            have = "one run is marked" if marks else "no run is marked"
            self.notify(
                f"{have}: mark two runs with {key_of(self, 'runs.mark')} (diff takes the two newest marks)",
                severity="warning",
            )
            return
        self.app.push_screen(DiffScreen(*marks[-2:]))

    def action_export(self) -> None:
        """Export the run under the cursor, the marked runs, or every run the filters show."""
        from agenttui.stores import describe_url
        from agenttui.tui.export_plan import filtered_runs, marked_runs, one_run
        from agenttui.tui.runs_model import STATUS_FILTERS
        from agenttui.tui.screens.export import ExportDialog

        if self.tui.store is None:
            self.notify("the store is still opening", severity="warning")
            return
        scopes, chosen = [], 0
        if (run_id := self.selected_run()) is not None:
            scopes.append(one_run(run_id, "the run under the cursor"))
        if marks := self.marked_run_ids():
            chosen = len(scopes)  # marking runs says which: offered first
            scopes.append(marked_runs(marks))
        shown = [row.run_id for row in self.table.items if row.depth == 0]
        if len(shown) > 1 or (shown and not scopes):
            model = self.model
            states = STATUS_FILTERS[model.status_filter][1]
            scopes.append(filtered_runs(shown, filter_name=model.filter_name, states=states, text=model.text_filter))
        if not scopes:
            self.notify("no run to export", severity="warning")
            return
        self.app.push_screen(ExportDialog(self.store, describe_url(self.tui.url), scopes, chosen=chosen))

    def marked_run_ids(self) -> list[str]:
        """The runs marked with m, oldest mark first."""
        return list(self.table.marks)

    def action_compare_marked(self) -> None:
        """The newest marked run against the run under the cursor, side by side by turn."""
        from agenttui.replay.compare import Side
        from agenttui.tui.screens.compare import CompareScreen

        row = self.table.current
        marked = [run_id for run_id in self.table.marks if row is None or run_id != row.run_id]
        if row is None or not marked:
            self.notify("mark a run with m, then compare it with another: cursor on it, c (the newest mark is"
                        " compared)", severity="warning")  # fmt: skip
            return
        left = marked[-1]
        self.app.push_screen(CompareScreen(Side(self.store, left, left), Side(self.store, row.run_id, row.run_id)))

    def action_copy_run_id(self) -> None:
        from agenttui.tui.clipboard import copy_text

        if (run_id := self.selected_run()) is None:
            self.notify("no run selected", severity="warning")
            return
        copy_text(self, run_id, "the run id")

    def select_run(self, run_id: str) -> bool:
        """Put the cursor on ``run_id`` if it is listed (unfolding its parents); whether it is."""
        ancestors = []
        parent = keys.parent_run_id(run_id)
        while parent is not None:
            ancestors.append(parent)
            parent = keys.parent_run_id(parent)
        for ancestor in reversed(ancestors):
            self.model.toggle_fold(ancestor, True)
        if ancestors:
            self._refresh_rows()
        index = self.shown.index_of(run_id)
        if index is not None:
            self.table.cursor = index
        return index is not None

    def known_run_ids(self) -> Iterable[str]:
        """Every run listed so far, sub-runs and runs the filters hide included."""
        return iter(self.model.statuses)

    def selected_run(self) -> str | None:
        row = self.table.current
        return row.run_id if row else None

    def visible_run_ids(self) -> Iterable[str]:
        return self.shown.run_ids()


def spent_line(store_spend: StoreSpend) -> str:
    """What the store's runs cost together and what their dropped requests wasted, ``+?`` where
    part of it is not known (a model with no price, a record that could not be read)."""
    from agenttui.runs.cost.lens import money

    spend = store_spend.spend
    partial = "+?" if spend.unpriced or store_spend.not_read_whole else ""
    # Runs whose cost was never read are named: a first look prices what is seen ($ sorts by
    # cost, which reads every run's).
    of = f" by {store_spend.runs - store_spend.missing:,} of {store_spend.runs:,} runs" if store_spend.missing else ""
    return f"{money(spend.total_cost)}{partial} spent{of}, {money(spend.wasted_cost)} wasted"


def _live_holder(leases: dict[str, LeaseInfo], run_id: str) -> str:
    """Who holds ``run_id``'s live lease among ``leases`` (its root run's), or "" (none, or lapsed)."""
    lease = leases.get(keys.root_run_id(run_id))
    return lease.holder if lease is not None and lease.live else ""


class _RestOfListing:
    """The batches of a listing after its first, read into a queue once ``start`` is called
    (ahead of whoever takes them, so the store's reads go on meanwhile)."""

    def __init__(self, listing: AsyncIterator[list[str]]) -> None:
        self._listing = listing
        self._batches: asyncio.Queue[list[str] | None] = asyncio.Queue()
        self._reading: asyncio.Future[None] | None = None

    def start(self) -> None:
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        try:
            async for batch in self._listing:
                self._batches.put_nowait(batch)
        finally:
            self._batches.put_nowait(None)

    async def batches(self) -> AsyncIterator[list[str]]:
        """Each batch, as it is read (then the listing's error, if it failed)."""
        self.start()
        while (batch := await self._batches.get()) is not None:
            yield batch
        assert self._reading is not None
        await self._reading

    async def every_run(self) -> list[str]:
        """Every run of the batches, once all are read."""
        return [run_id async for batch in self.batches() for run_id in batch]

    def cancel(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
