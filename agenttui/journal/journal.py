"""The Journal: records over a store, with the ``@journal`` header and at-most-once steps."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from agenttui.errors import CorruptRecordError, JournalVersionError
from agenttui.journal.codec import decode_record, encode_header, encode_record, unreadable_record
from agenttui.journal.record import SUPPORTED_FORMATS, Record, with_members
from agenttui.stores.base import Entry, Store

SALT_BYTES = 32


def decode_entry(entry: Entry) -> Record:
    """The record an entry holds, or an unreadable stand-in saying why it does not decode."""
    if entry.damage:
        return unreadable_record(entry.name, entry.data, CorruptRecordError(f"the row is damaged: {entry.damage}"))
    try:
        return decode_record(entry.data, entry.name)
    except CorruptRecordError as exc:
        return unreadable_record(entry.name, entry.data, exc)


def journal_format(first: Record | None) -> str:
    """The format a run's first record names: "" for a headerless (pre-v0.9) journal."""
    if first is None or not first.is_header:
        return ""
    return first.format


@dataclass(frozen=True, slots=True)
class RunJournal:
    """A run's journal as a viewer reads it: its format, and every record, readable or not."""

    run_id: str
    format: str
    records: list[Record]
    last_seq: int
    """The seq of the last entry read, to continue from with ``Journal.entries(after=...)``."""

    @property
    def supported(self) -> bool:
        return self.format in SUPPORTED_FORMATS


