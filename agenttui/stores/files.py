"""The one guarded way agenttui replaces or deletes a file: every command and screen that writes a
file of its own (an export, a saved fork, the demo, a view saved into the config file) goes
through ``check_replaceable`` and ``place_file`` (a small file written at once: ``write_whole``), and a file agenttui made and keeps to itself (a partial file, a status index) is
dropped by ``remove_own_file`` alone, so a file a person did not hand over is never lost.

A file is refused, ``--force`` or not, when it is

- a store being read or written by the same command (``protect``), under any spelling: the same
  resolved path, or the same device and inode (a hard link, a bind mount, ``./`` or ``sqlite://``);
- a journal holding runs agenttui did not make: a SQLite file with a ``bide_steps`` (or legacy
  ``steps``) table that has rows, unless it carries agenttui's manifest table (a bundle or a saved
  fork's file) or the caller recognizes it as its own (the demo's store).

- anything but a regular file: a directory, a device, a FIFO, a socket; and a symbolic link,
  which is neither replaced (the link would be lost) nor written through (the file written would
  be one the path does not name), the refusal naming where it points.

An existing file that passes is replaced only when the caller says ``force``. A new file is
written beside its target under a temporary name and moved into place once whole, so a failure
leaves what was there.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import sqlite3
import stat
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import quote

from agenttui.errors import StoreError

MANIFEST_TABLE = "agenttui_bundle"
"""agenttui's own table in a file it writes (a bundle, a saved fork): key/value rows describing it.
The SDK ignores tables it does not know."""

JOURNAL_TABLES = ("bide_steps", "steps")
"""The tables a SQLite journal keeps its records in: today's layout, and the oldest SDKs'."""

SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database, which go with it when it is replaced."""


class FileTakenError(StoreError):
    """The path is taken, and replacing it was not asked for."""

    title = "File exists"


class FileRefusedError(StoreError):
    """A file agenttui will not replace, even when asked: a store in use, or someone's journal."""

    title = "File refused"


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Whether two spellings name one file: one resolved path, or one device and inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        first, second = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


async def check_replaceable(
    target: str | os.PathLike[str],
    *,
    force: bool,
    protect: Iterable[str | os.PathLike[str] | None] = (),
    ours: bool = False,
) -> Path:
    """The absolute path to write at ``target``, once it is known to be safe to write there.

    Raises ``FileRefusedError`` when ``target`` is one of ``protect`` (or a file beside one of
    them that SQLite keeps), anything but a regular file (a link, a device, a FIFO...), or a
    journal of runs agenttui did not make (unless ``ours``: the caller knows the file as one it
    made, the demo's store); ``FileTakenError`` when it exists and ``force`` is false.
    """
    path = Path(os.path.abspath(os.fspath(target)))  # noqa: ASYNC240  (no I/O but a getcwd)
    for kept in protect:
        if kept is None:
            continue
        kept_files = [Path(kept), *(Path(f"{kept}{side}") for side in SIDE_FILES)]
        if any(same_file(path, each) for each in kept_files):
            raise FileRefusedError(f"{path} is the store being read: write to another file")
    try:
        mode = os.lstat(path).st_mode  # the path itself: a link is judged, never followed
    except FileNotFoundError:
        return path
    if (kind := _not_regular(path, mode)) is not None:
        raise FileRefusedError(f"{path} is {kind}: only a new file or a regular one is written")
    foreign = await asyncio.to_thread(_foreign_journal, path)
    if foreign is not None and not ours:
        raise FileRefusedError(
            f"{path} is {foreign}: it is never replaced (move or delete it yourself, or choose another file)"
        )
    if not force:
        raise FileTakenError(f"{path} exists: nothing written (--force replaces it)")
    return path


def read_small_file(path: str | os.PathLike[str], *, limit: int) -> bytes:
    """The bytes of a small file a person names as input (a price table): a regular file, read
    whole up to ``limit`` bytes. Raises ``OSError`` (its ``strerror`` says why) for anything else:
    a device or a FIFO would be read without end (``/dev/zero``), or never."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO is opened without waiting for a writer
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        with os.fdopen(os.dup(fd), "rb") as file:
            data = file.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", os.fspath(path))
    return data


def is_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` itself (not what a link points to) is a regular file."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _not_regular(path: Path, mode: int) -> str | None:
    """What ``path`` is when it is no regular file (its ``lstat`` mode), or None when it is one."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        # Replacing a link loses it; writing through it writes where the path does not say.
        return f"a symbolic link to {target!r}, which is neither replaced nor written through"
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISCHR: "a character device", stat.S_ISBLK: "a block device",
             stat.S_ISFIFO: "a FIFO (a named pipe)", stat.S_ISSOCK: "a socket"}  # fmt: skip
    return next((name for test, name in kinds.items() if test(mode)), "not a regular file")


