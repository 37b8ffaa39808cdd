"""SQLite-only behaviour: the SDK's exact layout, refusals, legacy files, read-only on disk, processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from agenttui.errors import (
    ConfigError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreConnectionError,
    StoreError,
)
from agenttui.journal import keys
from agenttui.stores.changes import follow_changes
from agenttui.stores.sqlite import SQLiteStore, _switch_to_wal

REPO = Path(__file__).resolve().parents[2]


async def entries(store: SQLiteStore, run_id: str) -> list[tuple[int, str, bytes]]:
    return [(e.seq, e.name, e.data) async for e in store.load(run_id)]


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain autocommit sqlite3 connection, closed afterwards (an open one would keep the WAL files)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


def table_info(path: Path, table: str) -> list[tuple[Any, ...]]:
    with raw(path) as conn:
        return conn.execute(f"PRAGMA table_info({table})").fetchall()


def snapshot(path: Path) -> tuple[bytes, int, list[str]]:
    """The file's bytes and mtime and the directory's listing: what a read-only open must not change."""
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


def make_legacy(path: Path, rows: list[tuple[str, int, str, bytes]], journal_mode: str = "wal") -> None:
    """A journal as SDK v0.8.0 and earlier wrote it: one ``steps`` table, ``seq`` per run."""
    with raw(path) as conn:
        conn.execute(f"PRAGMA journal_mode = {journal_mode}")
        conn.execute(
            "CREATE TABLE steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL,"
            " data BLOB NOT NULL, PRIMARY KEY (run_id, name))"
        )
        conn.execute("CREATE INDEX idx_steps_run_seq ON steps(run_id, seq)")
        conn.executemany("INSERT INTO steps (run_id, seq, name, data) VALUES (?, ?, ?, ?)", rows)


# -- the layout ----------------------------------------------------------------------------------


async def test_a_new_file_gets_the_sdks_tables(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    store = await SQLiteStore.open(path)
    assert store.layout == "current" and not store.read_only
    assert store.display_url == f"sqlite://{path}"
    await store.close()

    assert table_info(path, "bide_steps") == [
        (0, "seq", "INTEGER", 0, None, 1),
        (1, "run_id", "TEXT", 1, None, 0),
        (2, "name", "TEXT", 1, None, 0),
        (3, "data", "BLOB", 1, None, 0),
    ]
    assert table_info(path, "bide_leases") == [
        (0, "run_id", "TEXT", 0, None, 1),
        (1, "holder", "TEXT", 1, None, 0),
        (2, "expiry", "REAL", 1, None, 0),
    ]
    assert table_info(path, "bide_schema_version") == [
        (0, "id", "INTEGER", 0, None, 1),
        (1, "version", "INTEGER", 1, None, 0),
    ]
    with raw(path) as conn:
        tables = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
        indexes = conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'").fetchall()
        unique = [
            [col for _, _, col in conn.execute(f"PRAGMA index_info({name})")]
            for _, name, is_unique, *_ in conn.execute("PRAGMA index_list(bide_steps)")
            if is_unique
        ]
        run_seq = [col for _, _, col in conn.execute("PRAGMA index_info(bide_steps_run_seq)")]
        version = conn.execute("SELECT id, version FROM bide_schema_version").fetchall()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert set(tables) == {"bide_steps", "bide_leases", "bide_schema_version"}
    assert "CHECK (id = 1)" in tables["bide_schema_version"]
    assert ("bide_steps_run_seq", "bide_steps") in indexes
    assert unique == [["run_id", "name"]]
    assert run_seq == ["run_id", "seq"]
    assert version == [(1, 1)]
    assert mode == "wal"


async def test_seq_is_the_global_rowid_in_commit_order(tmp_path: Path) -> None:
    async with await SQLiteStore.open(tmp_path / "journal.db") as store:
        a = await store.insert("run-a", "x", b"1")
        b = await store.insert("run-b", "x", b"2")
        c = await store.insert("run-a", "y", b"3")
    assert a.entry.seq < b.entry.seq < c.entry.seq


async def test_the_connection_waits_for_locks(tmp_path: Path) -> None:
    async with await SQLiteStore.open(tmp_path / "journal.db") as store:
        assert await store._fetch("PRAGMA busy_timeout", (), "test") == [(30000,)]


async def test_a_table_prefix_names_every_table(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path, table_prefix="acme_") as store:
        await store.insert("run-1", "a", b"1")
        assert await store.acquire_lease("run-1", "h", ttl=30)
    with raw(path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"acme_steps", "acme_leases", "acme_schema_version", "acme_steps_run_seq"} <= names
    assert not any(name.startswith("bide_") for name in names)


@pytest.mark.parametrize("prefix", ["", "1x_", "a-b", "x; DROP TABLE t; --", "bide."])
async def test_a_bad_table_prefix_is_refused_before_touching_the_disk(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(ConfigError):
        await SQLiteStore.open(tmp_path / "journal.db", table_prefix=prefix)
    assert list(tmp_path.iterdir()) == []


async def test_the_switch_to_wal_waits_for_another_writer(tmp_path: Path) -> None:
    # Processes opening a new file together: one switches it to WAL while another holds the write
    # lock, and SQLite answers SQLITE_BUSY at once instead of waiting. The switch must retry.
    path = tmp_path / "journal.db"
    with raw(path) as blocker:
        blocker.execute("BEGIN IMMEDIATE")  # the new file is in rollback mode: this is its write lock
        loop = asyncio.get_running_loop()
        started = loop.time()
        loop.call_later(0.2, blocker.rollback)
        # In a thread of its own, as the store's connection runs it (``_connect``).
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            await asyncio.to_thread(_switch_to_wal, conn)
            assert loop.time() - started >= 0.2
            assert conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
        finally:
            conn.close()


# -- refusals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("read_only", [False, True], ids=["write", "read-only"])
async def test_a_newer_schema_version_is_refused(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "journal.db"
    await (await SQLiteStore.open(path)).close()
    with raw(path) as conn:
        conn.execute("UPDATE bide_schema_version SET version = 2")
    before = snapshot(path)
    with pytest.raises(SchemaVersionError, match="version 2"):
        await SQLiteStore.open(path, read_only=read_only)
    assert snapshot(path) == before


@pytest.mark.parametrize("read_only", [False, True], ids=["write", "read-only"])
async def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 200)
    before = snapshot(path)
    with pytest.raises(StoreConnectionError, match="is not a SQLite database") as caught:
        await SQLiteStore.open(path, read_only=read_only)
    assert "\n" not in caught.value.message
    assert snapshot(path) == before


@pytest.mark.parametrize("read_only", [False, True], ids=["write", "read-only"])
async def test_a_truncated_file_fails_with_a_store_error(tmp_path: Path, read_only: bool) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        for n in range(300):
            await store.insert(f"run-{n % 3}", f"s{n}", os.urandom(500))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    with pytest.raises(StoreError):
        async with await SQLiteStore.open(path, read_only=read_only) as store:
            async for run_id in store.runs():
                await entries(store, run_id)


async def test_another_applications_file_holds_no_journal(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with raw(path) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("CREATE TABLE steps (recipe TEXT, step TEXT)")  # unrelated, not a legacy journal
    before = snapshot(path)
    with pytest.raises(SchemaVersionError, match="holds no agenttui/Bide journal"):
        await SQLiteStore.open(path, read_only=True)
    assert snapshot(path) == before
    # Opened for writing, the journal's tables join the application's, as the SDK does.
    async with await SQLiteStore.open(path) as store:
        assert store.layout == "current"
        await store.insert("run-1", "a", b"1")
    assert table_info(path, "customers")


async def test_a_write_to_another_applications_file_is_refused_and_leaves_it_as_it_was(tmp_path: Path) -> None:
    """``create=False`` is a write meant for a journal that exists (``agenttui cancel app.db run``):
    a database that holds none must not become one on the way to "no such run"."""
    path = tmp_path / "app.db"
    with raw(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    before = snapshot(path)
    with pytest.raises(SchemaVersionError, match=r"holds no agenttui/Bide journal.*nothing was written"):
        await SQLiteStore.open(path, create=False)
    assert snapshot(path) == before


@pytest.mark.parametrize(
    "made",
    [
        "CREATE TABLE bide_steps (seq, run_id, name, data)",
        "CREATE TABLE bide_steps (seq INTEGER PRIMARY KEY, run_id TEXT NOT NULL, name TEXT NOT NULL,"
        " data BLOB NOT NULL, UNIQUE (run_id, name))",
    ],
    ids=["no-types-no-constraints", "no-other-tables"],
)
async def test_a_journal_table_another_program_laid_out_is_read_but_never_completed(tmp_path: Path, made: str) -> None:
    """Opening it for writing would add the tables, the index and WAL the SDK makes, changing the
    file before a command knows whether it writes anything: it opens read-only only."""
    path = tmp_path / "foreign.db"
    with raw(path) as conn:
        conn.execute(made)
        conn.execute("INSERT INTO bide_steps (seq, run_id, name, data) VALUES (1, 'run-1', '@journal', x'7b7d')")
    before = snapshot(path)
    for create in (True, False):
        with pytest.raises(SchemaVersionError, match=r"the SDK did not lay out.*no bide_leases table") as caught:
            await SQLiteStore.open(path, create=create)
        assert "\n" not in caught.value.message
        assert snapshot(path) == before
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert [r async for r in store.runs()] == ["run-1"]
    assert snapshot(path) == before


async def test_a_missing_file_read_only_is_a_connection_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.db"
    with pytest.raises(StoreConnectionError) as caught:
        await SQLiteStore.open(path, read_only=True)
    assert str(path) in caught.value.message and "\n" not in caught.value.message
    assert list(tmp_path.iterdir()) == []


async def test_an_empty_file_opened_for_writing_is_initialised(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    path.touch()
    async with await SQLiteStore.open(path) as store:
        assert (await store.insert("run-1", "a", b"1")).won


async def test_a_closed_store_raises_a_store_error(tmp_path: Path) -> None:
    store = await SQLiteStore.open(tmp_path / "journal.db")
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(StoreError, match="closed"):
        await store.get("run-1", "a")


# -- the legacy layout ---------------------------------------------------------------------------

LEGACY_ROWS = [
    # Inserted out of seq order, so rowid order is not the journal order.
    ("order-1", 2, "toolu_01", b'{"name":"toolu_01","kind":"tool_result"}'),
    ("order-1", 0, "@llm/0", b'{"name":"@llm/0","kind":"model"}'),
    ("order-2", 0, "@llm/0", b'{"name":"@llm/0","kind":"model"}'),
    ("order-1", 1, "attempt:toolu_01", b'{"name":"attempt:toolu_01","kind":"attempt"}'),
    ("order-1", 3, "@llm/1", b'{"name":"@llm/1","kind":"model"}'),
    ("order-1", 4, "run:complete", b'{"name":"run:complete","kind":"value"}'),
]


async def test_a_legacy_file_opens_read_only_and_loads_in_per_run_order(tmp_path: Path) -> None:
    path = tmp_path / "v070.db"
    make_legacy(path, LEGACY_ROWS)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert store.layout == "legacy" and store.read_only
        assert [(seq, name) for seq, name, _ in await entries(store, "order-1")] == [
            (0, "@llm/0"),
            (1, "attempt:toolu_01"),
            (2, "toolu_01"),
            (3, "@llm/1"),
            (4, "run:complete"),
        ]
        assert [e.name async for e in store.load("order-1", after=2)] == ["@llm/1", "run:complete"]
        got = await store.get("order-1", "toolu_01")
        assert got is not None and got.data == LEGACY_ROWS[0][3]
        assert [r async for r in store.runs()] == ["order-1", "order-2"]
        assert [r async for r in store.runs(prefix="order-", after="order-1")] == ["order-2"]
        assert [r async for r in store.runs(exclude_holding=["run:complete"])] == ["order-2"]
        assert [r async for r in store.runs(lease_lapsed=True)] == []
        assert await store.get_lease("order-1") is None
        with pytest.raises(ReadOnlyStoreError):
            await store.insert("order-1", "@llm/2", b"{}")
        with pytest.raises(ReadOnlyStoreError):
            await store.acquire_lease("order-1", "h", ttl=30)


@pytest.mark.parametrize("journal_mode", ["wal", "delete"])
async def test_a_legacy_file_refuses_writing_and_stays_as_it_was(tmp_path: Path, journal_mode: str) -> None:
    path = tmp_path / "v070.db"
    make_legacy(path, LEGACY_ROWS, journal_mode)
    before = snapshot(path)
    with pytest.raises(SchemaVersionError, match=r"legacy.*read-only"):
        await SQLiteStore.open(path)
    assert snapshot(path) == before


async def test_an_empty_legacy_table_does_not_stop_initialising(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    make_legacy(path, [])
    async with await SQLiteStore.open(path) as store:
        assert store.layout == "current"


async def test_the_current_layout_wins_over_a_legacy_table(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await store.insert("order-9", "@journal", b"current")
    with raw(path) as conn:
        conn.execute("CREATE TABLE steps (run_id TEXT, seq INTEGER, name TEXT, data BLOB)")
        conn.execute("INSERT INTO steps VALUES ('order-1', 0, '@llm/0', x'00')")
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert store.layout == "current"
        assert [r async for r in store.runs()] == ["order-9"]


# -- read-only on disk -----------------------------------------------------------------------------


async def test_read_only_full_read_changes_nothing_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        for run in range(20):
            for n in range(30):
                await writer.insert(f"run-{run}", f"s{n}", b"x" * 100)
        await writer.acquire_lease("run-1", "h", ttl=30)
    before = snapshot(path)
    # Two handles at once: the files SQLite needs while they read are gone once both close.
    reader, second = await SQLiteStore.open(path, read_only=True), await SQLiteStore.open(path, read_only=True)
    async for run_id in reader.runs():
        assert len(await entries(reader, run_id)) == 30
        assert len(await entries(second, run_id)) == 30
        await reader.get_lease(run_id)
    await reader.close()
    await second.close()
    assert snapshot(path) == before


async def test_summing_runs_up_on_two_connections_changes_nothing_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as writer:
        for run in range(4):
            await writer.insert(f"run-{run}", "@journal", b'{"name":"@journal","kind":"header"}')
            await writer.insert(f"run-{run}", "run:complete", b'{"name":"run:complete","kind":"value"}')
    before = snapshot(path)
    reader = await SQLiteStore.open(path, read_only=True)
    # Pages alternate between the handle's connection and a second one: both at once, twice.
    pages = [["run-0", "run-1"], ["run-2", "run-3"]] * 2
    summed = await asyncio.gather(*(reader.summaries(page, keys.END_MARKERS) for page in pages))
    assert [sorted(s.run_id for s in summaries) for summaries in summed] == pages
    assert all(not s.suspect and s.end is not None for summaries in summed for s in summaries)
    await reader.close()
    assert snapshot(path) == before


async def test_a_legacy_read_changes_nothing_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "v070.db"
    make_legacy(path, LEGACY_ROWS)
    before = snapshot(path)
    async with await SQLiteStore.open(path, read_only=True) as store:
        async for run_id in store.runs():
            await entries(store, run_id)
    assert snapshot(path) == before


async def test_read_only_sees_later_commits_and_leaves_a_live_writers_files(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    writer = await SQLiteStore.open(path)
    await writer.insert("run-1", "a", b"1")
    reader = await SQLiteStore.open(path, read_only=True)
    assert [n for _, n, _ in await entries(reader, "run-1")] == ["a"]
    await writer.insert("run-1", "b", b"2")
    assert [n for _, n, _ in await entries(reader, "run-1")] == ["a", "b"]
    await reader.close()
    assert {"journal.db-wal", "journal.db-shm"} <= {p.name for p in tmp_path.iterdir()}
    assert [n for _, n, _ in await entries(writer, "run-1")] == ["a", "b"]
    await writer.close()
    assert [p.name for p in tmp_path.iterdir()] == ["journal.db"]


# -- processes ------------------------------------------------------------------------------------

RACER = textwrap.dedent(
    """
    import asyncio, json, sys
    from agenttui.stores.sqlite import SQLiteStore

    async def main(path, writer, out):
        print("ready", flush=True)
        sys.stdin.readline()  # start together with the other process, opening the new file too
        stores = await asyncio.gather(*(SQLiteStore.open(path) for _ in range(8)))

        async def race(task, store):
            # Task t of each process starts at name 125 * t: the two processes' task t race head
            # to head on the same names, and the eight tasks spread the wins over all names.
            seen = []
            for i in range(1000):
                n = (i + 125 * task) % 1000
                result = await store.insert("race", f"step-{n}", f"{writer}/{task}".encode())
                seen.append([result.entry.name, result.entry.data.decode(), result.won])
            return seen

        seen = await asyncio.gather(*(race(task, store) for task, store in enumerate(stores)))
        for store in stores:
            await store.close()
        with open(out, "w") as f:
            json.dump([row for rows in seen for row in rows], f)

    asyncio.run(main(*sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_two_processes_racing_on_every_name_agree_on_one_winner(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with ExitStack() as processes:
        procs = [
            processes.enter_context(
                subprocess.Popen(
                    [sys.executable, "-c", RACER, str(path), f"p{i}", str(tmp_path / f"p{i}.json")],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            )
            for i in range(2)
        ]
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(timeout=300) == 0

    with raw(path) as conn:
        stored = dict(conn.execute("SELECT name, CAST(data AS TEXT) FROM bide_steps WHERE run_id = 'race'"))
    assert len(stored) == 1000
    seen = [row for i in range(2) for row in json.loads((tmp_path / f"p{i}.json").read_text())]
    assert len(seen) == 2 * 8 * 1000
    wins: dict[str, int] = {}
    for name, data, won in seen:
        assert data == stored[name]  # every caller saw the winner's bytes
        wins[name] = wins.get(name, 0) + won
    assert wins == dict.fromkeys(stored, 1)
    assert {data.split("/")[0] for data in stored.values()} <= {"p0", "p1"}


def test_a_program_that_never_closes_its_store_still_exits(tmp_path: Path) -> None:
    # aiosqlite's worker threads are not daemons: a script that raised before close() hung at exit.
    script = textwrap.dedent(f"""
        import asyncio
        from agenttui.stores.sqlite import SQLiteStore

        async def main():
            store = await SQLiteStore.open({str(tmp_path / "left-open.db")!r})
            await store.insert("run-1", "a", b"1")
            raise RuntimeError("the caller's bug, before close()")

        asyncio.run(main())
    """)
    child = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=30)
    assert child.returncode == 1 and "the caller's bug" in child.stderr
    with closing(sqlite3.connect(tmp_path / "left-open.db")) as conn:  # the committed insert is there
        assert conn.execute("SELECT name FROM bide_steps").fetchall() == [("a",)]


async def test_a_change_feed_that_waits_to_watch_reports_what_was_committed_meanwhile(tmp_path: Path) -> None:
    # A viewer starts the file watcher once it has shown its first rows; a commit made while the
    # feed waited (after the viewer read the store) must still reach it.
    store = await SQLiteStore.open(tmp_path / "feed.db")
    waiting, go, heard = asyncio.Event(), asyncio.Event(), asyncio.Event()
    changed: list[set[str] | None] = []

    async def ready() -> None:
        waiting.set()  # the feed has noted where the store is
        await go.wait()

    def on_change(runs: set[str] | None) -> None:
        changed.append(runs)
        heard.set()

    feed = asyncio.create_task(follow_changes(store, on_change, lambda _: None, ready=ready))
    try:
        await asyncio.wait_for(waiting.wait(), 10)
        await store.insert("meanwhile", "a", b"1")
        go.set()
        await asyncio.wait_for(heard.wait(), 10)
        assert changed == [{"meanwhile"}]
    finally:
        feed.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await feed
        await store.close()
