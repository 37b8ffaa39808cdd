"""A read leaves no file beside a SQLite store: the ``-wal``/``-shm`` pair a reader needs to read a
WAL journal is gone once the reader closes, the last to, even where a writer wrote through it and
closed first (it could not remove them while the reader was open); and files a live writer holds
are never deleted under it.

The writer here is another process with a plain sqlite3 connection, as a Go service's is.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from tests.tui.conftest import settle

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
HEADER = b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"}'

#: Reads a person makes: each opens the store read-only, reads and closes it.
READS = [
    ["runs"],
    ["runs", "--json"],
    ["show", "refund-a1002"],
    ["replay", "refund-a1002"],
    ["mermaid", "refund-a1002"],
]

WRITER = textwrap.dedent(
    """
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    print("open", flush=True)
    for line in sys.stdin:
        command, _, run_id = line.strip().partition(" ")
        if command == "insert":
            conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES (?, '@journal', ?)",
                         (run_id, sys.argv[2].encode()))
            print("inserted", flush=True)
        else:
            conn.close()
            print("closed", flush=True)
            break
    """
)


class Writer:
    """A writer process holding the store open until told to close."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), HEADER.decode()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.said() == "open"

    def said(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def tell(self, command: str) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.said()

    def close(self) -> None:
        assert self.tell("close") == "closed"
        assert self.process.wait(timeout=30) == 0


@contextmanager
def writing(path: Path) -> Iterator[Writer]:
    writer = Writer(path)
    try:
        yield writer
    finally:
        if writer.process.poll() is None:
            writer.process.kill()
            writer.process.wait()


def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


def snapshot(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), path.stat().st_mtime_ns, listing(path)


def agenttui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], capture_output=True, text=True, timeout=120, env=ENV, check=False
    )


async def run_ids(path: Path) -> list[str]:
    async with await SQLiteStore.open(path, read_only=True) as store:
        return [run_id async for run_id in store.runs()]


async def browse_and_quit(path: Path, *, meanwhile: Writer | None = None) -> None:
    """The TUI opened on ``path``, a run opened, and closed; ``meanwhile`` writes a run and closes
    while the TUI is open."""
    app = AgentTuiApp(str(path))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        app.open_run("refund-a1002")
        await settle(pilot)
        if meanwhile is not None:
            assert meanwhile.tell("insert written-meanwhile") == "inserted"
            meanwhile.close()
        await pilot.press("escape")
        await settle(pilot)


async def test_reads_leave_the_file_and_its_directory_as_they_were(demo_db: Path) -> None:
    before = snapshot(demo_db)
    for read in READS:
        result = agenttui(read[0], str(demo_db), *read[1:])
        assert result.returncode == 0, (read, result.stderr)
        assert snapshot(demo_db) == before, read
    await browse_and_quit(demo_db)
    assert snapshot(demo_db) == before


async def test_a_reader_that_outlives_a_writer_leaves_no_file(demo_db: Path) -> None:
    """The reader made the pair; a writer wrote through it and closed first, so could not remove
    it: the reader's close does, once the writer's commits are in the file."""
    reader = await SQLiteStore.open(demo_db, read_only=True)
    assert [e.name async for e in reader.load("refund-a1002")][:1] == ["@journal"]
    with writing(demo_db) as writer:
        assert writer.tell("insert w-1") == "inserted"
        assert [e.data async for e in reader.load("w-1")] == [HEADER]  # the reader sees the commit
        writer.close()
    await reader.close()
    assert listing(demo_db) == ["demo.db"]
    assert "w-1" in await run_ids(demo_db)  # nothing lost: the commit is in the file


async def test_the_tui_outliving_a_writer_leaves_no_file(demo_db: Path) -> None:
    """A service writing when the TUI opens, that stops while it is open: its pair is removed
    when the TUI closes, as the service's own close would have with no reader about."""
    with writing(demo_db) as writer:
        await browse_and_quit(demo_db, meanwhile=writer)
    assert listing(demo_db) == ["demo.db"]
    assert "written-meanwhile" in await run_ids(demo_db)


async def test_a_live_writers_files_stay_while_it_writes(demo_db: Path) -> None:
    """A reader that made the pair, and readers that found it there, close while a writer has the
    store open: the pair is the writer's now, and it writes on through it."""
    reader = await SQLiteStore.open(demo_db, read_only=True)  # it makes the pair
    assert [e.name async for e in reader.load("refund-a1002")][:1] == ["@journal"]
    with writing(demo_db) as writer:
        assert writer.tell("insert w-1") == "inserted"
        await reader.close()
        assert {"demo.db-wal", "demo.db-shm"} <= set(listing(demo_db))
        for read in READS:
            assert agenttui(read[0], str(demo_db), *read[1:]).returncode == 0, read
            assert {"demo.db-wal", "demo.db-shm"} <= set(listing(demo_db)), read
        assert writer.tell("insert w-2") == "inserted"
        assert {"w-1", "w-2"} <= set(await run_ids(demo_db))
        writer.close()
    assert listing(demo_db) == ["demo.db"]  # the last to close, the writer removed them
    assert {"w-1", "w-2"} <= set(await run_ids(demo_db))


def test_a_wal_left_without_its_shm_is_read_and_no_shm_stays(demo_db: Path, tmp_path: Path) -> None:
    """A journal copied with its ``-wal`` (commits not yet in the file) but not its ``-shm``: the
    reader must make a ``-shm`` to read it, and removes it again (the commits moved into the file,
    the ``-wal`` with it), leaving no file that was not there."""
    copy = tmp_path / "copy" / "demo.db"
    copy.parent.mkdir()
    with closing(sqlite3.connect(demo_db, isolation_level=None)) as conn:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES ('in-the-wal', '@journal', ?)", (HEADER,))
        shutil.copy(demo_db, copy)
        shutil.copy(f"{demo_db}-wal", f"{copy}-wal")
    before = listing(copy)
    assert before == ["demo.db", "demo.db-wal"]
    listed = agenttui("runs", str(copy))
    assert listed.returncode == 0 and "in-the-wal" in listed.stdout, listed.stderr
    assert set(listing(copy)) <= set(before) and "demo.db-shm" not in listing(copy)
    shown = agenttui("show", str(copy), "in-the-wal")
    assert shown.returncode == 0 and "@journal" in shown.stdout, shown.stderr
    assert set(listing(copy)) <= set(before)
