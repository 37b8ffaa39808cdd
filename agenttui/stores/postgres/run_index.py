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
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import asyncpg

from agenttui.errors import ConfigError, StoreError
from agenttui.stores.postgres.schema import MAX_IDENTIFIER, SCHEMA_VERSION, Names

T = TypeVar("T")

#: The index's layout: an index of an older version is made again by the indexer, one of a newer
#: version left alone, and neither is read meanwhile.
INDEX_VERSION = 4
#: The advisory lock install and uninstall run under ("agtx" in ASCII).
INSTALL_LOCK = 0x61677478
#: The triggers install adds to the journal's table, by the statements they note.
#: An insert is noted row by row: the SDK's statement inserts one row, and a row trigger with no
#: transition table costs it least. An update or a delete (a hand's, never the SDK's) is noted
#: once a statement a run.
TRIGGERS = {
    "agenttui_index_insert": "AFTER INSERT ON {steps} FOR EACH ROW EXECUTE FUNCTION {note_row}()",
    "agenttui_index_update": (
        "AFTER UPDATE ON {steps} REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION {note}()"
    ),
    "agenttui_index_delete": (
        "AFTER DELETE ON {steps} REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION {note}()"
    ),
}
TRUNCATE_TRIGGER = "agenttui_index_truncate"

#: What the index keeps of a status, in ``runs.statuses.index.Verdict``'s order (a test holds the
#: two equal), with each column's type.
VERDICT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("state", "text"),
    ("detail", "text"),
    ("tool_use_id", "text"),
    ("tool_name", "text"),
    ("interrupt_name", "text"),
    ("legacy", "bool"),
    ("fork_of", "text"),
    ("steps", "int8"),
    ("turns", "int8"),
    ("tokens", "int8"),
    ("earliest_ms", "int8"),
    ("latest_ms", "int8"),
    ("first_is_earliest", "bool"),
    ("last_is_latest", "bool"),
    ("wake_at", "text"),
)
_VERDICT_NAMES = [name for name, _ in VERDICT_COLUMNS]
#: A verdict that says no more than a status line: no open call, interrupt, fork, legacy
#: journal, times or wake time (``runs.statuses.index.KeptLines.plain``).
_PLAIN = (
    "tool_use_id = '' AND tool_name = '' AND interrupt_name = '' AND NOT legacy AND fork_of = ''"
    " AND earliest_ms IS NULL AND wake_at IS NULL"
)


def index_schema(names: Names) -> str:
    """The schema the index of the journal ``names`` names lives in."""
    tail = "agenttui" if names.prefix == "bide_" else f"{names.prefix}agenttui"
    schema = f"{names.schema}_{tail}"
    if len(schema.encode()) > MAX_IDENTIFIER:
        raise ConfigError(f"the index's schema name {schema!r} does not fit PostgreSQL's 63-byte names")
    return schema


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
    """Each run the condition may select, or whose status hangs on its lease row or the clock
    (the caller decides those): its run id, root run id and verdict columns, in run id order."""
    pending: list[str]
    """Runs to read from the journal: a change is queued for them, or their verdict is not kept."""
    upto: str | None = None
    """The last run a page covers (read on after it); None where it covers every run after its start."""


@dataclass(frozen=True, slots=True)
class Counted:
    """Runs counted by state in one snapshot (``SharedRunIndex.counts``)."""

    states: dict[str, int]
    """The runs whose status is their verdict's state (no lease row, no wake time), by state."""
    rest: Selected
    """The others: runs whose status hangs on a lease row or the clock, and runs to read."""


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
        self, conn: asyncpg.Connection, sql: _Sql, run_ids: list[str], xids: list[int], watermark: int
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
        self._sql = _Sql(names, self.schema, has_leases=has_leases)

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
        if row["version"] != str(INDEX_VERSION) or row["journal_version"] != str(SCHEMA_VERSION):
            return f"it is of version {row['version']} (this agenttui's: {INDEX_VERSION}): its indexer builds it again"
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
        self, condition: str, args: Sequence[object], *, after: str = "", limit: int | None = None
    ) -> Selected | None:
        """The rows ``condition`` may select (SQL over the columns of ``runs AS r``, its
        parameters ``args`` from ``$1``; a row it leaves NULL is not selected), with every row
        whose status hangs on its lease row or the clock, and the runs to read from the journal,
        in one snapshot; None where readers cannot use the index. The caller decides: the
        condition narrows, the status rules and the filter decide.

        From the run after ``after``, and, with ``limit``, through the ``limit``-th such run only
        (``Selected.upto``: a page, read on from there by keyset)."""

        async def read() -> Selected | None:
            async with self._pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
                if await self._problem(conn):
                    return None
                paged = limit is not None
                rows = await conn.fetch(
                    self._sql.select(condition, len(args) + 1, paged=paged), *args, after, *([limit] if paged else [])
                )
                pending = await conn.fetchval(self._sql.to_read)
            upto = rows[0]["upto"] if rows and paged else None
            queued = [run_id for run_id in pending or [] if run_id > after and (upto is None or run_id <= upto)]
            return Selected([tuple(row)[:-2] for row in rows if row["kept"]], queued, upto)

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
                states = await conn.fetch(self._sql.counts)
                rest = [row for row in await conn.fetch(self._sql.select("false", 1, paged=False), "") if row["kept"]]
                pending = await conn.fetchval(self._sql.to_read)
            return Counted(dict(states), Selected([tuple(row)[:-2] for row in rest], list(pending or [])))

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


