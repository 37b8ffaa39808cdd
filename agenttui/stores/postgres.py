"""PostgresStore: the shared journal store on PostgreSQL, in the Bide SDK's newest (P5) layout.

Tables, in one schema (``journal-format.md`` section 4.2)::

    <prefix>steps           run_id text COLLATE "C", seq int8, name text, data bytea;
                            PRIMARY KEY (run_id, name), UNIQUE (run_id, seq)
    <prefix>leases          run_id text PRIMARY KEY, holder text, expiry timestamptz;
                            indexes <prefix>leases_expiry (expiry), <prefix>leases_run_c (run_id COLLATE "C")
    <prefix>schema_version  id int PRIMARY KEY CHECK (id = 1), version int; row (1, 1)
    <prefix>next_seq_v1(r text) -> int8   the run's next seq, under a per-run advisory lock

``seq`` is per run (0, 1, 2, ...): ``next_seq`` holds a transaction-scoped advisory lock on the
run until the insert commits, so one run's inserts commit one at a time and in ``seq`` order (A2).
Its source is byte for byte the SDK's, which Go nodes check before they write to a schema.

The schema is the one given (``schema=`` or ``?schema=``, created if missing) or, unpinned, the
first schema on the search path that holds the tables, else ``current_schema()``, as the SDK
finds it. Every statement names it, so nothing resolves through the search path after ``open``.

Live tail: every insert that wins also sends ``NOTIFY`` in the same statement, so listeners hear
of it only once it has committed. The channel is ``<schema>.<prefix>steps`` (``public.bide_steps``
by default), which keeps two schemas in one database apart, and is the same for every handle
onto the same tables. A name longer than PostgreSQL's 63-byte limit becomes
``steps_<40 hex of its SHA-256>``. The payload is the run id, cut at a character boundary to at
most ``NOTIFY_PAYLOAD_LIMIT`` bytes (the server refuses payloads of 8,000 bytes or more); a
payload that long may be a prefix of the run id.

Read-only handles run every session with ``default_transaction_read_only = on`` and never issue
DDL. They also read the legacy ``steps`` table (P1/P2: jsonb ``data``, per-run ``seq``) of a
database that has no ``bide_`` tables: ``layout`` is then ``"legacy"``, entries come back as
PostgreSQL's normalised JSON text, and there are no leases.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import hashlib
import os
import random
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypeVar
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import asyncpg

from agenttui.errors import (
    AgentTuiError,
    ConfigError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreConnectionError,
    StoreError,
    StoreURLError,
)
from agenttui.stores.base import (
    LIST_PAGE_SIZE,
    LOAD_PAGE_SIZE,
    Entry,
    Inserted,
    LeaseInfo,
    Store,
    prefix_end,
)

T = TypeVar("T")

#: The newest schema version this module reads and writes.
SCHEMA_VERSION = 1
#: The key of the advisory lock every migration runs under: "bide" in ASCII, as the SDK uses.
MIGRATION_LOCK = 0x62696465
#: Upper bound on a notification payload in bytes; the server's own limit is just under 8,000.
NOTIFY_PAYLOAD_LIMIT = 7000
#: Connections per store handle: enough for the 16-way concurrent insert benchmark to keep the
#: server busy without one handle starving others of the server's ``max_connections``.
POOL_SIZE = 10
#: Seconds to wait for a connection to the server before reporting it unreachable.
CONNECT_TIMEOUT = 10.0
#: Seconds ``close`` waits for in-flight queries before cutting the connections.
CLOSE_TIMEOUT = 10.0
#: The pause before a statement's second attempt is under 1 ms; each failure doubles the ceiling
#: of the next random pause, up to 100 ms, so contending writers spread out (as the SDK does).
BACKOFF_BASE = 0.001
BACKOFF_CAP = 0.1

_PREFIX_RE = re.compile(r"^[a-z_][a-z0-9_]*$")
_SCHEMA_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: PostgreSQL silently truncates longer identifiers, which would make two names collide.
_MAX_IDENTIFIER = 63
#: The longest suffix put after the table prefix (``<prefix>schema_version``).
_LONGEST_SUFFIX = len("schema_version")

#: Serialization failure and deadlock: the server rolled the statement back; trying again is safe.
#: (Under a deployment's default of repeatable read or serializable even a read can fail so.)
_TRANSIENT = (asyncpg.SerializationError, asyncpg.DeadlockDetectedError)
#: For inserts also a unique violation, which can only be on (run_id, seq): two inserts read the
#: same MAX(seq) (at repeatable read or serializable, or beside a writer that skips ``next_seq``);
#: the second waited for the first to commit, so its retry takes the next seq.
_TRANSIENT_INSERT = (*_TRANSIENT, asyncpg.UniqueViolationError)

#: ``next_seq``'s body, byte for byte the SDK's: its ``Open`` refuses a function with any other
#: source, so a schema this module creates stays writable by Go nodes. Every name is qualified.
_NEXT_SEQ_BODY = (
    "\nBEGIN\n"
    "\tPERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(r, 0::pg_catalog.int8));\n"
    "\tRETURN (SELECT COALESCE(pg_catalog.max(seq), OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.+) 1\n"
    "\t\tFROM {steps} WHERE run_id OPERATOR(pg_catalog.=) r);\n"
    "END\n"
)
#: The one setting ``next_seq`` runs with, as ``pg_proc.proconfig`` holds it.
_NEXT_SEQ_CONFIG = "search_path=pg_catalog, pg_temp"

#: Errors that mean the server is down, going down, or unreachable, rather than a bad statement.
_UNREACHABLE = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
)

Layout = Literal["current", "legacy"]


@dataclass(frozen=True, slots=True)
class _Target:
    """What a DSN names, for messages and ``display_url``; asyncpg resolves the real connection."""

    user: str
    password: str | None
    host: str
    port: int
    database: str
    query: tuple[tuple[str, str], ...]
    """Query parameters other than ``password`` and ``schema``, passed on unchanged."""

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def clean(self, text: str) -> str:
        """``text`` on one line, with the password masked wherever it appears (raw or URL-encoded)."""
        if self.password:
            for form in {self.password, quote(self.password, safe="")}:
                text = text.replace(form, "***")
        return " ".join(text.split())


#: Query parameters of a store URL that are agenttui's, never sent to the server.
_OWN_PARAMETERS = ("schema", "notify")


class _ParsedDSN(NamedTuple):
    driver_dsn: str
    """The URL asyncpg gets: agenttui's own parameters removed."""
    target: _Target
    schema: str | None
    """``?schema=``."""
    notify: bool | None
    """``?notify=on|off``, or None when the URL does not say."""


