"""Corrupt and foreign stores: a clear message in the CLI and the TUI, the rest still shows, nothing written."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import asyncpg
import pytest
from click.testing import CliRunner

from agenttui.cli import main
from agenttui.journal import Journal, Record, StepKind, encode_record
from agenttui.stores.base import stored_entry
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.runs import RunsScreen
from tests.pg import PostgresCluster
from tests.tui.conftest import screen_of, settle, status_of


def snapshot(path: Path) -> tuple[bytes, int, list[str]]:
    return path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in path.parent.iterdir())


async def _store_with_bad_runs(path: Path) -> None:
    store = await SQLiteStore.open(path)
    journal = Journal(store)
    await journal.append("good", Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}'))
    await journal.append("not-json", Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}'))
    await store.insert("not-json", "@llm/0", b"\x00\xffnot json at all")
    await journal.append("not-json", Record("note", StepKind.VALUE, result=b'"still shown"'))
    await journal.append("wrong-name", Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}'))
    await store.insert("wrong-name", "@llm/0", encode_record(Record("@llm/7", StepKind.MODEL)))
    await store.insert(
        "headerless", "run:start", encode_record(Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
    )
    await store.insert(
        "future", "@journal", encode_record(Record("@journal", StepKind.HEADER, format="bide.journal.v2"))
    )
    await journal.append("redacted", Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
    await store.insert("redacted", "tool:c1", b'{"redacted":{"leaf_hash":"ab12","at_ms":1}}')
    await store.close()


@pytest.fixture
def bad_runs(tmp_path: Path) -> Path:
    path = tmp_path / "bad.db"
    asyncio.run(_store_with_bad_runs(path))
    return path


def test_bad_runs_show_as_unreadable_and_the_rest_still_shows(bad_runs: Path) -> None:
    before = snapshot(bad_runs)
    runner = CliRunner()
    listing = runner.invoke(main, ["runs", str(bad_runs)])
    assert listing.exit_code == 0, listing.output
    lines = {line.split()[0]: line for line in listing.output.splitlines()}
    assert "stalled" in lines["good"]
    # A headerless journal is one an SDK before v0.9 wrote: read, and marked legacy.
    assert "stalled" in lines["headerless"] and "[legacy]" in lines["headerless"]
    for run_id, reason in [
        ("not-json", "not a journal record"),
        ("wrong-name", "stored as"),
        ("future", "bide.journal.v2"),
    ]:
        assert "unreadable" in lines[run_id] and reason in lines[run_id], lines[run_id]
    shown = runner.invoke(main, ["show", str(bad_runs), "not-json"])
    assert shown.exit_code == 0 and "unreadable" in shown.output and "still shown" in shown.output
    redacted = runner.invoke(main, ["show", str(bad_runs), "redacted"])
    assert "redacted" in redacted.output
    assert snapshot(bad_runs) == before


def make_corpus(tmp_path: Path) -> dict[str, Path]:
    """Files that are not (good) journal stores."""
    corpus: dict[str, Path] = {}
    good = tmp_path / "good.db"
    # Its own thread: async tests call this too, and asyncio.run cannot nest in their loop.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _store_with_bad_runs(good)).result()
    data = good.read_bytes()
    (truncated := tmp_path / "truncated.db").write_bytes(data[: len(data) // 3])
    (text := tmp_path / "notes.db").write_text("these are my notes, not a database\n")
    other = tmp_path / "other-app.db"
    with closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    future = tmp_path / "future.db"
    future.write_bytes(data)
    with closing(sqlite3.connect(future)) as conn, conn:
        conn.execute("UPDATE bide_schema_version SET version = 2")
    (empty := tmp_path / "empty.db").write_bytes(b"")
    corpus.update(
        truncated=truncated, text=text, other=other, future=future, empty=empty, missing=tmp_path / "missing.db"
    )
    return corpus


@pytest.mark.parametrize("kind", ["truncated", "text", "other", "future", "empty", "missing"])
def test_a_file_that_is_no_journal_gives_one_clear_line(tmp_path: Path, kind: str) -> None:
    path = make_corpus(tmp_path)[kind]
    before = snapshot(path) if path.exists() else None
    result = CliRunner().invoke(main, ["runs", str(path)])
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert message.startswith("agenttui: ") and len(message.splitlines()) == 1 and "Traceback" not in message
    assert (snapshot(path) if path.exists() else None) == before


@pytest.mark.parametrize("kind", ["text", "other", "future"])
async def test_the_tui_exits_with_the_same_clear_line(tmp_path: Path, kind: str) -> None:
    path = make_corpus(tmp_path)[kind]
    before = snapshot(path)
    app = AgentTuiApp(str(path), tail=False)
    async with app.run_test() as pilot:
        await settle(pilot)
    assert app.return_code == 2 and app.failure and "\n" not in app.failure
    assert snapshot(path) == before


async def test_the_tui_shows_bad_runs_and_writes_nothing(bad_runs: Path) -> None:
    from agenttui.runs.statuses.status import RunState

    before = snapshot(bad_runs)
    app = AgentTuiApp(str(bad_runs), tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        rows = {r.run_id: status_of(r) for r in screen_of(app, RunsScreen).table.items}
        assert rows["good"].state == RunState.STALLED
        assert all(rows[r].state == RunState.UNREADABLE for r in ("not-json", "wrong-name", "future"))
        assert rows["headerless"].state == RunState.STALLED and rows["headerless"].legacy
        for run_id in rows:
            app.open_run(run_id)
            await settle(pilot)
            await pilot.press("G", "w", "c", "escape")
            await settle(pilot)
    assert snapshot(bad_runs) == before


@pytest.mark.parametrize(
    "command",
    [["approve", "run-1", "call-1"], ["cancel", "run-1"], ["recover", "--agent", "agenttui.demo.build:factory"]],
)
def test_a_write_to_a_missing_file_fails_and_creates_none(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "mistyped.db"
    result = CliRunner().invoke(main, [command[0], str(path), *command[1:]])
    assert result.exit_code == 2, result.output
    assert "no such file" in result.output and "Traceback" not in result.output
    assert not path.exists()


def test_a_write_to_a_postgres_schema_without_a_journal_fails_and_creates_none(
    postgres_cluster: PostgresCluster,
) -> None:
    schema = "agenttui_mistyped_schema"
    result = CliRunner().invoke(main, ["cancel", f"{postgres_cluster.dsn}?schema={schema}", "run-1"])
    assert result.exit_code == 2, result.output
    assert "holds no journal" in result.output and "Traceback" not in result.output

    async def schema_exists() -> bool:
        conn = await asyncpg.connect(postgres_cluster.dsn)
        try:
            return bool(await conn.fetchval("SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = $1", schema))
        finally:
            await conn.close()

    assert not asyncio.run(schema_exists())


def test_a_name_a_driver_hands_back_as_a_memoryview_reads_as_text() -> None:
    entry = stored_entry(7, memoryview(b"tool:c1"), b"{}")
    assert (entry.name, entry.data, entry.damage) == ("tool:c1", b"{}", "its name is stored as memoryview")