class Journal:
    """Records of runs in one store.

    ``do`` is the runtime's primitive: a step runs at most once per name, ever. Within this
    process concurrent callers of one step share one call; across processes the store's single
    winner decides. A step's outcome is recorded even if its caller is cancelled meanwhile.
    """

    def __init__(self, store: Store) -> None:
        self.store = store
        self._checked_runs: set[str] = set()
        self._header_tasks: dict[str, asyncio.Future[None]] = {}
        self._steps_in_flight: dict[tuple[str, str], asyncio.Future[Record]] = {}

    # -- reading -----------------------------------------------------------------------------

    async def get(self, run_id: str, name: str) -> Record | None:
        """The record named ``name`` in the run, or None. Raises ``CorruptRecordError`` if unreadable."""
        entry = await self.store.get(run_id, name)
        if entry is None:
            return None
        kept = self._kept(entry)
        return kept if kept is not None else decode_record(entry.data, entry.name)

    def _kept(self, entry: Entry) -> Record | None:
        """The record of ``entry`` as this journal already holds it, not decoded again (a
        replay's journal keeps what it wrote and was fed); None: decode it."""
        return None

    def _record_of(self, entry: Entry) -> Record:
        """The record of ``entry``: as kept, else decoded (an unreadable one as a stand-in)."""
        kept = self._kept(entry)
        return kept if kept is not None else decode_entry(entry)

    async def entries(self, run_id: str, after: int = -1) -> AsyncIterator[tuple[Entry, Record]]:
        """Each entry past ``after`` with its record (unreadable ones as stand-ins), in commit order."""
        async for entry in self.store.load(run_id, after):
            yield entry, self._record_of(entry)

    async def read(self, run_id: str) -> RunJournal:
        """The whole run for a viewer: never refuses a format, never stops at an unreadable record."""
        records: list[Record] = []
        last_seq = -1
        async for entry, record in self.entries(run_id):
            records.append(record)
            last_seq = entry.seq
        return RunJournal(run_id, journal_format(records[0] if records else None), records, last_seq)

    async def history(self, run_id: str) -> list[Record]:
        """Every record of the run in commit order, the header first.

        Raises ``JournalVersionError`` when the run's first record is not a header naming a
        supported format. An unreadable record appears as a stand-in with ``unreadable`` set.
        """
        return self.opened(await self.read(run_id))

    def opened(self, run: RunJournal) -> list[Record]:
        """``history`` of a run already read whole (``read``): its records, or ``JournalVersionError``.

        A run whose records it gives has a header naming a supported format, which is all a write
        checks first (``_ensure_header``): this journal's writes to the run do not read it again.
        """
        if run.records and not run.supported:
            raise JournalVersionError(run.run_id, run.format)
        if run.records:
            self._checked_runs.add(run.run_id)
        return run.records

    async def format(self, run_id: str) -> str | None:
        """The run's journal format ("" if headerless), or None for a run with no records."""
        # Closed here, not left to the garbage collector: asyncio finalizes an async generator
        # abandoned after its first entry by scheduling its ``aclose`` from a thread-safe call (a
        # write to the loop's wake-up socket and a task): two each replayed run, before.
        entries = self.store.load(run_id)
        try:
            async for entry in entries:
                return journal_format(self._record_of(entry))
            return None
        finally:
            if isinstance(entries, AsyncGenerator):
                await entries.aclose()

    # -- writing -----------------------------------------------------------------------------

    async def append(self, run_id: str, record: Record) -> Record:
        """Insert ``record`` unless its name is taken; return the record that holds the name."""
        return (await self.insert(run_id, record))[0]

    async def insert(self, run_id: str, record: Record) -> tuple[Record, bool]:
        """Insert ``record`` (with a fresh salt) unless its name is taken.

        Returns the record that holds the name afterwards, and whether it is this one.
        """
        await self._ensure_header(run_id)
        salt = os.urandom(SALT_BYTES)
        data = encode_record(record, salt)
        inserted = await self.store.insert(run_id, record.name, data)
        if inserted.won:
            return with_members(record, salt=salt, raw=data), True
        return decode_record(inserted.entry.data, inserted.entry.name), False

    async def do(self, run_id: str, name: str, step: Callable[[], Awaitable[Record]]) -> Record:
        """Run ``step`` at most once for ``(run_id, name)`` and return the recorded outcome.

        If the name is already recorded, ``step`` is not called and the recorded record returns.
        If ``step`` raises, nothing is recorded and the exception propagates to every caller.
        """
        key = (run_id, name)
        task = self._steps_in_flight.get(key)
        if task is None:
            # The store is asked inside the shared task: a caller arriving while the first one
            # looks it up, or just after it recorded, joins it instead of running the step again.
            task = asyncio.create_task(self._run_step(run_id, name, step), name=f"journal step {name}")
            self._steps_in_flight[key] = task
            task.add_done_callback(_forget(self._steps_in_flight, key))
        # Shielded: a cancelled caller stops waiting, but the step still runs and is recorded.
        return await asyncio.shield(task)

    async def _run_step(self, run_id: str, name: str, step: Callable[[], Awaitable[Record]]) -> Record:
        if (recorded := await self.get(run_id, name)) is not None:
            return recorded
        record = await step()
        if record.name != name:
            record = dataclasses.replace(record, name=name)
        return await self.append(run_id, record)

    async def _ensure_header(self, run_id: str) -> None:
        """Write the run's header if it has none; refuse a run written in another format."""
        if run_id in self._checked_runs:
            return
        task = self._header_tasks.get(run_id)
        if task is None:
            task = asyncio.create_task(self._check_header(run_id))
            self._header_tasks[run_id] = task
            task.add_done_callback(_forget(self._header_tasks, run_id))
        await asyncio.shield(task)

    async def _check_header(self, run_id: str) -> None:
        found = await self.format(run_id)
        if found is None:
            inserted = await self.store.insert(run_id, "@journal", encode_header(os.urandom(SALT_BYTES)))
            # Another writer may have started the run first; the winner's first entry decides.
            found = journal_format(decode_entry(inserted.entry)) if inserted.won else await self.format(run_id)
        if found not in SUPPORTED_FORMATS:
            raise JournalVersionError(run_id, found or "")
        self._checked_runs.add(run_id)


K = TypeVar("K")
R = TypeVar("R")


def _forget(tasks: dict[K, asyncio.Future[R]], key: K) -> Callable[[asyncio.Task[R]], None]:
    """A done-callback that drops a finished shared task and marks its exception as retrieved.

    Every waiting caller re-raises the exception itself; when all of them were cancelled, nobody
    else would retrieve it and asyncio would log "exception was never retrieved".
    """

    def done(task: asyncio.Task[R]) -> None:
        tasks.pop(key, None)
        if not task.cancelled():
            task.exception()

    return done
