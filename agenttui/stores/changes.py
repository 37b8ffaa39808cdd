"""The change feed: learn that another process committed records, cheaply, whatever the store.

SQLite: OS file notifications (watchfiles) on the database file and its WAL, then one indexed
query for the runs whose entries are newer than the last seen. PostgreSQL: LISTEN to the
channel agenttui's own writers NOTIFY on commit, plus slow polling for writers that never
notify (Go services), each poll first asking whether anything at all was written
(``Store.write_mark``), then, where the store keeps a shared run index, which runs: its change
marks past the last poll's, and the lease rows that changed (``IndexedTail``), never the whole
store. Anything else: the same polling.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from agenttui.errors import AgentTuiError, StoreConnectionError
from agenttui.stores.base import Store

Changed = Callable[[set[str] | None], object]
"""Called with the runs that changed, or None when the feed cannot tell which."""

POLL_INTERVAL = 2.0
#: How long a SQLite file's watcher waits before it says it is in place, if nothing is written (ms).
WATCH_START_MS = 500
#: Without notifications for this long, a PostgreSQL feed also polls (writers that never NOTIFY).
QUIET_BEFORE_POLLING = 5.0


async def follow_changes(
    store: Store,
    changed: Changed,
    set_state: Callable[[str], object],
    *,
    ready: Callable[[], Awaitable[object]] | None = None,
) -> None:
    """Report commits to ``changed`` until cancelled. Never raises for a store fault: it retries.

    ``ready``, when given, is awaited before a SQLite file is watched: the feed notes where the
    store is at once, starts its file watcher when ``ready`` returns, and then reports what was
    committed in between. (Importing the watcher takes about 30 ms, which a viewer may rather
    spend showing what it first read.)
    """
    if store.IMPLEMENTS_CHANGES and store.file_path is not None:
        await _watch_file(store, store.file_path, changed, set_state, ready)
    elif store.IMPLEMENTS_NOTIFICATIONS:
        await _listen(store, changed, set_state)
    else:
        await _poll(store, changed, set_state)


async def _changes(store: Store, cursor: int) -> tuple[set[str], int]:
    try:
        return await store.changes_since(cursor)
    except AgentTuiError:
        return set(), cursor  # the file is being replaced or is locked; the next event retries


async def _watch_file(
    store: Store,
    path: Path,
    changed: Changed,
    set_state: Callable[[str], object],
    ready: Callable[[], Awaitable[object]] | None,
) -> None:
    _, cursor = await _changes(store, -1)
    identity = file_identity(path)
    if ready is not None:
        await ready()
    import watchfiles  # imported here, once ready: it imports anyio, most of the watcher's 30 ms

    names = {path.name, path.name + "-wal"}
    watching = False
    # Watching the directory catches a WAL file that does not exist yet, or is recreated. The
    # watcher starts at the first wait for a batch, and says so by its first batch or timeout:
    # only then is what was committed meanwhile read, and the feed said to be watching (a
    # commit between a read before it and its start went unseen until the next one).
    async for batch in watchfiles.awatch(
        path.parent,
        watch_filter=lambda _, p: Path(p).name in names,
        debounce=50,
        step=20,
        rust_timeout=WATCH_START_MS,
        yield_on_timeout=True,
    ):
        if watching and not batch:
            continue  # a quiet second
        if file_identity(path) != identity:
            # The open connection still reads the old file: the app must open the new one.
            raise StoreConnectionError(f"{path} was deleted or replaced")
        runs, cursor = await _changes(store, cursor)
        if runs:
            changed(runs)
        if not watching:
            watching = True
            set_state("watching")


def file_identity(path: Path) -> tuple[int, int] | None:
    """The file's (device, inode), or None when it is gone: a new file is a new identity."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_dev, stat.st_ino


