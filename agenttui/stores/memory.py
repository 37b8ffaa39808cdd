"""MemStore: the in-process reference store, with listing and leases."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass, field

from agenttui.stores.base import LOAD_PAGE_SIZE, Entry, Inserted, LeaseInfo, Store
from agenttui.stores.summary import RunSummary, summarize


@dataclass(slots=True)
class _Run:
    entries: list[Entry] = field(default_factory=list)
    by_name: dict[str, Entry] = field(default_factory=dict)


class MemStore(Store):
    """Keeps every run in a dict; lost when the process ends. For tests and replays."""

    IMPLEMENTS_LISTING = True
    IMPLEMENTS_LEASES = True
    IMPLEMENTS_CHANGES = True
    IMPLEMENTS_SUMMARIES = True  # by the reference, summarize(): what the SQL stores are held to
    IMPLEMENTS_ATOMIC_INSERT_MANY = True  # nothing else runs between its first item and its last

    turn_per_page = True
    """Whether ``load`` lets the event loop run others before each page, as a store's round
    trip would (a long read then holds nothing up)."""

    def __init__(self, *, read_only: bool = False) -> None:
        self.read_only = read_only
        self._runs: dict[str, _Run] = {}
        self._leases: dict[str, tuple[str, float]] = {}
        self._next_seq = itertools.count(1)

    def handle(self, *, read_only: bool = False) -> MemStore:
        """Another handle onto the same runs and leases, as a second connection would be."""
        other = MemStore(read_only=read_only)
        other._runs, other._leases = self._runs, self._leases
        other._next_seq = self._next_seq
        return other

    @property
    def url_shown(self) -> str:
        return "memory:"

    async def insert(self, run_id: str, name: str, data: bytes) -> Inserted:
        self._check_writable()
        return self._insert_now(run_id, name, data)

    async def insert_many(
        self, run_id: str, items: Sequence[tuple[str, bytes]], *, refuse_conflicts: bool = False
    ) -> list[Inserted]:
        # Nothing here suspends (``get`` never does), so no other task runs between the check
        # and the last item: none sees a part of them, and a cancellation finds none or all.
        self._check_writable()
        if refuse_conflicts:
            await self._refuse_conflicts(run_id, items)
        return [self._insert_now(run_id, name, data) for name, data in items]

    def _insert_now(self, run_id: str, name: str, data: bytes) -> Inserted:
        run = self._runs.get(run_id)
        if run is None:  # not setdefault(run_id, _Run()): that makes a run to throw away on every insert
            run = self._runs[run_id] = _Run()
        if (existing := run.by_name.get(name)) is not None:
            return Inserted(existing, won=False)
        entry = Entry(next(self._next_seq), name, bytes(data))
        run.entries.append(entry)
        run.by_name[name] = entry
        return Inserted(entry, won=True)

    async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
        found = (
            summarize(run_id, self._runs[run_id].entries, end_markers) for run_id in run_ids if run_id in self._runs
        )
        return [summary for summary in found if summary is not None]

    async def get(self, run_id: str, name: str) -> Entry | None:
        run = self._runs.get(run_id)
        return None if run is None else run.by_name.get(name)

    async def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        run = self._runs.get(run_id)
        if run is None:
            return
        # Entries are appended in seq order, so each page is a slice past the last seq seen.
        position = 0
        while True:
            if self.turn_per_page:
                await asyncio.sleep(0)
            page = run.entries[position : position + LOAD_PAGE_SIZE]
            if not page:
                return
            position += len(page)
            for entry in page:
                if entry.seq > after:
                    yield entry

    async def changes_since(self, cursor: int) -> tuple[set[str], int]:
        latest = max((run.entries[-1].seq for run in self._runs.values() if run.entries), default=0)
        if cursor < 0:
            return set(), latest
        changed = {run_id for run_id, run in self._runs.items() if run.entries and run.entries[-1].seq > cursor}
        return changed, latest

    async def write_mark(self) -> object | None:
        return sum(len(run.entries) for run in self._runs.values()), frozenset(self._leases.items())

    async def runs(
        self,
        *,
        after: str = "",
        prefix: str = "",
        exclude_holding: Sequence[str] = (),
        lease_lapsed: bool = False,
    ) -> AsyncIterator[str]:
        now = time.monotonic()
        for run_id in sorted(self._runs):
            if run_id <= after or not run_id.startswith(prefix):
                continue
            if exclude_holding and any(n in self._runs[run_id].by_name for n in exclude_holding):
                continue
            if lease_lapsed:
                lease = self._leases.get(run_id)
                if lease is None or lease[1] >= now:
                    continue
            yield run_id

    async def acquire_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        self._check_writable()
        now = time.monotonic()
        current = self._leases.get(run_id)
        if current is not None and current[0] != holder and current[1] >= now:
            return False
        self._leases[run_id] = (holder, now + ttl)
        return True

    async def renew_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        self._check_writable()
        now = time.monotonic()
        current = self._leases.get(run_id)
        if current is None or current[0] != holder or current[1] < now:
            return False
        self._leases[run_id] = (holder, now + ttl)
        return True

    async def release_lease(self, run_id: str, holder: str) -> None:
        self._check_writable()
        current = self._leases.get(run_id)
        if current is not None and current[0] == holder:
            del self._leases[run_id]

    async def get_lease(self, run_id: str) -> LeaseInfo | None:
        current = self._leases.get(run_id)
        if current is None:
            return None
        return LeaseInfo(run_id, current[0], current[1] - time.monotonic())