def _parse_dsn(dsn: str) -> _ParsedDSN:
    """Split a ``postgresql://`` URL into what asyncpg gets, what messages show, and our options.

    Defaults follow libpq's environment variables so messages name the server asyncpg will reach.
    """
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError as exc:
        raise StoreURLError(f"not a PostgreSQL URL: {exc}") from None
    if parts.scheme not in ("postgres", "postgresql"):
        raise StoreURLError(f"not a PostgreSQL URL (expected postgresql://...): scheme {parts.scheme!r}")
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in params if key == "schema"), None)
    notify = next((value for key, value in params if key == "notify"), None)
    if notify is not None and notify.lower() not in ("on", "off"):
        raise StoreURLError(f"?notify= takes on or off, not {notify!r}")
    password = unquote(parts.password) if parts.password is not None else None
    password = next((value for key, value in params if key == "password"), password)
    query = tuple((key, value) for key, value in params if key not in (*_OWN_PARAMETERS, "password"))
    query_host = next((value for key, value in query if key == "host"), None)
    user = unquote(parts.username or "") or os.environ.get("PGUSER") or getpass.getuser()
    target = _Target(
        user=user,
        password=password,
        host=parts.hostname or query_host or os.environ.get("PGHOST") or "localhost",
        port=port or _env_port(),
        database=unquote(parts.path.lstrip("/")) or os.environ.get("PGDATABASE") or user,
        query=query,
    )
    # asyncpg would send unknown parameters to the server as settings; drop ours.
    driver_dsn = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in params if k not in _OWN_PARAMETERS])))
    return _ParsedDSN(driver_dsn, target, schema, None if notify is None else notify.lower() == "on")


def _env_port() -> int:
    """libpq's default port: ``PGPORT`` when it is a number, else 5432."""
    port = os.environ.get("PGPORT", "")
    return int(port) if port.isdigit() else 5432


def _check_names(schema: str | None, table_prefix: str) -> None:
    """Refuse identifiers that could not be quoted safely or would be truncated by the server."""
    if not _PREFIX_RE.match(table_prefix):
        raise ConfigError(f"table prefix {table_prefix!r} must match {_PREFIX_RE.pattern}")
    if len(table_prefix) + _LONGEST_SUFFIX > _MAX_IDENTIFIER:
        raise ConfigError(f"table prefix {table_prefix!r} is too long for PostgreSQL's 63-byte names")
    if schema is None:
        return
    if not _SCHEMA_RE.match(schema) or len(schema) > _MAX_IDENTIFIER:
        raise ConfigError(f"schema {schema!r} must match {_SCHEMA_RE.pattern} and fit in 63 bytes")
    if schema == "information_schema" or schema.startswith("pg_"):
        raise ConfigError(f"schema {schema!r} is a system schema")


