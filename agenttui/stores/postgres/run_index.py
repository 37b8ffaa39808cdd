"""The shared run index: every run's status kept in the journal's database, for every reader.

Opt-in (``agenttui index install STORE``) and reversible (``agenttui index uninstall STORE``). It
lives in a schema of its own beside the journal's, ``<schema>_agenttui`` (``<schema>_<prefix>
agenttui`` for a table prefix other than ``bide_``), and adds to the journal's table nothing but
four triggers, ``agenttui_index_*``, that note which runs an insert, update, delete or truncate
touched (``TRIGGERS``)::

    <index>.meta     key text PRIMARY KEY, value text     the index's version, the journal it indexes
    <index>.changes  id int8 identity, run_id text, noted_at timestamptz
                     a row an inserted entry (a statement's run, for an update or a delete):
                     the runs changed since the indexer last read them
    <index>.runs     run_id text COLLATE "C" PRIMARY KEY, count int8, last int8, <verdict columns>
                     what the status rules make of each run without its lease row, with the
                     validator (entry count, highest seq) of the entries it was made of
    <index>.indexer  one row: the indexer's lease (holder, expiry), its watermark (the highest
                     change it took), when it last caught up and last worked

One process keeps it current (``agenttui index run``, ``runs.statuses.indexer``): it takes a batch
of changes off the queue, reads the runs they name with the status path every reader uses, and
writes their rows, all in one transaction under its lease. A change is gone only with the row it
led to: killed anywhere, the indexer loses and doubles nothing. A reader takes the rows and the
queue in one snapshot: a run with no change queued is as its row says; the few queued are read
from the journal as without an index (docs/decisions.md, "The shared run index").

The trigger functions are ``SECURITY DEFINER`` (the installer's rights, with ``search_path`` fixed
and every name qualified), so a writer's role needs no right on the index schema: the Go SDK's
nodes write on unchanged.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import asyncpg

from agenttui.errors import ConfigError, StoreError
from agenttui.stores.base import LeaseInfo
from agenttui.stores.postgres.run_index_sql import (
    INDEX_VERSION,
    INSTALL_LOCK,
    TRIGGERS,
    TRUNCATE_TRIGGER,
    VERDICT_COLUMNS,
    IndexStatements,
    index_schema,
)
from agenttui.stores.postgres.schema import SCHEMA_VERSION, Names

__all__ = [
    "INDEX_VERSION",
    "TRIGGERS",
    "TRUNCATE_TRIGGER",
    "VERDICT_COLUMNS",
    "Changed",
    "Claimed",
    "Counted",
    "IndexLines",
    "IndexLostError",
    "IndexRow",
    "IndexState",
    "IndexedRows",
    "Selected",
    "SharedRunIndex",
    "index_schema",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexState:
    """Where an index stands (``agenttui index status``)."""

    schema: str
    """The index's schema."""
    installed: bool
    usable: str
    """Empty when readers use the index; else why they do not."""
    version: int | None = None
    runs: int = 0
    """The runs the index holds a row of."""
    pending: int = 0
    """Changes queued: notes of a run written since the indexer last read it."""
    pending_runs: int = 0
    oldest_pending_seconds: float | None = None
    """How long the oldest queued change has waited (the index's lag)."""
    watermark: int = 0
    """The highest change the indexer has taken."""
    caught_up_seconds: float | None = None
    """How long ago the indexer last found the queue empty (None: never)."""
    holder: str = ""
    """The indexer holding the lease ("" : none)."""
    lease_seconds: float | None = None
    """How long the holder's lease runs on (negative: lapsed)."""
    beat_seconds: float | None = None
    """How long ago the indexer last worked or renewed its lease."""
    index_bytes: int = 0
    journal_bytes: int = 0


@dataclass(frozen=True, slots=True)
class IndexLines:
    """Every row of the index, as columns in run id byte order, with the runs to read apart, all
    in one snapshot (``SharedRunIndex.lines``)."""

    run_ids: list[str]
    counts: list[int]
    lasts: list[int]
    verdicts: list[list[Any]]
    """One list a verdict column (``VERDICT_COLUMNS``), in ``run_ids``' order; a row whose
    verdict is not kept (a count too large) holds None in each."""
    plain: list[int]
    """1 where the verdict says no more than its line (``_PLAIN``)."""
    pending: list[str]
    """Runs a change is queued for that the journal holds entries of: to be read from it."""
    gone: list[str]
    """Runs a change is queued for that the journal no longer holds: not to be listed."""


