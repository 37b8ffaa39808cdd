"""``agenttui demo`` run again on its SQLite store: opened as it stands, what a person did in it
kept; ``--fresh`` rebuilds it (PostgreSQL: tests/tui/test_demo_postgres.py)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from agenttui.journal import Journal
from agenttui.stores.sqlite import SQLiteStore

APPROVAL = "approval:call_1_0"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=180
    )


def names(path: Path, run_id: str) -> list[str]:
    async def read() -> list[str]:
        store = await SQLiteStore.open(path, read_only=True)
        try:
            return [r.name for r in await Journal(store).history(run_id)]
        finally:
            await store.close()

    return asyncio.run(read())


def test_the_demo_run_again_opens_as_it_stands_and_fresh_rebuilds_it(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    built = cli("demo", "--path", str(path), "--no-tui", "--bulk-turns", "2")
    assert built.returncode == 0 and "17 runs written" in built.stderr, built.stderr
    approved = cli("approve", str(path), "refund-a1005", "call_1_0", "--approver", "ana")
    assert approved.returncode == 0, approved.stderr
    assert APPROVAL in names(path, "refund-a1005")

    again = cli("demo", "--path", str(path), "--no-tui", "--bulk-turns", "2")
    assert again.returncode == 0, again.stderr
    assert f"{path} already holds the demo: opening it as it stands (--fresh rebuilds it)" in again.stderr
    assert "runs written" not in again.stderr and again.stdout.strip() == str(path)
    assert APPROVAL in names(path, "refund-a1005")  # what the person did is kept

    fresh = cli("demo", "--path", str(path), "--no-tui", "--bulk-turns", "2", "--fresh")
    assert fresh.returncode == 0 and "17 runs written" in fresh.stderr, fresh.stderr
    assert APPROVAL not in names(path, "refund-a1005")  # rebuilt: the demo as it is made


def test_a_demo_store_holding_a_saved_fork_is_still_the_demo(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    assert cli("demo", "--path", str(path), "--no-tui", "--bulk-turns", "2").returncode == 0
    saved = subprocess.run(
        [sys.executable, "-m", "agenttui", "fork", str(path), "refund-a1002", "--at", "@llm/3", "--set", "-",
         "--save", "--yes"],
        input='{"role":"assistant","parts":[{"type":"text","text":"Done."}]}', check=False, capture_output=True,
        text=True, timeout=180,
    )  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    again = cli("demo", "--path", str(path), "--no-tui", "--bulk-turns", "2")
    assert again.returncode == 0 and "opening it as it stands" in again.stderr, again.stderr
    assert names(path, "refund-a1002~fork-1")[-1] == "fork:origin"
