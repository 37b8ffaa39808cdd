"""The store contract: what every journal store promises, and its optional capabilities.

A store keeps opaque entries, ``(run_id, name) -> bytes``, append-only and at most once per
name. It knows nothing of records or their encoding; the Journal (``agenttui.journal``) does.
The promises below are the SDK's A1-A8 (``journal-format.md`` section 4.0); one body of
contract tests (``tests/stores``) checks them against every store.

Optional capabilities are declared, not probed: ``IMPLEMENTS_LISTING``, ``IMPLEMENTS_LEASES``,
``IMPLEMENTS_CHANGES``, ``IMPLEMENTS_NOTIFICATIONS``, ``IMPLEMENTS_SUMMARIES`` and
``IMPLEMENTS_JOURNAL_PASS`` say which of the optional methods work on a store, ``IMPLEMENTS_ATOMIC_INSERT_MANY`` whether ``insert_many`` writes
all of its items or none, and ``file_path`` names the local file a store lives in, if it lives in one. A method
a store does not implement raises ``ConfigError``.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar, cast

from agenttui.errors import ConfigError, ReadOnlyStoreError, StoreError

if TYPE_CHECKING:
    from agenttui.stores.postgres.run_index import SharedRunIndex
    from agenttui.stores.summary import RunSummary, SummedJournal

#: The least and the most a column of 64-bit integers holds (SQLite's INTEGER, PostgreSQL's
#: bigint, an ``array('q')``). Compared, not ``in range(...)``: a count read as a float would be
#: searched for element by element.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_Item = TypeVar("_Item")

#: How many entries ``load`` reads per round trip; no connection is held between pages (A8).
LOAD_PAGE_SIZE = 256
#: How many run ids ``runs`` reads per round trip.
LIST_PAGE_SIZE = 500


async def pages_of(items: AsyncIterator[_Item], size: int) -> AsyncIterator[list[_Item]]:
    """``items`` gathered into lists of ``size`` (the last one shorter)."""
    page: list[_Item] = []
    async for item in items:
        page.append(item)
        if len(page) == size:
            yield page
            page = []
    if page:
        yield page


@dataclass(frozen=True, slots=True)
class Entry:
    """One stored journal entry: its position, its step name and its bytes, as committed."""

    seq: int
    """Opaque, strictly increasing in commit order within a run; gaps allowed (A2). Compared
    through ``seq_order``: a foreign SQLite table may hand back another type."""
    name: str
    data: bytes
    damage: str = ""
    """Why the row is not what the format stores (a name stored as a blob, no data): the entry
    then reads as an unreadable record saying so, and the rest of its run still shows."""
    retyped: str = ""
    """How the row's types differ from the format's where the entry still reads as the SDK would
    read it (data stored as text, read as its bytes; a seq that is no integer), or "": the entry
    is then not the row exactly, so an import refuses to copy it, as it refuses damage."""


def stored_entry(seq: object, name: object, data: object, *, data_stored_as: str | None = None) -> Entry:
    """The entry of a row as a database hands it back, whatever a writer bound into its columns
    (SQLite keeps any type in any column): a name that is not text, or data that is not bytes,
    is shown as well as it can be and marked as damage, never raised. ``data_stored_as``: the
    type the database keeps the data as, where it hands back bytes cast from it (SQLite's
    ``typeof``: ``text``, ``integer``, ``real``, ``null``); None for bytes stored as bytes."""
    if type(name) is str and type(data) is bytes and type(seq) is int and data_stored_as is None:
        return Entry(seq, name, data)  # every row a well-behaved writer stored
    damage = []
    retyped = []
    if type(seq) is not int:  # opaque to readers (A2), but not what the format stores
        retyped.append(f"its seq is stored as {_sql_type(seq)}")
    if not isinstance(name, str):
        damage.append(f"its name is stored as {_sql_type(name)}")
        name = bytes(name).decode("utf-8", "replace") if isinstance(name, bytes | bytearray | memoryview) else str(name)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
        data_stored_as = "text"
    elif isinstance(data, bytearray | memoryview):
        data = bytes(data)
    elif not isinstance(data, bytes):
        damage.append(f"its data is {_sql_type(data)}")
        data = b""
    if data_stored_as == "text":  # text where bytes belong: the same bytes, as the SDK would read them
        retyped.append("its data is stored as text, not as a blob")
    elif data_stored_as in _NUMBERS:  # the number's digits are no record's bytes
        damage.append(f"its data is {_NUMBERS[data_stored_as]}")
        data = b""
    # A seq of another type is kept as it is: the store pages on it.
    return Entry(cast(int, seq), name, data, "; ".join(damage), "; ".join(retyped))


_NUMBERS = {"integer": "an integer", "real": "a real"}


def seq_order(seq: object) -> tuple[int, Any]:
    """A key that orders seqs as the stores do, whatever their type: compare seqs through it,
    never with ``<`` on the seqs themselves.

    Every store agenttui or the SDK lays out keeps ``seq`` an integer, but another program's
    SQLite table may hold any type in it, and SQLite orders such a column NULL first, then
    numbers, then text, then blobs: a seq read from it, handed back as ``after``, reads on in that
    same order. (Compared bare, ``"501" > -1`` raised TypeError and closed the TUI.)
    """
    if isinstance(seq, int | float):
        return (1, seq)
    if isinstance(seq, str):
        return (2, seq)
    if isinstance(seq, bytes | bytearray | memoryview):
        return (3, bytes(seq))
    return (0, 0)  # NULL: a row ``seq > after`` never reads


def _sql_type(value: object) -> str:
    return {type(None): "NULL", bytes: "a blob", str: "text", int: "an integer", float: "a real"}.get(
        type(value), type(value).__name__
    )


@dataclass(frozen=True, slots=True)
class Inserted:
    """The outcome of ``Store.insert``: the winning entry, and whether this call was the winner."""

    entry: Entry
    won: bool


class StepTakenError(StoreError):
    """``insert_many(..., refuse_conflicts=True)`` met a name the store holds, or the items
    repeat, with other bytes: nothing of the call was written."""

    title = "Step taken"

    def __init__(self, run_id: str, name: str) -> None:
        super().__init__(f"step {name!r} of run {run_id!r} is held with other bytes")
        self.run_id = run_id
        self.name = name


@dataclass(frozen=True, slots=True)
class LeaseInfo:
    """A row of the lease table, judged on the database's clock."""

    run_id: str
    holder: str
    expires_in: float
    """Seconds until the lease lapses on the store's clock; negative once it has lapsed."""

    @property
    def live(self) -> bool:
        return self.expires_in > 0