async def _listen(store: Store, changed: Changed, set_state: Callable[[str], object]) -> None:
    loop = asyncio.get_running_loop()
    last_heard = loop.time()

    written = await WrittenSince.noted(store)  # where the store is now, as the SQLite feed notes it
    tail = await IndexedTail.noted(store)

    async def poll_when_quiet() -> None:
        while True:
            await asyncio.sleep(POLL_INTERVAL)
            quiet = loop.time() - last_heard > QUIET_BEFORE_POLLING
            if quiet and await written.anything() and (runs := await tail.runs()) != set():
                changed(runs)

    poller = asyncio.create_task(poll_when_quiet())
    try:
        while True:
            try:
                feed = await store.notifications()
                set_state("listening")
                async for run_id in feed:
                    last_heard = loop.time()
                    changed({run_id})
            except AgentTuiError:
                set_state("polling")
                await asyncio.sleep(POLL_INTERVAL)
    finally:
        poller.cancel()


async def _poll(
    store: Store,
    changed: Changed,
    set_state: Callable[[str], object],
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> None:
    set_state("polling")
    written = await WrittenSince.noted(store)
    tail = await IndexedTail.noted(store)
    while True:
        set_state(await _polling_state(store, tail))
        await sleep(POLL_INTERVAL)
        if await written.anything() and (runs := await tail.runs()) != set():
            changed(runs)


async def _polling_state(store: Store, tail: IndexedTail) -> str:
    """What a poll reads, said in the status bar: the shared run index's marks where they tell
    which runs changed, and how far behind the replica it reads is."""
    state = "polling the index" if tail.in_use else "polling"
    if store.replica is not None:
        try:
            lag = await store.replica_lag()
        except AgentTuiError:
            lag = None
        state += ", replica lag unknown" if lag is None else f", replica {lag:.1f} s behind"
    return state


class WrittenSince:
    """Whether anything was written to a store since it was last asked (``Store.write_mark``):
    one cheap question, so that a poll of a store nothing is written to reads nothing else."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._mark: object | None = None
        self._asked = False

    @classmethod
    async def noted(cls, store: Store) -> WrittenSince:
        """One that has noted the store's mark now: it answers for what is written after."""
        written = cls(store)
        await written.anything()
        return written

    async def anything(self) -> bool:
        """True the first time, when the store cannot tell, or cannot be asked (the reads that
        follow say why), and when its mark moved since."""
        try:
            mark = await self.store.write_mark()
        except AgentTuiError:
            return True
        moved = not self._asked or mark is None or mark != self._mark
        self._mark, self._asked = mark, True
        return moved


class IndexedTail:
    """Which runs were written since the last look, where the store keeps a shared run index
    (``stores.postgres.run_index``): its change marks past the last look's, and the runs under
    each lease row that came, went, changed hands or came back to life. A look reads the index
    and the lease table, never the journal; where there is no index in use, it cannot tell."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._mark: int | None = None
        self._leases: dict[str, tuple[str, bool]] = {}

    @classmethod
    async def noted(cls, store: Store) -> IndexedTail:
        """One that has noted where the index is now: it answers for what is written after."""
        tail = cls(store)
        await tail.runs()
        return tail

    async def runs(self) -> set[str] | None:
        """The runs written since the last look (None: it cannot tell which)."""
        index = self.store.run_index()
        if index is None:
            return None
        try:
            found = await index.changed_since(self._mark)
            if found is None:
                self._mark = None  # an index in use again later starts from its own look
                return None
            leases = found.leases
            roots = {
                run_id
                for run_id in leases.keys() | self._leases.keys()
                if leases.get(run_id) != self._leases.get(run_id)
            }
            runs = (
                found.runs
                | roots
                | (await index.runs_under(sorted(roots)) if roots and self._mark is not None else set())
            )
        except AgentTuiError:
            return None
        first = self._mark is None
        self._mark, self._leases = found.mark, leases
        return None if first else runs

    @property
    def in_use(self) -> bool:
        """Whether the last look read the index's marks (the next poll names the runs)."""
        return self._mark is not None