def place_file(partial: Path, target: Path, *, force: bool) -> None:
    """Move the finished file ``partial`` to ``target`` (checked by ``check_replaceable``), atomically,
    and never over a file unless ``force``: a path taken meanwhile raises ``FileTakenError``."""
    if force:
        os.replace(partial, target)
        _remove_side_files(target)
    else:
        try:
            os.link(partial, target)  # fails if the path was taken meanwhile, where rename would replace
        except FileExistsError:
            raise FileTakenError(f"{target} exists: nothing written (--force replaces it)") from None
        except OSError:  # a file system without hard links: the check just made is the guard
            if target.exists():
                raise FileTakenError(f"{target} exists: nothing written (--force replaces it)") from None
            os.replace(partial, target)
        else:
            os.unlink(partial)
    with contextlib.suppress(OSError):  # the rename is durable once the directory is synced
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_whole(target: Path, data: str | bytes, *, force: bool) -> None:
    """Write ``data`` to ``target`` (checked by ``check_replaceable``) whole or not at all: under
    a partial name beside it, synced, then moved into place (``place_file``); the partial file is
    removed whatever fails. For a small file written at once (a config file, a JUnit report)."""
    partial, handle = open_partial(target, "wb" if isinstance(data, bytes) else "w")
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        place_file(partial, target, force=force)
    except BaseException:
        remove_own_file(partial)
        raise


def partial_path(target: Path) -> Path:
    """A fresh, empty file beside ``target`` to write it under until it is whole (a SQLite file,
    which its library opens by name; a text or bytes file is written through ``open_partial``)."""
    fd, partial = _new_partial(target)
    os.close(fd)
    return partial


def open_partial(target: Path, mode: Literal["w", "wb"] = "w") -> tuple[Path, IO[Any]]:
    """``partial_path``'s file, opened for writing from the descriptor that created it, never
    again by name: what is written lands in that fresh file, whatever the name is meanwhile."""
    fd, partial = _new_partial(target)
    if mode == "wb":
        return partial, os.fdopen(fd, mode)
    return partial, os.fdopen(fd, mode, encoding="utf-8", newline="\n")


@contextlib.asynccontextmanager
async def streamed_text_file(
    target: Path, *, force: bool, protect: Iterable[str | os.PathLike[str] | None] = (),
    failure: Callable[[str], Exception],
) -> AsyncIterator[IO[str]]:  # fmt: skip
    """A text file written as it goes, whole or not at all (JSON lines of many runs): under a
    partial name beside ``target`` (``check_replaceable``'s path), then checked again, since a
    file may take the name meanwhile, and moved into place; the partial file is removed whatever
    fails. An ``OSError`` becomes ``failure(message)``, the message naming the file."""
    try:
        partial, out = open_partial(target)
    except OSError as exc:
        raise failure(f"cannot write in {target.parent}: {exc.strerror or exc}") from exc
    try:
        with out:
            yield out
        await check_replaceable(target, force=force, protect=protect)
        place_file(partial, target, force=force)
    except OSError as exc:
        remove_own_file(partial)
        raise failure(f"cannot write {target}: {exc.strerror or exc}") from exc
    except BaseException:
        remove_own_file(partial)
        raise


def _new_partial(target: Path) -> tuple[int, Path]:
    import tempfile

    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent)
    # mkstemp makes the file private; what agenttui writes is made to be shared, as any new file is.
    umask = os.umask(0o022)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    return fd, Path(name)


def write_manifest(path: Path, manifest: dict[str, str]) -> None:
    """Mark the SQLite file ``path`` as agenttui's, with ``manifest`` in ``MANIFEST_TABLE``, and make
    it one self-contained file (no ``-wal`` beside it). For a file no other connection has open."""
    with contextlib.closing(sqlite3.connect(f"file:{quote(str(path))}?mode=rw", uri=True)) as conn:
        conn.execute("PRAGMA journal_mode = DELETE").fetchall()
        with conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {MANIFEST_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.executemany(f"INSERT OR REPLACE INTO {MANIFEST_TABLE} (key, value) VALUES (?, ?)", manifest.items())


def remove_own_file(path: Path) -> None:
    """Drop a SQLite file agenttui made and keeps to itself (one ``partial_path`` named, a status
    index in the user's cache), and what SQLite kept beside it. Safe to call twice; never for a
    file a person handed over."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    _remove_side_files(path)


def _remove_side_files(path: Path) -> None:
    for side in SIDE_FILES:
        with contextlib.suppress(FileNotFoundError):
            Path(f"{path}{side}").unlink()


def _foreign_journal(path: Path) -> str | None:
    """What makes ``path`` someone's journal, or None for a file that is no journal, an empty one,
    or one carrying agenttui's manifest."""
    # immutable: a look that takes no lock and leaves no -shm or -journal beside the file.
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if MANIFEST_TABLE in tables:
                return None
            records = sum(
                conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT 1000000)").fetchone()[0]
                for table in JOURNAL_TABLES
                if table in tables
            )
    except sqlite3.DatabaseError:
        # Too damaged to say what it holds: a damaged journal is still someone's.
        return "a SQLite file agenttui cannot read (a damaged journal?)" if _is_sqlite(path) else None
    return f"a journal of runs agenttui did not write ({records:,} records)" if records else None


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