def _channel_name(schema: str, table_prefix: str) -> str:
    full = f"{schema}.{table_prefix}steps"
    if len(full.encode()) <= _MAX_IDENTIFIER:
        return full
    return "steps_" + hashlib.sha256(full.encode()).hexdigest()[:40]


def _notify_payload(run_id: str) -> str:
    """The run id, cut at a character boundary to at most ``NOTIFY_PAYLOAD_LIMIT`` bytes."""
    encoded = run_id.encode()
    if len(encoded) <= NOTIFY_PAYLOAD_LIMIT:
        return run_id
    return encoded[:NOTIFY_PAYLOAD_LIMIT].decode(errors="ignore")


def _utf8_prefix_end(prefix: str) -> str | None:
    """``prefix_end``, stepping over the surrogates (U+D800-U+DFFF), which UTF-8 cannot hold."""
    end = prefix_end(prefix)
    if end is not None and end[-1] == "\ud800":
        end = end[:-1] + "\ue000"
    return end


def _q(identifier: str) -> str:
    """Quote an identifier ``_check_names`` vouched for (so it holds no quote to escape)."""
    return f'"{identifier}"'


@dataclass(frozen=True, slots=True)
class _Names:
    """The names of one store's objects: ``bare`` as the catalog spells them, ``qualified`` for SQL."""

    schema: str
    prefix: str

    def bare(self, suffix: str) -> str:
        return self.prefix + suffix

    def qualified(self, suffix: str) -> str:
        return f"{_q(self.schema)}.{_q(self.prefix + suffix)}"

    def next_seq_body(self) -> str:
        # Spelled as the SDK spells the table in it (schema quoted, table bare), for equal source.
        return _NEXT_SEQ_BODY.format(steps=f"{_q(self.schema)}.{self.bare('steps')}")


