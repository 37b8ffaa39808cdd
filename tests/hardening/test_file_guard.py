"""One guarded helper replaces or deletes files (``stores.files``): no command, --force or not,
replaces the store it reads under any spelling, or a journal of runs agenttui did not write."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from agenttui.cli import main
from agenttui.journal import Journal, Record, StepKind
from agenttui.stores.files import FileRefusedError, FileTakenError, check_replaceable, same_file
from agenttui.stores.sqlite import SQLiteStore
from tests.hardening.hostile_corpus import build_odd_paths

RUN = "refund-a1002"
DONE = json.dumps({"role": "assistant", "parts": [{"type": "text", "text": "Done."}]})


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run_ids(path: Path) -> set[str]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return {run_id for (run_id,) in conn.execute("SELECT DISTINCT run_id FROM bide_steps")}


def spellings(store: Path, tmp_path: Path) -> list[str]:
    """The demo store named four other ways: relative with ./, sqlite://, through a symlink, a hard link."""
    symlink, hardlink = tmp_path / "alias.db", tmp_path / "hard.db"
    symlink.symlink_to(store)
    os.link(store, hardlink)
    relative = "./" + os.path.relpath(store)
    return [str(store), relative, f"sqlite://{store}", str(symlink), str(hardlink)]


@pytest.fixture
def foreign_journal(tmp_path: Path) -> Path:
    """A journal of someone's runs, which no agenttui command may replace."""
    path = tmp_path / "orders.db"

    async def build() -> None:
        store = await SQLiteStore.open(path)
        await Journal(store).append("order-1", Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}'))
        await store.close()

    asyncio.run(build())
    return path


def refused(result: Result, what: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and what in result.output, result.output
    assert "Traceback" not in result.output


def test_fork_into_the_source_store_is_refused_under_every_spelling(demo_db: Path, tmp_path: Path) -> None:
    runs, before = run_ids(demo_db), digest(demo_db)
    for spelling in spellings(demo_db, tmp_path):
        args = ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", "-", "--into", spelling, "--force"]
        refused(CliRunner().invoke(main, args, input=DONE), "the store being read")
    assert run_ids(demo_db) == runs and len(runs) > 1 and digest(demo_db) == before


def test_export_into_the_source_store_is_refused_under_every_spelling(demo_db: Path, tmp_path: Path) -> None:
    before = digest(demo_db)
    for spelling in spellings(demo_db, tmp_path):
        for jsonl in ([], ["--jsonl"]):
            args = ["export", str(demo_db), RUN, "-o", spelling, "--force", *jsonl]
            refused(CliRunner().invoke(main, args), "the store being read")
    assert digest(demo_db) == before


def test_a_journal_agenttui_did_not_write_is_never_replaced(demo_db: Path, foreign_journal: Path) -> None:
    before = digest(foreign_journal)
    fork = ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", "-", "--into", str(foreign_journal), "--force"]
    refused(CliRunner().invoke(main, fork, input=DONE), "a journal of runs agenttui did not write")
    export = ["export", str(demo_db), RUN, "-o", str(foreign_journal), "--force"]
    refused(CliRunner().invoke(main, export), "a journal of runs agenttui did not write")
    demo = ["demo", "--no-tui", "--bulk-turns", "2", "--path", str(foreign_journal), "--force"]
    refused(CliRunner().invoke(main, demo), "a journal of runs agenttui did not write")
    assert digest(foreign_journal) == before


def test_files_agenttui_wrote_are_replaced_when_asked(demo_db: Path, tmp_path: Path) -> None:
    """A bundle and a saved fork's file carry agenttui's manifest: --force replaces them."""
    bundle, fork = tmp_path / "bundle.db", tmp_path / "fork.db"
    export = ["export", str(demo_db), RUN, "-o", str(bundle)]
    fork_args = ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", "-", "--into", str(fork)]
    for args in (export, fork_args):
        assert CliRunner().invoke(main, args, input=DONE).exit_code == 0
        refused(CliRunner().invoke(main, args, input=DONE), "exists: nothing written (--force replaces it)")
        again = CliRunner().invoke(main, [*args, "--force"], input=DONE)
        assert again.exit_code == 0, again.output
    assert run_ids(fork) == {RUN}
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("demo")) == ["bundle.db", "fork.db"]


def test_fork_into_a_store_that_is_no_file_is_refused(demo_db: Path) -> None:
    for into in ("memory:", "postgresql://me@localhost/db"):
        args = ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", "-", "--into", into]
        refused(CliRunner().invoke(main, args, input=DONE), "--into takes a new SQLite file")


async def test_the_guard_knows_a_file_under_another_name(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    store.write_bytes(b"x")
    os.link(store, tmp_path / "hard.db")
    assert same_file(store, tmp_path / "hard.db")
    assert not same_file(store, tmp_path / "other.db")
    for side in ("-wal", "-shm"):
        with pytest.raises(FileRefusedError):
            await check_replaceable(f"{store}{side}", force=True, protect=[store])
    with pytest.raises(FileRefusedError, match="directory"):
        await check_replaceable(tmp_path, force=True)
    with pytest.raises(FileTakenError):
        await check_replaceable(store, force=False)
    assert await check_replaceable(store, force=True) == store


def test_only_a_new_or_regular_file_is_ever_written(demo_db: Path, tmp_path: Path) -> None:
    """Every output path of every command: a link is neither replaced nor written through (the
    refusal names its target), a device, a FIFO or a socket is never replaced, --force or not."""
    paths = build_odd_paths(tmp_path)
    before = {name: os.lstat(path) for name, (path, _) in paths.items()}
    for name, (path, kind) in paths.items():
        commands = [
            ["export", str(demo_db), RUN, "-o", str(path), "--force"],
            ["export", str(demo_db), RUN, "-o", str(path), "--force", "--jsonl"],
            ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", "-", "--into", str(path), "--force"],
            ["replay", str(demo_db), "--where", f"id={RUN}", "--junit", str(path)],
            ["demo", "--no-tui", "--bulk-turns", "2", "--path", str(path), "--force"],
        ]
        for args in commands:
            result = CliRunner().invoke(main, args, input=DONE)
            refused(result, kind)
            assert "only a new file or a regular one is written" in result.output, (name, args)
    for name, (path, _) in paths.items():
        after = os.lstat(path)
        assert (after.st_mode, after.st_ino) == (before[name].st_mode, before[name].st_ino), name
    assert (tmp_path / "kept.txt").read_text() == "mine"  # never written through the link
    assert (
        "'" + str(tmp_path / "kept.txt") + "'"
        in CliRunner().invoke(main, ["export", str(demo_db), RUN, "-o", str(paths["link"][0]), "--force"]).output
    )