class NotificationFeed(Protocol):
    """What ``Store.notifications`` returns: run ids as their commits are heard, until closed."""

    def __aiter__(self) -> AsyncIterator[str]: ...

    async def aclose(self) -> None: ...


class Store(abc.ABC):
    """A journal store. Every method is a coroutine on the caller's event loop.

    Guarantees (checked by ``tests/stores``):

    - **A1, one winner per name.** Concurrent inserts of one ``(run_id, name)`` from any number
      of tasks or processes have exactly one winner; every caller and later reader sees its bytes.
    - **A2, commit-ordered, prefix-closed reads.** ``seq`` strictly increases in commit order
      within a run; every read returns a prefix of the run's final order.
    - **A3, durable before return.** ``insert`` returns only once committed; after an error the
      entry is absent or complete, and the same bytes may be inserted again.
    - **A4, read-your-writes, monotone.** A visible entry stays visible, same bytes and position.
    - **A5, byte fidelity.** Bytes come back exactly as inserted.
    - **A6, immutable.** No update or delete (a redaction tombstone is the one exception).
    - **A7, cancellation.** Every method honours asyncio cancellation.
    - **A8, iterator hygiene.** ``load`` holds no connection, transaction or lock across a
      yield, so a caller may insert into the run while iterating it.
    """

    IMPLEMENTS_LISTING: bool = False
    """True when ``runs`` works (the SDK's ``Lister``)."""
    IMPLEMENTS_LEASES: bool = False
    """True when the lease methods work (the SDK's ``Leaser``)."""
    IMPLEMENTS_CHANGES: bool = False
    """True when ``changes_since`` works: the store can say cheaply which runs changed."""
    IMPLEMENTS_NOTIFICATIONS: bool = False
    """True when ``notifications()`` streams the run ids of commits as they happen (LISTEN)."""
    IMPLEMENTS_SUMMARIES: bool = False
    """True when ``summaries`` sums runs up on the database side (``agenttui.stores.summary``)."""
    IMPLEMENTS_JOURNAL_PASS: bool = False
    """True when ``sum_up_journal`` sums every run up in one pass over the journal."""
    IMPLEMENTS_ATOMIC_INSERT_MANY: bool = False
    """True when ``insert_many`` writes its items in one transaction: all of them or none."""

    file_path: Path | None = None
    """The one local file the store lives in (SQLite), or None (memory, a server): the change
    feed watches it, and a viewer reopens the store when the file is replaced."""

    read_only: bool = False
    """Opened for reading only: every write raises ``ReadOnlyStoreError`` and nothing on disk changes."""

    name: str | None = None
    """The name the user's config gives this store (``agenttui prod``; ``agenttui.config``), or
    None when it was opened by its URL."""

    @property
    def display_url(self) -> str:
        """The store as every view and answer shows it: its name when the config gives it one,
        else where it lives (``url_shown``)."""
        return self.name if self.name is not None else self.url_shown

    @property
    @abc.abstractmethod
    def url_shown(self) -> str:
        """Where this store lives, safe to show: a password is always masked."""

    # -- the base contract ------------------------------------------------------------------

    @abc.abstractmethod
    async def insert(self, run_id: str, name: str, data: bytes) -> Inserted:
        """Insert ``data`` under ``(run_id, name)`` unless the name is taken.

        Returns the entry that holds the name afterwards (this call's or the earlier winner's)
        and whether this call won. Raises ``ReadOnlyStoreError`` on a read-only store and
        ``StoreError`` when the store fails (then the entry is absent or complete, A3).
        """

    async def insert_many(
        self, run_id: str, items: Sequence[tuple[str, bytes]], *, refuse_conflicts: bool = False
    ) -> list[Inserted]:
        """``insert`` of each ``(name, data)`` in ``items``, in order: one outcome each.

        The same promises hold for every item as for ``insert`` (one winner per name, A1; an
        item whose name is taken, earlier in ``items`` too, loses and gets the winner's entry).
        With ``IMPLEMENTS_ATOMIC_INSERT_MANY`` the store commits them together, in one
        transaction however many they are: after an error, a cancellation or a killed process
        none of this call's winners are there, or all of them (A3), never some; other writers
        of the run wait for it. ``refuse_conflicts``: an item whose name is held (or comes
        earlier in ``items``) with other bytes raises ``StepTakenError``, and then nothing of
        this call is written. This default, for a store without transactions, inserts them one
        at a time.
        """
        if refuse_conflicts:
            await self._refuse_conflicts(run_id, items)
        return [await self.insert(run_id, name, data) for name, data in items]

    @abc.abstractmethod
    async def get(self, run_id: str, name: str) -> Entry | None:
        """The entry stored under ``(run_id, name)``, or None."""

    @abc.abstractmethod
    def load(self, run_id: str, after: int = -1) -> AsyncIterator[Entry]:
        """The run's entries with ``seq > after``, in commit order (A2), read page by page (A8).

        An unknown run yields nothing.
        """

    async def load_runs(self, run_ids: Sequence[str]) -> dict[str, list[Entry]]:
        """Every entry of each of ``run_ids`` the store holds, in commit order, keyed by run: for
        many short runs at once (a page of statuses). A store may read them in one round trip;
        this default loads them one run at a time. A run with no entries is left out."""
        loaded = {}
        for run_id in run_ids:
            if entries := [entry async for entry in self.load(run_id)]:
                loaded[run_id] = entries
        return loaded

    async def close(self) -> None:  # noqa: B027  (a no-op by default: a store without connections need not override it)
        """Release connections. Safe to call twice."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- Lister -----------------------------------------------------------------------------

    def runs(
        self,
        *,
        after: str = "",
        prefix: str = "",
        exclude_holding: Sequence[str] = (),
        lease_lapsed: bool = False,
    ) -> AsyncIterator[str]:
        """Every run id in ascending byte order (the SDK's ``RunFilter`` semantics).

        ``after``: only ids greater than it. ``prefix``: only ids starting with it.
        ``exclude_holding``: skip runs holding an entry with any of these names (e.g. the end
        markers). ``lease_lapsed``: only runs whose lease row has lapsed.
        Raises ``ConfigError`` unless ``IMPLEMENTS_LISTING``.
        """
        raise ConfigError(f"{type(self).__name__} cannot list its runs")

    def run_pages(self, *, after: str = "") -> AsyncIterator[list[str]]:
        """Every run id after ``after``, as ``runs`` lists them, a page at a time: for a caller
        that takes them by the thousand (a runs list), without an iteration a run. A store may
        hand over the pages it reads; this default gathers ``runs`` into pages."""
        return pages_of(self.runs(after=after), LIST_PAGE_SIZE)

    # -- change feed (agenttui's own capability, for live tail) -------------------------------------

    async def changes_since(self, cursor: int) -> tuple[set[str], int]:
        """The runs with entries committed after ``cursor``, and the cursor to ask from next.

        ``cursor`` -1 asks for no runs, only the current cursor. Raises ``ConfigError`` unless
        ``IMPLEMENTS_CHANGES``.
        """
        raise ConfigError(f"{type(self).__name__} cannot report changes")

    async def write_mark(self) -> object | None:
        """A value that changes whenever another connection or process commits to the store (an
        entry or a lease), cheap to ask (no row of the journal read): a poll that finds the mark
        it saw last skips its reads, so a viewer of a store nothing is written to rests. It may
        change when nothing of the journal did (another database on the same server); it never
        stays the same across such a commit. None: the store cannot tell (every poll reads)."""
        return None

    async def notifications(self) -> NotificationFeed:
        """Start listening for commits: the iterator yields the id of each run that gains an entry
        (a very long id may come cut short), from the moment this returns.

        The iterator holds a connection until ``aclose``. Raises ``StoreConnectionError`` when the
        store cannot be reached, ``ConfigError`` unless ``IMPLEMENTS_NOTIFICATIONS``.
        """
        raise ConfigError(f"{type(self).__name__} cannot notify of commits")

    # -- run summaries (agenttui's own capability, for statuses at scale) ------------------------

    async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
        """The summary of each of ``run_ids`` the store holds (``stores.summary.summarize`` says
        what one holds), in one round trip, in no particular order; a run with no entries has none. ``end_markers``: the
        step names that end a run. Raises ``ConfigError`` unless ``IMPLEMENTS_SUMMARIES``.
        """
        raise ConfigError(f"{type(self).__name__} cannot sum runs up")

    async def sum_up_journal(self, end_markers: Collection[str]) -> SummedJournal:
        """Every run summed up in one pass over the journal in commit order, for a look at every
        run: its ``summaries`` say what ``summaries`` would have said at the pass's end. Where
        runs are many and written at once, their entries lie across the whole journal, and
        summing a page of runs up seeks each of them; the pass reads each part of the journal
        once. Raises ``ConfigError`` unless ``IMPLEMENTS_JOURNAL_PASS``; ``StoreError`` when the
        pass cannot be made (a damaged page, a sum past 64 bits): the runs are then summed up by
        pages, where each page says what it cannot read."""
        raise ConfigError(f"{type(self).__name__} cannot sum its journal up in one pass")

    # -- a status index's validators (agenttui's own capability, ``runs.status_index``) -------------

    def index_identity(self) -> str | None:
        """What names this store's journal for a status index kept outside it, or None when none
        may be kept (the store sums no runs up, or lives only in memory). Two handles on one
        journal give the same text; a journal replaced by another under the same name may too,
        which ``index_fingerprint`` tells apart."""
        return None

    async def index_fingerprint(self) -> bytes:
        """Bytes that change when the journal is replaced: its first entries in commit order,
        which an append-only journal never changes (A6). Raises ``ConfigError`` unless
        ``index_identity`` names the journal."""
        raise ConfigError(f"{type(self).__name__} keeps no status index")

    INDEX_GLOBAL_SEQ: bool = False
    """True when ``seq`` is one sequence across runs, never handed out twice while the journal
    only grows (SQLite's rowid): a status index then checks the entry at its high-water mark
    (``entry_digest``), which is gone or another when the journal was cut back and written again."""

    async def entry_digest(self, seq: int) -> bytes | None:
        """What identifies the entry at ``seq`` (its run, name, length and ends), or None when
        there is none. Raises ``ConfigError`` unless ``INDEX_GLOBAL_SEQ``."""
        raise ConfigError(f"{type(self).__name__} has no seq across runs")

    async def last_seq(self) -> int | None:
        """The highest seq of any entry (None: the journal is empty). Raises ``ConfigError``
        unless ``INDEX_GLOBAL_SEQ``."""
        raise ConfigError(f"{type(self).__name__} has no seq across runs")

    async def runs_after(self, seq: int) -> dict[str, int]:
        """Each run holding an entry past ``seq``, with its highest seq, in one read: on a journal
        that only grew since ``seq`` was its last, the runs written since. Raises ``ConfigError``
        unless ``INDEX_GLOBAL_SEQ``."""
        raise ConfigError(f"{type(self).__name__} has no seq across runs")

    async def run_marks(self, run_ids: Sequence[str]) -> dict[str, tuple[int, int]]:
        """Each of ``run_ids``' entry count and highest seq, read from the ``(run_id, seq)`` index
        alone, as few statements as the store can (asked about a whole store's runs, one pass
        over its index): what a status index checks its summaries against (a run with no entries
        is missing). Raises ``ConfigError`` unless ``index_identity`` names the journal."""
        raise ConfigError(f"{type(self).__name__} keeps no status index")

    async def every_run_mark(self) -> dict[str, tuple[int, int]]:
        """``run_marks`` of every run the store holds, in one pass over its index: a reopen's
        validators where seq does not run across runs, and, as its keys, every run listed at
        once. Raises ``ConfigError`` unless ``index_identity`` names the journal."""
        raise ConfigError(f"{type(self).__name__} keeps no status index")

    # -- the shared run index (``agenttui index``; PostgreSQL's alone) ---------------------------

    replica: str | None = None
    """The read replica a viewer's statements go to (``HOST:PORT``), if any (PostgreSQL's
    ``?replica=``)."""

    async def replica_lag(self) -> float | None:
        """How far the replica it reads from is behind its primary, in seconds; None when it
        reads from no replica."""
        return None

    def run_index(self) -> SharedRunIndex | None:
        """The shared run index this store's journal may have in its database (installed or
        not: ``SharedRunIndex.lines`` says whether readers use it), or None where a store keeps
        none."""
        return None

    # -- Leaser -----------------------------------------------------------------------------

    async def acquire_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        """Take or extend the run's lease for ``ttl`` seconds on the store's clock.

        Granted (True) when no lease exists, the existing one has lapsed, or ``holder`` already
        holds it; refused (False) while another holder's lease is live.
        """
        raise ConfigError(f"{type(self).__name__} has no leases")

    async def renew_lease(self, run_id: str, holder: str, ttl: float) -> bool:
        """Extend a live lease ``holder`` holds; False when it is not held or has lapsed."""
        raise ConfigError(f"{type(self).__name__} has no leases")

    async def release_lease(self, run_id: str, holder: str) -> None:
        """Drop the lease if ``holder`` holds it; otherwise do nothing."""
        raise ConfigError(f"{type(self).__name__} has no leases")

    async def get_lease(self, run_id: str) -> LeaseInfo | None:
        """The run's lease row, live or lapsed, or None when there is none."""
        raise ConfigError(f"{type(self).__name__} has no leases")

    async def get_leases(self, run_ids: Collection[str]) -> dict[str, LeaseInfo]:
        """The lease rows of ``run_ids`` that have one (a store may read them in one round trip)."""
        leases = {}
        for run_id in run_ids:
            if (found := await self.get_lease(run_id)) is not None:
                leases[run_id] = found
        return leases

    # -- helpers for implementations ----------------------------------------------------------

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.display_url} is open read-only")

    async def _refuse_conflicts(self, run_id: str, items: Sequence[tuple[str, bytes]]) -> None:
        """``StepTakenError`` for the first of ``items`` whose name is held, or comes earlier in
        ``items``, with other bytes (checked before writing: a store without transactions)."""
        first: dict[str, bytes] = {}
        for name, data in items:
            if name not in first:
                held = await self.get(run_id, name)
                first[name] = data if held is None else held.data
            if first[name] != data:
                raise StepTakenError(run_id, name)


def prefix_end(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (None if unbounded)."""
    codepoints = [ord(c) for c in prefix]
    while codepoints:
        if codepoints[-1] < 0x10FFFF:
            # Surrogates cannot be encoded: the code point after U+D7FF, in UTF-8 order, is U+E000.
            codepoints[-1] = 0xE000 if codepoints[-1] == 0xD7FF else codepoints[-1] + 1
            return "".join(map(chr, codepoints))
        codepoints.pop()
    return None


def admits(
    run_id: str,
    *,
    after: str,
    prefix: str,
) -> bool:
    """Whether ``run_id`` passes the ordering filters of ``Store.runs`` (SDK ``RunFilter.Admits``)."""
    return run_id > after and run_id.startswith(prefix)
