"""PostgresStore: the shared journal store on PostgreSQL, in the Bide SDK's newest (P5) layout.

The schema is the one given (``schema=`` or ``?schema=``, created if missing) or, unpinned, the
first schema on the search path that holds the tables, else ``current_schema()``, as the SDK
finds it. Every statement names it, so nothing resolves through the search path after ``open``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from functools import partial
from typing import TypeVar
from urllib.parse import quote, urlencode, urlunsplit

import asyncpg

from agenttui.errors import StoreError
from agenttui.stores.base import (
    LIST_PAGE_SIZE,
    LOAD_PAGE_SIZE,
    Entry,
    Inserted,
    LeaseInfo,
    StepTakenError,
    Store,
    prefix_end,
    stored_entry,
)
from agenttui.stores.postgres.connection import CLOSE_TIMEOUT, CONNECT_TIMEOUT, Target, parse_dsn, translated
from agenttui.stores.postgres.notifications import Notifications, channel_name, notify_payload
from agenttui.stores.postgres.run_index import SharedRunIndex
from agenttui.stores.postgres.schema import Layout, Names, Statements, check_names, prepare_schema
from agenttui.stores.summary import RunSummary, summarize

T = TypeVar("T")

#: Connections per store handle: enough for the 16-way concurrent insert benchmark to keep the
#: server busy without one handle starving others of the server's ``max_connections``.
POOL_SIZE = 10
#: Asked for more runs' validators than this, ``run_marks`` reads every run's in one pass.
MARKS_LOOKED_UP = 10_000
#: Asked about more runs' leases than this, ``get_leases`` reads the lease table whole.
LEASES_LOOKED_UP = 2000
#: The pause before a statement's second attempt is under 1 ms; each failure doubles the ceiling
#: of the next random pause, up to 100 ms, so contending writers spread out (as the SDK does).
BACKOFF_BASE = 0.001
BACKOFF_CAP = 0.1

#: Serialization failure and deadlock: the server rolled the statement back; trying again is safe.
#: (Under a deployment's default of repeatable read or serializable even a read can fail so.)
_TRANSIENT = (asyncpg.SerializationError, asyncpg.DeadlockDetectedError)
#: For inserts also a unique violation, which can only be on (run_id, seq): two inserts read the
#: same MAX(seq) (at repeatable read or serializable, or beside a writer that skips ``next_seq``);
#: the second waited for the first to commit, so its retry takes the next seq.
_TRANSIENT_INSERT = (*_TRANSIENT, asyncpg.UniqueViolationError)


def _utf8_prefix_end(prefix: str) -> str | None:
    """``prefix_end``, stepping over the surrogates (U+D800-U+DFFF), which UTF-8 cannot hold."""
    end = prefix_end(prefix)
    if end is not None and end[-1] == "\ud800":
        end = end[:-1] + "\ue000"
    return end


class PostgresStore(Store):
    """A journal store in a PostgreSQL schema, shared by any number of processes and hosts.

    Open it with ``PostgresStore.open``. Every method runs on the event loop that opened it (an
    asyncpg pool belongs to its loop) and raises only ``agenttui.errors`` exceptions: a failure
    to reach the server is a ``StoreConnectionError`` whose message never holds the password.
    """

    IMPLEMENTS_LISTING = True
    IMPLEMENTS_LEASES = True
    IMPLEMENTS_NOTIFICATIONS = True
    IMPLEMENTS_SUMMARIES = True  # jsonb sums a page of runs up on the server (a legacy schema: none)
    IMPLEMENTS_ATOMIC_INSERT_MANY = True
    """True: ``notifications`` yields the id of each run that gains an entry (live tail)."""

    layout: Layout = "current"
    """``"current"`` for the ``bide_`` tables, ``"legacy"`` for a P1/P2 ``steps`` table (read-only)."""
    schema: str
    """The schema the tables live in (the one given, or the search path's first when none was)."""
    channel: str
    """The ``LISTEN``/``NOTIFY`` channel of this store's tables (see ``notifications``)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        target: Target,
        connect_kwargs: dict[str, object],
        schema: str,
        schema_given: bool,
        table_prefix: str,
        read_only: bool,
        layout: Layout,
        has_leases: bool,
        notify: bool,
        replica: str | None = None,
        pool_target: Target | None = None,
    ) -> None:
        """Use ``PostgresStore.open``; this only assembles what it found."""
        self.replica = replica  # a viewer's only: every statement goes to it
        if replica is not None:
            # A notification comes from the primary, ahead of what the replica has replayed: a
            # read it prompted could miss what it announced. A replica's viewer polls the
            # replica instead, whose snapshot moves once it has replayed a commit.
            self.IMPLEMENTS_NOTIFICATIONS = False
        self._pool_target = pool_target or target
        self.read_only = read_only
        self.layout = layout
        self.schema = schema
        self.channel = channel_name(schema, table_prefix)
        self._pool = pool
        self._target = target
        self._connect_kwargs = connect_kwargs
        self._schema_given = schema_given
        self._notify = notify
        self._has_leases = has_leases
        self._tails: set[Notifications] = set()
        self._closed = False
        self._names = Names(schema, table_prefix)
        self._sql = Statements(self._names, layout=layout, notify=notify)
        self._run_index: SharedRunIndex | None = None

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        dsn: str,
        *,
        schema: str | None = None,
        read_only: bool = False,
        create: bool = True,
        table_prefix: str = "bide_",
        notify: bool | None = None,
        password: str | None = None,
    ) -> PostgresStore:
        """Connect to ``dsn`` (a ``postgresql://`` URL) and make sure the journal tables are there.

        ``schema``: the schema holding the tables (also accepted as ``?schema=`` in the URL); by
        default the first schema of the search path. A writable open creates the schema and any
        missing table, index or function in one transaction, and never alters existing ones
        (``create=False``: only for a journal that is there already; no schema or journal table
        is ever created); a read-only open changes nothing. ``notify=False`` (or ``?notify=off`` in
        the URL) skips the ``NOTIFY`` per insert: each notifying commit takes a database-wide
        lock, so heavy writers with no live viewers may prefer to; viewers then fall back to
        polling, as for Go writers. ``password``, when given, is the login's (a named store's
        ``password_command``'s): it is never in the URL, and masked in every message.

        Raises ``ConfigError`` for a bad schema or prefix name, ``StoreURLError`` for a URL that
        is not PostgreSQL's, ``StoreConnectionError`` when the server cannot be reached or
        refuses the login, and ``SchemaVersionError`` when the schema is newer than version 1,
        holds only a legacy ``steps`` table and the open is writable, or (read-only) holds no
        journal at all.
        """
        driver_dsn, target, url_schema, url_notify, replica = parse_dsn(dsn)
        if password is not None:
            target = dataclasses.replace(target, password=password)
            replica = replica and (replica[0], replica[1], dataclasses.replace(replica[2], password=password))
        schema = schema if schema is not None else url_schema
        notify = notify if notify is not None else url_notify is not False
        check_names(schema, table_prefix)
        settings = {"application_name": "agenttui"}
        if read_only:
            settings["default_transaction_read_only"] = "on"
        connect_kwargs: dict[str, object] = {
            "dsn": driver_dsn,
            "server_settings": settings,
            "timeout": CONNECT_TIMEOUT,
            **({"password": password} if password is not None else {}),
        }
        # A viewer reads from the replica, if one is named: every statement of a read-only
        # store only reads. A writable store never does: its writes, its leases and the reads
        # that decide them go to the primary. LISTEN, which a standby refuses, stays there.
        pool_target, pool_kwargs = target, connect_kwargs
        if replica is not None and read_only:
            pool_target, pool_kwargs = replica[2], {**connect_kwargs, "dsn": replica[0]}
        with translated(pool_target):
            # No per-release reset: the store keeps no session state (its advisory locks are
            # transaction-scoped and LISTEN has its own connection), and the default reset
            # costs a round trip on every statement.
            pool = await asyncpg.create_pool(min_size=1, max_size=POOL_SIZE, reset=_no_reset, **pool_kwargs)
        try:
            with translated(pool_target):
                async with pool.acquire() as conn:
                    found = await prepare_schema(conn, schema, table_prefix, read_only=read_only, create=create)
        except BaseException:
            pool.terminate()
            raise
        resolved, layout, has_leases = found
        return cls(
            pool,
            target=target,
            connect_kwargs=connect_kwargs,
            schema=resolved,
            schema_given=schema is not None,
            table_prefix=table_prefix,
            read_only=read_only,
            layout=layout,
            has_leases=has_leases,
            notify=notify,
            replica=replica[1] if replica is not None and read_only else None,
            pool_target=pool_target,
        )

    @property
    def url_shown(self) -> str:
        t = self._target
        userinfo = quote(t.user, safe="") + (":***" if t.password else "")
        query = list(t.query) + ([("schema", self.schema)] if self._schema_given else [])
        query += [("notify", "off")] if not (self._notify or self.read_only) else []
        query += [("replica", self.replica)] if self.replica is not None else []
        return urlunsplit(
            ("postgresql", f"{userinfo}@{t.address}", "/" + quote(t.database, safe=""), urlencode(query), "")
        )

    async def close(self) -> None:
        """Close the pool and every ``notifications`` connection. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for tail in list(self._tails):
            tail.terminate()
        try:
            await asyncio.wait_for(self._pool.close(), CLOSE_TIMEOUT)
        except (TimeoutError, asyncpg.InterfaceError, OSError):
            # Closing is best effort: whatever did not finish in time (or lost its server) is cut.
            self._pool.terminate()

    # -- the base contract ------------------------------------------------------------------------

    async def insert(self, run_id: str, name: str, data: bytes) -> Inserted:
        """Insert unless the name is taken; the winner's ``NOTIFY`` is delivered on its commit.

        One statement: ``next_seq`` takes the run's advisory lock, the row goes in or the name
        conflicts, and the notification is queued with it. A loser reads the winner's row,
        which is committed by then (``ON CONFLICT`` waits for the other inserter to finish).
        """
        self._check_writable()
        data = bytes(data)
        sql = self._sql

        async def attempt() -> Inserted:
            args = (run_id, name, data, self.channel, notify_payload(run_id))[: sql.insert_args]
            async with self._pool.acquire() as conn:
                seq = await conn.fetchval(sql.insert, *args)
                if seq is not None:
                    return Inserted(Entry(seq, name, data), won=True)
                row = await conn.fetchrow(sql.get, run_id, name)
            if row is None:  # A6 rules this out; it means someone deleted the row under us.
                raise StoreError(f"step {name!r} of run {run_id!r} conflicted but then was not there")
            return Inserted(Entry(row["seq"], name, row["data"]), won=False)

        return await self._retrying(attempt, _TRANSIENT_INSERT)

    async def insert_many(
        self, run_id: str, items: Sequence[tuple[str, bytes]], *, refuse_conflicts: bool = False
    ) -> list[Inserted]:
        """``insert``'s statement for each item, all in one transaction: one commit (and one WAL
        flush) for them all instead of one per entry, and none of them is there unless all are
        (a run imported in batches was left half written by an error midway). The run's advisory
        lock, which ``next_seq`` takes, is held until the commit, so other writers of this run
        wait for it; a transient error rolls everything back, and it is tried again."""
        self._check_writable()
        sql = self._sql
        channel, payload = self.channel, notify_payload(run_id)
        entries = [(name, bytes(data)) for name, data in items]
        if not entries:
            return []

        async def attempt() -> list[Inserted]:
            done = []
            async with self._pool.acquire() as conn, conn.transaction():
                for name, data in entries:
                    seq = await conn.fetchval(sql.insert, *(run_id, name, data, channel, payload)[: sql.insert_args])
                    if seq is not None:
                        done.append(Inserted(Entry(seq, name, data), won=True))
                        continue
                    row = await conn.fetchrow(sql.get, run_id, name)
                    if row is None:  # as in insert: A6 rules this out
                        raise StoreError(f"step {name!r} of run {run_id!r} conflicted but then was not there")
                    if refuse_conflicts and row["data"] != data:
                        raise StepTakenError(run_id, name)
                    done.append(Inserted(Entry(row["seq"], name, row["data"]), won=False))
            return done

        return await self._retrying(attempt, _TRANSIENT_INSERT)

    async def get(self, run_id: str, name: str) -> Entry | None:
        row = await self._retrying(lambda: self._pool.fetchrow(self._sql.get, run_id, name))
        return None if row is None else stored_entry(row["seq"], name, _as_bytes(row["data"]))

    async def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        """Entries with ``seq > after`` in ``seq`` order, a page of ``LOAD_PAGE_SIZE`` per query.

        Each page is fetched whole and its connection returned to the pool before the first
        entry is yielded (A8).
        """
        while True:
            page = await self._retrying(partial(self._pool.fetch, self._sql.load, run_id, after, LOAD_PAGE_SIZE))
            for row in page:
                yield stored_entry(row["seq"], row["name"], _as_bytes(row["data"]))
            if len(page) < LOAD_PAGE_SIZE:
                return
            after = page[-1]["seq"]

    # -- Lister -----------------------------------------------------------------------------------

    async def runs(
        self,
        *,
        after: str = "",
        prefix: str = "",
        exclude_holding: Sequence[str] = (),
        lease_lapsed: bool = False,
    ) -> AsyncIterator[str]:
        """Run ids in byte order (``COLLATE "C"``), ``LIST_PAGE_SIZE`` per query, pages fetched whole."""
        if lease_lapsed and not self._has_leases:
            return
        end = _utf8_prefix_end(prefix) if prefix else None
        sql = self._sql.runs(
            prefix=bool(prefix), prefix_end=end is not None, exclude=bool(exclude_holding), lease_lapsed=lease_lapsed
        )
        # The same order as the statement's placeholders: after, prefix, prefix end, names.
        filters: list[object] = [prefix, end] if end is not None else [prefix] if prefix else []
        if exclude_holding:
            filters.append(list(exclude_holding))
        while True:
            page = await self._retrying(partial(self._pool.fetch, sql, after, *filters))
            for row in page:
                yield row["id"]
            if len(page) < LIST_PAGE_SIZE:
                return
            after = page[-1]["id"]

    # -- Leaser -----------------------------------------------------------------------------------

    async def acquire_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        self._check_writable()
        granted = await self._retrying(lambda: self._pool.fetchval(self._sql.acquire, run_id, holder, ttl))
        return granted is not None

    async def renew_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        self._check_writable()
        renewed = await self._retrying(lambda: self._pool.fetchval(self._sql.renew, run_id, holder, ttl))
        return renewed is not None

    async def release_lease(self, run_id: str, holder: str) -> None:
        self._check_writable()
        await self._retrying(lambda: self._pool.execute(self._sql.release, run_id, holder))

    async def get_lease(self, run_id: str) -> LeaseInfo | None:
        """The lease row with ``expires_in`` computed on the server's clock; None on a legacy store."""
        return (await self.get_leases([run_id])).get(run_id)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, list[Entry]]:
        if not run_ids:
            return {}
        rows = await self._retrying(lambda: self._pool.fetch(self._sql.load_runs, list(run_ids)))
        loaded: dict[str, list[Entry]] = {}
        for row in rows:
            entry = stored_entry(row["seq"], row["name"], _as_bytes(row["data"]))
            loaded.setdefault(row["run_id"], []).append(entry)
        return loaded

    async def get_leases(self, run_ids: Collection[str]) -> dict[str, LeaseInfo]:
        if not self._has_leases or not run_ids:
            return {}
        # Asked about many runs (a whole store's), the lease table is read whole, as on SQLite: it
        # holds a row a run being driven, and 100,000 ids sent took 0.15 s.
        if len(run_ids) > LEASES_LOOKED_UP:
            rows = await self._retrying(lambda: self._pool.fetch(self._sql.every_lease))
            asked = set(run_ids)
            return {row["run_id"]: _lease_of(row) for row in rows if row["run_id"] in asked}
        rows = await self._retrying(lambda: self._pool.fetch(self._sql.get_leases, list(run_ids)))
        return {row["run_id"]: _lease_of(row) for row in rows}

    # -- a status index's validators ---------------------------------------------------------------

    def index_identity(self) -> str | None:
        """The server's host and port, the database, the schema and the journal table."""
        if self.layout != "current":
            return None
        t = self._target
        return f"postgresql\0{t.host}\0{t.port}\0{t.database}\0{self._sql.steps_table}"

    async def index_fingerprint(self) -> bytes:
        rows = await self._retrying(lambda: self._pool.fetch(self._sql.table_identity))
        return repr([tuple(row) for row in rows]).encode("utf-8", "backslashreplace")

    async def run_marks(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        if not run_ids:
            return {}
        if len(run_ids) <= MARKS_LOOKED_UP:
            rows = await self._retrying(lambda: self._pool.fetch(self._sql.run_marks, list(run_ids)))
            return {row["run_id"]: (row["count"], row["last"]) for row in rows}
        # A whole store's (a reopen): one pass over the index beats a lookup a run (100,000 runs:
        # 0.38 s against 0.72-0.90 s), and the runs not asked about are left out here.
        asked = set(run_ids)
        return {run_id: mark for run_id, mark in (await self.every_run_mark()).items() if run_id in asked}

    async def every_run_mark(self) -> dict[str, tuple[int, int]]:
        row = await self._retrying(lambda: self._pool.fetchrow(self._sql.every_run_mark))
        if row is None or row["run_ids"] is None:  # no run: array_agg of no rows is null
            return {}
        return dict(zip(row["run_ids"], zip(row["counts"], row["lasts"], strict=True), strict=True))

    def run_index(self) -> SharedRunIndex | None:
        if self.layout != "current":
            return None
        if self._run_index is None:
            self._run_index = SharedRunIndex(self._pool, self._names, self._retrying, has_leases=self._has_leases)
        return self._run_index

    # -- run summaries ----------------------------------------------------------------------------

    async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
        """One query on the server. A shaped entry is trusted from its bytes; every other is cast
        to jsonb, which raises for a whole page when one of them is not UTF-8 JSON: the page is
        then halved until the runs that hold such an entry are found, and those are summed up
        here, by the reference, from their entries."""
        if self.layout != "current" or not run_ids:
            return []

        async def query() -> list[asyncpg.Record] | None:
            try:
                rows: list[asyncpg.Record] = await self._pool.fetch(
                    self._sql.summaries, list(run_ids), list(end_markers)
                )
            except asyncpg.DataError:
                return None
            return rows

        rows = await self._retrying(query)
        if rows is None:
            if len(run_ids) > 1:
                half = len(run_ids) // 2
                return [
                    *await self.summaries(run_ids[:half], end_markers),
                    *await self.summaries(run_ids[half:], end_markers),
                ]
            found = summarize(run_ids[0], [entry async for entry in self.load(run_ids[0])], end_markers)
            return [] if found is None else [found]
        return [
            RunSummary(
                row["run_id"],
                row["steps"],
                row["last_seq"],
                row["turns"],
                row["tokens"],
                first=stored_entry(row["first_seq"], row["first_name"], _as_bytes(row["first_data"])),
                end=None
                if row["end_seq"] is None
                else stored_entry(row["end_seq"], row["end_name"], _as_bytes(row["end_data"])),
                suspect=row["suspect"],
                forked=row["forked"],
            )
            for row in rows
        ]

    # -- live tail --------------------------------------------------------------------------------

    async def write_mark(self) -> object | None:
        # The server's snapshot names the next transaction id and those in progress: any commit
        # that wrote (an entry, a lease) moves it, and reading it touches no table. It is the
        # whole server's, so another database's writes move it too: then a poll reads as before.
        return await self._retrying(lambda: self._pool.fetchval("SELECT pg_catalog.pg_current_snapshot()::text"))

    async def notifications(self) -> Notifications:
        """Start listening: the returned iterator yields the id of each run that gains an entry.

        The ``LISTEN`` is in place when this returns, so a viewer that calls it before its first
        ``load`` misses nothing. The iterator holds one dedicated connection until it is closed
        (``aclose``, ``async with``, or closing the store). Raises ``StoreConnectionError`` when
        the server cannot be reached.
        """
        with self._translated():
            conn = await asyncpg.connect(**self._connect_kwargs)
            tail = await Notifications.listen(conn, self.channel, self._target, forget=self._tails.discard)
        self._tails.add(tail)
        return tail

    # -- internals --------------------------------------------------------------------------------

    def _translated(self) -> contextlib.AbstractContextManager[None]:
        return translated(self._pool_target)

    async def replica_lag(self) -> float | None:
        """How far the replica this store reads from is behind its primary, in seconds (0 when
        it has replayed all it received); None when it reads from the primary."""
        if self.replica is None:
            return None
        lag = await self._retrying(lambda: self._pool.fetchval(_REPLICA_LAG))
        return None if lag is None else float(lag)

    async def _retrying(
        self, operation: Callable[[], Awaitable[T]], transient: tuple[type[BaseException], ...] = _TRANSIENT
    ) -> T:
        """Run one statement, again after a jittered, capped exponential pause on a transient error.

        Each failed attempt was a whole statement the server rolled back, so retrying cannot
        duplicate it. As in the SDK there is no bound on the attempts, which would turn heavy
        contention into errors: the caller bounds the time by cancelling (A7).
        """
        failures = 0
        with self._translated():
            while True:
                try:
                    return await operation()
                except transient:
                    ceiling = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** min(failures, 10))
                    failures += 1
                    await asyncio.sleep(random.uniform(0, ceiling))


#: A standby's lag: none when it has replayed every WAL record it received, else the time since
#: the last transaction it replayed committed on the primary.
_REPLICA_LAG = (
    "SELECT CASE WHEN NOT pg_catalog.pg_is_in_recovery() THEN NULL"
    " WHEN pg_catalog.pg_last_wal_receive_lsn() = pg_catalog.pg_last_wal_replay_lsn() THEN 0"
    " ELSE extract(epoch FROM pg_catalog.now() - pg_catalog.pg_last_xact_replay_timestamp()) END"
)


async def _no_reset(_conn: asyncpg.Connection) -> None:
    """Pool connections need no reset between uses (see ``PostgresStore.open``)."""


def _lease_of(row: asyncpg.Record) -> LeaseInfo:
    return LeaseInfo(row["run_id"], row["holder"], row["expires_in"])


def _as_bytes(data: bytes | str | None) -> bytes | None:
    """Entry bytes: bytea as stored, or (legacy jsonb, read as text) the normalised JSON encoded
    (a NULL stays None: ``stored_entry`` marks it)."""
    return data.encode() if isinstance(data, str) else data
