"""The change feed: learn that another process committed records, cheaply, whatever the store.

SQLite: OS file notifications (watchfiles) on the database file and its WAL, then one indexed
query for the runs whose entries are newer than the last seen. PostgreSQL: LISTEN to the
channel agenttui's own writers NOTIFY on commit, plus slow polling for writers that never
notify (Go services), each poll first asking whether anything at all was written
(``Store.write_mark``). Anything else: the same polling.
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

    runs, cursor = await _changes(store, cursor)  # what was committed while the feed started
    if runs:
        changed(runs)
    names = {path.name, path.name + "-wal"}
    set_state("watching")
    # Watching the directory catches a WAL file that does not exist yet, or is recreated.
    async for batch in watchfiles.awatch(
        path.parent, watch_filter=lambda _, p: Path(p).name in names, debounce=50, step=20
    ):
        del batch
        if file_identity(path) != identity:
            # The open connection still reads the old file: the app must open the new one.
            raise StoreConnectionError(f"{path} was deleted or replaced")
        runs, cursor = await _changes(store, cursor)
        if runs:
            changed(runs)


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

    async def poll_when_quiet() -> None:
        while True:
            await asyncio.sleep(POLL_INTERVAL)
            if loop.time() - last_heard > QUIET_BEFORE_POLLING and await written.anything():
                changed(None)

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
    while True:
        await sleep(POLL_INTERVAL)
        if await written.anything():
            changed(None)


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