def _q(identifier: str) -> str:
    return f'"{identifier}"'


class _Sql:
    """Every statement of one index, built once from its validated names."""

    def __init__(self, names: Names, schema: str, *, has_leases: bool) -> None:
        steps = names.qualified("steps")
        leases = names.qualified("leases")
        q = _q(schema)
        meta, changes, runs, indexer = (f"{q}.{_q(t)}" for t in ("meta", "changes", "runs", "indexer"))
        verdict_ddl = ", ".join(f"{name} pg_catalog.{kind}" for name, kind in VERDICT_COLUMNS)
        note = f"{q}.note_changes"
        truncated = f"{q}.note_truncate"
        note_row = f"{q}.note_row"
        triggers = "\n".join(
            f"CREATE TRIGGER {name} {when.format(steps=steps, note=note, note_row=note_row)};"
            for name, when in TRIGGERS.items()
        )
        self.create = f"""
            CREATE SCHEMA {q};
            CREATE TABLE {meta} (key pg_catalog.text PRIMARY KEY, value pg_catalog.text NOT NULL);
            CREATE TABLE {changes} (
                id pg_catalog.int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                run_id pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
                noted_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now(),
                -- The writer's transaction: a live tail reads the changes past its last snapshot's.
                xid pg_catalog.xid8 NOT NULL DEFAULT pg_catalog.pg_current_xact_id()
            );
            CREATE TABLE {runs} (
                run_id pg_catalog.text COLLATE pg_catalog."C" PRIMARY KEY,
                root_id pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
                xid pg_catalog.xid8,
                count pg_catalog.int8 NOT NULL, last pg_catalog.int8 NOT NULL,
                {verdict_ddl},
                indexed_at pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.now()
            );
            -- A selection by status, and the counts; the runs a lease row may make in flight;
            -- the runs the clock decides.
            CREATE INDEX runs_state ON {runs} (state, run_id);
            CREATE INDEX runs_root ON {runs} (root_id);
            CREATE INDEX runs_waking ON {runs} (run_id) WHERE wake_at IS NOT NULL;
            CREATE INDEX runs_xid ON {runs} (xid);
            CREATE TABLE {indexer} (
                id pg_catalog.int4 PRIMARY KEY CHECK (id = 1),
                holder pg_catalog.text NOT NULL DEFAULT '',
                expiry pg_catalog.timestamptz NOT NULL DEFAULT '-infinity',
                watermark pg_catalog.int8 NOT NULL DEFAULT 0,
                caught_up_at pg_catalog.timestamptz,
                beat_at pg_catalog.timestamptz
            );
            INSERT INTO {indexer} (id) VALUES (1);
            INSERT INTO {meta} (key, value) VALUES
                ('version', '{INDEX_VERSION}'), ('journal_version', '{SCHEMA_VERSION}'),
                ('journal', '{steps}'), ('installed_at', pg_catalog.now()::pg_catalog.text),
                ('installed_by', current_user::pg_catalog.text);
            CREATE FUNCTION {note}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
                SET search_path = pg_catalog, pg_temp AS $agenttui$
            BEGIN
                INSERT INTO {changes} (run_id) SELECT DISTINCT run_id FROM changed_rows;
                RETURN NULL;
            END
            $agenttui$;
            CREATE FUNCTION {note_row}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
                SET search_path = pg_catalog, pg_temp AS $agenttui$
            BEGIN
                INSERT INTO {changes} (run_id) VALUES (NEW.run_id);
                RETURN NULL;
            END
            $agenttui$;
            CREATE FUNCTION {truncated}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER
                SET search_path = pg_catalog, pg_temp AS $agenttui$
            BEGIN
                DELETE FROM {runs};
                DELETE FROM {changes};
                RETURN NULL;
            END
            $agenttui$;
            REVOKE ALL ON FUNCTION {note}(), {note_row}(), {truncated}() FROM PUBLIC;
            {triggers}
            CREATE TRIGGER {TRUNCATE_TRIGGER} AFTER TRUNCATE ON {steps} FOR EACH STATEMENT EXECUTE FUNCTION {truncated}();
        """
        trigger_names = ", ".join(f"'{name}'" for name in [*TRIGGERS, TRUNCATE_TRIGGER])
        self.trigger_count = (
            "SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger"
            f" WHERE tgrelid = pg_catalog.to_regclass('{steps}') AND tgname IN ({trigger_names})"
        )
        drop_triggers = "\n".join(
            f"DROP TRIGGER IF EXISTS {name} ON {steps};" for name in [*TRIGGERS, TRUNCATE_TRIGGER]
        )
        self.drop = f"{drop_triggers}\nDROP SCHEMA IF EXISTS {q} CASCADE;"
        self.schema_exists = f"SELECT EXISTS (SELECT FROM pg_catalog.pg_namespace WHERE nspname = '{schema}')"
        self.usable = f"""
            SELECT ({self.trigger_count} AND tgenabled <> 'D') AS triggers,
                (SELECT value FROM {meta} WHERE key = 'version') AS version,
                (SELECT value FROM {meta} WHERE key = 'journal_version') AS journal_version,
                (SELECT caught_up_at FROM {indexer}) AS caught_up
        """
        self.rights = f"""
            SELECT current_user::pg_catalog.text AS role,
                pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE') AS create,
                pg_catalog.has_table_privilege('{steps}', 'TRIGGER') AS trigger
        """
        # Every role that may read the journal may read its index (the owner reads it anyway).
        self.readers = f"""
            SELECT COALESCE(pg_catalog.array_agg(DISTINCT
                CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname::pg_catalog.text END), '{{}}')
            FROM pg_catalog.pg_class AS c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) AS a
            LEFT JOIN pg_catalog.pg_roles AS r ON r.oid = a.grantee
            WHERE c.oid = '{steps}'::pg_catalog.regclass AND a.privilege_type = 'SELECT'
        """
        self._grant = f"GRANT USAGE ON SCHEMA {q} TO {{role}}; GRANT SELECT ON ALL TABLES IN SCHEMA {q} TO {{role}};"
        self.queue_every_run = f"INSERT INTO {changes} (run_id) SELECT DISTINCT run_id FROM {steps}"
        self.rebuild = f"""
            DELETE FROM {runs};
            DELETE FROM {changes};
            UPDATE {meta} SET value = '{INDEX_VERSION}' WHERE key = 'version';
            UPDATE {meta} SET value = '{SCHEMA_VERSION}' WHERE key = 'journal_version';
            UPDATE {indexer} SET caught_up_at = NULL;
        """
        self.state = f"""
            SELECT (SELECT value FROM {meta} WHERE key = 'version')::pg_catalog.int4 AS version,
                (SELECT pg_catalog.count(*) FROM {runs}) AS runs,
                (SELECT pg_catalog.count(*) FROM {changes}) AS pending,
                (SELECT pg_catalog.count(DISTINCT run_id) FROM {changes}) AS pending_runs,
                (SELECT extract(epoch FROM pg_catalog.now() - pg_catalog.min(noted_at))::pg_catalog.float8
                 FROM {changes}) AS oldest_pending_seconds,
                i.watermark,
                extract(epoch FROM pg_catalog.now() - i.caught_up_at)::pg_catalog.float8 AS caught_up_seconds,
                i.holder,
                CASE WHEN i.holder <> '' THEN extract(epoch FROM i.expiry - pg_catalog.now())::pg_catalog.float8
                END AS lease_seconds,
                extract(epoch FROM pg_catalog.now() - i.beat_at)::pg_catalog.float8 AS beat_seconds,
                (SELECT COALESCE(pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid)), 0)::pg_catalog.int8
                 FROM pg_catalog.pg_class AS c JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
                 WHERE n.nspname = '{schema}' AND c.relkind = 'r') AS index_bytes,
                pg_catalog.pg_total_relation_size('{steps}') AS journal_bytes
            FROM {indexer} AS i
        """
        self.take_lease = f"""
            UPDATE {indexer} SET holder = $1,
                expiry = pg_catalog.now() + $2::pg_catalog.float8 * interval '1 second', beat_at = pg_catalog.now()
            WHERE holder = $1 OR holder = '' OR expiry < pg_catalog.now() RETURNING true
        """
        self.release_lease = f"UPDATE {indexer} SET holder = '', expiry = '-infinity' WHERE holder = $1"
        self.hold = f"SELECT true FROM {indexer} WHERE holder = $1 AND expiry >= pg_catalog.now() FOR UPDATE"
        self.hold_renewing = f"""
            UPDATE {indexer} SET expiry = pg_catalog.now() + $2::pg_catalog.float8 * interval '1 second',
                beat_at = pg_catalog.now()
            WHERE holder = $1 AND expiry >= pg_catalog.now() RETURNING true
        """
        self.claim = f"""
            WITH taken AS (
                DELETE FROM {changes} WHERE id IN (
                    SELECT id FROM {changes} ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED
                ) RETURNING id, run_id, xid
            ), runs AS (SELECT run_id, pg_catalog.max(xid) AS xid FROM taken GROUP BY run_id)
            SELECT (SELECT pg_catalog.array_agg(run_id ORDER BY run_id) FROM runs) AS run_ids,
                (SELECT pg_catalog.array_agg(xid ORDER BY run_id) FROM runs) AS xids,
                (SELECT pg_catalog.max(id) FROM taken) AS watermark
        """
        self.worked = f"""
            UPDATE {indexer} SET watermark = GREATEST(watermark, COALESCE($1::pg_catalog.int8, 0)),
                caught_up_at = CASE WHEN $2::pg_catalog.bool THEN pg_catalog.now() ELSE caught_up_at END
        """
        columns = ", ".join(["run_id", "root_id", "xid", "count", "last", *_VERDICT_NAMES])
        placeholders = ", ".join(
            ["$1", "$2", "$3::pg_catalog.xid8", *(f"${at}" for at in range(4, 6 + len(VERDICT_COLUMNS)))]
        )
        updates = ", ".join(
            f"{name} = EXCLUDED.{name}" for name in ["root_id", "xid", "count", "last", *_VERDICT_NAMES]
        )
        self.upsert = (
            f"INSERT INTO {runs} ({columns}) VALUES ({placeholders}) ON CONFLICT (run_id) DO UPDATE SET {updates},"
            " indexed_at = pg_catalog.now()"
        )
        leases_now = (
            f""",
                ARRAY(SELECT run_id FROM {leases} ORDER BY run_id) AS leased,
                ARRAY(SELECT holder FROM {leases} ORDER BY run_id) AS holders,
                ARRAY(SELECT expiry >= pg_catalog.now() FROM {leases} ORDER BY run_id) AS live"""
            if has_leases
            else ", NULL AS leased, NULL AS holders, NULL AS live"
        )
        self.changed_since = f"""
            SELECT pg_catalog.pg_snapshot_xmin(pg_catalog.pg_current_snapshot()) AS mark,
                ARRAY(SELECT run_id FROM {changes} WHERE xid >= $1::pg_catalog.xid8
                      UNION SELECT run_id FROM {runs} WHERE xid >= $1::pg_catalog.xid8) AS runs{leases_now}
        """
        self.runs_under = f"SELECT run_id FROM {runs} WHERE root_id = ANY($1::pg_catalog.text[])"
        self.drop_runs = f"DELETE FROM {runs} WHERE run_id = ANY($1::pg_catalog.text[])"
        self.requeue = f"INSERT INTO {changes} (run_id) SELECT pg_catalog.unnest($1::pg_catalog.text[])"
        # As one array a column: asyncpg decodes an array in C (a row a run cost the client a
        # tenth of a second of 100,000 runs). The subquery's order is the primary key's.
        aggregated = ", ".join(
            f"pg_catalog.array_agg({column})" for column in ["run_id", "count", "last", *_VERDICT_NAMES]
        )
        self.lines = (
            f"SELECT {aggregated}, pg_catalog.array_agg(COALESCE({_PLAIN}, false)::pg_catalog.int4)"
            f' FROM (SELECT * FROM {runs} ORDER BY run_id COLLATE "C") AS r'
        )
        self.pending_runs = f"""
            SELECT pg_catalog.array_agg(c.run_id ORDER BY c.run_id) FILTER (WHERE c.held),
                pg_catalog.array_agg(c.run_id) FILTER (WHERE NOT c.held)
            FROM (SELECT q.run_id, EXISTS (SELECT FROM {steps} AS s WHERE s.run_id = q.run_id) AS held
                  FROM (SELECT DISTINCT run_id FROM {changes}) AS q) AS c
        """
        selected = ", ".join(["r.run_id", *(f"r.{name}" for name in _VERDICT_NAMES)])
        self.rows = (
            f"SELECT {selected} FROM {runs} AS r WHERE r.run_id = ANY($1::pg_catalog.text[]) AND r.state IS NOT NULL"
            f" AND NOT EXISTS (SELECT FROM {changes} AS c WHERE c.run_id = r.run_id)"
        )

        selected_columns = ", ".join(["r.run_id", "r.root_id", *(f"r.{name}" for name in _VERDICT_NAMES)])
        unqueued = f"NOT EXISTS (SELECT FROM {changes} AS c WHERE c.run_id = r.run_id)"
        unleased = (
            f'NOT EXISTS (SELECT FROM {leases} AS l WHERE l.run_id COLLATE "C" = r.root_id)' if has_leases else "true"
        )
        self._selected_columns = selected_columns
        self._unqueued = unqueued
        self._branches = (
            f"SELECT r.run_id FROM {runs} AS r WHERE r.state IS NOT NULL AND ({{condition}})",
            f"SELECT r.run_id FROM {runs} AS r WHERE r.wake_at IS NOT NULL",
            *([f'SELECT r.run_id FROM {leases} AS l JOIN {runs} AS r ON r.root_id = l.run_id COLLATE "C" WHERE true']
              if has_leases else []),
        )  # fmt: skip
        self._runs = runs
        self.counts = (
            f"SELECT r.state, pg_catalog.count(*) FROM {runs} AS r WHERE r.state IS NOT NULL AND r.wake_at IS NULL"
            f" AND {unleased} AND {unqueued} GROUP BY r.state"
        )
        self.to_read = f"""
            SELECT pg_catalog.array_agg(run_id ORDER BY run_id) FROM (
                SELECT q.run_id FROM (SELECT DISTINCT run_id FROM {changes}) AS q
                WHERE EXISTS (SELECT FROM {steps} AS s WHERE s.run_id = q.run_id)
                UNION SELECT run_id FROM {runs} WHERE state IS NULL
            ) AS queued
        """

    def select(self, condition: str, after: int, *, paged: bool) -> str:
        """The runs ``condition`` may select past the run id ``$<after>``, with those the lease
        rows and the clock decide (each part by its own index: an ``OR`` of them would read every
        row); ``paged``, the first ``$<after + 1>`` of them only, each part ordered and cut by
        itself (so each reads its index from ``after`` on, no further), and with each row the
        last run the page covers (``upto``)."""
        limit = f" ORDER BY r.run_id LIMIT ${after + 1}" if paged else ""
        parts = " UNION ".join(
            f"({branch.format(condition=condition)} AND r.run_id > ${after}{limit})" for branch in self._branches
        )
        bounded = (
            f"SELECT run_id FROM chosen ORDER BY run_id LIMIT ${after + 1}" if paged else "SELECT run_id FROM chosen"
        )
        upto = f"(SELECT CASE WHEN count(*) = ${after + 1} THEN max(run_id) END FROM bounded)" if paged else "NULL"
        # Every run of the page comes back, and says whether it is to be read from its row
        # (``kept``): a page whose runs are all queued still says where it ends.
        return (
            f"WITH chosen AS ({parts}), bounded AS ({bounded})"
            f" SELECT {self._selected_columns}, r.state IS NOT NULL AND {self._unqueued} AS kept, {upto} AS upto"
            f" FROM bounded JOIN {self._runs} AS r ON r.run_id = bounded.run_id ORDER BY r.run_id"
        )

    def grant_to(self, role: str) -> str:
        return self._grant.format(role=role if role == "PUBLIC" else _q(role.replace('"', '""')))
