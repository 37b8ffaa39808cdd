"""StatusScheduler: which runs' statuses to read next, read one at a time and handed on in batches."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from agenttui.errors import StoreLockedError
from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.runs.statuses.status import RunStatus, StatusTracker

#: Statuses are handed on in batches at most this often, so 100,000 runs cost a viewer a few
#: hundred repaints, not 100,000.
BATCH_SECONDS = 0.1

#: Urgent runs are read this many at a time at first (a first read of each in one round trip):
#: enough to make 4,000 unfinished runs quick, few enough that a run a person acts on is not
#: kept waiting. Batches that take less than half of ``URGENT_SECONDS`` grow, twice as large each
#: time, up to a page of summaries; one that takes longer halves the next, down to this again. A
#: first look reads unfinished runs whole (about 50 in that time); a look through a status
#: index finds most kept, and takes hundreds at once.
URGENT_AT_ONCE = 50
URGENT_SECONDS = 0.05
#: The other runs are read a page of summaries at a time (``SUMMARY_PAGE``), and by the same rule
#: up to this many times that: a page a status index holds takes a few milliseconds.
PAGES_AT_ONCE = 8

#: What the scheduler's tracker keeps to read changing runs on from (``StatusTracker``): the runs
#: a change feed names again and again are few, while the clock re-reads every in-flight and
#: sleeping run (2,700 of the production-shaped store's) in turn, more than any cache of runs
#: would hold. Decoded, 4 MB of stored bytes take 12-18 MB.
TRACKER_RUNS = 256
TRACKER_BUDGET_BYTES = 4 * 1024 * 1024

T = TypeVar("T")


class StatusScheduler:
    """The statuses of many runs, read behind a view in the order a person needs them.

    Runs wait in three queues, each holding a run once, in the order asked. Urgent reads go
    first: runs a change feed says changed, and a run's first read when it has no end marker (a
    run a person may act on). The two urgent queues take turns, a batch each, so a run that
    changes while thousands of first reads wait is read within a batch, and a feed that keeps
    naming runs does not hold the first reads back. The rest wait their turn: first reads of
    finished runs, and clock refreshes, which on a large store would otherwise re-read every
    in-flight run every few seconds ahead of the rest.
    """

    def __init__(self, has_status: Callable[[str], bool]) -> None:
        self._has_status = has_status
        """Whether a run's status was read already (its first read of an unfinished run is urgent)."""
        self._queue: dict[str, None] = {}
        self._changed: dict[str, None] = {}
        self._first_reads: dict[str, None] = {}
        self._changed_next = True
        """Whether the next urgent batch, when both urgent queues hold runs, is of changed runs."""
        self._unfinished: set[str] = set()
        self._tracker: StatusTracker | None = None

    @property
    def pending(self) -> int:
        """How many runs wait for a read."""
        return len(self._queue) + len(self._changed) + len(self._first_reads)

    def ask(self, run_ids: Iterable[str], *, urgent: bool = False) -> None:
        """Queue ``run_ids`` for a read; ``urgent`` (the change feed named them) puts them ahead
        of the rest, taking turns with first reads of unfinished runs."""
        for run_id in run_ids:
            if urgent:
                self._queue.pop(run_id, None)
                self._first_reads.pop(run_id, None)
                self._changed[run_id] = None
            elif run_id in self._changed:
                continue
            elif run_id in self._unfinished and not self._has_status(run_id):
                self._queue.pop(run_id, None)
                self._first_reads[run_id] = None
            elif run_id not in self._first_reads:
                self._queue[run_id] = None

    def _next_urgent(self) -> dict[str, None]:
        """The urgent queue the next urgent batch comes from, taking turns (empty when neither holds a run)."""
        take_changed = bool(self._changed) and (self._changed_next or not self._first_reads)
        self._changed_next = not take_changed
        return self._changed if take_changed else self._first_reads

    def unfinished_listed(self, run_ids: set[str]) -> None:
        """The runs with no end marker: those still waiting for a first read move up."""
        self._unfinished = run_ids
        self.ask([run_id for run_id in self._queue if run_id in run_ids])

    async def read(
        self, store: Store, *, locked: Callable[[], Awaitable[None]], batch_seconds: float = BATCH_SECONDS
    ) -> AsyncIterator[list[RunStatus]]:
        """Read queued runs until no run waits, yielding what was read in batches.

        Urgent runs are read a few at a time (``URGENT_AT_ONCE``, more while that is quick), the
        rest a page at a time (more pages while that is quick), each through the tracker
        (``StatusTracker.statuses``: the status index and the store's run summaries where it has
        them, the short rest read whole at once, runs read before read on). Yields to the loop
        between reads, so a viewer on the same loop stays responsive while 100,000 statuses
        fill in. While another process holds a lock on the
        store, ``locked`` is awaited (say so, wait a moment) and the same read is made again.
        """
        # The status rules are imported with the first read, not with the scheduler: a runs list
        # paints its first rows before it reads a status (benchmarks/startup.py).
        from agenttui.runs.statuses.status import SUMMARY_PAGE, StatusTracker

        if self._tracker is None or self._tracker.store is not store:
            self._tracker = StatusTracker(store, capacity=TRACKER_RUNS, budget_bytes=TRACKER_BUDGET_BYTES)
        tracker = self._tracker

        at_once, page_size = URGENT_AT_ONCE, SUMMARY_PAGE

        async def read_page(page: list[str]) -> list[RunStatus]:
            nonlocal page_size
            started = time.monotonic()
            read = await _unlocked(partial(tracker.statuses, page), locked)
            page_size = _next_size(page_size, time.monotonic() - started, SUMMARY_PAGE, SUMMARY_PAGE * PAGES_AT_ONCE)
            return read

        def next_page() -> asyncio.Future[list[RunStatus]]:
            return asyncio.ensure_future(read_page(_take(self._queue, page_size)))

        batch: list[RunStatus] = []
        last_batch = time.monotonic()
        ahead: asyncio.Future[list[RunStatus]] | None = None
        """The next page, read while this one is decided (the database works while Python does)."""
        try:
            while self.pending or ahead is not None:
                if self._changed or self._first_reads or not store.IMPLEMENTS_SUMMARIES:
                    some = _take(self._next_urgent() or self._queue, at_once)
                    started = time.monotonic()
                    batch += await _unlocked(partial(tracker.statuses, some), locked)
                    at_once = _next_size(at_once, time.monotonic() - started, URGENT_AT_ONCE, SUMMARY_PAGE)
                else:
                    reading = ahead or next_page()
                    ahead = next_page() if self._queue else None
                    batch += await reading
                await asyncio.sleep(0)
                if not (self.pending or ahead) or time.monotonic() - last_batch > batch_seconds:
                    yield batch
                    batch, last_batch = [], time.monotonic()
        finally:
            if ahead is not None:
                ahead.cancel()
        if batch:
            yield batch


