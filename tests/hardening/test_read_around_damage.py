"""One bad row never blinds the view: a row of the wrong type, a damaged page or a broken lease
table makes that run (or that lease) unknown, and every other run still reads."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agenttui.journal import Journal, Record, StepKind
from agenttui.runs.status import RunState, list_statuses
from agenttui.stores.sqlite import SQLiteStore


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=60
    )


async def _good_runs(path: Path, *, big: bool = False) -> None:
    store = await SQLiteStore.open(path)
    try:
        journal = Journal(store)
        for run_id in ("a-good", "z-good"):
            await journal.append(run_id, Record("run:start", StepKind.VALUE, result=b'{"input":"hi","kind":"agent"}'))
        if big:  # a record that fills overflow pages, the marker in the middle of them
            await journal.append(
                "m-big",
                Record(
                    "run:start",
                    StepKind.VALUE,
                    result=json.dumps({"input": "Q" * 60_000 + "MARKER" + "Q" * 60_000}).encode(),
                ),
            )
    finally:
        await store.close()


def test_rows_of_the_wrong_type_are_unreadable_runs_not_errors(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    asyncio.run(_good_runs(path))
    with sqlite3.connect(path) as conn:  # what a writer that binds bytes leaves, under the SDK's own DDL
        conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", (b"bytes-id", "@journal", b"{}"))
        conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", ("a-good", b"bytes-name", b"{}"))
    listing = cli("runs", str(path), "--json")
    assert listing.returncode == 0, listing.stderr
    runs = {r["run_id"]: r for r in json.loads(listing.stdout)}
    assert runs["a-good"]["status"] == "unreadable" and "its name is stored as a blob" in runs["a-good"]["detail"]
    assert runs["bytes-id (id stored as a blob)"]["status"] == "unreadable"
    assert "not stored as text" in runs["bytes-id (id stored as a blob)"]["detail"]
    assert runs["z-good"]["status"] == "stalled"
    assert cli("show", str(path), "a-good").returncode == 0


def test_a_damaged_page_marks_its_run_and_the_rest_go_on(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    asyncio.run(_good_runs(path, big=True))
    data = bytearray(path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    page = data.index(b"MARKER") // page_size * page_size
    data[page : page + 4] = b"\xff\xff\xff\xff"  # the overflow page's link to the next one: nowhere
    path.write_bytes(bytes(data))

    async def statuses() -> dict[str, tuple[RunState, str]]:
        store = await SQLiteStore.open(path, read_only=True)
        try:
            return {s.run_id: (s.state, s.detail) async for s in list_statuses(store)}
        finally:
            await store.close()

    found = asyncio.run(statuses())
    assert found["a-good"][0] == found["z-good"][0] == RunState.STALLED
    assert found["m-big"][0] == RunState.UNREADABLE and "could not be read (3 tries)" in found["m-big"][1], found[
        "m-big"
    ]
    assert cli("runs", str(path)).returncode == 0


@pytest.mark.parametrize(
    "damage", ["DROP TABLE bide_leases", "UPDATE bide_leases SET holder = x'00ff', expiry = 'soon'"]
)
def test_a_broken_lease_table_is_a_lease_unknown(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "leases.db"
    asyncio.run(_good_runs(path))
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO bide_leases VALUES ('a-good', 'h#1', 1e12)")
        conn.execute(damage)
    listing = cli("runs", str(path), "--json")
    assert listing.returncode == 0, listing.stderr
    runs = json.loads(listing.stdout)
    assert len(runs) == 2 and all(r["status"] == "stalled" for r in runs)
    assert runs[0]["lease_unknown"] is True
