"""A bundle's file: a new SQLite store in the current layout, written in bulk, and its manifest.

The file is made by ``SQLiteStore.open`` (so its tables, columns and index are exactly the ones
every agenttui store and the Go SDK open, ``journal-format.md`` section 4.1), then filled with
one connection in one transaction: a store's ``insert`` commits, and syncs, once per entry,
which for a long run is minutes instead of seconds. It is written under a temporary name in the
same directory and renamed into place only once complete, so a failed or interrupted export
leaves nothing behind, and an existing file is never replaced unless asked (``force``).

A finished bundle is one self-contained file (rollback journal mode, not WAL: no ``-wal`` or
``-shm`` beside it), so it can be committed, mailed, or opened on read-only media.

Besides the SDK's tables it holds one of agenttui's own, ``agenttui_bundle`` (``key TEXT PRIMARY
KEY, value TEXT NOT NULL``), saying where the bundle came from and what was redacted; the SDK
ignores tables it does not know. ``read_manifest`` reads it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import quote

from agenttui.errors import StoreConnectionError, StoreError
from agenttui.stores.base import Store

MANIFEST_TABLE = "agenttui_bundle"
"""agenttui's own table in a bundle: key/value rows describing it (the SDK ignores it)."""


class BundleExistsError(StoreError):
    """The bundle's path is taken, and replacing it was not asked for."""

    title = "File exists"


class BundleFile:
    """A bundle being written. ``await BundleFile.create(path)``, ``add`` rows, then ``finish``
    (or ``abort``, which removes every trace of it)."""

    def __init__(self, path: Path, partial: Path, conn: sqlite3.Connection, *, force: bool) -> None:
        """Use ``BundleFile.create``."""
        self.path = path
        """Where the bundle goes once finished."""
        self._partial = partial
        self._conn: sqlite3.Connection | None = conn
        self._force = force
        self._inserting: asyncio.Future[None] | None = None
        """The insert running in its thread: cancelling ``add`` does not stop the thread."""

    @classmethod
    async def create(cls, path: str | os.PathLike[str], *, force: bool = False) -> BundleFile:
        """Start a bundle at ``path``. Raises ``BundleExistsError`` when the path is taken and
        ``force`` is false, ``StoreConnectionError`` when its directory cannot be written."""
        from agenttui.stores.sqlite import SQLiteStore

        target = Path(os.path.abspath(os.fspath(path)))  # noqa: ASYNC240  (no I/O but a getcwd for a relative path)
        _refuse_taken(target, force)
        try:
            fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
        except OSError as exc:
            raise StoreConnectionError(f"cannot write in {target.parent}: {exc.strerror or exc}") from exc
        os.close(fd)
        partial = Path(name)
        # mkstemp makes the file private; a bundle is made to be shared, as any new file is.
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(partial, 0o666 & ~umask)
        try:
            # The store makes the tables exactly as every agenttui writer does; it is closed
            # before the bulk connection opens, which turns WAL off while it is the only one.
            store = await SQLiteStore.open(partial)
            await store.close()
            conn = await asyncio.to_thread(_bulk_connection, partial)
        except BaseException:
            _remove(partial)
            raise
        return cls(target, partial, conn, force=force)

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
            await asyncio.to_thread(_place, self._partial, self.path, self._force)
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
        _remove(self._partial)

    def _open_conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the bundle {self.path} is already finished")
        return self._conn


def _refuse_taken(target: Path, force: bool) -> None:
    if target.is_dir():
        raise BundleExistsError(f"{target} is a directory")
    if target.exists() and not force:
        raise BundleExistsError(f"{target} exists (replace it with --force)")


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


def _place(partial: Path, target: Path, force: bool) -> None:
    """Move the finished file into place: atomically, and never over a file unless ``force``."""
    if force:
        os.replace(partial, target)
    else:
        try:
            os.link(partial, target)  # fails if the path was taken meanwhile, where rename would replace
        except FileExistsError:
            raise BundleExistsError(f"{target} exists (replace it with --force)") from None
        except OSError:  # a file system without hard links: the check just made is the guard
            _refuse_taken(target, force)
            os.replace(partial, target)
        else:
            os.unlink(partial)
    with contextlib.suppress(OSError):  # the rename is durable once the directory is synced
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(path: Path) -> None:
    for leftover in (path, Path(f"{path}-journal"), Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


async def read_manifest(store: Store) -> dict[str, str] | None:
    """The ``agenttui_bundle`` rows of the SQLite file ``store`` lives in, or None when it has
    none (a store that is no bundle, or not a SQLite file)."""
    from agenttui.stores.sqlite import SQLiteStore

    if not isinstance(store, SQLiteStore):
        return None
    return await store.read_key_value_table(MANIFEST_TABLE)