class PostgresStore(Store):
    """A journal store in a PostgreSQL schema, shared by any number of processes and hosts.

    Open it with ``PostgresStore.open``. Every method runs on the event loop that opened it (an
    asyncpg pool belongs to its loop) and raises only ``agenttui.errors`` exceptions: a failure
    to reach the server is a ``StoreConnectionError`` whose message never holds the password.
    """

    IMPLEMENTS_LISTING = True
    IMPLEMENTS_LEASES = True
    IMPLEMENTS_NOTIFICATIONS = True
    """True: ``notifications`` yields the id of each run that gains an entry (live tail)."""

    layout: Layout = "current"
    """``"current"`` for the ``bide_`` tables, ``"legacy"`` for a P1/P2 ``steps`` table (read-only)."""
    schema: str
    """The schema the tables live in (the one given, or the search path's first when none was)."""
    channel: str
    """The ``LISTEN``/``NOTIFY`` channel of this store's tables (see the module docstring)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        target: _Target,
        connect_kwargs: dict[str, object],
        schema: str,
        schema_given: bool,
        table_prefix: str,
        read_only: bool,
        layout: Layout,
        has_leases: bool,
        notify: bool,
    ) -> None:
        """Use ``PostgresStore.open``; this only assembles what it found."""
        self.read_only = read_only
        self.layout = layout
        self.schema = schema
        self.channel = _channel_name(schema, table_prefix)
        self._pool = pool
        self._target = target
        self._connect_kwargs = connect_kwargs
        self._schema_given = schema_given
        self._notify = notify
        self._has_leases = has_leases
        self._tails: set[Notifications] = set()
        self._closed = False
        self._sql = _Statements(_Names(schema, table_prefix), layout=layout, notify=notify)

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
    ) -> PostgresStore:
        """Connect to ``dsn`` (a ``postgresql://`` URL) and make sure the journal tables are there.

        ``schema``: the schema holding the tables (also accepted as ``?schema=`` in the URL); by
        default the first schema of the search path. A writable open creates the schema and any
        missing table, index or function in one transaction, and never alters existing ones
        (``create=False``: only for a journal that is there already; no schema or journal table
        is ever created); a read-only open changes nothing. ``notify=False`` (or ``?notify=off`` in
        the URL) skips the ``NOTIFY`` per insert: each notifying commit takes a database-wide
        lock, so heavy writers with no live viewers may prefer to; viewers then fall back to
        polling, as for Go writers.

        Raises ``ConfigError`` for a bad schema or prefix name, ``StoreURLError`` for a URL that
        is not PostgreSQL's, ``StoreConnectionError`` when the server cannot be reached or
        refuses the login, and ``SchemaVersionError`` when the schema is newer than version 1,
        holds only a legacy ``steps`` table and the open is writable, or (read-only) holds no
        journal at all.
        """
        driver_dsn, target, url_schema, url_notify = _parse_dsn(dsn)
        schema = schema if schema is not None else url_schema
        notify = notify if notify is not None else url_notify is not False
        _check_names(schema, table_prefix)
        settings = {"application_name": "agenttui"}
        if read_only:
            settings["default_transaction_read_only"] = "on"
        connect_kwargs: dict[str, object] = {
            "dsn": driver_dsn,
            "server_settings": settings,
            "timeout": CONNECT_TIMEOUT,
        }
        with _translated(target):
            # No per-release reset: the store keeps no session state (its advisory locks are
            # transaction-scoped and LISTEN has its own connection), and the default reset
            # costs a round trip on every statement.
            pool = await asyncpg.create_pool(min_size=1, max_size=POOL_SIZE, reset=_no_reset, **connect_kwargs)
        try:
            with _translated(target):
                async with pool.acquire() as conn:
                    found = await _prepare_schema(conn, schema, table_prefix, read_only=read_only, create=create)
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
        )

    @property
    def display_url(self) -> str:
        t = self._target
        userinfo = quote(t.user, safe="") + (":***" if t.password else "")
        query = list(t.query) + ([("schema", self.schema)] if self._schema_given else [])
        query += [("notify", "off")] if not (self._notify or self.read_only) else []
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
            args = (run_id, name, data, self.channel, _notify_payload(run_id))[: sql.insert_args]
            async with self._pool.acquire() as conn:
                seq = await conn.fetchval(sql.insert, *args)
                if seq is not None:
                    return Inserted(Entry(seq, name, data), won=True)
                row = await conn.fetchrow(sql.get, run_id, name)
            if row is None:  # A6 rules this out; it means someone deleted the row under us.
                raise StoreError(f"step {name!r} of run {run_id!r} conflicted but then was not there")
            return Inserted(Entry(row["seq"], name, row["data"]), won=False)

        return await self._retrying(attempt, _TRANSIENT_INSERT)

    async def get(self, run_id: str, name: str) -> Entry | None:
        row = await self._retrying(lambda: self._pool.fetchrow(self._sql.get, run_id, name))
        return None if row is None else Entry(row["seq"], name, _as_bytes(row["data"]))

    async def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        """Entries with ``seq > after`` in ``seq`` order, a page of ``LOAD_PAGE_SIZE`` per query.

        Each page is fetched whole and its connection returned to the pool before the first
        entry is yielded (A8).
        """
        while True:
            page = await self._retrying(lambda: self._pool.fetch(self._sql.load, run_id, after, LOAD_PAGE_SIZE))
            for row in page:
                yield Entry(row["seq"], row["name"], _as_bytes(row["data"]))
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
            page = await self._retrying(lambda: self._pool.fetch(sql, after, *filters))
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
        if not self._has_leases:
            return None
        row = await self._retrying(lambda: self._pool.fetchrow(self._sql.get_lease, run_id))
        return None if row is None else LeaseInfo(run_id, row["holder"], row["expires_in"])

    # -- live tail --------------------------------------------------------------------------------

    async def notifications(self) -> Notifications:
        """Start listening: the returned iterator yields the id of each run that gains an entry.

        The ``LISTEN`` is in place when this returns, so a viewer that calls it before its first
        ``load`` misses nothing. The iterator holds one dedicated connection until it is closed
        (``aclose``, ``async with``, or closing the store). Raises ``StoreConnectionError`` when
        the server cannot be reached.
        """
        with self._translated():
            conn = await asyncpg.connect(**self._connect_kwargs)  # type: ignore[arg-type]
            tail = await Notifications.listen(conn, self.channel, self._target, forget=self._tails.discard)
        self._tails.add(tail)
        return tail

    # -- internals --------------------------------------------------------------------------------

    def _translated(self) -> contextlib.AbstractContextManager[None]:
        return _translated(self._target)

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


class Notifications:
    """Ids of runs whose inserts committed, heard on one ``LISTEN`` connection (live tail).

    Ids heard while the consumer is busy are coalesced: each pending run is yielded once, in the
    order first heard, so a burst of inserts costs the consumer one wake-up per run. A payload of
    ``NOTIFY_PAYLOAD_LIMIT`` bytes may be a prefix of a longer run id. Iteration ends when the
    iterator or its store is closed, and raises ``StoreConnectionError`` if the connection is lost.
    """

    def __init__(self, conn: asyncpg.Connection, target: _Target, *, forget: Callable[[Notifications], None]) -> None:
        """Use ``PostgresStore.notifications``."""
        self._conn = conn
        self._target = target
        self._forget = forget
        self._pending: dict[str, None] = {}
        self._wake = asyncio.Event()
        self._closing = False
        conn.add_termination_listener(self._lost)

    @classmethod
    async def listen(
        cls, conn: asyncpg.Connection, channel: str, target: _Target, *, forget: Callable[[Notifications], None]
    ) -> Notifications:
        """``LISTEN`` on ``conn``, which the result then owns (and closes, even if this fails)."""
        tail = cls(conn, target, forget=forget)
        try:
            await conn.add_listener(channel, tail._heard)
        except BaseException:
            tail.terminate()
            raise
        return tail

    def __aiter__(self) -> Notifications:
        return self

    async def __anext__(self) -> str:
        while not self._closing:
            if self._pending:
                run_id = next(iter(self._pending))
                del self._pending[run_id]
                return run_id
            if self._conn.is_closed():
                raise StoreConnectionError(f"lost the notification connection to PostgreSQL at {self._target.address}")
            self._wake.clear()
            await self._wake.wait()
        raise StopAsyncIteration

    def terminate(self) -> None:
        """Stop listening at once, cutting the connection (the store's ``close`` does this)."""
        self._closing = True
        self._forget(self)
        self._conn.terminate()
        self._wake.set()

    async def aclose(self) -> None:
        """Stop listening and release the connection. Safe to call twice."""
        self._closing = True
        self._forget(self)
        if not self._conn.is_closed():
            try:
                await asyncio.wait_for(self._conn.close(), CLOSE_TIMEOUT)
            except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                # Its server is gone or stuck; there is nothing left to release but the socket.
                self._conn.terminate()
        self._wake.set()

    async def __aenter__(self) -> Notifications:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def _heard(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self._pending[payload] = None
        self._wake.set()

    def _lost(self, _conn: object) -> None:
        self._wake.set()


async def _no_reset(_conn: asyncpg.Connection) -> None:
    """Pool connections need no reset between uses (see ``PostgresStore.open``)."""


def _as_bytes(data: bytes | str) -> bytes:
    """Entry bytes: bytea as stored, or (legacy jsonb, read as text) the normalised JSON encoded."""
    return data.encode() if isinstance(data, str) else data


@contextlib.contextmanager
def _translated(target: _Target) -> Iterator[None]:
    """Turn driver exceptions into ``agenttui.errors``, with the password scrubbed from the text."""
    try:
        yield
    except AgentTuiError:
        raise
    except asyncpg.InvalidPasswordError:
        raise StoreConnectionError(
            f"password authentication failed for user {target.user} at {target.address}"
        ) from None
    except asyncpg.InvalidAuthorizationSpecificationError as exc:
        raise StoreConnectionError(
            f"PostgreSQL at {target.address} refused user {target.user}: {target.clean(str(exc))}"
        ) from None
    except asyncpg.InvalidCatalogNameError:
        raise StoreConnectionError(f"database {target.database} does not exist at {target.address}") from None
    except asyncpg.ReadOnlySQLTransactionError as exc:
        raise ReadOnlyStoreError(f"PostgreSQL at {target.address} is read-only: {target.clean(str(exc))}") from None
    except _UNREACHABLE as exc:
        reason = target.clean(str(exc)) or type(exc).__name__
        raise StoreConnectionError(f"cannot reach PostgreSQL at {target.address}: {reason}") from None
    except asyncpg.PostgresError as exc:
        raise StoreError(f"PostgreSQL error {exc.sqlstate}: {target.clean(str(exc))}") from None
    except asyncpg.ClientConfigurationError as exc:
        raise StoreURLError(f"bad PostgreSQL connection setting: {target.clean(str(exc))}") from None
    except (asyncpg.InterfaceError, asyncpg.InternalClientError) as exc:
        raise StoreError(f"PostgreSQL driver error: {target.clean(str(exc))}") from None
    except UnicodeEncodeError as exc:
        raise StoreError(f"text PostgreSQL cannot hold (not valid Unicode): {exc.reason}") from None


# -- schema -----------------------------------------------------------------------------------------


async def _prepare_schema(
    conn: asyncpg.Connection, schema: str | None, table_prefix: str, *, read_only: bool, create: bool = True
) -> tuple[str, Layout, bool]:
    """Find (and, writable, create) the journal tables; return the schema, layout, and leases flag."""
    if schema is None:
        schema = await _discover_schema(conn, table_prefix, read_only=read_only)
    names = _Names(schema, table_prefix)
    if read_only:
        found = await _Catalog.read(conn, names)
        if found.has(names.bare("steps")):
            await _check_version(conn, names, found)
            return schema, "current", found.has(names.bare("leases"))
        if found.legacy:
            return schema, "legacy", False
        raise SchemaVersionError(
            f"schema {schema} holds no journal: neither {names.bare('steps')} nor a legacy steps table"
        )
    async with conn.transaction(isolation="read_committed"):
        # Set before the lock is taken: a client stopped inside the migration must not hold it.
        await conn.execute("SET LOCAL idle_in_transaction_session_timeout = '5s'")
        await conn.execute(f"SELECT pg_catalog.pg_advisory_xact_lock({MIGRATION_LOCK})")
        found = await _Catalog.read(conn, names)
        if not found.has(names.bare("steps")) and found.legacy:
            raise SchemaVersionError(
                f"schema {schema} holds a legacy steps table (a pre-v0.7 journal); open it read-only"
            )
        if not found.has(names.bare("steps")) and not create:
            raise SchemaVersionError(f"schema {schema} holds no journal ({names.bare('steps')}): nothing was written")
        if not found.complete(names):
            # Only when something is missing: CREATE ... IF NOT EXISTS still needs the CREATE
            # privilege, which a deployed role that only writes rows may lack.
            await conn.execute(_ddl(names, create_schema=not found.schema_exists))
            if found.next_seq_ok is None:
                await conn.execute(_next_seq_ddl(names))
            found = await _Catalog.read(conn, names)
        if not found.next_seq_ok:
            # Never replaced: nodes of another version may be calling it.
            raise SchemaVersionError(
                f"function {schema}.{names.bare('next_seq_v1')}(text) is not the one the Bide SDK and agenttui "
                "create (VOLATILE plpgsql, SET search_path = pg_catalog, pg_temp, the same body, owned by "
                f"the owner of {names.bare('steps')}); inserts depend on it, so this schema is refused"
            )
        await _check_version(conn, names, found)
    return schema, "current", True


async def _discover_schema(conn: asyncpg.Connection, table_prefix: str, *, read_only: bool) -> str:
    """The schema an unpinned store uses, as the SDK finds it.

    The first schema on the search path holding ``<prefix>steps`` (for a reader, else one holding
    a legacy ``steps``), or else ``current_schema()``, where a writable open creates the tables.
    """
    wanted = [table_prefix + "steps", "steps"] if read_only else [table_prefix + "steps"]
    schema = await conn.fetchval(
        """
        SELECT COALESCE(
            (SELECT n.nspname FROM pg_catalog.pg_class AS c
             JOIN pg_catalog.pg_namespace AS n ON n.oid = c.relnamespace
             WHERE c.relname = ANY($1::pg_catalog.text[]) AND c.relkind IN ('r', 'p')
               AND n.nspname = ANY(pg_catalog.current_schemas(false))
             ORDER BY pg_catalog.array_position($1::pg_catalog.text[], c.relname::pg_catalog.text),
                      pg_catalog.array_position(pg_catalog.current_schemas(false), n.nspname)
             LIMIT 1),
            pg_catalog.current_schema())
        """,
        wanted,
    )
    if schema is None:
        raise ConfigError("no schema on the search path exists; pass schema= to name one")
    _check_names(schema, table_prefix)  # it goes into SQL text like a given one
    return schema


async def _check_version(conn: asyncpg.Connection, names: _Names, found: _Catalog) -> None:
    """Refuse a schema version this module does not know; a P3 schema (no version table) is version 1."""
    if not found.has(names.bare("schema_version")):
        return
    version = await conn.fetchval(f"SELECT max(version) FROM {names.qualified('schema_version')}")
    if version is None:
        raise SchemaVersionError(f"{names.bare('schema_version')} in schema {names.schema} has no version row")
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"schema {names.schema} is at journal schema version {version}; agenttui reads version {SCHEMA_VERSION}"
        )


@dataclass(frozen=True, slots=True)
class _Catalog:
    """What one schema holds, read from the system catalogs with the statement's snapshot."""

    schema_exists: bool
    relations: frozenset[str]
    next_seq_ok: bool | None
    """None when there is no ``next_seq(text)``; else whether it is exactly the SDK's."""
    legacy: bool
    """A ``steps`` table with ``run_id``, ``seq``, ``name`` and jsonb ``data`` (P1/P2)."""

    _QUERY = """
        SELECT n.oid IS NOT NULL AS schema_exists,
               ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class AS c
                     WHERE c.relnamespace = n.oid AND c.relname = ANY($2::text[])) AS relations,
               (SELECT l.lanname = 'plpgsql' AND p.provolatile = 'v' AND NOT p.prosecdef AND NOT p.proretset
                       AND p.proconfig = $4::pg_catalog.text[] AND p.prosrc = $5
                       AND p.prorettype = 'pg_catalog.int8'::pg_catalog.regtype
                       AND p.proowner IS NOT DISTINCT FROM (SELECT c.relowner FROM pg_catalog.pg_class AS c
                                                            WHERE c.relnamespace = n.oid AND c.relname = $2[1])
                FROM pg_catalog.pg_proc AS p JOIN pg_catalog.pg_language AS l ON l.oid = p.prolang
                WHERE p.pronamespace = n.oid AND p.proname = $3
                  AND p.proargtypes = '25'::pg_catalog.oidvector) AS next_seq_ok,
               (SELECT count(*) FILTER (WHERE a.attname IN ('run_id', 'seq', 'name')) = 3
                       AND COALESCE(bool_or(a.attname = 'data'
                                            AND a.atttypid = 'pg_catalog.jsonb'::pg_catalog.regtype), false)
                FROM pg_catalog.pg_attribute AS a JOIN pg_catalog.pg_class AS c ON c.oid = a.attrelid
                WHERE c.relnamespace = n.oid AND c.relname = 'steps' AND c.relkind IN ('r', 'p')
                  AND a.attnum > 0 AND NOT a.attisdropped) AS legacy
        FROM (SELECT $1::text AS name) AS wanted
        LEFT JOIN pg_catalog.pg_namespace AS n ON n.nspname = wanted.name
    """

    @staticmethod
    def _wanted(names: _Names) -> list[str]:
        # The steps table first: the query reads its owner as $2[1].
        return [names.bare(s) for s in ("steps", "leases", "schema_version", "leases_expiry", "leases_run_c")]

    @classmethod
    async def read(cls, conn: asyncpg.Connection, names: _Names) -> _Catalog:
        row = await conn.fetchrow(
            cls._QUERY,
            names.schema,
            cls._wanted(names),
            names.bare("next_seq_v1"),
            [_NEXT_SEQ_CONFIG],
            names.next_seq_body(),
        )
        return cls(row["schema_exists"], frozenset(row["relations"]), row["next_seq_ok"], bool(row["legacy"]))

    def has(self, relation: str) -> bool:
        return relation in self.relations

    def complete(self, names: _Names) -> bool:
        return self.relations.issuperset(self._wanted(names)) and self.next_seq_ok is not None


def _ddl(names: _Names, *, create_schema: bool) -> str:
    """The P5 tables and indexes, each created only if missing (types spelled as the SDK's)."""
    schema = f"CREATE SCHEMA IF NOT EXISTS {_q(names.schema)};\n" if create_schema else ""
    steps, leases, version = (names.qualified(s) for s in ("steps", "leases", "schema_version"))
    return schema + f"""
        CREATE TABLE IF NOT EXISTS {steps} (
            run_id pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
            seq pg_catalog.int8 NOT NULL,
            name pg_catalog.text NOT NULL,
            data pg_catalog.bytea NOT NULL,
            PRIMARY KEY (run_id, name),
            UNIQUE (run_id, seq)
        );
        CREATE TABLE IF NOT EXISTS {leases} (
            run_id pg_catalog.text PRIMARY KEY,
            holder pg_catalog.text NOT NULL,
            expiry pg_catalog.timestamptz NOT NULL
        );
        CREATE INDEX IF NOT EXISTS {_q(names.bare("leases_expiry"))} ON {leases} (expiry);
        CREATE INDEX IF NOT EXISTS {_q(names.bare("leases_run_c"))} ON {leases} ((run_id COLLATE "C"));
        CREATE TABLE IF NOT EXISTS {version} (
            id pg_catalog.int4 PRIMARY KEY CHECK (id = 1),
            version pg_catalog.int4 NOT NULL
        );
        INSERT INTO {version} (id, version) VALUES (1, {SCHEMA_VERSION})
            ON CONFLICT (id) DO NOTHING;
    """


def _next_seq_ddl(names: _Names) -> str:
    """``next_seq``: the run's advisory lock, held to commit, then one past its highest seq.

    The fixed search path is a second guard beside the qualified names: objects a caller can
    create on its own search path cannot shadow the built-ins the body calls.
    """
    return (
        f"CREATE FUNCTION {names.qualified('next_seq_v1')}(r pg_catalog.text) RETURNS pg_catalog.int8"
        " LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp"
        f" AS $bide${names.next_seq_body()}$bide$"
    )


class _Statements:
    """Every statement of one store, built once from its validated names.

    asyncpg prepares each statement once per connection and caches it by its text.
    """

    def __init__(self, names: _Names, *, layout: Layout, notify: bool) -> None:
        steps = names.qualified("steps") if layout == "current" else f"{_q(names.schema)}.{_q('steps')}"
        leases = names.qualified("leases")
        # Legacy jsonb comes back as its text; bytea as the stored bytes.
        data = "data" if layout == "current" else "data::pg_catalog.text AS data"
        self._steps = steps
        self._leases = leases
        self.get = f"SELECT seq, {data} FROM {steps} WHERE run_id = $1 AND name = $2"
        self.load = f"SELECT seq, name, {data} FROM {steps} WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
        insert = (
            f"INSERT INTO {steps} (run_id, seq, name, data)"
            f" VALUES ($1, {names.qualified('next_seq_v1')}($1), $2, $3)"
            " ON CONFLICT (run_id, name) DO NOTHING RETURNING seq"
        )
        if notify:
            # pg_notify sits in the select list, so it runs once per inserted row: only a winner
            # notifies, and the server delivers it when the statement's transaction commits.
            self.insert = f"WITH ins AS ({insert}) SELECT ins.seq, pg_catalog.pg_notify($4, $5) FROM ins"
            self.insert_args = 5
        else:
            self.insert = insert
            self.insert_args = 3
        self.acquire = (
            f"INSERT INTO {leases} AS l (run_id, holder, expiry)"
            " VALUES ($1, $2, pg_catalog.now() + $3::pg_catalog.float8 * interval '1 second')"
            " ON CONFLICT (run_id) DO UPDATE SET holder = EXCLUDED.holder, expiry = EXCLUDED.expiry"
            " WHERE l.holder = EXCLUDED.holder OR l.expiry < pg_catalog.now() RETURNING true"
        )
        self.renew = (
            f"UPDATE {leases} SET expiry = pg_catalog.now() + $3::pg_catalog.float8 * interval '1 second'"
            " WHERE run_id = $1 AND holder = $2 AND expiry >= pg_catalog.now() RETURNING true"
        )
        self.release = f"DELETE FROM {leases} WHERE run_id = $1 AND holder = $2"
        self.get_lease = (
            "SELECT holder, extract(epoch FROM expiry - pg_catalog.now())::pg_catalog.float8 AS expires_in"
            f" FROM {leases} WHERE run_id = $1"
        )

    def runs(self, *, prefix: bool, prefix_end: bool, exclude: bool, lease_lapsed: bool) -> str:
        """The Lister query for these filters: P5's (section 4.2), with the same results.

        Parameters in order: after, then prefix, prefix end and the excluded names, each only
        when its filter is used.
        """
        if lease_lapsed:
            column = "l.run_id"
            clauses = [
                f'SELECT {column} COLLATE "C" AS id FROM {self._leases} AS l WHERE l.expiry < pg_catalog.now()',
                f"EXISTS (SELECT FROM {self._steps} AS s WHERE s.run_id = l.run_id)",
            ]
        else:
            column = "s.run_id"
            clauses = [f'SELECT DISTINCT {column} COLLATE "C" AS id FROM {self._steps} AS s WHERE true']
        clauses.append(f'{column} COLLATE "C" > $1')
        n = 1
        if prefix:
            n += 1
            # starts_with decides; the C-collation range lets the (run_id, name) index serve it.
            clauses.append(f'pg_catalog.starts_with({column}, ${n}) AND {column} COLLATE "C" >= ${n}')
            if prefix_end:
                n += 1
                clauses.append(f'{column} COLLATE "C" < ${n}')
        sql = " AND ".join(clauses)
        if exclude:
            n += 1
            # Tested once per listed run (not once per step row, as a filter under DISTINCT would
            # be), by a probe of the (run_id, name) key. OFFSET 0 keeps the planner from turning
            # the probe into an anti-join that reads the whole table on every page: 100,000 runs,
            # half of them finished, list in 0.8 s instead of 7 s.
            sql = (
                f"SELECT r.id FROM ({sql}) AS r WHERE NOT EXISTS (SELECT FROM {self._steps} AS x"
                f" WHERE x.run_id = r.id AND x.name = ANY(${n}::pg_catalog.text[]) OFFSET 0)"
            )
        return sql + f" ORDER BY id LIMIT {LIST_PAGE_SIZE}"
