"""PostgreSQL-only behaviour: the exact P5 schema, logins, legacy databases, notifications, races.

The store contract itself runs on PostgreSQL through ``tests/stores/test_contract.py``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypedDict, Unpack

import asyncpg
import pytest

from agenttui.errors import (
    ConfigError,
    ReadOnlyStoreError,
    SchemaVersionError,
    StoreConnectionError,
    StoreError,
    StoreURLError,
)
from agenttui.journal import keys
from agenttui.journal.codec import encode_string
from agenttui.stores.postgres import NOTIFY_PAYLOAD_LIMIT, PostgresStore
from agenttui.stores.postgres import store as postgres_store
from agenttui.stores.summary import RunSummary, summarize
from tests.pg import PostgresCluster

pytestmark = pytest.mark.postgres

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def schema() -> str:
    """A schema name no other test uses."""
    return "t_" + uuid.uuid4().hex[:12]


@pytest.fixture
async def admin(postgres_cluster: PostgresCluster) -> AsyncIterator[asyncpg.Connection]:
    """A plain superuser connection, to inspect and tamper with what the store built."""
    conn = await asyncpg.connect(postgres_cluster.dsn)
    yield conn
    await conn.close()


@pytest.fixture
async def opened() -> AsyncIterator[list[PostgresStore]]:
    """Stores a test opens by hand; closed at teardown."""
    stores: list[PostgresStore] = []
    yield stores
    for store in stores:
        await store.close()


class OpenOptions(TypedDict, total=False):
    """PostgresStore.open's keyword arguments."""

    schema: str | None
    read_only: bool
    create: bool
    table_prefix: str
    notify: bool | None


async def open_store(opened: list[PostgresStore], dsn: str, **kwargs: Unpack[OpenOptions]) -> PostgresStore:
    store = await PostgresStore.open(dsn, **kwargs)
    opened.append(store)
    return store


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def with_password(cluster: PostgresCluster, password: str) -> str:
    return f"postgresql://{cluster.user}:{password}@{cluster.host}:{cluster.port}/{cluster.database}"


def full_text(exc: BaseException) -> str:
    """Everything a user could see of an error: its message and its printed traceback."""
    return str(exc) + "".join(traceback.format_exception(exc))


# -- the P5 layout, exactly ------------------------------------------------------------------------


