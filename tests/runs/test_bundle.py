"""Portable bundles: runs exported to one SQLite file, byte for byte, and imported elsewhere.

Every store is real: SQLite files under tmp_path and the suite's PostgreSQL cluster.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agenttui.demo.build import build_demo, factory
from agenttui.errors import RunNotFoundError
from agenttui.journal import Journal, decode_record
from agenttui.journal.describe import record_json
from agenttui.journal.journal import decode_entry
from agenttui.journal.redact import MARKER, RedactionError
from agenttui.render.mermaid import mermaid_of
from agenttui.replay.events import events_of
from agenttui.replay.session import replay_verdict
from agenttui.replay.verdict import VerdictKind
from agenttui.runs.bundles import (
    BUNDLE_FORMAT,
    BundleProgress,
    ImportConflict,
    export_jsonl,
    export_runs,
    import_runs,
    read_manifest,
    select_runs,
)
from agenttui.runs.reading.tree import sub_run_steps
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import run_status
from agenttui.stores.base import Store
from agenttui.stores.bundle_file import BundleExistsError
from agenttui.stores.files import FileRefusedError
from agenttui.stores.postgres import PostgresStore
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import CASES, mermaid, write_corpus
from tests.pg import PostgresCluster

DEMO_RUNS = ("refund-a1002", "refund-a1003-denied", "eligibility-a1004", "refund-a1004-halted", "refund-a1005")


async def journal_bytes(store: Store, run_id: str) -> list[tuple[str, bytes]]:
    return [(entry.name, entry.data) async for entry in store.load(run_id)]


async def every_run(store: Store) -> dict[str, list[tuple[str, bytes]]]:
    return {run_id: await journal_bytes(store, run_id) async for run_id in store.runs()}


@pytest.fixture
async def demo_sqlite(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = await SQLiteStore.open(tmp_path / "demo.db")
    await build_demo(store, bulk_turns=2)
    yield store
    await store.close()


@pytest.fixture
async def postgres(postgres_cluster: PostgresCluster) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(postgres_cluster.dsn, schema="b_" + uuid.uuid4().hex[:12])
    yield store
    await store.close()


async def opened(path: Path) -> SQLiteStore:
    return await SQLiteStore.open(path, read_only=True)


# -- the file ----------------------------------------------------------------------------------


async def test_a_bundle_has_the_sqlite_layout_the_go_sdk_opens(demo_sqlite: SQLiteStore, tmp_path: Path) -> None:
    bundle = tmp_path / "run.db"
    await export_runs(demo_sqlite, ["refund-a1002"], bundle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.db", "demo.db-shm", "demo.db-wal", "run.db"]
    conn = sqlite3.connect(bundle)
    try:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert tables == {"bide_steps", "bide_leases", "bide_schema_version", "agenttui_bundle"}

        def columns(table: str) -> list[tuple[str, str, int, int]]:
            return [
                (name, kind, notnull, pk)
                for _, name, kind, notnull, _, pk in conn.execute(f"PRAGMA table_info({table})")
            ]

        # journal-format.md section 4.1, the current schema, column by column
        assert columns("bide_steps") == [
            ("seq", "INTEGER", 0, 1), ("run_id", "TEXT", 1, 0), ("name", "TEXT", 1, 0), ("data", "BLOB", 1, 0),
        ]  # fmt: skip
        assert columns("bide_leases") == [("run_id", "TEXT", 0, 1), ("holder", "TEXT", 1, 0), ("expiry", "REAL", 1, 0)]
        assert columns("bide_schema_version") == [("id", "INTEGER", 0, 1), ("version", "INTEGER", 1, 0)]
        assert list(conn.execute("SELECT id, version FROM bide_schema_version")) == [(1, 1)]
        unique = [
            [col for *_, col in conn.execute(f"PRAGMA index_info('{name}')")]
            for _, name, is_unique, *_ in conn.execute("PRAGMA index_list('bide_steps')")
            if is_unique
        ]
        assert unique == [["run_id", "name"]]
        assert [col for *_, col in conn.execute("PRAGMA index_info('bide_steps_run_seq')")] == ["run_id", "seq"]
        # One self-contained file: rollback journal, no WAL beside it; no lease copied.
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
        assert list(conn.execute("SELECT * FROM bide_leases")) == []
        # The SDK's history query reads the run in order, the bytes as stored.
        history = [
            bytes(d)
            for (d,) in conn.execute("SELECT data FROM bide_steps WHERE run_id = ? ORDER BY seq", ("refund-a1002",))
        ]
        assert history == [data for _, data in await journal_bytes(demo_sqlite, "refund-a1002")]
    finally:
        conn.close()
    store = await opened(bundle)
    try:
        manifest = await read_manifest(store)
        assert manifest is not None and manifest.format == BUNDLE_FORMAT
        assert manifest.source == demo_sqlite.display_url and manifest.exported_at.endswith("Z")
        assert [(r.run_id, r.records) for r in manifest.runs] == [("refund-a1002", 12)]
        assert await read_manifest(demo_sqlite) is None  # a store that is no bundle
    finally:
        await store.close()


async def test_an_export_refuses_a_taken_path_and_leaves_nothing_when_it_fails(
    demo_sqlite: SQLiteStore, tmp_path: Path
) -> None:
    taken = tmp_path / "taken.db"
    taken.write_bytes(b"mine")
    with pytest.raises(BundleExistsError, match="--force"):
        await export_runs(demo_sqlite, ["refund-a1002"], taken)
    assert taken.read_bytes() == b"mine"
    with pytest.raises(RunNotFoundError):
        await export_runs(demo_sqlite, ["refund-a1002", "no-such-run"], tmp_path / "never.db")

    def fail_midway(progress: BundleProgress) -> None:
        if progress.runs_done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await export_runs(demo_sqlite, list(DEMO_RUNS), tmp_path / "cut.db", on_progress=fail_midway)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.db", "demo.db-shm", "demo.db-wal", "taken.db"]
    with pytest.raises(FileRefusedError, match="the store being read"):
        await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "demo.db", force=True)
    with pytest.raises(FileRefusedError, match="the store being read"):
        await export_jsonl(demo_sqlite, ["refund-a1002"], tmp_path / "demo.db", force=True)
    report = await export_runs(demo_sqlite, ["refund-a1002"], taken, force=True)
    assert report.path == taken and taken.read_bytes().startswith(b"SQLite format 3\x00")


async def test_a_bundle_cancelled_while_its_thread_inserts_leaves_nothing(tmp_path: Path) -> None:
    """Cancelling ``add`` does not stop its thread: ``abort`` stops the insert and waits for it
    before it closes the connection and removes the file."""
    from agenttui.stores.bundle_file import BundleFile

    bundle = await BundleFile.create(tmp_path / "cut.db")
    rows = [("run", f"step-{n}", b'{"name":"step-%d","kind":"value"}' % n) for n in range(200_000)]
    adding = asyncio.ensure_future(bundle.add(rows))
    await asyncio.sleep(0)  # the insert's thread has started
    adding.cancel()
    with pytest.raises(asyncio.CancelledError):
        await adding
    await bundle.abort()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("listed", [False, True], ids=["run by run", "listed once"])
async def test_many_runs_are_chosen_the_same_from_one_listing(
    demo_sqlite: SQLiteStore, monkeypatch: pytest.MonkeyPatch, listed: bool
) -> None:
    from agenttui.runs.bundles import export as bundle

    monkeypatch.setattr(bundle, "LIST_ONCE_FROM", 1 if listed else 1_000_000)
    chosen = ["eligibility-a1004", "refund-a1002", "eligibility-a1004"]
    assert await bundle.bundle_run_ids(demo_sqlite, chosen) == [
        "eligibility-a1004", "eligibility-a1004>call_0_0", "refund-a1002"
    ]  # fmt: skip
    assert await bundle.bundle_run_ids(demo_sqlite, chosen, sub_runs=False) == ["eligibility-a1004", "refund-a1002"]
    with pytest.raises(RunNotFoundError):
        await bundle.bundle_run_ids(demo_sqlite, ["refund-a1002", "refund-a100"])  # a prefix of a run is no run


async def test_sub_runs_travel_with_their_parent(demo_sqlite: SQLiteStore, tmp_path: Path) -> None:
    report = await export_runs(demo_sqlite, ["eligibility-a1004"], tmp_path / "tree.db")
    assert [r.run_id for r in report.runs] == ["eligibility-a1004", "eligibility-a1004>call_0_0"]
    bundle = await opened(tmp_path / "tree.db")
    try:
        assert await every_run(bundle) == {
            r: await journal_bytes(demo_sqlite, r) for r in [r.run_id for r in report.runs]
        }
        # the flowchart's frames of sub-runs read the same from the bundle
        assert await sub_run_steps(bundle, "eligibility-a1004") == await sub_run_steps(demo_sqlite, "eligibility-a1004")
    finally:
        await bundle.close()
    alone = await export_runs(demo_sqlite, ["eligibility-a1004"], tmp_path / "alone.db", sub_runs=False)
    assert [r.run_id for r in alone.runs] == ["eligibility-a1004"]


async def test_leases_stay_behind(demo_sqlite: SQLiteStore, tmp_path: Path) -> None:
    assert (await run_status(demo_sqlite, "refund-a1006-in-flight")).state == RunState.IN_FLIGHT
    await export_runs(demo_sqlite, ["refund-a1006-in-flight"], tmp_path / "b.db")
    bundle = await opened(tmp_path / "b.db")
    try:
        assert await bundle.get_lease("refund-a1006-in-flight") is None
        assert (await run_status(bundle, "refund-a1006-in-flight")).state != RunState.IN_FLIGHT
    finally:
        await bundle.close()


async def test_many_runs_are_chosen_by_status_or_text(demo_sqlite: SQLiteStore) -> None:
    assert await select_runs(demo_sqlite, states={RunState.HALTED}) == ["refund-a1004-halted"]
    assert await select_runs(demo_sqlite, text="A1004") == [
        "eligibility-a1004", "eligibility-a1004>call_0_0", "refund-a1004-halted",
    ]  # fmt: skip
    assert await select_runs(demo_sqlite, text="withdrew") == ["refund-a1001-cancelled"]  # the detail counts


# -- round trips -------------------------------------------------------------------------------


async def test_a_round_trip_through_postgresql_keeps_every_byte(
    demo_sqlite: SQLiteStore, postgres: PostgresStore, tmp_path: Path
) -> None:
    original = {run_id: await journal_bytes(demo_sqlite, run_id) async for run_id in demo_sqlite.runs()}
    everything = [run_id for run_id in original if ">" not in run_id]
    await export_runs(demo_sqlite, everything, tmp_path / "out.db")
    report = await import_runs(tmp_path / "out.db", postgres)
    assert {r.target_id for r in report.runs} == set(original) and {r.outcome for r in report.runs} == {"imported"}
    assert await every_run(postgres) == original
    # ...and back: PostgreSQL to a bundle, the bundle into a fresh SQLite store.
    await export_runs(postgres, everything, tmp_path / "back.db")
    fresh = await SQLiteStore.open(tmp_path / "fresh.db")
    try:
        await import_runs(tmp_path / "back.db", fresh)
        assert await every_run(fresh) == original
    finally:
        await fresh.close()


async def test_a_prefix_imports_under_new_ids_and_the_tree_holds(
    demo_sqlite: SQLiteStore, postgres: PostgresStore, tmp_path: Path
) -> None:
    await export_runs(demo_sqlite, ["eligibility-a1004"], tmp_path / "tree.db")
    report = await import_runs(tmp_path / "tree.db", postgres, prefix="ci/")
    assert [(r.run_id, r.target_id) for r in report.runs] == [
        ("eligibility-a1004", "ci/eligibility-a1004"), ("eligibility-a1004>call_0_0", "ci/eligibility-a1004>call_0_0"),
    ]  # fmt: skip
    assert [r async for r in postgres.runs()] == ["ci/eligibility-a1004", "ci/eligibility-a1004>call_0_0"]
    for run_id in ("eligibility-a1004", "eligibility-a1004>call_0_0"):
        assert await journal_bytes(postgres, "ci/" + run_id) == await journal_bytes(demo_sqlite, run_id)
    assert set(await sub_run_steps(postgres, "ci/eligibility-a1004")) == {"ci/eligibility-a1004>call_0_0"}
    with pytest.raises(Exception, match="cannot hold '>'"):
        await import_runs(tmp_path / "tree.db", postgres, prefix="a>b")


# -- import conflicts --------------------------------------------------------------------------


async def test_a_conflict_refuses_the_whole_import_with_nothing_written(
    demo_sqlite: SQLiteStore, postgres: PostgresStore, tmp_path: Path
) -> None:
    await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "redacted.db", redact=["customer"])
    await import_runs(tmp_path / "redacted.db", postgres)
    await export_runs(demo_sqlite, ["refund-a1005", "refund-a1002", "refund-a1003-denied"], tmp_path / "plain.db")
    before = await every_run(postgres)
    with pytest.raises(ImportConflict) as refused:
        await import_runs(tmp_path / "plain.db", postgres)
    assert [c.target_id for c in refused.value.conflicts] == ["refund-a1002"]
    assert "record 3 (tool:call_0_0) holds other bytes" in refused.value.conflicts[0].reason
    assert "'refund-a1002'" in refused.value.message and "nothing was written" in refused.value.message
    assert await every_run(postgres) == before  # refund-a1005 and the denied run were not written either


async def test_identical_runs_are_skipped_and_a_cut_short_import_is_completed(
    demo_sqlite: SQLiteStore, postgres: PostgresStore, tmp_path: Path
) -> None:
    await export_runs(demo_sqlite, ["refund-a1002", "refund-a1005"], tmp_path / "b.db")
    recorded = await journal_bytes(demo_sqlite, "refund-a1002")
    for name, data in recorded[:4]:  # an import that stopped after four records
        await postgres.insert("refund-a1002", name, data)
    report = await import_runs(tmp_path / "b.db", postgres)
    assert [(r.run_id, r.outcome, r.written, r.records) for r in report.runs] == [
        ("refund-a1002", "completed", 8, 12), ("refund-a1005", "imported", 5, 5),
    ]  # fmt: skip
    again = await import_runs(tmp_path / "b.db", postgres)
    assert [(r.outcome, r.written) for r in again.runs] == [("identical", 0), ("identical", 0)]
    assert await journal_bytes(postgres, "refund-a1002") == recorded


async def test_a_run_the_store_holds_more_of_or_is_driving_is_a_conflict(
    demo_sqlite: SQLiteStore, postgres: PostgresStore, tmp_path: Path
) -> None:
    recorded = await journal_bytes(demo_sqlite, "refund-a1002")
    for name, data in recorded:
        await postgres.insert("refund-a1002", name, data)
    await postgres.insert("refund-a1002", "later", b'{"name":"later","kind":"value"}')
    await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "b.db")
    with pytest.raises(ImportConflict, match="goes on past the bundle's 12 records"):
        await import_runs(tmp_path / "b.db", postgres, prefix="")
    for name, data in recorded[:3]:
        await postgres.insert("driven", name, data)
    assert await postgres.acquire_lease("driven", "worker-1", 30)
    await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "c.db")
    with pytest.raises(ImportConflict, match="being driven"):
        await import_runs(await _renamed(tmp_path, "refund-a1002", "driven"), postgres)


async def _renamed(tmp_path: Path, run_id: str, new_id: str) -> Path:
    """A copy of ``c.db`` whose run is named ``new_id``."""
    path = tmp_path / f"{new_id}.db"
    path.write_bytes((tmp_path / "c.db").read_bytes())
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE bide_steps SET run_id = ? WHERE run_id = ?", (new_id, run_id))
    conn.close()
    return path


# -- redaction ---------------------------------------------------------------------------------


async def test_redaction_keeps_records_valid_and_every_other_byte(demo_sqlite: SQLiteStore, tmp_path: Path) -> None:
    paths = ["customer", "$.result.amount", "$.message.parts[*].args.order_id"]
    report = await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "r.db", redact=paths)
    assert report.redactions == (("customer", 1), ("$.result.amount", 2), ("$.message.parts[*].args.order_id", 2))
    bundle = await opened(tmp_path / "r.db")
    try:
        original = await journal_bytes(demo_sqlite, "refund-a1002")
        redacted = await journal_bytes(bundle, "refund-a1002")
        changed = [name for (name, before), (_, after) in zip(original, redacted, strict=True) if before != after]
        assert changed == ["@llm/0", "tool:call_0_0", "@llm/1", "tool:call_1_0"]
        for (name, before), (_, after) in zip(original, redacted, strict=True):
            record = decode_record(after, name)  # every record still decodes, under its own name
            assert record.salt == decode_record(before, name).salt
            if before != after:
                assert MARKER.encode() in after and len(json.loads(after)) == len(json.loads(before))
        lookup = json.loads(dict(redacted)["tool:call_0_0"])["result"]
        assert lookup["customer"] == lookup["amount"] == MARKER and lookup["item"] == "standing mat"
        manifest = await read_manifest(bundle)
        assert manifest is not None and manifest.redacted_in("refund-a1002") == tuple(paths)
    finally:
        await bundle.close()


async def test_a_redacted_bundle_replays_to_a_match_naming_what_was_not_compared(
    demo_sqlite: SQLiteStore, tmp_path: Path
) -> None:
    await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "r.db", redact=["customer", "$.result.amount"])
    bundle = await opened(tmp_path / "r.db")
    try:
        _, recorded_tools = await replay_verdict(bundle, "refund-a1002")
        assert recorded_tools.kind == VerdictKind.MATCHES
        assert recorded_tools.redacted == ("customer", "$.result.amount")
        assert set(recorded_tools.redacted) <= set(recorded_tools.not_compared)
        # With the agent's own tools, lookup_order (read-only) runs for real and returns the
        # real customer and amount: those values are not compared, everything else is.
        _, own_tools = await replay_verdict(bundle, "refund-a1002", factory("refund-a1002"))
        assert own_tools.kind == VerdictKind.MATCHES, own_tools.summary()
        assert own_tools.redacted == ("customer", "$.result.amount")
    finally:
        await bundle.close()
    await export_runs(demo_sqlite, ["refund-a1002"], tmp_path / "item.db", redact=["item"])
    item = await opened(tmp_path / "item.db")
    try:
        _, verdict = await replay_verdict(item, "refund-a1002", factory("refund-a1002"))
        assert verdict.kind == VerdictKind.MATCHES and verdict.redacted == ("item",)
    finally:
        await item.close()


def test_a_path_into_the_records_own_members_is_refused() -> None:
    from agenttui.journal.redact import Redactor

    for path in ("$.name", "$.salt", "$.usage.input_tokens", "$", "$.message.role", "a.b", ""):
        with pytest.raises(RedactionError):
            Redactor([path])


# -- what a Go service wrote -------------------------------------------------------------------


async def test_an_export_of_go_written_runs_reads_and_replays_the_same(tmp_path: Path) -> None:
    source = await SQLiteStore.open(tmp_path / "go.db")
    try:
        await write_corpus(source)
        ids = [case.run_id for case in CASES]
        await export_runs(source, ids, tmp_path / "go-bundle.db", sub_runs=False)
        bundle = await opened(tmp_path / "go-bundle.db")
        try:
            for case in CASES:
                run_id = case.run_id
                assert await journal_bytes(bundle, run_id) == await journal_bytes(source, run_id), run_id
                assert await run_status(bundle, run_id) == await run_status(source, run_id), run_id
                records = (await Journal(bundle).read(run_id)).records
                assert records == (await Journal(source).read(run_id)).records, run_id
                assert mermaid_of(records) == mermaid(case.labels), run_id  # the SDK's own text
                assert events_of(run_id, records) == events_of(run_id, (await Journal(source).read(run_id)).records)
                _, there = await replay_verdict(bundle, run_id)
                _, here = await replay_verdict(source, run_id)
                assert there == here, run_id
        finally:
            await bundle.close()
    finally:
        await source.close()


# -- JSON lines --------------------------------------------------------------------------------


async def test_json_lines_hold_one_decoded_record_a_line(demo_sqlite: SQLiteStore, tmp_path: Path) -> None:
    report = await export_jsonl(demo_sqlite, ["eligibility-a1004"], tmp_path / "e.jsonl", redact=["customer"])
    lines = (tmp_path / "e.jsonl").read_text().splitlines()
    assert len(lines) == report.records == 12
    rows = [json.loads(line) for line in lines]
    assert [(r["run_id"], r["index"]) for r in rows[:2]] == [("eligibility-a1004", 0), ("eligibility-a1004", 1)]
    records = [decode_entry(e) async for e in demo_sqlite.load("eligibility-a1004")]
    assert rows[2] == {"run_id": "eligibility-a1004", "index": 2} | json.loads(json.dumps(record_json(records[2])))
    assert MARKER in (tmp_path / "e.jsonl").read_text()
    assert (await Journal(demo_sqlite).read("eligibility-a1004")).records == records
    with pytest.raises(BundleExistsError):
        await export_jsonl(demo_sqlite, ["eligibility-a1004"], tmp_path / "e.jsonl")
