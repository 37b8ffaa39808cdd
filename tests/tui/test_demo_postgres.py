"""``agenttui demo --path postgresql://…``: the demo in a PostgreSQL schema, never over real runs."""

from __future__ import annotations

import subprocess
import sys
import uuid

import pytest

from agenttui.journal import Journal, Record, StepKind
from agenttui.runs.statuses.status import RunState, list_statuses
from agenttui.stores.postgres import PostgresStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.runs import RunsScreen
from tests.pg import PostgresCluster
from tests.tui.conftest import screen_of, settle, status_of

pytestmark = pytest.mark.postgres


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=180
    )


def schema_url(cluster: PostgresCluster, schema: str) -> str:
    return f"{cluster.dsn}{'&' if '?' in cluster.dsn else '?'}schema={schema}"


async def test_the_demo_is_built_in_a_postgres_schema_and_opens(postgres_cluster: PostgresCluster) -> None:
    schema = "demo_" + uuid.uuid4().hex[:10]
    url = schema_url(postgres_cluster, schema)
    built = cli("demo", "--path", url, "--no-tui", "--bulk-turns", "4")
    assert built.returncode == 0, built.stderr
    assert postgres_cluster.password not in built.stdout + built.stderr  # shown masked
    assert "17 runs written" in built.stderr and f"schema={schema}" in built.stdout

    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    try:
        states = {s.run_id: s.state async for s in list_statuses(store)}
    finally:
        await store.close()
    assert states["refund-a1005"] == RunState.AWAITING_APPROVAL and states["refund-a1004-halted"] == RunState.HALTED
    assert states["refund-a1006-in-flight"] == RunState.IN_FLIGHT and states["audit-bulk"] == RunState.COMPLETE

    # Again: the schema holds the demo, so it is opened as it stands, not built twice.
    again = cli("demo", "--path", url, "--no-tui", "--bulk-turns", "4")
    assert again.returncode == 0 and "already holds the demo" in again.stderr, again.stderr

    # The TUI the command opens, on that schema: every demo run with its status.
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        rows = {r.run_id: status_of(r).state for r in screen_of(app, RunsScreen).table.items}
    assert rows["question-a1001"] == RunState.AWAITING_INPUT and len(rows) == 17


async def test_a_schema_holding_other_runs_is_refused_and_kept(postgres_cluster: PostgresCluster) -> None:
    schema = "orders_" + uuid.uuid4().hex[:10]
    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    await Journal(store).append("order-7", Record("run:start", StepKind.VALUE, result=b'{"input":"real work"}'))
    await store.close()
    url = schema_url(postgres_cluster, schema)

    refused = cli("demo", "--path", url, "--no-tui", "--bulk-turns", "2")
    forced = cli("demo", "--path", url, "--no-tui", "--bulk-turns", "2", "--force")  # never empties a schema
    assert (refused.returncode, forced.returncode) == (2, 2), refused.stderr + forced.stderr
    assert "already holds 1 runs that are not the demo's (such as 'order-7')" in refused.stderr
    assert "a PostgreSQL schema is never emptied" in forced.stderr
    assert postgres_cluster.password not in refused.stderr + forced.stderr

    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    try:
        assert [run_id async for run_id in store.runs()] == ["order-7"]
        assert [r.name for r in await Journal(store).history("order-7")] == ["@journal", "run:start"]
    finally:
        await store.close()


def test_a_bad_store_url_exits_2_with_one_line() -> None:
    unreachable = cli("demo", "--path", "postgresql://agenttui:secret@127.0.0.1:1/nowhere", "--no-tui")
    assert unreachable.returncode == 2 and "Traceback" not in unreachable.stderr
    assert unreachable.stderr.startswith("agenttui: ") and "secret" not in unreachable.stderr
    unknown = cli("demo", "--path", "mysql://db/x", "--no-tui")
    assert unknown.returncode == 2 and "unknown store scheme 'mysql'" in unknown.stderr, unknown.stderr
    memory = cli("demo", "--path", "memory:", "--no-tui")
    assert memory.returncode == 2 and "the demo needs a store the TUI can open" in memory.stderr, memory.stderr


async def test_the_demo_run_again_on_postgres_keeps_what_a_person_did(postgres_cluster: PostgresCluster) -> None:
    """As on SQLite (tests/tui/test_demo_again.py): opened as it stands; --fresh, which rebuilds a
    SQLite file, never empties a schema and says how to get a fresh one."""
    schema = "demo_" + uuid.uuid4().hex[:10]
    url = schema_url(postgres_cluster, schema)
    assert cli("demo", "--path", url, "--no-tui", "--bulk-turns", "2").returncode == 0
    approved = cli("approve", url, "refund-a1005", "call_1_0", "--approver", "ana")
    assert approved.returncode == 0, approved.stderr

    again = cli("demo", "--path", url, "--no-tui", "--bulk-turns", "2")
    assert again.returncode == 0 and "already holds the demo: opening it as it stands" in again.stderr
    fresh = cli("demo", "--path", url, "--no-tui", "--bulk-turns", "2", "--fresh")
    assert fresh.returncode == 2 and "--fresh replaces a demo SQLite file; a PostgreSQL schema is never emptied: name a fresh one with ?schema=" in fresh.stderr  # fmt: skip
    assert postgres_cluster.password not in again.stderr + fresh.stderr

    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    try:
        assert "approval:call_1_0" in [r.name for r in await Journal(store).history("refund-a1005")]
    finally:
        await store.close()