async def test_tables_match_the_p5_layout(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    await open_store(opened, postgres_cluster.dsn, schema=schema)
    columns = await admin.fetch(
        "SELECT table_name, column_name, data_type, is_nullable, collation_name"
        " FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position",
        schema,
    )
    assert [tuple(row) for row in columns] == [
        ("bide_leases", "run_id", "text", "NO", None),
        ("bide_leases", "holder", "text", "NO", None),
        ("bide_leases", "expiry", "timestamp with time zone", "NO", None),
        ("bide_schema_version", "id", "integer", "NO", None),
        ("bide_schema_version", "version", "integer", "NO", None),
        ("bide_steps", "run_id", "text", "NO", "C"),
        ("bide_steps", "seq", "bigint", "NO", None),
        ("bide_steps", "name", "text", "NO", None),
        ("bide_steps", "data", "bytea", "NO", None),
    ]
    constraints = await admin.fetch(
        "SELECT c.conrelid::regclass::text AS tbl, c.contype::text, pg_get_constraintdef(c.oid) AS def"
        " FROM pg_constraint AS c WHERE c.connamespace = $1::regnamespace ORDER BY 1, 2, 3",
        schema,
    )
    assert [(row["tbl"].split(".")[-1], row["contype"], row["def"]) for row in constraints] == [
        ("bide_leases", "p", "PRIMARY KEY (run_id)"),
        ("bide_schema_version", "c", "CHECK ((id = 1))"),
        ("bide_schema_version", "p", "PRIMARY KEY (id)"),
        ("bide_steps", "p", "PRIMARY KEY (run_id, name)"),
        ("bide_steps", "u", "UNIQUE (run_id, seq)"),
    ]
    indexes = dict(
        await admin.fetch(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE 'bide_leases_%'"
            " AND indexname <> 'bide_leases_pkey'",
            schema,
        )
    )
    assert indexes == {
        "bide_leases_expiry": f"CREATE INDEX bide_leases_expiry ON {schema}.bide_leases USING btree (expiry)",
        "bide_leases_run_c": (
            f'CREATE INDEX bide_leases_run_c ON {schema}.bide_leases USING btree (run_id COLLATE "C")'
        ),
    }
    assert [tuple(r) for r in await admin.fetch(f"SELECT id, version FROM {schema}.bide_schema_version")] == [(1, 1)]


async def test_next_seq_function_matches_p5(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    await open_store(opened, postgres_cluster.dsn, schema=schema)
    fn = await admin.fetchrow(
        "SELECT p.provolatile::text, l.lanname, p.proconfig, pg_get_function_arguments(p.oid) AS args,"
        " pg_get_function_result(p.oid) AS result, p.prosrc"
        " FROM pg_proc AS p JOIN pg_language AS l ON l.oid = p.prolang"
        " WHERE p.pronamespace = $1::regnamespace AND p.proname = 'bide_next_seq_v1'",
        schema,
    )
    assert fn is not None
    assert (fn["provolatile"], fn["lanname"], fn["args"], fn["result"]) == ("v", "plpgsql", "r text", "bigint")
    assert fn["proconfig"] == ["search_path=pg_catalog, pg_temp"]
    # Byte for byte the SDK's source: Go nodes refuse a schema whose next_seq differs.
    assert fn["prosrc"] == (
        "\nBEGIN\n"
        "\tPERFORM pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtextextended(r, 0::pg_catalog.int8));\n"
        "\tRETURN (SELECT COALESCE(pg_catalog.max(seq), OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.+) 1\n"
        f'\t\tFROM "{schema}".bide_steps WHERE run_id OPERATOR(pg_catalog.=) r);\n'
        "END\n"
    )


async def test_a_next_seq_of_another_definition_is_refused_for_writing(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    await open_store(opened, postgres_cluster.dsn, schema=schema)
    await admin.execute(
        f"CREATE OR REPLACE FUNCTION {schema}.bide_next_seq_v1(r text) RETURNS bigint LANGUAGE plpgsql"
        " VOLATILE SET search_path = pg_catalog, pg_temp AS $$ BEGIN RETURN 7; END $$"
    )
    with pytest.raises(SchemaVersionError, match="bide_next_seq_v1"):
        await open_store(opened, postgres_cluster.dsn, schema=schema)
    assert (await open_store(opened, postgres_cluster.dsn, schema=schema, read_only=True)).layout == "current"


async def test_seq_counts_per_run_from_zero(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    for name in "abc":
        await store.insert("run-1", name, b"x")
    await store.insert("run-2", "a", b"x")
    assert [e.seq async for e in store.load("run-1")] == [0, 1, 2]
    assert [e.seq async for e in store.load("run-2")] == [0]


async def test_reopening_changes_nothing_and_keeps_the_data(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    await store.insert("run-1", "a", b"1")
    catalog = "SELECT count(*) FROM pg_class WHERE relnamespace = $1::regnamespace"
    before = await admin.fetchval(catalog, schema)
    again = await open_store(opened, postgres_cluster.dsn, schema=schema)
    assert await admin.fetchval(catalog, schema) == before
    got = await again.get("run-1", "a")
    assert got is not None and got.data == b"1"


async def test_schema_in_the_url_and_from_the_search_path(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    from_url = await open_store(opened, f"{postgres_cluster.dsn}?schema={schema}")
    assert from_url.schema == schema
    await from_url.insert("run-1", "a", b"1")
    # Unpinned, the store takes the first schema on the search path that holds its tables.
    await admin.execute(f"CREATE SCHEMA {schema}_first")
    from_path = await open_store(opened, f"{postgres_cluster.dsn}?search_path={schema}_first,{schema}")
    assert from_path.schema == schema
    got = await from_path.get("run-1", "a")
    assert got is not None and got.data == b"1"
    assert "schema=" not in from_path.display_url


async def test_a_newer_schema_version_is_refused(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    await open_store(opened, postgres_cluster.dsn, schema=schema)
    await admin.execute(f"UPDATE {schema}.bide_schema_version SET version = 2")
    for read_only in (False, True):
        with pytest.raises(SchemaVersionError, match="version 2"):
            await open_store(opened, postgres_cluster.dsn, schema=schema, read_only=read_only)


# -- names, URLs, logins ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", ["1abc", "a-b", 'x"; DROP TABLE y; --', "", "a b", "é", "a" * 64, "pg_temp", "information_schema"]
)
async def test_bad_schema_names_are_refused(postgres_cluster: PostgresCluster, bad: str) -> None:
    with pytest.raises(ConfigError):
        await PostgresStore.open(postgres_cluster.dsn, schema=bad)


@pytest.mark.parametrize("bad", ["Bide_", "bide-", "1x", "", "x.y_", 'x"', "x" * 50])
async def test_bad_table_prefixes_are_refused(postgres_cluster: PostgresCluster, bad: str) -> None:
    with pytest.raises(ConfigError):
        await PostgresStore.open(postgres_cluster.dsn, table_prefix=bad)


async def test_another_table_prefix_makes_other_tables(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema, table_prefix="agent_")
    await store.insert("run-1", "a", b"1")
    tables = await admin.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1", schema)
    assert [row[0] for row in tables] == ["agent_leases", "agent_schema_version", "agent_steps"]
    assert store.channel == f"{schema}.agent_steps"


async def test_display_url_masks_the_password(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    cluster = postgres_cluster
    assert store.display_url == (
        f"postgresql://{cluster.user}:***@{cluster.host}:{cluster.port}/{cluster.database}?schema={schema}"
    )
    reader = await open_store(opened, postgres_cluster.dsn, schema=schema, read_only=True)
    with pytest.raises(ReadOnlyStoreError) as refused:
        await reader.insert("run-1", "a", b"1")
    assert cluster.password not in full_text(refused.value)


async def test_a_wrong_password_is_one_clear_line_without_it(postgres_cluster: PostgresCluster) -> None:
    wrong = "not-the-password-" + uuid.uuid4().hex
    cluster = postgres_cluster
    with pytest.raises(StoreConnectionError) as refused:
        await PostgresStore.open(with_password(cluster, wrong))
    assert str(refused.value) == (
        f"password authentication failed for user {cluster.user} at {cluster.host}:{cluster.port}"
    )
    assert wrong not in full_text(refused.value)
    assert cluster.password not in full_text(refused.value)


async def test_an_unreachable_server_is_a_connection_error(postgres_cluster: PostgresCluster) -> None:
    port = closed_port()
    dsn = f"postgresql://{postgres_cluster.user}:{postgres_cluster.password}@127.0.0.1:{port}/postgres"
    with pytest.raises(StoreConnectionError) as refused:
        await PostgresStore.open(dsn)
    assert str(refused.value).startswith(f"cannot reach PostgreSQL at 127.0.0.1:{port}: ")
    assert "\n" not in str(refused.value)
    assert postgres_cluster.password not in full_text(refused.value)


async def test_pgpassword_supplies_a_password_the_url_leaves_out(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = postgres_cluster
    monkeypatch.setenv("PGPASSWORD", cluster.password)
    bare = f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}/{cluster.database}"
    store = await open_store(opened, bare, schema=schema)
    assert (await store.insert("run-1", "a", b"1")).won
    assert store.display_url == f"{bare}?schema={schema}"


@pytest.mark.parametrize("run_id", ["nul\x00byte", "lone \ud800 surrogate"], ids=["nul", "surrogate"])
async def test_text_postgres_cannot_hold_is_a_store_error(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str, run_id: str
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    with pytest.raises(StoreError):
        await store.insert(run_id, "a", b"1")
    with pytest.raises(StoreError):
        await store.get(run_id, "a")


@pytest.mark.slow
async def test_an_outage_is_a_connection_error_and_the_store_recovers(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    if not postgres_cluster.managed:
        pytest.fail("this test stops the server, so it needs the session's own cluster (unset AGENTTUI_TEST_PG_DSN)")
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    await store.insert("run-1", "a", b"1")
    await asyncio.to_thread(postgres_cluster.stop)
    try:
        with pytest.raises(StoreConnectionError) as down:
            await store.insert("run-1", "b", b"2")
        assert postgres_cluster.password not in full_text(down.value)
        with pytest.raises(StoreConnectionError):
            [e async for e in store.load("run-1")]
    finally:
        await asyncio.to_thread(postgres_cluster.start)
    assert (await store.insert("run-1", "b", b"2")).won
    assert [e.name async for e in store.load("run-1")] == ["a", "b"]


# -- legacy databases -----------------------------------------------------------------------------------


async def make_legacy(admin: asyncpg.Connection, schema: str) -> None:
    """A P1/P2 database: ``steps`` with jsonb data and a per-run seq, plus P2's ``leases``."""
    await admin.execute(
        f"""
        CREATE SCHEMA {schema};
        CREATE TABLE {schema}.steps (run_id text, seq bigint, name text, data jsonb, PRIMARY KEY (run_id, name));
        CREATE INDEX idx_steps_run_seq ON {schema}.steps (run_id, seq);
        CREATE TABLE {schema}.leases (run_id text PRIMARY KEY, holder text NOT NULL, expiry timestamptz NOT NULL);
        INSERT INTO {schema}.steps VALUES
            ('order-1', 0, '@llm/0', '{{"name": "@llm/0", "kind": "model", "message": {{"role": "assistant"}}}}'),
            ('order-1', 1, 'toolu_01', '{{"name":"toolu_01","kind":"tool_result","result":{{"n":1.50}}}}'),
            ('order-2', 0, 'run:complete', '{{"name":"run:complete","kind":"value"}}');
        INSERT INTO {schema}.leases VALUES ('order-1', 'h', now() - interval '1 hour');
        """
    )


async def test_a_legacy_database_is_read_read_only(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    await make_legacy(admin, schema)
    store = await open_store(opened, postgres_cluster.dsn, schema=schema, read_only=True)
    assert store.layout == "legacy"
    loaded = [e async for e in store.load("order-1")]
    assert [(e.seq, e.name) for e in loaded] == [(0, "@llm/0"), (1, "toolu_01")]
    # jsonb hands back its own normalisation: keys reordered by length, spaces after separators.
    assert loaded[0].data == b'{"kind": "model", "name": "@llm/0", "message": {"role": "assistant"}}'
    assert json.loads(loaded[1].data)["result"] == {"n": 1.50}
    got = await store.get("order-2", "run:complete")
    assert got is not None and got.seq == 0
    assert [r async for r in store.runs()] == ["order-1", "order-2"]
    assert [r async for r in store.runs(exclude_holding=["run:complete"])] == ["order-1"]
    assert [r async for r in store.runs(lease_lapsed=True)] == []
    assert await store.get_lease("order-1") is None
    with pytest.raises(ReadOnlyStoreError):
        await store.insert("order-1", "x", b"{}")
    tables = await admin.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1", schema)
    assert [row[0] for row in tables] == ["leases", "steps"]


async def test_a_legacy_database_is_not_opened_for_writing(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, schema: str
) -> None:
    await make_legacy(admin, schema)
    with pytest.raises(SchemaVersionError, match="legacy"):
        await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    assert await admin.fetchval("SELECT to_regclass($1)", f"{schema}.bide_steps") is None


async def test_read_only_on_a_schema_without_a_journal_is_refused(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, schema: str
) -> None:
    with pytest.raises(SchemaVersionError, match=schema):
        await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)
    assert await admin.fetchval("SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema) == 0
    await admin.execute(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.steps (id int)")  # not a journal
    with pytest.raises(SchemaVersionError, match=schema):
        await PostgresStore.open(postgres_cluster.dsn, schema=schema, read_only=True)


# -- notifications -------------------------------------------------------------------------------------


async def test_notifications_name_each_run_once_its_insert_commits(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    writer = await open_store(opened, postgres_cluster.dsn, schema=schema)
    reader = await open_store(opened, postgres_cluster.dsn, schema=schema, read_only=True)
    assert writer.channel == reader.channel == f"{schema}.bide_steps"
    async with await reader.notifications() as tail:
        await writer.insert("run-1", "a", b"1")
        assert await asyncio.wait_for(anext(tail), 5) == "run-1"
        await writer.insert("run-1", "a", b"again")  # a loser commits nothing and says nothing
        await writer.insert("run-2", "a", b"1")
        assert await asyncio.wait_for(anext(tail), 5) == "run-2"


async def test_notifications_coalesce_and_stay_in_their_schema(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    writer = await open_store(opened, postgres_cluster.dsn, schema=schema)
    elsewhere = await open_store(opened, postgres_cluster.dsn, schema=schema + "_other")
    async with await writer.notifications() as tail:
        await elsewhere.insert("other-run", "a", b"1")
        for n in range(5):
            await writer.insert("run-1", f"s{n}", b"1")
        await writer.insert("run-2", "a", b"1")
        await writer.insert("run-3", "a", b"1")
        await asyncio.sleep(0.2)  # let every notification land before reading any
        heard = [await asyncio.wait_for(anext(tail), 5) for _ in range(3)]
        assert heard == ["run-1", "run-2", "run-3"]


async def test_a_store_opened_without_notify_stays_quiet(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    quiet = await open_store(opened, postgres_cluster.dsn, schema=schema, notify=False)
    loud = await open_store(opened, postgres_cluster.dsn, schema=schema)
    async with await loud.notifications() as tail:
        assert (await quiet.insert("run-1", "a", b"1")).won
        await loud.insert("run-2", "a", b"1")
        assert await asyncio.wait_for(anext(tail), 5) == "run-2"


async def test_notify_off_in_the_url_stays_quiet_and_shows(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    from agenttui.stores import open_store as open_url

    quiet = await open_url(f"{postgres_cluster.dsn}?schema={schema}&notify=off")
    assert isinstance(quiet, PostgresStore)
    opened.append(quiet)
    assert quiet.schema == schema
    assert quiet.display_url.endswith(f"?schema={schema}&notify=off")
    loud = await open_store(opened, f"{postgres_cluster.dsn}?notify=ON", schema=schema)
    assert "notify" not in loud.display_url
    async with await loud.notifications() as tail:
        assert (await quiet.insert("run-1", "a", b"1")).won
        await loud.insert("run-2", "a", b"1")
        assert await asyncio.wait_for(anext(tail), 5) == "run-2"
    with pytest.raises(StoreURLError, match="notify= takes on or off, not 'maybe'"):
        await open_store(opened, f"{postgres_cluster.dsn}?notify=maybe", schema=schema)


async def test_a_long_run_id_is_cut_to_the_payload_limit(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    run_id = "é" * 5000  # 10,000 bytes; compressible enough for the key index
    async with await store.notifications() as tail:
        await store.insert(run_id, "a", b"1")
        heard = await asyncio.wait_for(anext(tail), 5)
    assert run_id.startswith(heard)
    assert NOTIFY_PAYLOAD_LIMIT - 1 <= len(heard.encode()) <= NOTIFY_PAYLOAD_LIMIT


async def test_closing_the_store_ends_its_notifications(postgres_cluster: PostgresCluster, schema: str) -> None:
    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    tail = await store.notifications()
    waiting = asyncio.ensure_future(anext(tail))
    await asyncio.sleep(0.05)
    await store.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(waiting, 5)
    await store.close()  # twice is fine


# -- many processes -----------------------------------------------------------------------------------

#: One racing writer: 8 tasks each insert the same names, in shuffled orders, with values that
#: say which process and task wrote them; every observed outcome goes to a JSON file.
RACER = """
import asyncio, json, random, sys
from pathlib import Path
from agenttui.stores.postgres import PostgresStore

dsn, schema, writer, names, ready, go, out = sys.argv[1:]

async def main():
    store = await PostgresStore.open(dsn, schema=schema)
    Path(ready).touch()
    while not Path(go).exists():
        await asyncio.sleep(0.005)

    async def task(t):
        order = [f"step-{n:04}" for n in range(int(names))]
        random.Random(f"{writer}-{t}").shuffle(order)
        seen = []
        for name in order:
            result = await store.insert("race", name, f"{writer}/{t}".encode())
            seen.append([name, result.won, result.entry.seq, result.entry.data.decode()])
        return seen

    results = await asyncio.gather(*(task(t) for t in range(8)))
    final = {e.name: [e.seq, e.data.decode()] async for e in store.load("race")}
    await store.close()
    Path(out).write_text(json.dumps({"seen": [s for r in results for s in r], "final": final}))

asyncio.run(main())
"""


@pytest.mark.slow
def test_two_processes_racing_on_the_same_names_agree_on_one_winner(
    postgres_cluster: PostgresCluster, schema: str, tmp_path: Path
) -> None:
    names, writers = 1000, ("p0", "p1")
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                RACER,
                postgres_cluster.dsn,
                schema,
                w,
                str(names),
                str(tmp_path / f"{w}.ready"),
                str(go),
                str(tmp_path / f"{w}.json"),
            ],
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in writers
    ]
    try:
        for w, proc in zip(writers, procs, strict=True):
            while not (tmp_path / f"{w}.ready").exists():  # both open (and migrate) before racing
                if proc.poll() is not None:
                    _, err = proc.communicate()
                    pytest.fail(f"writer {w} died while opening the store:\n{err}")
                time.sleep(0.01)
        go.touch()
        for w, proc in zip(writers, procs, strict=True):
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"writer {w} failed:\n{err}"
    finally:
        for proc in procs:
            proc.kill()

    reports = {w: json.loads((tmp_path / f"{w}.json").read_text()) for w in writers}
    final = reports["p0"]["final"]
    assert final == reports["p1"]["final"]
    assert len(final) == names
    assert sorted(seq for seq, _ in final.values()) == list(range(names))

    by_name: dict[str, list[tuple[str, bool, int, str]]] = {}
    for w in writers:
        for name, won, seq, data in reports[w]["seen"]:
            by_name.setdefault(name, []).append((w, won, seq, data))
    assert by_name.keys() == final.keys()
    for name, (seq, data) in final.items():
        outcomes = by_name[name]
        assert len(outcomes) == 8 * len(writers)
        winners = [o for o in outcomes if o[1]]
        assert len(winners) == 1, name
        winner, _, winning_seq, winning_data = winners[0]
        assert winning_data.startswith(winner + "/")  # the winner wrote what it won with
        assert (winning_seq, winning_data) == (seq, data)
        assert {(o[2], o[3]) for o in outcomes} == {(seq, data)}  # every task saw the winner's bytes
    # A real race: both processes won some names.
    assert {o[0] for outcomes in by_name.values() for o in outcomes if o[1]} == set(writers)


async def test_a_broken_lease_table_reads_as_lease_unknown(
    postgres_cluster: PostgresCluster, admin: asyncpg.Connection, opened: list[PostgresStore], schema: str
) -> None:
    from agenttui.journal import Journal, Record, StepKind
    from agenttui.runs.statuses.status import RunState, run_status

    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    await Journal(store).append("r1", Record("run:start", StepKind.VALUE, result=b'{"input":"hi","kind":"agent"}'))
    await admin.execute(f"DROP TABLE {schema}.bide_leases")
    status = await run_status(store, "r1")
    assert status.lease_unknown and status.state == RunState.STALLED


# -- run summaries: shaped entries -------------------------------------------------------------------

SALT = b',"salt":"' + b"s" * 43 + b'="}'


def shaped(name: str, kind: bytes, middle: bytes = b"") -> bytes:
    """A record's bytes as the codec writes them: name and kind first, the salt last."""
    return b'{"name":' + encode_string(name) + b',"kind":"' + kind + b'"' + middle + SALT


async def summed(store: PostgresStore, run_id: str, entries: list[tuple[str, bytes]]) -> RunSummary:
    for name, data in entries:
        await store.insert(run_id, name, data)
    (summary,) = await store.summaries([run_id], keys.END_MARKERS)
    return summary


@pytest.fixture
def no_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail a test whose page the store sums up in Python: its query raised (a cast failed)."""

    def refused(*args: object) -> None:
        raise AssertionError("the summary query raised, so the page was summed up by the reference")

    monkeypatch.setattr(postgres_store, "summarize", refused)


async def test_shaped_entries_are_summed_from_their_bytes_without_a_cast(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str, no_reference: None
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    summary = await summed(
        store,
        "r1",
        [
            ("@journal", shaped("@journal", b"header", b',"format":"bide.journal.v1-dev"')),
            ("run:start", shaped("run:start", b"value", b',"result":{"input":"x"}')),
            ("@llm/0", shaped("@llm/0", b"model", b',"finish":"stop"')),  # no message, no usage: a turn, no tokens
            # Shaped, so trusted from its first and last bytes: a middle that is not JSON, not even
            # UTF-8, is found when the run is opened, and does not fail the page's cast.
            ("tool:c1", shaped("tool:c1", b"tool_result", b',"result":{"a":"\xff\\u0000 not json')),
            ("odd", shaped("odd", b"")),  # an empty kind is shaped too
            ("run:complete", shaped("run:complete", b"value")),
        ],
    )
    assert (summary.steps, summary.turns, summary.tokens, summary.suspect) == (6, 1, 0, False)
    assert summary.end is not None and summary.end.name == "run:complete"
    assert summary.first.data == shaped("@journal", b"header", b',"format":"bide.journal.v1-dev"')


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(shaped("tool:c1", b"tool_result", b',"result":{"a":"b"}')[:-20], id="cut-short"),
        pytest.param(shaped("other", b"tool_result"), id="another-name"),
        pytest.param(b" " + shaped("tool:c1", b"tool_result", b',"result":{'), id="leading-space"),
        pytest.param(shaped("tool:c1", b"tool-result", b',"result":{'), id="kind-not-a-word"),
        pytest.param(shaped("tool:c1", b"tool_result", b',"result":{')[:-2] + b'" }', id="no-salt-last"),
    ],
)
async def test_an_entry_that_is_not_shaped_is_parsed(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str, data: bytes
) -> None:
    """Each of these is not JSON either: parsed, it is suspect (a shaped one would be trusted)."""
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    summary = await summed(store, "r1", [("@journal", shaped("@journal", b"header")), ("tool:c1", data)])
    assert summary.suspect


async def test_usage_after_the_kind_or_no_salt_is_parsed_and_counted(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str, no_reference: None
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    summary = await summed(
        store,
        "r1",
        [
            ("@journal", shaped("@journal", b"header")),
            ("@llm/0", shaped("@llm/0", b"model", b',"message":{"role":"assistant"},"usage":{"input_tokens":3}')),
            ("tool:c1", shaped("tool:c1", b"tool_result", b',"usage":{"output_tokens":5},"result":{}')),
            # Written before v0.7, without a salt: parsed, so its usage counts wherever it is.
            ("@llm/1", b'{"name":"@llm/1","kind":"model","finish":"stop","usage":{"input_tokens":7}}'),
            ("v1", b'{"name":"v1","kind":"value","result":1,"usage":{"cache_read_tokens":11}}'),
            # Salted with its usage elsewhere: shaped (the codec never writes it so), no tokens.
            ("v2", shaped("v2", b"value", b',"result":1,"usage":{"input_tokens":1000}')),
        ],
    )
    assert (summary.steps, summary.turns, summary.tokens, summary.suspect) == (6, 2, 3 + 5 + 7 + 11, False)


@pytest.mark.parametrize(
    ("name", "trusted_uncast"),
    [
        ('say "hi"\\', True),
        ("line\nfeed\ttab\x01", True),
        ("<&> é 日本", True),
        ("sep\u2028arator", False),  # the codec writes \u2028, to_json the character: parsed instead
    ],
)
async def test_names_needing_escapes(
    postgres_cluster: PostgresCluster,
    opened: list[PostgresStore],
    schema: str,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    trusted_uncast: bool,
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    good = await summed(store, "good", [(name, shaped(name, b"model", b',"finish":"stop"'))])
    assert (good.turns, good.tokens, good.suspect) == (1, 0, False)
    by_reference: list[str] = []

    def reference(run_id: str, *args: Any) -> RunSummary | None:
        by_reference.append(run_id)
        return summarize(run_id, *args)

    monkeypatch.setattr(postgres_store, "summarize", reference)
    not_json = await summed(store, "not-json", [(name, shaped(name, b"value", b',"result":{'))])
    # Trusted by its shape either way: uncast, or, where the cast refused it, by the reference.
    assert not not_json.suspect
    assert by_reference == ([] if trusted_uncast else ["not-json"])


@pytest.mark.parametrize(
    "usage",
    [
        b'"usage":{"input_tokens":1e2}',
        b'"usage":{"input_tokens":100,"output_tokens":2E0}',
        # Written once as the codec writes it, then again: the second is looked at too.
        b'"message":{"usage":{"input_tokens":5}},"usage":{"input_tokens":5e0}',
    ],
)
async def test_a_count_written_with_an_exponent_is_suspect(
    postgres_cluster: PostgresCluster, opened: list[PostgresStore], schema: str, usage: bytes
) -> None:
    store = await open_store(opened, postgres_cluster.dsn, schema=schema)
    summary = await summed(store, "r1", [("@llm/0", b'{"name":"@llm/0","kind":"model",' + usage + SALT)])
    assert summary.suspect