@dataclass(frozen=True, slots=True)
class IndexedRows:
    """What the index holds of some runs, in one snapshot (``SharedRunIndex.rows``)."""

    verdicts: dict[str, list[Any]]
    """Each run held, not queued, whose verdict is kept: its verdict columns."""


class IndexRow(NamedTuple):
    """What the indexer writes of a run."""

    run_id: str
    root_id: str
    """The run whose lease row is this run's (``journal.keys.root_run_id``)."""
    mark: tuple[int, int]
    """The validator of the entries the verdict was made of: their count and highest seq."""
    verdict: Sequence[Any] | None
    """Its verdict columns (``VERDICT_COLUMNS``); None where it is not kept."""


@dataclass(frozen=True, slots=True)
class Selected:
    """What a selection found in one snapshot (``SharedRunIndex.select``)."""

    rows: list[tuple[Any, ...]]
    """Each run the condition may select: its run id, root run id and verdict columns, in run id
    order."""
    pending: list[str]
    """Runs to read from the journal: a change is queued for them, or their verdict is not kept
    (every page's: few, a moment's writes; the caller keeps the page's)."""
    upto: str | None = None
    """The last run a page covers (read on after it); None where it covers every run after its start."""
    unsettled: list[tuple[Any, ...]] = field(default_factory=list)
    """The rows of the page's range a lease row or the clock decides that the selection may
    hold, as ``rows`` are."""


@dataclass(frozen=True, slots=True)
class Counted:
    """Runs counted by state in one snapshot (``SharedRunIndex.counts``)."""

    states: dict[str, int]
    """The runs whose status is their verdict's state (no lease row, no wake time), by state."""
    uncertain: list[tuple[str, str, str | None, LeaseInfo | None]]
    """The runs whose status hangs on a lease row or the clock: each run id, its verdict's state
    and wake time, and its live lease row (its top-level run's), read in the same snapshot."""
    pending: list[str]
    """The runs to read from the journal."""


@dataclass(frozen=True, slots=True)
class Changed:
    """What a live tail's look at the index found (``SharedRunIndex.changed_since``)."""

    runs: set[str]
    """The runs written since the mark it was asked from."""
    mark: int
    """The mark to ask from next."""
    leases: dict[str, tuple[str, bool]]
    """Every lease row: its holder, and whether it is live (by the server's clock)."""


class Claimed:
    """A batch of changes taken off the queue (``SharedRunIndex.claim``): their runs, to be read
    and written back (``write``) in the same transaction, which commits when the batch ends."""

    def __init__(
        self, conn: asyncpg.Connection, sql: IndexStatements, run_ids: list[str], xids: list[int], watermark: int
    ) -> None:
        self._conn = conn
        self._sql = sql
        self.run_ids = run_ids
        """The runs the changes name, each once, in byte order."""
        self._xid_of = dict(zip(run_ids, xids, strict=True))
        """Each run's newest change's transaction id, kept on its row for live tails."""
        self.watermark = watermark

    async def write(self, rows: Sequence[IndexRow], vanished: Sequence[str], again: Sequence[str]) -> None:
        """Keep each run's verdict (None: not kept; the run is read by every reader) with its
        validator, drop the rows of runs the journal no longer holds, and queue ``again`` the
        runs that could not be read now."""
        await self._count(rows, vanished)
        if rows:
            await self._conn.executemany(
                self._sql.upsert,
                [
                    (row.run_id, row.root_id, self._xid_of.get(row.run_id), *row.mark, *(row.verdict or _NO_VERDICT))
                    for row in rows
                ],
            )
        if vanished:
            await self._conn.execute(self._sql.drop_runs, list(vanished))
        if again:
            await self._conn.execute(self._sql.requeue, list(again))

    async def _count(self, rows: Sequence[IndexRow], vanished: Sequence[str]) -> None:
        """Move the counts by state from the rows as they are to the rows as they will be."""
        moved: Counter[str] = Counter(row.verdict[0] for row in rows if row.verdict is not None)
        moved.subtract(await self._conn.fetchval(self._sql.states_of_array, [*(row.run_id for row in rows), *vanished]))
        if changed := {state: by for state, by in moved.items() if by}:
            await self._conn.execute(self._sql.add_counts, list(changed), list(changed.values()))


