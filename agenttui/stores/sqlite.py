"""SQLiteStore: the Bide SDK's SQLite journal (current ``bide_*`` tables, and legacy ``steps`` read-only).

The tables, columns and keys are the SDK's (``journal-format.md`` section 4.1), so a file written
here opens in a Go service and the other way round:

- ``bide_steps``: ``seq`` is the rowid, global across runs and increasing in commit order (SQLite
  has one writer at a time and no row is ever deleted, so a new rowid is always the largest yet).
- ``bide_leases``: ``expiry`` in Unix seconds on the database's clock.
- ``bide_schema_version``: one row ``(1, 1)``; a newer version is refused.

A file that holds only the legacy ``steps`` table (SDK v0.8.0 and earlier, per-run ``seq``) opens
read-only: its runs load and list, and it has no leases.

Every call runs one statement in autocommit mode on the handle's own aiosqlite connection, so no
transaction outlives a call and ``load`` holds nothing between pages (A8). ``insert_many`` is the
one transaction of many statements: it runs on a connection of its own, so no other call of the
handle is drawn into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import quote

import aiosqlite

from agenttui.errors import (
    ConfigError,
    SchemaVersionError,
    StoreConnectionError,
    StoreDamageWarning,
    StoreError,
    StoreLockedError,
    StoreMissingError,
)
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
from agenttui.stores.summary import (
    FORK_EXT_BYTES,
    FORK_ORIGIN,
    RUN_START,
    USAGE_MEMBERS,
    RunSummary,
    RunTally,
    SummedJournal,
)

Layout = Literal["current", "legacy"]
#: How much of the journal's first entries a status index's fingerprint holds (``index_fingerprint``).
_FINGERPRINT_ENTRIES = 4
_FINGERPRINT_BYTES = 256

_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCHEMA_VERSION = 1
_BUSY_TIMEOUT_MS = 30_000
_READER_BUSY_TIMEOUT_MS = 5_000
#: Seconds to wait for aiosqlite's thread to end after a failed open (it has one close to run).
_THREAD_STOP_TIMEOUT = 5.0
#: Entries ``insert_many`` writes in one statement: three parameters each, well under the 32,766
#: SQLite allows one statement (999 before SQLite 3.32, which the interpreter's SQLite may be).
_INSERT_CHUNK = 300
#: The data column as the read statements select it: its bytes (cast, for a writer may have stored
#: text, which would not reach Python unless it is UTF-8), then the type it is stored as unless
#: it is a blob (NULL, the cheapest value to hand over, for every row the SDK writes), for
#: ``stored_entry`` to mark.
_DATA = "CAST(data AS BLOB), CASE typeof(data) WHEN 'blob' THEN NULL ELSE typeof(data) END"
_ITER_CHUNK_SIZE = 64
"""Rows a cursor iterated with ``async for`` fetches at a time (aiosqlite.connect's default)."""
#: How the listing ends the shown id of a run whose id is not stored as text.
_ODD_ID_ENDINGS = (" (id stored as a blob)", " (id stored as NULL)", " (id stored as a number)", " (id not UTF-8)")


class _TextNotUtf8(bytes):
    """The bytes of a run id stored as text that is not UTF-8 (Python cannot bind it as text):
    a read binds them cast back to text (``_cast_id``)."""


def _cast_id(sql: str) -> str:
    """``sql`` matching a run id bound as the bytes of its text (``_TextNotUtf8``)."""
    return sql.replace("run_id IS ?", "run_id IS CAST(? AS TEXT)", 1)


_LEGACY_TABLE = "steps"
_LEGACY_COLUMNS = frozenset({"run_id", "seq", "name", "data"})

# The database clock in Unix seconds with a fraction. The SDK writes unixepoch('subsec'), which
# needs SQLite 3.42; this is the same value (both come from the same millisecond 'now', which is
# fixed for the whole statement) and works on every SQLite this package meets.
_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
#: Run ids per query when every run is listed, after a first page of ``LIST_PAGE_SIZE``: a seek a
#: run, a few milliseconds a page.
LIST_ALL_PAGE_SIZE = 5000
#: How many runs' validators one ``run_marks`` statement reads.
_MARKS_AT_ONCE = 10_000
#: Asked about more runs' leases than this, ``get_leases`` reads the lease table whole.
_LEASES_LOOKED_UP = 2000

# One pass over a page of runs' entries (``stores.summary`` says what it sums and why). SQLite
# keeps the last few documents it parsed, so each entry's bytes are parsed once, by json_valid,
# and the members that matter (name, kind, usage) are looked up in that parse; the small values
# are kept in a materialized table and each check runs once, on them. Bytes that are not JSON
# are suspect. (Without the guard, they made the JSON functions raise, failing the page, which
# was halved until their run was found: on the production-shaped store, whose damaged runs sit
# on more than half of the pages, that doubled the queries' time. In a value, SQLite evaluates
# both sides of an AND, so each guard is a CASE.) The checks are conservative (a store may call
# suspect an entry the reference trusts, never the reverse): json_extract returns an object or
# an array as text, so a name or a kind that begins like one is suspect, and a usage counts only
# when json_type says it is an object.
# The text is cast from the blob, so SQLite reads it as JSON text, never as binary JSONB. Token
# counts of 19 digits and more are left to the exact rules, as in every store; a sum that
# overflows fails the query, and its page is read run by run. ``forked``: a fork's mark is found
# in its run:start's bytes, unparsed, as the reference finds it (``may_mark_a_fork``); a CASE, so
# that no other entry's bytes are searched (an AND searched every entry's: a sixth of the query).
_TEXT = "CAST(data AS TEXT)"
_COUNTS_ARE_INTEGERS = " AND ".join(
    f"coalesce(nullif(json_type(usage, '$.{member}'), 'null'), 'integer') = 'integer'"
    f" AND coalesce(json_extract(usage, '$.{member}'), 0) BETWEEN -999999999999999999 AND 999999999999999999"
    for member in USAGE_MEMBERS
)
_USAGE_TOKENS = " + ".join(f"coalesce(json_extract(usage, '$.{member}'), 0)" for member in USAGE_MEMBERS)
#: Per entry, what a run's summary needs of it (``_SUMMARIES``, ``_TALLIES``); the statement's
#: ``WHERE`` follows.
_ENTRY_FACTS = f"""
    SELECT run_id, seq, name,
        typeof(name) = 'text' AND substr(name, 1, 1) NOT IN ('{{{{', '[')
            AND typeof(data) IN ('blob', 'text') AND substr(data, 1, 12) != CAST('{{{{"redacted":' AS BLOB)
            AND CASE WHEN json_valid({_TEXT}) THEN json_extract({_TEXT}, '$.name') IS name ELSE 0 END AS named,
        CASE WHEN json_valid({_TEXT}) THEN json_extract({_TEXT}, '$.kind') END AS kind,
        CASE coalesce(CASE WHEN json_valid({_TEXT}) THEN json_type({_TEXT}, '$.usage') END, 'null')
            WHEN 'object' THEN json_extract({_TEXT}, '$.usage') WHEN 'null' THEN NULL ELSE ''
        END AS usage,
        typeof(name) = 'text' AND typeof(data) IN ('blob', 'text') AND CASE name WHEN '{FORK_ORIGIN}' THEN 1
            WHEN '{RUN_START}' THEN instr(CAST(data AS BLOB), X'{FORK_EXT_BYTES.hex()}') > 0 ELSE 0 END AS forked
    FROM {{steps}}"""
#: Per run, its entries' facts summed up (a ``RunTally``'s members, in order, after its id).
_RUN_TALLY = f"""
    SELECT run_id, count(*) AS steps, max(seq) AS last_seq, sum(kind = 'model') AS turns,
        sum(CASE WHEN usage != '' THEN {_USAGE_TOKENS} ELSE 0 END) AS tokens,
        min(named AND (kind IS NULL OR typeof(kind) = 'text' AND substr(kind, 1, 1) NOT IN ('{{{{', '['))
            AND CASE WHEN usage IS NULL THEN 1 WHEN usage = '' THEN 0 ELSE {_COUNTS_ARE_INTEGERS} END
        ) = 0 AS suspect,
        max(forked) AS forked,
        min(seq) AS first_seq,
        min(CASE WHEN name IN ({{markers}}) THEN seq END) AS end_seq
    FROM entry GROUP BY run_id"""
_SUMMARIES = f"""
WITH entry AS MATERIALIZED ({_ENTRY_FACTS} WHERE run_id IN ({{runs}})), run AS ({_RUN_TALLY})
SELECT run.run_id, run.steps, run.last_seq, run.turns, run.tokens, run.suspect, run.forked,
       first.seq, first.name, first.data, last.seq, last.name, last.data
FROM run
JOIN {{steps}} AS first ON first.seq = run.first_seq
LEFT JOIN {{steps}} AS last ON last.seq = run.end_seq
"""
#: How many entries one statement of ``sum_up_journal``'s pass reads: its scratch table of facts
#: stays a few megabytes, and the runs it meets (a few thousand) a small answer.
PASS_ENTRIES = 200_000
#: A stretch of the journal in commit order (the entries from a seq on, up to the pass's last),
#: summed up by run: the pass reads the table in rowid order, each page once.
_TALLIES = f"""
WITH entry AS MATERIALIZED ({_ENTRY_FACTS} WHERE seq >= ? AND seq <= ? ORDER BY seq LIMIT ?){_RUN_TALLY}
"""


class SQLiteStore(Store):
    """A journal in one SQLite file, shared safely with other processes (WAL, busy timeout 30 s).

    Open it with ``await SQLiteStore.open(path)``. Each handle owns one connection (and, once it
    sums runs up, a second, read-only one, so that two pages are summed at once); open several
    handles (or processes) for parallel work. ``layout`` says which schema the file holds.
    """

    IMPLEMENTS_LISTING = True
    # Honest for legacy files too: they have no lease table, so ``get_lease`` answers None and
    # the writes are refused because a legacy store is always read-only.
    IMPLEMENTS_LEASES = True
    # Every entry has a rowid that grows in commit order (in bide_steps it is ``seq`` itself), so
    # "which runs changed since" is one indexed range scan.
    IMPLEMENTS_CHANGES = True
    # SQLite's JSON functions sum a page of runs up in one query (a legacy file is left to the
    # exact rules: its runs are never summed up).
    IMPLEMENTS_SUMMARIES = True
    IMPLEMENTS_JOURNAL_PASS = True
    IMPLEMENTS_ATOMIC_INSERT_MANY = True

    layout: Layout
    """``"current"`` (the ``bide_*`` tables) or ``"legacy"`` (the pre-v0.9 ``steps`` table, read-only)."""

    def __init__(
        self,
        conn: aiosqlite.Connection,
        path: str,
        *,
        read_only: bool,
        layout: Layout,
        table_prefix: str,
        immutable: bool = False,
    ) -> None:
        """Use ``SQLiteStore.open``; this wraps a connection that ``open`` has already checked."""
        self._conn: aiosqlite.Connection | None = conn
        self._in_wal = read_only
        """The file is in WAL mode, or this handle never writes (``_writing``)."""
        self._second_uri = f"file:{quote(path)}?mode=ro{'&immutable=1' if immutable else ''}"
        self._second_conn: aiosqlite.Connection | None = None
        """A read-only connection for a second page of summaries, opened when first needed."""
        self._second_opening = asyncio.Lock()
        self._bulk_uri = f"file:{quote(path)}?mode=rw"
        self._bulk_conn: aiosqlite.Connection | None = None
        """The connection ``insert_many``'s transactions run on, opened when first needed."""
        self._bulk_writing = asyncio.Lock()
        """Held for the whole of each ``insert_many`` transaction: one at a time on its connection."""
        self._sum_on_second = False
        """Where the next page of summaries goes: pages alternate between the two connections."""
        self._path = path
        self.file_path = Path(path)  # the change feed watches it and its WAL
        self.read_only = read_only
        self.layout = layout
        self.INDEX_GLOBAL_SEQ = layout == "current"  # the legacy table's seq counts within a run
        # Table names come only from a validated prefix or constants, never from other input.
        steps = _LEGACY_TABLE if layout == "legacy" else f"{table_prefix}steps"
        self._steps = steps
        self._leases = None if layout == "legacy" else f"{table_prefix}leases"
        # Where a statement names the journal table (and its alias): the place for NOT INDEXED.
        self._journal_table = re.compile(rf"\b(?:FROM|JOIN) {steps}(?: AS \w+)?(?!\w)")
        self._read_around_index = False
        """Whether a read has met a damaged index and gone around it (said once)."""
        self._odd_ids: dict[str, object] = {}
        """Shown ids of runs whose id is stored as a blob, a number or NULL, to their stored value."""
        self._sql_insert = (
            f"INSERT INTO {steps} (run_id, name, data) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id, name) DO NOTHING RETURNING seq"
        )
        # IS, not =: a run listed under a shown id may be stored as NULL (``_ids_not_text``);
        # SQLite walks the same index for either.
        self._sql_get = f"SELECT seq, {_DATA} FROM {steps} WHERE run_id IS ? AND name = ?"
        self._sql_load = f"SELECT seq, name, {_DATA} FROM {steps} WHERE run_id IS ? AND seq > ? ORDER BY seq LIMIT ?"

    # -- opening ------------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], *, read_only: bool = False, create: bool = True, table_prefix: str = "bide_"
    ) -> SQLiteStore:
        """Open (and, for writing, create or initialise) the journal at ``path``.

        ``create=False`` opens an existing file for writing, never a new one: a write meant for
        the journal on screen must not land in a fresh, empty file.

        Raises ``ConfigError`` for a bad ``table_prefix``; ``StoreConnectionError`` when the file
        cannot be opened (missing in read-only mode or with ``create=False``, not a SQLite
        database, no permission);
        ``SchemaVersionError`` for a schema newer than version 1, a legacy file opened for
        writing, a SQLite file that holds no journal (read-only, or for writing with
        ``create=False``), or, for writing, a journal table another program laid out (no lease
        table, no unique names, ...): completing it would change the file before anything is
        written, and a write that is then refused must leave it as it was.
        """
        if not _PREFIX.fullmatch(table_prefix):
            raise ConfigError(f"table prefix {table_prefix!r} must match {_PREFIX.pattern}")
        path = os.path.abspath(os.fspath(path))  # noqa: ASYNC240  (no I/O but a getcwd for a relative path)
        url = _url(path)
        if read_only or not create:
            require_file(path)
        # A URI, so that read-only opens with SQLITE_OPEN_READONLY ("ro" and "rw" never create the file).
        uri = f"file:{quote(path)}?mode={'ro' if read_only else 'rwc' if create else 'rw'}"
        try:
            conn, layout = await _connect_and_prepare(
                uri, path, url, read_only=read_only, create=create, table_prefix=table_prefix
            )
        except StoreConnectionError:
            # A WAL journal on media that cannot be written (a read-only mount, a snapshot) does
            # not open even read-only: SQLite must make its -shm file beside it. Nothing can
            # change such a file, so it opens as immutable, with no -shm at all.
            if not read_only or os.access(os.path.dirname(path), os.W_OK):
                raise
            conn, layout = await _connect_and_prepare(
                uri + "&immutable=1", path, url, read_only=True, create=False, table_prefix=table_prefix
            )
            return cls(conn, path, read_only=True, layout=layout, table_prefix=table_prefix, immutable=True)
        return cls(conn, path, read_only=read_only, layout=layout, table_prefix=table_prefix)

    @property
    def url_shown(self) -> str:
        return _url(self._path)

    async def close(self) -> None:
        """Close the connection; a read-only handle also removes idle WAL files its read created."""
        conn, self._conn = self._conn, None
        second, self._second_conn = self._second_conn, None
        bulk, self._bulk_conn = self._bulk_conn, None
        if conn is None:
            return
        try:
            for other in (second, bulk):
                if other is not None:
                    await other.close()
            await _disconnect(conn, self._path, read_only=self.read_only)
        except sqlite3.Error as exc:
            raise _translate(exc, self.display_url, "closing") from exc

    async def _writing(self) -> None:
        """Refuse a write to a read-only handle; before a handle's first record, put the file in
        WAL mode (as the SDK's writers open it), never before: a command that writes no record (a
        write refused under the run's lease, a lease taken and let go) leaves the file's mode as
        it was."""
        self._check_writable()
        if self._in_wal:
            return
        deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
        while True:  # as ``_switch_to_wal``: SQLite answers SQLITE_BUSY at once here, not after waiting
            try:
                await self._fetch("PRAGMA journal_mode = WAL", (), "switching to WAL")
                break
            except StoreLockedError:
                if time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.01)
        self._in_wal = True

    # -- the base contract ----------------------------------------------------------------------

    async def insert(self, run_id: str, name: str, data: bytes) -> Inserted:
        await self._writing()
        rows = await self._fetch(self._sql_insert, (run_id, name, data), "inserting a step")
        if rows:
            return Inserted(Entry(rows[0][0], name, bytes(data)), won=True)
        # Lost the name: the winner committed before our statement saw the conflict, so it is
        # visible now and stays (A4).
        winner = await self.get(run_id, name)
        if winner is None:
            raise StoreError(f"{self.display_url}: step {name!r} of run {run_id!r} vanished after a conflict")
        return Inserted(winner, won=False)

    async def insert_many(
        self, run_id: str, items: Sequence[tuple[str, bytes]], *, refuse_conflicts: bool = False
    ) -> list[Inserted]:
        # One transaction, one commit (and one sync) for every item: importing a 50,000-record
        # run took 120 s one insert at a time, and a run cut short by a full disk, an error or a
        # kill must leave nothing. It runs on a connection of its own: on the handle's, any other
        # call made meanwhile (another task's insert, a read) would join it, and see, or be
        # rolled back with, entries that were never committed.
        await self._writing()
        if not items:
            return []
        async with self._bulk_writing:
            conn = await self._bulk_connection()
            try:
                await self._fetch("BEGIN IMMEDIATE", (), "inserting steps", conn)
                outcomes = await self._insert_chunks(conn, run_id, items, refuse_conflicts=refuse_conflicts)
                await self._fetch("COMMIT", (), "inserting steps", conn)
            except BaseException:
                # Queued behind whatever statement is still running in the connection's thread
                # (a cancellation does not stop it), so once it is done nothing is left half
                # written. A full disk may have rolled back already: then there is nothing to do.
                with contextlib.suppress(sqlite3.Error):
                    await conn.execute_fetchall("ROLLBACK")
                raise
        return outcomes

    async def _insert_chunks(
        self, conn: aiosqlite.Connection, run_id: str, items: Sequence[tuple[str, bytes]], *, refuse_conflicts: bool
    ) -> list[Inserted]:
        """``insert_many``'s statements, in its transaction on ``conn``. SQLite inserts the rows of
        a VALUES list in order, each checked against those before it, so the seqs follow the
        items and a name repeated within a chunk loses to its first."""
        outcomes: list[Inserted] = []
        for start in range(0, len(items), _INSERT_CHUNK):
            chunk = items[start : start + _INSERT_CHUNK]
            params: list[object] = []
            for name, data in chunk:
                params += (run_id, name, data)
            rows = await self._fetch(
                f"INSERT INTO {self._steps} (run_id, name, data) VALUES {', '.join(['(?, ?, ?)'] * len(chunk))}"
                " ON CONFLICT (run_id, name) DO NOTHING RETURNING seq, name",
                params,
                "inserting steps",
                conn,
            )
            won = {name: seq for seq, name in rows}
            for name, data in chunk:
                seq = won.pop(name, None)
                if seq is not None:
                    outcomes.append(Inserted(Entry(seq, name, bytes(data)), won=True))
                    continue
                found = await self._fetch(self._sql_get, (run_id, name), "reading a step", conn)
                if not found:
                    raise StoreError(f"{self.display_url}: step {name!r} of run {run_id!r} vanished after a conflict")
                winner = stored_entry(found[0][0], name, found[0][1], data_stored_as=found[0][2])
                if refuse_conflicts and winner.data != data:
                    raise StepTakenError(run_id, name)
                outcomes.append(Inserted(winner, won=False))
        return outcomes

    async def get(self, run_id: str, name: str) -> Entry | None:
        stored_id = await self._stored_id(run_id)
        sql = _cast_id(self._sql_get) if isinstance(stored_id, _TextNotUtf8) else self._sql_get
        rows = await self._read(sql, (stored_id, name), "reading a step")
        return stored_entry(rows[0][0], name, rows[0][1], data_stored_as=rows[0][2]) if rows else None

    async def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        # Each page is fetched whole before anything is yielded, and each fetch is its own
        # autocommit read, so no cursor, transaction or lock outlives a yield (A8).
        stored_id = await self._stored_id(run_id)
        sql = _cast_id(self._sql_load) if isinstance(stored_id, _TextNotUtf8) else self._sql_load
        odd = (
            "the run's id is not UTF-8" if isinstance(stored_id, _TextNotUtf8) else "the run's id is not stored as text"
        )
        while True:
            rows = await self._read(sql, (stored_id, after, LOAD_PAGE_SIZE), "loading a run")
            for seq, name, data, data_stored_as in rows:
                entry = stored_entry(seq, name, data, data_stored_as=data_stored_as)
                if run_id in self._odd_ids:
                    entry = replace(entry, damage=odd + (f"; {entry.damage}" if entry.damage else ""))
                yield entry
            if len(rows) < LOAD_PAGE_SIZE:
                return
            after = rows[-1][0]

    # -- Lister -------------------------------------------------------------------------------

    async def runs(
        self,
        *,
        after: str = "",
        prefix: str = "",
        exclude_holding: Sequence[str] = (),
        lease_lapsed: bool = False,
    ) -> AsyncIterator[str]:
        pages = self._listed_pages(after=after, prefix=prefix, exclude_holding=exclude_holding,
                                   lease_lapsed=lease_lapsed)  # fmt: skip
        async for page in pages:
            for run_id in page:
                yield run_id

    async def run_pages(self, *, after: str = "") -> AsyncIterator[list[str]]:
        async for page in self._listed_pages(after=after):
            yield page

    async def _listed_pages(
        self,
        *,
        after: str = "",
        prefix: str = "",
        exclude_holding: Sequence[str] = (),
        lease_lapsed: bool = False,
    ) -> AsyncIterator[list[str]]:
        # run_id is TEXT with the BINARY collation, i.e. UTF-8 byte order, which is also Python's
        # code point order: ORDER BY run_id is the SDK's ascending byte order.
        #
        # The SDK's statement is SELECT DISTINCT with the NOT EXISTS in WHERE; GROUP BY returns
        # the same ids, and HAVING tests each run once instead of once per entry. Listing 100,000
        # runs of 11 entries: 0.43 s -> 0.17 s; excluding the complete ones: 1.65 s -> 0.21 s.
        filters: list[str] = []
        values: list[object] = []
        if lease_lapsed:
            if self._leases is None:
                return  # a legacy file has no leases, so none has lapsed
            table = self._leases
            filters += [f"expiry < {_NOW}", f"EXISTS (SELECT 1 FROM {self._steps} AS y WHERE y.run_id = s.run_id)"]
        else:
            table = self._steps
        if prefix:
            # The range lets SQLite walk the index; the byte comparison is the exact test.
            end = prefix_end(prefix)
            if end is not None:
                filters.append("run_id < ?")
                values.append(end)
            filters.append("substr(CAST(run_id AS BLOB), 1, ?) = CAST(? AS BLOB)")
            values += [len(prefix.encode()), prefix]
        having = ""
        if exclude_holding:
            marks = ", ".join("?" * len(exclude_holding))
            having = (
                f" HAVING NOT EXISTS (SELECT 1 FROM {self._steps} AS x"
                f" WHERE x.run_id = s.run_id AND x.name IN ({marks}))"
            )
            values += exclude_holding
        # Text ids only: SQLite keeps any type in any column, and a writer that bound bytes (or
        # a number) left an id the pages below cannot step past; those are listed after.
        filters.append("typeof(run_id) = 'text'")
        sql = (
            f"SELECT run_id FROM {table} AS s WHERE run_id >= ?{''.join(f' AND {f}' for f in filters)}"
            f" GROUP BY run_id{having} ORDER BY run_id LIMIT ?"
        )
        grouped, later_pages, conn = None, LIST_PAGE_SIZE, None
        if having:
            # A pass over the whole index (0.8 s at 100,000 runs): on the second connection, so
            # that it holds up no other read (a viewer reads statuses meanwhile).
            conn = await self._second_connection()
        if len(filters) == 1 and not having and not lease_lapsed:
            # Every run, unfiltered: from each run id the index jumps to the next (one seek a
            # run), where GROUP BY walks every entry of the index (100,000 runs of 24 entries
            # each: 0.42 s -> 0.24 s). Text sorts below blobs, so x'' bounds the text ids.
            walk = (
                f"WITH RECURSIVE listed(run_id) AS (SELECT (SELECT min(run_id) FROM {table} WHERE run_id >= ?"
                f" AND run_id < x'') UNION ALL SELECT (SELECT min(run_id) FROM {table} WHERE run_id > listed.run_id"
                f" AND run_id < x'') FROM listed WHERE listed.run_id IS NOT NULL LIMIT ?)"
                " SELECT run_id FROM listed WHERE run_id IS NOT NULL"
            )
            # A page as one JSON array: a row at a time, the reader takes the interpreter's lock
            # back for every row, and waits for it each time while another thread holds it (a
            # viewer reading its status index beside the listing: twice as long).
            # As bytes: an id that is not UTF-8 must not fail the page (Python decodes text strictly).
            grouped, sql = (f"SELECT CAST(json_group_array(run_id) AS BLOB) FROM ({query})" for query in (sql, walk))
            later_pages = LIST_ALL_PAGE_SIZE
        else:  # as bytes, as the JSON page is read: an id that is not UTF-8 must not fail the page
            sql = sql.replace("SELECT run_id FROM", "SELECT CAST(run_id AS BLOB) FROM", 1)
        page_size = LIST_PAGE_SIZE  # the first page small: a runs list paints its first rows from it
        not_utf8: list[str] = []
        while True:
            # One lower bound, not "run_id > after AND run_id >= prefix": given both, SQLite
            # starts every page's index walk at the prefix, which made paging quadratic (27 s for
            # 100,000 runs). after + NUL is the smallest string greater than after.
            lower = max(prefix, after + "\0")
            rows = await self._read(sql, (lower, *values, page_size), "listing runs", conn, without_index=grouped)
            # A JSON page sorted again, in case SQLite aggregated out of order (UTF-8 byte order
            # is code point order).
            listed = json.loads(_text_of(rows[0][0])) if grouped is not None else None
            ids = sorted(listed) if listed is not None else [_text_of(run_id) for (run_id,) in rows]
            if _has_surrogates("".join(ids)):  # a page's ids tested at once: most pages hold none
                valid = [run_id for run_id in ids if not _has_surrogates(run_id)]
                not_utf8 += [run_id for run_id in ids if _has_surrogates(run_id)]
            else:
                valid = ids
            if valid:
                yield valid
            if len(ids) < page_size or not valid:
                break
            after, page_size = valid[-1], later_pages
        odd = []
        for run_id in not_utf8:  # each under a shown id that says so, read as an unreadable run
            shown = run_id.encode("utf-8", "surrogateescape").decode("utf-8", "replace") + " (id not UTF-8)"
            self._odd_ids[shown] = _TextNotUtf8(run_id.encode("utf-8", "surrogateescape"))
            odd.append(shown)
        if not prefix and not lease_lapsed:
            odd += [shown async for shown in self._ids_not_text() if shown > after]
        if odd:
            yield odd

    async def _stored_id(self, run_id: str) -> object:
        """The value ``run_id`` is stored as: itself, or, for an id the listing showed for one not
        stored as text, that value (learnt from the listing, or now, as ``agenttui show`` names it)."""
        if run_id.endswith(_ODD_ID_ENDINGS) and run_id not in self._odd_ids:
            async for _ in self._ids_not_text():
                pass
        return self._odd_ids.get(run_id, run_id)

    async def _ids_not_text(self) -> AsyncIterator[str]:
        """Runs whose id a writer stored as a blob, a number or NULL: each is listed under a shown
        id that says so, and reads (through that id) as an unreadable run, not as an error."""
        # Three ranges of the (run_id, seq) index, not a scan of it: SQLite sorts NULL first,
        # then numbers, text, blobs.
        rows = await self._read(
            " UNION ALL ".join(
                f"SELECT run_id FROM {self._steps} WHERE {where} GROUP BY run_id"
                for where in ("run_id IS NULL", "run_id < ''", "run_id >= x''")
            ),
            (),
            "listing runs",
        )
        for (raw,) in rows:
            stored_as = "a blob" if isinstance(raw, bytes) else "NULL" if raw is None else "a number"
            shown = stored_entry(0, raw, b"").name + f" (id stored as {stored_as})"
            self._odd_ids[shown] = raw
            yield shown

    # -- Leaser -------------------------------------------------------------------------------
    # Every expiry is judged on the database's clock, so processes on hosts with skewed clocks
    # agree on who holds a run. A legacy store never reaches the writes (it is read-only).

    async def acquire_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        self._check_writable()
        rows = await self._fetch(
            f"INSERT INTO {self._leases} AS l (run_id, holder, expiry) VALUES (?, ?, {_NOW} + ?)"
            " ON CONFLICT (run_id) DO UPDATE SET holder = excluded.holder, expiry = excluded.expiry"
            f" WHERE l.holder = excluded.holder OR l.expiry < {_NOW} RETURNING 1",
            (run_id, holder, ttl),
            "taking a lease",
        )
        return bool(rows)

    async def renew_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        self._check_writable()
        rows = await self._fetch(
            f"UPDATE {self._leases} SET expiry = {_NOW} + ?"
            f" WHERE run_id = ? AND holder = ? AND expiry >= {_NOW} RETURNING 1",
            (ttl, run_id, holder),
            "renewing a lease",
        )
        return bool(rows)

    async def release_lease(self, run_id: str, holder: str) -> None:
        self._check_writable()
        await self._fetch(
            f"DELETE FROM {self._leases} WHERE run_id = ? AND holder = ?", (run_id, holder), "releasing a lease"
        )

    async def changes_since(self, cursor: int) -> tuple[set[str], int]:
        if cursor < 0:
            rows = await self._read(
                f"SELECT coalesce(max(rowid), 0) FROM {self._steps}", (), "reading the newest entry"
            )
            return set(), rows[0][0]
        rows = await self._read(
            f"SELECT run_id, rowid FROM {self._steps} WHERE rowid > ? ORDER BY rowid", (cursor,), "reading new entries"
        )
        return {run_id for run_id, _ in rows}, (rows[-1][1] if rows else cursor)

    async def write_mark(self) -> object | None:
        # SQLite's own counter of commits by other connections to the file: no page of it read.
        rows = await self._read("PRAGMA data_version", (), "asking whether anything was written")
        mark: object = rows[0][0]
        return mark

    async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
        if self.layout == "legacy" or not run_ids:
            return []
        markers = list(end_markers)
        sql = _SUMMARIES.format(
            steps=self._steps, runs=", ".join("?" * len(run_ids)), markers=", ".join("?" * len(markers)) or "NULL"
        )
        # Pages are summed up two at a time (``list_statuses`` reads ahead), on alternate
        # connections, so SQLite's work on them runs in two threads.
        on_second, self._sum_on_second = self._sum_on_second, not self._sum_on_second
        conn = await self._second_connection() if on_second else None
        rows = await self._read(sql, [*run_ids, *markers], "summing runs up", conn)
        return [
            RunSummary(
                run_id,
                steps,
                last_seq if type(last_seq) is int else None,
                turns or 0,
                tokens or 0,
                first=stored_entry(first_seq, first_name, first_data),
                end=None if end_seq is None else stored_entry(end_seq, end_name, end_data),
                suspect=bool(suspect),
                forked=bool(forked),
            )
            for run_id, steps, last_seq, turns, tokens, suspect, forked, first_seq, first_name, first_data, end_seq, end_name, end_data in rows
        ]

    async def sum_up_journal(self, end_markers: Collection[str]) -> SummedJournal:
        tallies: dict[str, RunTally] = {}
        markers = list(end_markers)
        sql = _TALLIES.format(steps=self._steps, markers=", ".join("?" * len(markers)) or "NULL")
        # A legacy file is never summed up; the pass ends at the last entry when it began.
        bounds = (
            None
            if self.layout == "legacy"
            else await self._fetch(f"SELECT min(seq), max(seq) FROM {self._steps}", (), "reading the journal's bounds")
        )
        start, last = bounds[0] if bounds else (None, None)
        while type(start) is int and type(last) is int:
            rows = await self._fetch(sql, [start, last, PASS_ENTRIES, *markers], "summing the journal up")
            for run_id, steps, last_seq, turns, tokens, suspect, forked, first_seq, end_seq in rows:
                if type(run_id) is not str:  # listed under a shown id: left to the pages
                    continue
                tally = RunTally(
                    steps, last_seq, turns or 0, tokens or 0, bool(suspect), bool(forked), first_seq, end_seq
                )
                earlier = tallies.get(run_id)
                tallies[run_id] = tally if earlier is None else earlier.then(tally)
            reached = max((row[2] for row in rows), default=last)
            start = reached + 1 if reached < last else None
        return SummedJournal(self, end_markers, tallies, self._entries_at, last if type(last) is int else None)

    async def _entries_at(self, seqs: Sequence[int]) -> dict[int, Entry]:
        """The entries at ``seqs``, by seq (those the journal holds)."""
        found: dict[int, Entry] = {}
        for start in range(0, len(seqs), _MARKS_AT_ONCE):
            chunk = seqs[start : start + _MARKS_AT_ONCE]
            rows = await self._fetch(
                f"SELECT seq, name, data FROM {self._steps} WHERE seq IN ({', '.join('?' * len(chunk))})",
                list(chunk),
                "reading runs' headers",
            )
            found.update((seq, stored_entry(seq, name, data)) for seq, name, data in rows)
        return found

    def index_identity(self) -> str | None:
        """The file's resolved path, device and inode, and the journal table (a legacy file is
        never summed up, so it keeps no index)."""
        if self.layout == "legacy":
            return None
        try:
            found = os.stat(self._path)
        except OSError:
            return None
        return f"sqlite\0{os.path.realpath(self._path)}\0{found.st_dev}\0{found.st_ino}\0{self._steps}"

    async def index_fingerprint(self) -> bytes:
        rows = await self._read(
            f"SELECT seq, run_id, name, length(data), substr(data, 1, {_FINGERPRINT_BYTES})"
            f" FROM {self._steps} ORDER BY seq LIMIT {_FINGERPRINT_ENTRIES}",
            (),
            "reading the first entries",
        )
        return repr(rows).encode("utf-8", "backslashreplace")

    async def entry_digest(self, seq: int) -> bytes | None:
        rows = await self._read(
            f"SELECT run_id, name, length(data), substr(data, 1, {_FINGERPRINT_BYTES}),"
            f" substr(data, -{_FINGERPRINT_BYTES}) FROM {self._steps} WHERE seq = ?",
            (seq,),
            "reading an entry",
        )
        return repr(rows[0]).encode("utf-8", "backslashreplace") if rows else None

    async def last_seq(self) -> int | None:
        rows = await self._read(f"SELECT max(seq) FROM {self._steps}", (), "reading the last entry")
        return rows[0][0] if rows and type(rows[0][0]) is int else None

    async def runs_after(self, seq: int) -> dict[str, int]:
        # A range of the rowid, as quick as the entries past ``seq`` are few: grouped by
        # ``+run_id``, as SQLite would otherwise skip-scan the whole (run_id, seq) index.
        rows = await self._read(
            f"SELECT run_id, max(seq) FROM {self._steps} WHERE seq > ? GROUP BY +run_id", (seq,), "reading new entries"
        )
        return {run_id: last for run_id, last in rows if type(run_id) is str and type(last) is int}

    async def run_marks(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        if not run_ids:
            return {}
        rows = []
        for start in range(0, len(run_ids), _MARKS_AT_ONCE):  # SQLite takes at most 32,766 parameters
            chunk = run_ids[start : start + _MARKS_AT_ONCE]
            rows += await self._read(
                f"SELECT run_id, count(*), max(seq) FROM {self._steps}"
                f" WHERE run_id IN ({', '.join('?' * len(chunk))}) GROUP BY run_id",
                list(chunk),
                "reading runs' lengths",
            )
        return _marks_of(rows)

    async def every_run_mark(self) -> dict[str, tuple[int, int]]:
        rows = await self._read(
            f"SELECT run_id, count(*), max(seq) FROM {self._steps} GROUP BY run_id", [], "reading runs' lengths"
        )
        return _marks_of(rows)

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, list[Entry]]:
        if not run_ids:
            return {}
        rows = await self._read(
            f"SELECT run_id, seq, name, {_DATA} FROM {self._steps}"
            f" WHERE run_id IN ({', '.join('?' * len(run_ids))}) ORDER BY run_id, seq",
            list(run_ids),
            "reading runs",
        )
        loaded: dict[str, list[Entry]] = {}
        for run_id, seq, name, data, data_stored_as in rows:
            loaded.setdefault(run_id, []).append(stored_entry(seq, name, data, data_stored_as=data_stored_as))
        return loaded

    async def get_leases(self, run_ids: Collection[str]) -> dict[str, LeaseInfo]:
        if self._leases is None or not run_ids:
            return {}
        ids = list(run_ids)
        # Asked about many runs (a whole store's), the lease table is read whole: it holds a row
        # a run ever driven, and a lookup a run asked about took longer than the table's pass.
        many = len(ids) > _LEASES_LOOKED_UP
        where = "" if many else f" WHERE run_id IN ({', '.join('?' * len(ids))})"
        rows = await self._fetch(
            f"SELECT run_id, holder, expiry - {_NOW} FROM {self._leases}{where}", () if many else ids, "reading leases"
        )
        asked = set(ids) if many else None
        leases = {}
        for run_id, holder, expires_in in rows:
            if asked is not None and run_id not in asked:
                continue
            if not isinstance(holder, str) or not isinstance(expires_in, int | float):
                raise StoreError(f"{self.display_url}: the lease row of run {run_id!r} is malformed")
            leases[run_id] = LeaseInfo(run_id, holder, float(expires_in))
        return leases

    async def get_lease(self, run_id: str) -> LeaseInfo | None:
        return (await self.get_leases([run_id])).get(run_id)

    async def read_key_value_table(self, table: str) -> dict[str, str] | None:
        """The rows of a ``(key TEXT, value TEXT)`` table agenttui keeps beside the journal (a
        bundle's manifest, ``stores.bundle_file``), or None when the file has no such table.
        Rows that are not two texts are left out."""
        if not _PREFIX.fullmatch(table):
            raise ConfigError(f"table name {table!r} must match {_PREFIX.pattern}")
        found = await self._fetch("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,), "reading")
        if not found:
            return None
        rows = await self._fetch(f"SELECT key, value FROM {table}", (), f"reading {table}")
        return {key: value for key, value in rows if isinstance(key, str) and isinstance(value, str)}

    # -- helpers ------------------------------------------------------------------------------

    async def _bulk_connection(self) -> aiosqlite.Connection:
        """The connection ``insert_many`` writes on (called under ``_bulk_writing``)."""
        if self._conn is None:
            raise StoreError(f"{self.display_url} is closed")
        if self._bulk_conn is None:

            def wait_as_writers_do(conn: sqlite3.Connection) -> None:
                conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}").fetchall()

            try:
                self._bulk_conn = await _connect(self._bulk_uri, wait_as_writers_do)
            except sqlite3.Error as exc:
                raise _translate(exc, self.display_url, "opening a connection to write on") from exc
        return self._bulk_conn

    async def _second_connection(self) -> aiosqlite.Connection | None:
        """The read-only connection for a second page of summaries, or None (the handle's own
        then) where it cannot be opened."""
        async with self._second_opening:
            if self._second_conn is None and self._conn is not None:
                try:
                    second = await _connect(self._second_uri)
                except sqlite3.Error:
                    return None
                await second.execute_fetchall(f"PRAGMA busy_timeout = {_READER_BUSY_TIMEOUT_MS}")
                self._second_conn = second
            return self._second_conn

    async def _read(
        self,
        sql: str,
        params: Sequence[object],
        doing: str,
        conn: aiosqlite.Connection | None = None,
        *,
        without_index: str | None = None,
    ) -> list[tuple[Any, ...]]:
        """``_fetch`` for a statement that only reads the journal table: when a damaged index
        fails it (SQLITE_CORRUPT), the same statement again without the table's indexes.

        One damaged page of the ``(run_id, seq)`` index used to hide every run while the table
        held them all. The table is read in full instead, which is slower, so each statement
        tries its index first: only those that meet the damage pay. Said once per handle (a
        ``StoreDamageWarning``), never silently. Damage in the table itself fails both ways,
        and the first error is raised. ``without_index``: the statement to read the table in full
        with, where it is not ``sql`` itself (one that seeks the index once a row would scan the
        table once a row).
        """
        try:
            return await self._fetch(sql, params, doing, conn)
        except StoreError as exc:
            if getattr(exc.__cause__, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_CORRUPT:
                raise
            unindexed = self._journal_table.sub(r"\g<0> NOT INDEXED", without_index or sql)
            if unindexed == sql:
                raise
            try:
                rows = await self._fetch(unindexed, params, doing, conn)
            except StoreError:
                raise exc from exc.__cause__
        if not self._read_around_index:
            self._read_around_index = True
            warnings.warn(
                StoreDamageWarning(
                    f"{self.display_url}: an index of {self._steps} is damaged; reading the table without it"
                    f" (slower). REINDEX {self._steps} rebuilds it (sqlite3, on a copy of the file)"
                ),
                stacklevel=3,
            )
        return rows

    async def _fetch(
        self, sql: str, params: Sequence[object], doing: str, conn: aiosqlite.Connection | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one autocommit statement to completion (on the handle's own connection unless
        given another) and return its rows, or raise ``StoreError``."""
        if self._conn is None:
            raise StoreError(f"{self.display_url} is closed")
        try:
            return cast(
                list[tuple[Any, ...]], await (conn or self._conn).execute_fetchall(sql, params)
            )  # fetchall() makes a list
        except sqlite3.Error as exc:
            raise _translate(exc, self.display_url, doing) from exc
        except UnicodeEncodeError as exc:  # a lone surrogate cannot be stored as UTF-8 TEXT
            raise StoreError(f"{self.display_url}: {doing} failed: {exc.object!r} is not valid Unicode") from exc


def require_file(path: str | os.PathLike[str]) -> None:
    """``StoreConnectionError`` unless the file is there: a reader, or a writer that must not create
    a journal, opens only a file that exists."""
    path = os.path.abspath(os.fspath(path))
    if not os.path.exists(path):
        raise StoreMissingError(f"{path}: no such file")  # the path, as a person typed it (made absolute)


async def _connect_and_prepare(
    uri: str, path: str, url: str, *, read_only: bool, create: bool, table_prefix: str
) -> tuple[aiosqlite.Connection, Layout]:
    layouts: list[Layout] = []

    def prepare(conn: sqlite3.Connection) -> None:
        layouts.append(_prepare(conn, url, read_only=read_only, create=create, table_prefix=table_prefix))

    try:
        conn = await _connect(uri, prepare)
    except sqlite3.Error as exc:  # _prepare raises StoreErrors: this is the connection failing
        raise _open_failed(exc, path, url, read_only=read_only) from exc
    except BaseException:
        if read_only:  # a file refused (no journal, a newer schema): only its files, not its commits
            await asyncio.to_thread(_remove_idle_wal_files, path, move_commits=False)
        raise
    return conn, layouts[0]


def _text_of(stored: bytes) -> str:
    """A run id read as the bytes of its text: bytes that are not UTF-8 kept as surrogates."""
    return bytes(stored).decode("utf-8", "surrogateescape")


def _has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a byte that was not UTF-8 (decoded with ``surrogateescape``)."""
    return not text.isascii() and any("\udc80" <= char <= "\udcff" for char in text)


async def _connect(uri: str, prepare: Callable[[sqlite3.Connection], None] | None = None) -> aiosqlite.Connection:
    """``aiosqlite.connect`` with a daemon worker thread, which runs ``prepare`` on the new
    connection before it is handed over (closed if that raises); a failed open waits for the
    thread to end.

    One hand-off to the thread and back, however many statements ``prepare`` runs: the TUI opens
    its store while its first frames are drawn, and each hand-off waits for the app's loop to be
    free again (benchmarks/startup.py).

    aiosqlite 0.22 made its worker threads non-daemon: a program that ends without closing the
    store (a script that raised before ``close``) then hangs at exit. Abandoning the connection
    is safe: every call is one autocommit statement, and SQLite rolls back a transaction cut
    short on the next open.

    aiosqlite 0.21 and later stop the thread of a connection that failed to open without waiting
    for it; when the event loop closes first (the CLI exits on the error at once), the thread
    dies printing a traceback under the CLI's one-line message.
    """

    def connector() -> sqlite3.Connection:  # what aiosqlite.connect runs in the thread, and prepare
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        if prepare is not None:
            try:
                prepare(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    connecting = aiosqlite.Connection(connector, _ITER_CHUNK_SIZE)
    # No public handle on the thread: 0.21+ keep it in _thread; before, the connection is one.
    worker = connecting if isinstance(connecting, threading.Thread) else getattr(connecting, "_thread", None)
    if isinstance(worker, threading.Thread):
        worker.daemon = True  # it starts when the connection is awaited
    try:
        return await connecting
    except Exception:
        if isinstance(worker, threading.Thread):
            await asyncio.to_thread(worker.join, _THREAD_STOP_TIMEOUT)
        raise


def _open_failed(exc: sqlite3.Error, path: str, url: str, *, read_only: bool) -> StoreError:
    """The error for a failed open, with the OS's reason where SQLite only says "unable to open"."""
    if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_CANTOPEN:
        # Open the file as SQLite would, never creating it, to learn why it refused: most often
        # "permission denied", which SQLite's message does not say.
        try:
            os.close(os.open(path, os.O_RDONLY if read_only else os.O_RDWR))
        except FileNotFoundError:
            pass  # SQLite would have created it: the trouble lies elsewhere (its directory)
        except OSError as refused:
            if refused.strerror:
                return StoreConnectionError(f"cannot open {url}: {refused.strerror.lower()}")
    return _translate(exc, url, "opening")


def _prepare(conn: sqlite3.Connection, url: str, *, read_only: bool, create: bool, table_prefix: str) -> Layout:
    """Set the connection up, check the file's schema and, for writing, create the tables and turn on WAL
    (in the connection's thread: ``_connect``).

    The checks and the creation run in one transaction (IMMEDIATE when writing), so two
    processes opening a new file at once cannot both see it empty and disagree.
    """
    steps, leases, version = f"{table_prefix}steps", f"{table_prefix}leases", f"{table_prefix}schema_version"
    try:
        # A viewer waits for a lock a second at a time, so it can say it is waiting (and quit at
        # once); a writer waits as long as the SDK's writers do.
        conn.execute(f"PRAGMA busy_timeout = {_READER_BUSY_TIMEOUT_MS if read_only else _BUSY_TIMEOUT_MS}").fetchall()
        if read_only:
            conn.execute("PRAGMA query_only = 1").fetchall()
        conn.execute("BEGIN" if read_only else "BEGIN IMMEDIATE").fetchall()
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
        new_journal = steps not in tables
        if version in tables:
            # Compared in SQL, where a version stored as TEXT sorts above every number (refused).
            newer = list(
                conn.execute(f"SELECT version FROM {version} WHERE id = 1 AND version > {_SCHEMA_VERSION}").fetchall()
            )
            if newer:
                raise SchemaVersionError(
                    f"{url} has journal schema version {newer[0][0]!r}; agenttui understands version {_SCHEMA_VERSION}"
                )
        legacy = (
            _LEGACY_TABLE in tables
            and {row[0] for row in conn.execute(f"SELECT name FROM pragma_table_info('{_LEGACY_TABLE}')").fetchall()}
            >= _LEGACY_COLUMNS
        )
        # A file with both layouts is read as current: the SDK refuses such a file, but a viewer
        # should show the journal the current SDK writes rather than nothing.
        if steps in tables:
            layout: Layout = "current"
            if not read_only and (gaps := _layout_gaps(conn, steps, tables, table_prefix)):
                # Completing it would change a file another program made (tables, an index, the
                # journal mode) before the command knows whether it writes anything at all.
                raise SchemaVersionError(
                    f"{url} holds a {steps} table the SDK did not lay out ({'; '.join(gaps)}):"
                    " agenttui writes only to the SDK's own layout (it opens read-only)"
                )
        elif read_only:
            if not legacy:
                raise SchemaVersionError(f"{url} holds no agenttui/Bide journal (no {steps} or legacy steps table)")
            layout = "legacy"
        else:
            # Like the SDK, an empty legacy table is no journal and does not stop initialising.
            if legacy and conn.execute(f"SELECT 1 FROM {_LEGACY_TABLE} LIMIT 1").fetchall():
                raise SchemaVersionError(
                    f"{url} holds a legacy (pre-v0.9) Bide journal in table steps; legacy stores open read-only"
                )
            if not create:
                # A write meant for a journal: another program's database must not become one.
                raise SchemaVersionError(
                    f"{url} holds no agenttui/Bide journal (no {steps} table): nothing was written"
                )
            layout = "current"
        if not read_only:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {steps} (seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL,"
                " name TEXT NOT NULL, data BLOB NOT NULL, UNIQUE (run_id, name))"
            ).fetchall()
            conn.execute(f"CREATE INDEX IF NOT EXISTS {steps}_run_seq ON {steps} (run_id, seq)").fetchall()
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {leases} (run_id TEXT PRIMARY KEY, holder TEXT NOT NULL,"
                " expiry REAL NOT NULL)"
            ).fetchall()
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {version} (id INTEGER PRIMARY KEY CHECK (id = 1),"
                " version INTEGER NOT NULL)"
            ).fetchall()
            conn.execute(f"INSERT OR IGNORE INTO {version} (id, version) VALUES (1, {_SCHEMA_VERSION})").fetchall()
        conn.execute("COMMIT").fetchall()
        if not read_only and new_journal:
            # Only now: a file refused above keeps its journal mode, as it keeps everything else.
            # A journal that was there switches at its first write (``SQLiteStore._writing``): a
            # command that writes nothing (refused, or deciding nothing) leaves it as it was.
            _switch_to_wal(conn)
    except sqlite3.Error as exc:
        raise _translate(exc, url, "opening") from exc
    return layout


def _layout_gaps(conn: sqlite3.Connection, steps: str, tables: set[str], table_prefix: str) -> list[str]:
    """What an existing journal lacks of the layout the SDK (and agenttui) create: the tables
    beside ``steps``, ``seq`` as its rowid, the unique names, the ``(run_id, seq)`` index."""
    gaps = [
        f"no {table_prefix}{table} table"
        for table in ("leases", "schema_version")
        if f"{table_prefix}{table}" not in tables
    ]
    columns = {name: (kind.upper(), pk) for _, name, kind, _, _, pk in conn.execute(f"PRAGMA table_info({steps})")}
    if columns.get("seq") != ("INTEGER", 1):
        gaps.append("seq is not its INTEGER PRIMARY KEY")
    indexes = {name: bool(unique) for _, name, unique, *_ in conn.execute(f"PRAGMA index_list({steps})")}
    # Bound, not spliced: another program names its indexes as it likes.
    keys = {
        name: [column for (column,) in conn.execute("SELECT name FROM pragma_index_info(?) ORDER BY seqno", (name,))]
        for name in indexes
    }
    if not any(unique and keys[name] == ["run_id", "name"] for name, unique in indexes.items()):
        gaps.append("no UNIQUE (run_id, name)")
    if keys.get(f"{steps}_run_seq") != ["run_id", "seq"]:
        gaps.append(f"no index {steps}_run_seq")
    return gaps


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode = WAL``, retried for as long as the busy timeout while the file is locked.

    Switching a new file's journal mode upgrades a read lock to a write lock, and SQLite answers
    SQLITE_BUSY at once instead of waiting when another connection holds one (it would deadlock),
    so processes that open a new file together would otherwise fail. Once the file is in WAL mode
    the pragma changes nothing and never waits.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() > deadline:
                raise
        time.sleep(0.01)


async def _disconnect(conn: aiosqlite.Connection, path: str, *, read_only: bool) -> None:
    """Close ``conn``; after a read-only connection, let SQLite remove the WAL files it made."""
    await conn.close()
    if read_only:
        await asyncio.to_thread(_remove_idle_wal_files, path)


def _remove_idle_wal_files(path: str, *, move_commits: bool = True) -> None:
    """Let SQLite delete the ``-wal``/``-shm`` pair after a read-only handle, when no other
    connection has the database open: what the last connection to close does anyway.

    A read-only connection to a WAL database whose writers have all closed must create both files
    to read, and cannot delete them when it closes (that takes a write lock on the database); a
    writer that closes while a reader is open leaves them too, as it is not the last connection.
    SQLite's one safe way to remove them is to open a read-write connection, read, and close it:
    the last connection to close moves the commits the ``-wal`` holds into the file (a
    checkpoint: the journal's content is unchanged, and an empty ``-wal`` leaves the file
    untouched) and deletes both, under an exclusive lock it cannot get while any other process
    has the database open. So a read leaves no file beside the store, and files another process
    holds are never deleted: they stay for it. Without ``move_commits``, a ``-wal`` that holds
    commits is left as it is (a file that was refused is none of agenttui's business).
    """
    try:
        if os.path.getsize(f"{path}-wal") != 0 and not move_commits:
            return
    except OSError:
        return  # not in WAL mode, or nothing was created
    try:
        # No busy wait: a lock held means another connection is open, and then the files stay anyway.
        conn = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=0)
        try:
            conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        # No write permission (or the file went away): the files stay, exactly as after any
        # read-only SQLite reader, and the next writer to close removes them. Nothing is lost.
        return


def _url(path: str) -> str:
    return f"sqlite://{path}"


def _translate(exc: sqlite3.Error, url: str, doing: str) -> StoreError:
    """A one-line agenttui error for a driver error met while ``doing`` something to ``url``."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF  # the primary result code
    if code == sqlite3.SQLITE_NOTADB:
        return StoreConnectionError(f"{url} is not a SQLite database")
    if code == sqlite3.SQLITE_CANTOPEN:
        return StoreConnectionError(f"cannot open {url}: {exc}")
    if code == sqlite3.SQLITE_CORRUPT:
        return StoreError(f"{url} is damaged: {exc} (while {doing})")
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return StoreLockedError(f"{url} is locked by another process (while {doing}): {exc}")
    return StoreError(f"{url}: {doing} failed: {exc}")


def _marks_of(rows: Iterable[Sequence[Any]]) -> dict[str, tuple[int, int]]:
    """Validators as ``run_marks`` gives them, from rows of run id, count and highest seq (a row
    whose types are not those of a journal's is left out)."""
    return {run_id: (count, last) for run_id, count, last in rows if type(run_id) is str and type(last) is int}
