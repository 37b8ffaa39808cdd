"""One bad row never blinds the view: a row of the wrong type, a damaged page or a broken lease
table makes that run (or that lease) unknown, and every other run still reads."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from agenttui.errors import StoreDamageWarning
from agenttui.journal import Journal, Record, StepKind
from agenttui.runs.statuses.status import RunState, list_statuses
from agenttui.stores.sqlite import SQLiteStore
from tests.hardening.hostile_corpus import damaged_run_ids, index_leaf_page, smash_page, write_small_runs


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


def test_a_run_replays_though_its_lease_table_is_broken(tmp_path: Path) -> None:
    """A replay reads the lease only to tell the recorded status: a lease table that is gone
    makes that lease unknown, as in every status, not the replay an error."""
    from tests.gocorpus import write_corpus

    path = tmp_path / "no-leases.db"

    async def build() -> None:
        store = await SQLiteStore.open(path)
        try:
            await write_corpus(store)
        finally:
            await store.close()

    asyncio.run(build())
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE bide_leases")
    replayed = cli("replay", str(path), "go-weather", "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout)["verdict"] == "matches"


def test_a_run_whose_id_is_null_is_listed_as_such_and_opens(tmp_path: Path) -> None:
    """A table another program made may hold rows with no run id at all: they are listed under an
    id that says so, and read (as damage), like an id stored as a blob."""
    path = tmp_path / "null-id.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE bide_steps (seq INTEGER PRIMARY KEY, run_id, name, data)")
        conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES (NULL, '@journal', x'7b7d')")
        conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES ('a-run', '@journal', x'7b7d')")
    listing = cli("runs", str(path), "--json")
    assert listing.returncode == 0, listing.stderr
    runs = {r["run_id"]: r for r in json.loads(listing.stdout)}
    assert set(runs) == {"a-run", "None (id stored as NULL)"}
    assert runs["None (id stored as NULL)"]["steps"] == 1
    assert "not stored as text" in runs["None (id stored as NULL)"]["detail"]
    shown = cli("show", str(path), "None (id stored as NULL)")
    assert shown.returncode == 0 and "@journal" in shown.stdout, shown.stderr


def test_a_damaged_index_page_is_read_around_and_said_once(tmp_path: Path) -> None:
    """One damaged page of the ``(run_id, seq)`` index hid every run (``agenttui runs`` exit 2, the
    TUI listed none) while the table held them all: reads go around the index, and say so once."""
    path = tmp_path / "damaged-index.db"
    run_ids = damaged_run_ids("idx")
    asyncio.run(write_small_runs(path, run_ids))
    smash_page(path, index_leaf_page(path, "bide_steps_run_seq"))
    with closing(sqlite3.connect(path)) as conn:
        with pytest.raises(sqlite3.DatabaseError, match="malformed"):
            conn.execute("SELECT DISTINCT run_id FROM bide_steps").fetchall()
        assert len(conn.execute("SELECT DISTINCT run_id FROM bide_steps NOT INDEXED").fetchall()) == len(run_ids)

    async def read_everything() -> tuple[dict[str, RunState], dict[str, int]]:
        store = await SQLiteStore.open(path, read_only=True)
        try:
            states = {status.run_id: status.state async for status in list_statuses(store)}
            return states, {run_id: len(await Journal(store).history(run_id)) for run_id in run_ids}
        finally:
            await store.close()

    with pytest.warns(StoreDamageWarning, match="an index of bide_steps is damaged") as warned:
        states, records = asyncio.run(read_everything())
    assert len(warned) == 1
    assert states == dict.fromkeys(run_ids, RunState.COMPLETE)
    assert records == dict.fromkeys(run_ids, 4)

    listing = cli("runs", str(path), "--json")
    assert listing.returncode == 0, listing.stderr
    assert sorted(run["run_id"] for run in json.loads(listing.stdout)) == sorted(run_ids)
    (warning,) = listing.stderr.splitlines()
    assert warning.startswith("agenttui: warning: sqlite://") and "REINDEX" in warning
    shown = cli("show", str(path), run_ids[0], "--json")
    assert shown.returncode == 0 and len(json.loads(shown.stdout)) == 4, shown.stderr


def test_damage_in_the_table_itself_is_still_an_error(tmp_path: Path) -> None:
    """Going around an index helps only where the index is what is damaged: a run on a damaged
    data page reads as unreadable, the rest read through the index as before, and nothing is
    said of an index."""
    path = tmp_path / "damaged-data.db"
    run_ids = damaged_run_ids("dat")
    asyncio.run(write_small_runs(path, run_ids))
    data = path.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    smash_page(path, data.index(b"marker-dat3") // page_size + 1)
    listing = cli("runs", str(path), "--json")
    assert listing.returncode == 0 and "index" not in listing.stderr, listing.stderr
    states = {run["run_id"]: run["status"] for run in json.loads(listing.stdout)}
    assert states[run_ids[0]] == "unreadable" and list(states.values()).count("complete") >= 3