_NO_VERDICT = (None,) * len(VERDICT_COLUMNS)


class IndexLostError(StoreError):
    """The indexer lost its lease (another holds it): the batch was rolled back."""


class SharedRunIndex:
    """The shared run index of one PostgreSQL journal (``PostgresStore.run_index``)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        names: Names,
        retrying: Callable[[Callable[[], Awaitable[T]]], Awaitable[T]],
        *,
        has_leases: bool,
    ) -> None:
        self.schema = index_schema(names)
        self._pool = pool
        self._names = names
        self._retrying: Callable[[Callable[[], Awaitable[Any]]], Awaitable[Any]] = retrying
        self._sql = IndexStatements(names, self.schema, has_leases=has_leases)

    # -- install, uninstall, state -----------------------------------------------------------

    async def install(self) -> bool:
        """Create the index (nothing if it is there, at this version, its triggers in place)
        and queue every run for the indexer; True if anything was made. Refuses, in one line,
        a role without the rights it needs."""
        async with self._pool.acquire() as conn:
            await self._check_rights(conn)
            async with conn.transaction():
                await conn.execute(f"SELECT pg_catalog.pg_advisory_xact_lock({INSTALL_LOCK})")
                if await self._problem(conn, caught_up=False) == "":
                    return False
                await conn.execute(self._sql.drop)
                await conn.execute(self._sql.create)
                for role in await conn.fetchval(self._sql.readers):
                    await conn.execute(self._sql.grant_to(role))
            # Queued after the triggers are in place, in a transaction of its own: the journal's
            # writers wait for the triggers' lock only while they are made, not while every run
            # is listed. A run written meanwhile is queued twice, which is harmless.
            await self._retrying(lambda: conn.execute(self._sql.queue_every_run))
        return True

    async def uninstall(self) -> bool:
        """Remove every trace of the index: its triggers, functions and schema. True if there was one."""
        async with self._pool.acquire() as conn, conn.transaction():
            await conn.execute(f"SELECT pg_catalog.pg_advisory_xact_lock({INSTALL_LOCK})")
            found = await conn.fetchval(self._sql.schema_exists) or await conn.fetchval(self._sql.trigger_count)
            await conn.execute(self._sql.drop)
            return bool(found)

    async def state(self) -> IndexState:
        """Where the index stands, read in one snapshot."""

        async def read() -> IndexState:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if not await conn.fetchval(self._sql.schema_exists):
                    return IndexState(self.schema, installed=False, usable="not installed")
                usable = await self._problem(conn)
                row = await conn.fetchrow(self._sql.state)
            return IndexState(self.schema, True, usable, **dict(row))

        result: IndexState = await self._retrying(read)
        return result

    async def _problem(self, conn: asyncpg.Connection, *, caught_up: bool = True) -> str:
        """Why readers cannot use the index ("" when they can; with ``caught_up`` false, when
        they can once the indexer has caught up)."""
        if not await conn.fetchval(self._sql.schema_exists):
            return "not installed"
        row = await conn.fetchrow(self._sql.usable)
        if row["triggers"] != len(TRIGGERS) + 1:
            return "its triggers on the journal's table are missing: run agenttui index install again"
        version = int(row["version"] or 0)
        if version > INDEX_VERSION:
            return f"it is of version {version}, newer than this agenttui's ({INDEX_VERSION}): upgrade agenttui"
        if version < INDEX_VERSION or row["journal_version"] != str(SCHEMA_VERSION):
            return f"it is of version {version} (this agenttui's: {INDEX_VERSION}): its indexer builds it again"
        if caught_up and row["caught_up"] is None:
            return "the indexer has not caught up with the journal yet"
        return ""

    async def _check_rights(self, conn: asyncpg.Connection) -> None:
        row = await conn.fetchrow(self._sql.rights)
        missing = [
            what
            for what, held in (
                ("CREATE on the database", row["create"]),
                ("TRIGGER on " + self._names.bare("steps"), row["trigger"]),
            )
            if not held
        ]
        if missing:
            raise ConfigError(f"role {row['role']} cannot install the index: it lacks {' and '.join(missing)}")

    # -- the indexer ---------------------------------------------------------------------------

    async def take_lease(self, holder: str, ttl: float) -> bool:
        """Take (or keep) the indexer's lease for ``ttl`` seconds: True if ``holder`` holds it."""
        return bool(await self._retrying(lambda: self._pool.fetchval(self._sql.take_lease, holder, ttl)))

    async def release_lease(self, holder: str) -> None:
        await self._retrying(lambda: self._pool.execute(self._sql.release_lease, holder))

    async def rebuild_if_stale(self, holder: str) -> bool:
        """Make the index again where it is of an older version (its tables change: as
        ``install`` does, which drops it first, and the lease with it), or empty it and queue
        every run where the journal's schema version moved (under the lease's row lock, as a
        batch is): True if it did. Refuses an index of a newer version, which a newer agenttui
        keeps: an older indexer never takes it back."""
        async with self._pool.acquire() as conn:
            row = await conn.fetchrow(self._sql.usable)
        version = int(row["version"] or 0)
        if version > INDEX_VERSION:
            raise ConfigError(
                f"the shared run index is of version {version}, newer than this agenttui's ({INDEX_VERSION}):"
                " run the indexer of the agenttui that made it"
            )
        if version < INDEX_VERSION:
            await self.install()
            return True
        if row["journal_version"] == str(SCHEMA_VERSION):
            return False
        async with self._pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(self._sql.hold, holder) is None:
                raise IndexLostError("another indexer holds the index's lease")
            await conn.execute(self._sql.rebuild)
            await conn.execute(self._sql.queue_every_run)
        return True

    @contextlib.asynccontextmanager
    async def claim(self, holder: str, ttl: float, limit: int) -> AsyncIterator[Claimed]:
        """Take up to ``limit`` changes off the queue, under the lease (renewed for ``ttl``):
        the batch's runs are to be read and written back before the block ends, when it all
        commits. Raises ``IndexLostError`` where ``holder`` no longer holds the lease. The
        lease row stays locked until the commit, so no other holder's batch overlaps this one."""
        async with self._pool.acquire() as conn, conn.transaction():
            if await conn.fetchval(self._sql.hold_renewing, holder, ttl) is None:
                raise IndexLostError("another indexer holds the index's lease")
            row = await conn.fetchrow(self._sql.claim, limit)
            run_ids, watermark = row["run_ids"] or [], row["watermark"]
            yield Claimed(conn, self._sql, run_ids, row["xids"] or [], watermark or 0)
            await conn.execute(self._sql.worked, watermark, not run_ids)

    # -- readers -------------------------------------------------------------------------------

    async def lines(self) -> IndexLines | None:
        """Every row and the runs queued, in one snapshot; None where readers cannot use the
        index (``IndexState.usable``)."""

        async def read() -> IndexLines | None:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if await self._problem(conn):
                    return None
                row = await conn.fetchrow(self._sql.lines)
                queued = await conn.fetchrow(self._sql.pending_runs)
            run_ids, counts, lasts, *verdicts, plain = (list(row[at] or []) for at in range(len(row)))
            return IndexLines(run_ids, counts, lasts, verdicts, plain, list(queued[0] or []), list(queued[1] or []))

        result: IndexLines | None = await self._retrying(read)
        return result

    async def rows(self, run_ids: Sequence[str]) -> IndexedRows | None:
        """The verdicts the index holds of ``run_ids`` that no change is queued for, in one
        snapshot; None where readers cannot use the index."""

        async def read() -> IndexedRows | None:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if await self._problem(conn):
                    return None
                rows = await conn.fetch(self._sql.rows, list(run_ids))
            return IndexedRows({row[0]: list(row[1:]) for row in rows})

        result: IndexedRows | None = await self._retrying(read)
        return result

    async def select(
        self,
        condition: str,
        args: Sequence[object],
        *,
        unsettled: tuple[str, Sequence[object]] = ("true", ()),
        after: str = "",
        limit: int | None = None,
    ) -> Selected | None:
        """The rows after ``after`` that ``condition`` may select (SQL over the columns of
        ``runs AS r``, its parameters ``args`` from ``$1``; a row it leaves NULL is not selected),
        through the ``limit``-th (``Selected.upto``: a page, read on from there by keyset), in
        one snapshot; None where readers cannot use the index. The caller decides: the condition
        narrows, the status rules and the filter decide.

        It also holds the rows of its range that a lease row or the clock decides that
        ``unsettled`` (a condition over the same columns, and its parameters) may select, and the
        runs to read from the journal."""

        async def read() -> Selected | None:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if await self._problem(conn):
                    return None
                paged = limit is not None
                at = len(args) + 1
                rows = await conn.fetch(
                    self._sql.settled(condition, at, paged=paged), *args, after, *([limit] if paged else [])
                )
                upto = rows[-1]["run_id"] if paged and len(rows) == limit else None
                bounds = [after, _prefixes(after), *([] if upto is None else [upto])]
                at = len(unsettled[1]) + 1
                undecided = await conn.fetch(
                    self._sql.unsettled(unsettled[0], at, bounded=upto is not None), *unsettled[1], *bounds
                )
                pending = await conn.fetchval(self._sql.to_read)
            return Selected([tuple(row) for row in rows], list(pending or []), upto, [tuple(row) for row in undecided])

        result: Selected | None = await self._retrying(read)
        return result

    async def counts(self) -> Counted | None:
        """The runs counted by their verdict's state, where nothing but the verdict decides
        their status; and the others, to be decided by the caller; in one snapshot (None where
        readers cannot use the index)."""

        async def read() -> Counted | None:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if await self._problem(conn):
                    return None
                states: Counter[str] = Counter(dict(await conn.fetch(self._sql.counts)))
                run_ids, kept, woken, leased, holders, expires_in = await conn.fetchrow(self._sql.uncertain)
                queued = await conn.fetchval(self._sql.queued_states)
                pending = await conn.fetchval(self._sql.to_read)
            # Those whose status is not their verdict's alone are the caller's to count.
            states.subtract(kept or [])
            states.subtract(queued or [])
            counted = {state: runs for state, runs in states.items() if runs}
            uncertain = [(run_id, state, wake_at, None if root is None else LeaseInfo(root, holder, seconds))
                         for run_id, state, wake_at, root, holder, seconds
                         in zip(run_ids or [], kept or [], woken or [], leased or [], holders or [], expires_in or [],
                                strict=True)]  # fmt: skip
            return Counted(counted, uncertain, list(pending or []))

        result: Counted | None = await self._retrying(read)
        return result

    async def changed_since(self, mark: int | None) -> Changed | None:
        """The runs written since ``mark`` (a snapshot's oldest running transaction, as this
        returned it: None for none yet), the mark to ask from next time, and every lease row
        (holder, and whether it is live), from the index's change marks and the lease table
        alone: never the journal. A transaction still running at one look is past the mark it
        returns, so its runs come at the next. None where readers cannot use the index."""

        async def read() -> Changed | None:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if await self._problem(conn):
                    return None
                row = await conn.fetchrow(self._sql.changed_since, mark or 0)
            leases = dict(
                zip(row["leased"] or [], zip(row["holders"] or [], row["live"] or [], strict=True), strict=True)
            )
            return Changed(set(row["runs"]) if mark is not None else set(), row["mark"], leases)

        result: Changed | None = await self._retrying(read)
        return result

    async def runs_under(self, roots: Sequence[str]) -> set[str]:
        """The runs the index holds under each of ``roots`` (their lease rows are the roots')."""
        rows = await self._retrying(lambda: self._pool.fetch(self._sql.runs_under, list(roots)))
        return {row[0] for row in rows}

    async def usable(self) -> bool:
        """Whether readers use the index (``IndexState.usable``)."""

        async def read() -> bool:
            async with self._pool.acquire() as conn:
                return await self._problem(conn) == ""

        return bool(await self._retrying(read))

    async def installed(self) -> bool:
        """Whether the index's schema is there (usable or not): one catalog lookup."""
        return bool(await self._retrying(lambda: self._pool.fetchval(self._sql.schema_exists)))


def _prefixes(run_id: str) -> list[str]:
    """Every id ``run_id`` begins with, itself too: the top-level runs a run past it may be a
    sub-run of (a run between a top-level run and one of its sub-runs begins with its id)."""
    return [run_id[:end] for end in range(1, len(run_id) + 1)]
