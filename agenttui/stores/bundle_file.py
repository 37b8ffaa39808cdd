"""A bundle's file: a new SQLite store in the current layout, written in bulk, and its manifest.

The file is made by ``SQLiteStore.open`` (so its tables, columns and index are exactly the ones
every agenttui store and the Go SDK open, ``journal-format.md`` section 4.1), then filled with
one connection in one transaction: a store's ``insert`` commits, and syncs, once per entry,
which for a long run is minutes instead of seconds. It is written under a temporary name in the
same directory and renamed into place only once complete, so a failed or interrupted export
leaves nothing behind, and an existing file is never replaced unless asked (``force``).

A finished bundle is one self-contained file (rollback journal mode, not WAL: no ``-wal`` or
``-shm`` beside it), so it can be committed, mailed, or opened on read-only media. It is always
a new file, rows only ever added to it, never one an earlier bundle's rows were deleted from:
no free page holds bytes it does not (a value redacted before its row was handed here, a file
replaced with ``force``).

Besides the SDK's tables it holds one of agenttui's own, ``agenttui_bundle`` (``key TEXT PRIMARY
KEY, value TEXT NOT NULL``), saying where the bundle came from and what was redacted; the SDK
ignores tables it does not know. ``read_manifest`` reads it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from agenttui.errors import StoreConnectionError, StoreError
from agenttui.stores.base import Store
from agenttui.stores.files import (
    MANIFEST_TABLE,
    FileTakenError,
    check_replaceable,
    partial_path,
    place_file,
    remove_own_file,
)

BundleExistsError = FileTakenError
"""The bundle's path is taken, and replacing it was not asked for."""


class BundleFile:
    """A bundle being written. ``await BundleFile.create(path)``, ``add`` rows, then ``finish``
    (or ``abort``, which removes every trace of it)."""

    def __init__(
        self,
        path: Path,
        partial: Path,
        conn: sqlite3.Connection,
        *,
        force: bool,
        protect: tuple[str | os.PathLike[str] | None, ...],
    ) -> None:
        """Use ``BundleFile.create``."""
        self.path = path
        """Where the bundle goes once finished."""
        self._partial = partial
        self._conn: sqlite3.Connection | None = conn
        self._force = force
        self._protect = protect
        self._inserting: asyncio.Future[None] | None = None
        """The insert running in its thread: cancelling ``add`` does not stop the thread."""

    @classmethod
    async def create(
        cls, path: str | os.PathLike[str], *, force: bool = False, protect: Iterable[str | os.PathLike[str] | None] = ()
    ) -> BundleFile:
        """Start a bundle at ``path``. Raises ``BundleExistsError`` when the path is taken and
        ``force`` is false, ``FileRefusedError`` when it is a store in ``protect`` or a journal
        agenttui did not write (``stores.files``), ``StoreConnectionError`` when its directory
        cannot be written."""
        from agenttui.stores.sqlite import SQLiteStore

        target = await check_replaceable(path, force=force, protect=protect)
        try:
            partial = partial_path(target)
        except OSError as exc:
            raise StoreConnectionError(f"cannot write in {target.parent}: {exc.strerror or exc}") from exc
        try:
            # The store makes the tables exactly as every agenttui writer does; it is closed
            # before the bulk connection opens, which turns WAL off while it is the only one.
            store = await SQLiteStore.open(partial)
            await store.close()
            conn = await asyncio.to_thread(_bulk_connection, partial)
        except BaseException:
            remove_own_file(partial)
            raise
        return cls(target, partial, conn, force=force, protect=tuple(protect))

    async def add(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Append ``(run_id, name, data)`` rows, in the order given (their ``seq`` follows it)."""
        conn = self._open_conn()
        self._inserting = asyncio.ensure_future(asyncio.to_thread(_insert, conn, rows))
        await asyncio.shield(self._inserting)

    async def finish(self, manifest: Mapping[str, str]) -> None:
        """Write ``manifest`` into ``agenttui_bundle``, commit, and move the file into place.

        Raises ``BundleExistsError`` when, meanwhile, another file took the path (and ``force``
        is false); the partial file is removed on any failure."""
        conn = self._open_conn()
        try:
            await asyncio.to_thread(_finish, conn, self._partial, manifest)
            self._conn = None
            # Checked again: the path may have been taken while the bundle was written.
            await check_replaceable(self.path, force=self._force, protect=self._protect)
            await asyncio.to_thread(place_file, self._partial, self.path, force=self._force)
        except BaseException:
            await self.abort()
            raise

    async def abort(self) -> None:
        """Drop the partial file. Safe to call twice, and after ``finish``."""
        conn, self._conn = self._conn, None
        if conn is not None:
            if self._inserting is not None and not self._inserting.done():
                # A cancelled add's thread is still inserting: stop it, and let it stop before
                # its connection closes under it.
                conn.interrupt()
                with contextlib.suppress(sqlite3.Error):
                    await self._inserting
            with contextlib.suppress(sqlite3.Error):
                await asyncio.to_thread(conn.close)
        remove_own_file(self._partial)

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the bundle {self.path} is already finished")
        return self._conn


def _bulk_connection(path: Path) -> sqlite3.Connection:
    # check_same_thread off: each call runs in whichever worker thread asyncio hands it, one at
    # a time (every call is awaited before the next). No sync until the end: the file is not
    # a bundle until it is renamed, and _finish syncs it first.
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA journal_mode = DELETE").fetchall()
        conn.execute("PRAGMA synchronous = OFF").fetchall()
        conn.execute("BEGIN IMMEDIATE").fetchall()
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot write the bundle {path}: {exc}") from exc
    return conn


def _insert(conn: sqlite3.Connection, rows: Sequence[tuple[str, str, bytes]]) -> None:
    try:
        conn.executemany("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", rows)
    except sqlite3.Error as exc:
        raise StoreError(f"writing the bundle failed: {exc}") from exc


def _finish(conn: sqlite3.Connection, partial: Path, manifest: Mapping[str, str]) -> None:
    try:
        conn.execute(f"CREATE TABLE {MANIFEST_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)").fetchall()
        conn.executemany(f"INSERT INTO {MANIFEST_TABLE} (key, value) VALUES (?, ?)", list(manifest.items()))
        conn.execute("COMMIT").fetchall()
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"writing the bundle failed: {exc}") from exc
    conn.close()
    with open(partial, "rb+") as f:
        os.fsync(f.fileno())


async def read_manifest(store: Store) -> dict[str, str] | None:
    """The ``agenttui_bundle`` rows of the SQLite file ``store`` lives in, or None when it has
    none (a store that is no bundle, or not a SQLite file)."""
    from agenttui.stores.sqlite import SQLiteStore

    if not isinstance(store, SQLiteStore):
        return None
    return await store.read_key_value_table(MANIFEST_TABLE)