def _next_size(size: int, took: float, least: int, most: int) -> int:
    """How many runs to read at once next, after ``size`` took ``took`` seconds (``URGENT_SECONDS``)."""
    if took < URGENT_SECONDS / 2:
        return min(size * 2, most)
    if took > URGENT_SECONDS:
        return max(size // 2, least)
    return size


def _take(queue: dict[str, None], count: int) -> list[str]:
    """The first ``count`` runs of ``queue``, taken out of it. A queue emptied lets go of its
    table: a dict keeps the size it grew to (3.8 MB after 100,000 runs), empty or not."""
    taken = list(itertools.islice(queue, count))
    for run_id in taken:
        del queue[run_id]
    if not queue:
        queue.clear()
    return taken


async def _unlocked(read: Callable[[], Awaitable[T]], locked: Callable[[], Awaitable[None]]) -> T:
    """``read()``, made again after ``locked()`` for as long as another process holds a lock."""
    while True:
        try:
            return await read()
        except StoreLockedError:
            await locked()


#: The states of a status that may change with the clock alone (``clock_change_at``).
CLOCKED_STATES = frozenset({RunState.IN_FLIGHT, RunState.SLEEPING})


def clock_change_at(status: RunStatus, read_at: float) -> float | None:
    """When ``status``, read at ``read_at`` (``time.time()``), may change with time alone: when
    its live lease lapses (in flight) or its sleep ends; None when time alone never changes it.
    The lease may be renewed meanwhile: read again then, the status says until when."""
    if status.state == RunState.IN_FLIGHT:
        return read_at + status.lease.expires_in if status.lease is not None else read_at
    if status.state == RunState.SLEEPING:
        return status.wake_at.timestamp() if status.wake_at is not None else read_at
    return None
