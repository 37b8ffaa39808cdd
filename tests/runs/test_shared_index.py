"""The shared run index (``agenttui index``): installed and removed whole, kept current by one
indexer under a lease, and read by every look with each status equal to the exact rules'."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest
from click.testing import CliRunner

from agenttui.cli import main
from agenttui.errors import ConfigError, StoreURLError
from agenttui.mcp_server.reading import list_runs
from agenttui.runs.selection import indexed as indexed_module
from agenttui.runs.selection.batch import CancelRuns, select
from agenttui.runs.selection.indexed import CANDIDATE_PAGE, candidate_statuses, count_statuses
from agenttui.runs.selection.where import parse_where
from agenttui.runs.statuses import index as status_index
from agenttui.runs.statuses import status as status_module
from agenttui.runs.statuses.index import Verdict
from agenttui.runs.statuses.indexer import Progress, catch_up, run_indexer
from agenttui.runs.statuses.shared import in_use
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import UNKNOWN_LEASE, RunStatus, list_statuses, run_status, state_of_verdict
from agenttui.stores.base import LeaseInfo
from agenttui.stores.changes import follow_changes
from agenttui.stores.postgres import PostgresStore
from agenttui.stores.postgres.connection import parse_dsn
from agenttui.stores.postgres.run_index import INDEX_VERSION, TRIGGERS, VERDICT_COLUMNS, SharedRunIndex
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import CASES, write_corpus
from tests.hardening.hostile_corpus import build_postgres_schema
from tests.pg import PostgresCluster, Replicated
from tests.processes import agenttui
from tests.runs.test_status_index import exact, index_files, kept
from tests.runs.test_summary_statuses import comparable

HOLDER = "test-indexer"
NOW = datetime.now(UTC)


@pytest.fixture
async def journal(postgres_cluster: PostgresCluster) -> AsyncIterator[PostgresStore]:
    """A PostgreSQL journal holding the Go corpus (every kind of run), in a schema of its own."""
    store = await PostgresStore.open(postgres_cluster.schema_url("shared"))
    await write_corpus(store)
    yield store
    await store.close()


def index_of(store: PostgresStore) -> SharedRunIndex:
    index = store.run_index()
    assert index is not None
    return index


async def listed(store: PostgresStore) -> list[RunStatus]:
    return [comparable(status) async for status in list_statuses(store)]


async def no_cache(store: PostgresStore) -> list[RunStatus]:
    """Every status as ``--no-cache`` reads it: neither index."""
    status_index.disable()
    try:
        return await listed(store)
    finally:
        status_index.disable(False)


async def indexed_now(store: PostgresStore) -> None:
    await catch_up(store, HOLDER, Progress(HOLDER)) if await index_of(store).take_lease(HOLDER, 30) else None


def test_the_index_keeps_every_member_of_a_verdict() -> None:
    assert [name for name, _ in VERDICT_COLUMNS] == list(Verdict._fields)


async def test_a_look_reads_every_status_from_the_index_as_the_exact_rules_say(
    journal: PostgresStore, private_cache: object
) -> None:
    want = await no_cache(journal)
    assert want == await exact(journal)
    index = index_of(journal)
    assert await index.install()
    assert not await index.usable()  # not caught up yet: looks read as without it
    await indexed_now(journal)
    state = await index.state()
    assert (state.usable, state.runs, state.pending) == ("", len(CASES), 0)
    assert await listed(journal) == want
    assert await kept(journal) == want
    assert index_files(private_cache) == []  # type: ignore[arg-type]  # no index of the user's own was built


async def test_runs_written_after_the_indexer_read_are_read_from_the_journal(
    journal: PostgresStore, private_cache: object
) -> None:
    index = index_of(journal)
    await index.install()
    await indexed_now(journal)
    await journal.insert("later-run", "@journal", b'{"name":"@journal","kind":"header","format":"bide/1"}')
    await journal.insert(CASES[0].run_id, "a-note-after", b'{"name":"a-note-after","kind":"note"}')
    lines = await index.lines()
    assert lines is not None and sorted(lines.pending) == sorted(["later-run", CASES[0].run_id])
    assert await listed(journal) == await no_cache(journal)
    await indexed_now(journal)
    assert (await index.state()).pending == 0
    assert await listed(journal) == await no_cache(journal)


async def test_uninstall_leaves_no_trace(journal: PostgresStore, postgres_cluster: PostgresCluster) -> None:
    index = index_of(journal)
    conn = await asyncpg.connect(postgres_cluster.dsn)
    try:
        before = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", journal.schema
        )
        assert await index.install()
        assert not await index.install()  # there already: nothing made
        assert (
            await conn.fetchval("SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'agenttui_index_%'")
            >= len(TRIGGERS) + 1
        )
        assert await index.uninstall()
        assert not await index.uninstall()
        assert await conn.fetchval("SELECT count(*) FROM pg_namespace WHERE nspname = $1", index.schema) == 0
        steps = f'"{journal.schema}"."bide_steps"'
        assert await conn.fetchval("SELECT count(*) FROM pg_trigger WHERE tgrelid = $1::regclass", steps) == 0
        after = await conn.fetch(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = $1", journal.schema
        )
        assert sorted(after) == sorted(before)
    finally:
        await conn.close()


async def test_a_role_without_the_rights_is_told_which_it_lacks(
    journal: PostgresStore, postgres_cluster: PostgresCluster
) -> None:
    conn = await asyncpg.connect(postgres_cluster.dsn)
    role = f"writer_{journal.schema}"
    try:
        await conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
        await conn.execute(f'GRANT USAGE ON SCHEMA "{journal.schema}" TO {role}')
        await conn.execute(f'GRANT SELECT, INSERT ON ALL TABLES IN SCHEMA "{journal.schema}" TO {role}')
        dsn = postgres_cluster.dsn.replace(f"{postgres_cluster.user}:{postgres_cluster.password}", f"{role}:pw")
        limited = await PostgresStore.open(f"{dsn}?schema={journal.schema}", create=False)
        try:
            with pytest.raises(
                ConfigError,
                match=f"role {role} cannot install the index: it lacks CREATE on the database and TRIGGER on bide_steps",
            ):
                await index_of(limited).install()
            # Installed by another, the writer still writes as the Go SDK does, and its runs are noted.
            assert await index_of(journal).install()
            await conn.execute(f'GRANT EXECUTE ON FUNCTION "{journal.schema}".bide_next_seq_v1(text) TO {role}')
            await limited.insert(
                "written-by-the-writer", "@journal", b'{"name":"@journal","kind":"header","format":"bide/1"}'
            )
            assert "written-by-the-writer" in await conn.fetchval(
                f'SELECT array_agg(run_id) FROM "{index_of(journal).schema}".changes'
            )
        finally:
            await limited.close()
    finally:
        await index_of(journal).uninstall()
        await conn.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA "{journal.schema}" FROM {role}')
        await conn.execute(f'REVOKE ALL ON SCHEMA "{journal.schema}" FROM {role}')
        await conn.execute(f'REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "{journal.schema}" FROM {role}')
        await conn.execute(f"DROP ROLE {role}")
        await conn.close()


async def test_one_indexer_at_a_time(journal: PostgresStore) -> None:
    index = index_of(journal)
    await index.install()
    assert await index.take_lease("first", 30)
    assert not await index.take_lease("second", 30)
    await index.release_lease("first")
    progress = await run_indexer(journal, holder="second", once=True, idle=0)
    assert progress.caught_up and progress.runs == len(CASES)
    assert (await index.state()).holder == ""  # given up on the way out


async def test_statuses_keep_their_lease_and_clock_at_the_look(journal: PostgresStore) -> None:
    index = index_of(journal)
    await index.install()
    await indexed_now(journal)
    unfinished = [
        case.run_id for case in CASES if (await run_status(journal, case.run_id)).state.value in ("halted", "crashed")
    ]
    assert unfinished
    assert await journal.acquire_lease(unfinished[0], "a-driver", 60)
    assert await listed(journal) == await no_cache(journal)


def cli(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=input)
    return result.exit_code, result.stdout, result.stderr


def test_the_commands_install_run_watch_and_remove_it(postgres_cluster: PostgresCluster) -> None:
    url = asyncio.run(postgres_cluster.demo_schema("cli", bulk_turns=1))
    code, out, _ = cli("index", "status", url)
    assert code == 0 and "no shared run index is installed" in out
    code, out, _ = cli("index", "install", url)
    assert code == 0 and "installed the shared run index in schema" in out and "runs queued" in out
    code, out, _ = cli("index", "status", url)
    assert "not used: the indexer has not caught up with the journal yet" in out
    code, _, err = cli("index", "run", "--once", "--holder", "ci-indexer", url)
    assert code == 0 and "ci-indexer: caught up:" in err
    code, out, _ = cli("index", "status", "--json", url)
    state = json.loads(out)
    assert state["in_use"] and state["pending"] == 0 and state["runs"] > 10 and state["holder"] == ""
    code, out, _ = cli("runs", "--json", url)
    code_exact, out_exact, _ = cli("--no-cache", "runs", "--json", url)
    assert (code, out) == (code_exact, out_exact)
    code, _, err = cli("index", "uninstall", url)
    assert code == 2 and "confirm at a terminal, or add --yes" in err
    code, out, _ = cli("index", "uninstall", "--yes", url)
    assert code == 0 and "removed the shared run index" in out


def test_a_store_that_keeps_no_shared_index_says_so(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"

    async def build() -> None:
        async with await SQLiteStore.open(path) as store:
            await write_corpus(store)

    asyncio.run(build())
    code, out, err = cli("index", "install", str(path))
    assert code == 2 and out == ""
    assert (
        err
        == "agenttui: Configuration error: only a PostgreSQL journal (the Bide SDK's layout) keeps a shared run index\n"
    )


FILTERS = [
    "status=halted and tool=refund_payment",
    "status=in-flight,sleeping,ready",
    "leased or lapsed",
    "not status=complete",
    "idle>1h or age<30s",
    "tool=refund_* and not sub",
    "id=*a100[0-4]*",
    "turns>=2 and tokens<2000",
]


async def selected_by(store: PostgresStore, text: str) -> list[RunStatus]:
    where = parse_where(text)
    return [comparable(s) async for s in candidate_statuses(store, where, NOW) if where.matches(s, NOW)]


@pytest.mark.parametrize("page", [3, CANDIDATE_PAGE])
async def test_a_filters_runs_and_the_counts_through_the_index_are_the_exact_ones(
    postgres_cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    """On the demo store (a run leased, one whose lease lapsed, one asleep, one woken), before
    and after runs are written past the indexer: every filter's runs, read a page at a time
    (of three runs: pages that end inside a tree of sub-runs, and between queued runs), and
    every count."""
    monkeypatch.setattr(indexed_module, "CANDIDATE_PAGE", page)
    store = await PostgresStore.open(await postgres_cluster.demo_schema("where", bulk_turns=1))
    try:
        await index_of(store).install()
        await indexed_now(store)
        assert await in_use(store)
        for written_since in (False, True):
            if written_since:
                await store.insert("later-run", "@journal", b'{"name":"@journal","kind":"header","format":"bide/1"}')
            everything = await no_cache(store)
            for text in FILTERS:
                where = parse_where(text)
                assert await selected_by(store, text) == [s for s in everything if where.matches(s, NOW)], text
            assert await count_statuses(store, NOW) == Counter(s.state for s in everything)
            selection = await select(store, CancelRuns(), where=parse_where("not status=complete"), now=NOW)
            status_index.disable()
            try:
                exact = await select(store, CancelRuns(), where=parse_where("not status=complete"), now=NOW)
            finally:
                status_index.disable(False)
            assert [comparable(s) for s in selection.fitting] == [comparable(s) for s in exact.fitting]
            assert [(comparable(s), why) for s, why in selection.unfit] == [
                (comparable(s), why) for s, why in exact.unfit
            ]
    finally:
        await store.close()


async def test_an_index_of_an_older_version_is_made_again_and_a_newer_one_left_alone(
    journal: PostgresStore, postgres_cluster: PostgresCluster
) -> None:
    index = index_of(journal)
    await index.install()
    await indexed_now(journal)
    await index.release_lease(HOLDER)
    conn = await asyncpg.connect(postgres_cluster.dsn)
    try:
        await conn.execute(f"UPDATE \"{index.schema}\".meta SET value = '1' WHERE key = 'version'")
        assert not await index.usable()
        progress = await run_indexer(journal, holder=HOLDER, once=True, idle=0)
        assert progress.rebuilt and progress.runs == len(CASES)
        assert await index.usable() and await listed(journal) == await no_cache(journal)
        await conn.execute(f"UPDATE \"{index.schema}\".meta SET value = '99' WHERE key = 'version'")
        with pytest.raises(ConfigError, match="newer than this agenttui's"):
            await run_indexer(journal, holder=HOLDER, once=True, idle=0)
        assert not await index.usable()
        expected = f"it is of version 99, newer than this agenttui's ({INDEX_VERSION}): upgrade agenttui"
        assert (await index.state()).usable == expected
    finally:
        await conn.close()


async def test_a_hostile_journal_is_indexed_as_it_is_read(postgres_cluster: PostgresCluster) -> None:
    """Hostile ids, names and payloads, a value 100,000 levels deep, bytes that are no UTF-8 nor
    JSON, a lapsed lease with control characters in its holder: indexed, each status as read."""
    corpus = await build_postgres_schema(postgres_cluster.dsn, f"hostile_{uuid.uuid4().hex[:8]}")
    store = await PostgresStore.open(corpus.url)
    try:
        await index_of(store).install()
        await indexed_now(store)
        assert await in_use(store)
        assert await listed(store) == await no_cache(store)
    finally:
        await index_of(store).uninstall()
        await store.close()


async def test_a_viewer_reads_from_a_replica_and_writes_go_to_the_primary(replicated_postgres: Replicated) -> None:
    """``?replica=HOST:PORT``: a read-only store reads every status from the standby, the shared
    run index's too, and says how far behind it is; a writable one ignores it."""
    primary, standby = replicated_postgres.primary, replicated_postgres.standby
    url = primary.schema_url("replica")
    writer = await PostgresStore.open(url)
    try:
        await write_corpus(writer)
        await index_of(writer).install()
        await indexed_now(writer)
        await replicated_postgres.caught_up()
        replica_url = f"{url}&replica={standby.host}:{standby.port}"
        viewer = await PostgresStore.open(replica_url, read_only=True)
        try:
            assert viewer.replica == f"{standby.host}:{standby.port}"
            assert f"replica={standby.host}%3A{standby.port}" in viewer.display_url
            assert await viewer.replica_lag() == 0
            assert not viewer.IMPLEMENTS_NOTIFICATIONS  # it polls the replica it reads
            assert await in_use(viewer)
            assert await listed(viewer) == await no_cache(writer)
            states: list[str] = []
            seen = asyncio.Event()

            def said(state: str) -> None:
                states.append(state)
                if "replica" in state:
                    seen.set()

            feed = asyncio.create_task(follow_changes(viewer, lambda runs: None, said))
            try:
                await asyncio.wait_for(seen.wait(), 30)
            finally:
                feed.cancel()
            assert states[-1] == "polling the index, replica 0.0 s behind"
            conn = await asyncpg.connect(standby.dsn)
            try:
                assert await conn.fetchval("SELECT pg_is_in_recovery()")
            finally:
                await conn.close()
        finally:
            await viewer.close()
        done = await asyncio.to_thread(agenttui, "index", "status", replica_url)
        assert done.returncode == 0, done.stderr
        assert f"read from     the replica at {standby.host}:{standby.port}, 0.0 s behind" in done.stdout
        both = await PostgresStore.open(replica_url)  # writable: the primary alone
        try:
            assert both.replica is None and await both.replica_lag() is None
            await both.insert("written-through", "@journal", b'{"name":"@journal","kind":"header","format":"bide/1"}')
        finally:
            await both.close()
    finally:
        await writer.close()


@pytest.mark.parametrize("address", ["db:port", "user@db", "db/x", ""])
def test_a_replica_address_that_is_no_host_and_port_is_refused(address: str) -> None:
    with pytest.raises(StoreURLError, match=r"\?replica= takes HOST\[:PORT\]"):
        parse_dsn(f"postgresql://agent@db/agents?replica={address}")


def test_a_replica_keeps_the_primarys_user_database_and_port() -> None:
    replica = parse_dsn("postgresql://agent:pw@db:6432/agents?schema=bide&replica=replica-1").replica
    assert replica is not None
    driver, address, target = replica
    assert (driver, address) == ("postgresql://agent:pw@replica-1:6432/agents", "replica-1:6432")
    assert (target.user, target.database, target.host, target.port) == ("agent", "agents", "replica-1", 6432)


async def test_the_mcp_run_list_narrows_on_the_database_and_pages_alike(postgres_cluster: PostgresCluster) -> None:
    """The coding agents' run list, followed cursor by cursor, is the same with the index as
    without it, for a filter and for statuses."""
    store = await PostgresStore.open(await postgres_cluster.demo_schema("mcp", bulk_turns=1))

    async def followed(where: str | None, states: list[str]) -> list[dict[str, object]]:
        found, cursor = [], None
        while True:
            page = await list_runs(store, where=where, states=states, cursor=cursor, limit=1)
            found += page.runs
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor

    try:
        await index_of(store).install()
        await indexed_now(store)
        assert await in_use(store)
        # Past the first page too, a run a lease row or the clock decides is found (each page of
        # the agent's starts a read of its own, from its cursor).
        for where, states in [("not status=complete", []), (None, ["halted", "in-flight"]), ("leased", ["stalled"]),
                              ("leased or lapsed or status=sleeping,ready", [])]:  # fmt: skip
            through_index = await followed(where, states)
            status_index.disable()
            try:
                assert through_index == await followed(where, states), (where, states)
            finally:
                status_index.disable(False)
    finally:
        await store.close()


async def test_a_hand_that_updates_deletes_or_truncates_the_journal_is_noted_too(
    journal: PostgresStore, postgres_cluster: PostgresCluster
) -> None:
    """The SDK only inserts; a person with psql may do anything. Each is noted, and once the
    indexer has read it, every status through the index is the journal's again."""
    index = index_of(journal)
    await index.install()
    await indexed_now(journal)
    steps = f'"{journal.schema}".bide_steps'
    conn = await asyncpg.connect(postgres_cluster.dsn)
    try:
        first, second = CASES[0].run_id, CASES[1].run_id
        await conn.execute(f"UPDATE {steps} SET data = data WHERE run_id = $1", first)
        await conn.execute(f"DELETE FROM {steps} WHERE run_id = $1", second)
        lines = await index.lines()
        assert lines is not None and lines.pending == [first] and lines.gone == [second]
        assert await listed(journal) == await no_cache(journal)  # read from the journal meanwhile
        await indexed_now(journal)
        assert await listed(journal) == await no_cache(journal)
        assert await count_statuses(journal, NOW) == Counter(status.state for status in await no_cache(journal))
        assert second not in (await index.lines() or lines).run_ids
        await conn.execute(f"TRUNCATE {steps}")
        assert (await index.state()).runs == 0 and await listed(journal) == []
        assert await count_statuses(journal, NOW) == Counter()
    finally:
        await conn.close()


def test_a_verdicts_state_alone_is_its_whole_statuss() -> None:
    """What counting makes of a verdict is the state ``_from_verdict`` makes of it, for every
    state, with and without a wake time, under every kind of lease row, for a run and a
    session's journal."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    leases = [None, UNKNOWN_LEASE, LeaseInfo("r", "w", 30.0), LeaseInfo("r", "w", -30.0)]
    for run_id in ("r", "r>@session", "r>child"):
        for state in [*(s.value for s in RunState), "no-such-state"]:
            for wake_at in (None, "2025-12-31T00:00:00+00:00", "2026-01-02T00:00:00+00:00", "not a time"):
                verdict = Verdict(state, "", "", "", "", False, "", 1, 0, 0, None, None, None, None, wake_at)
                for lease in leases:
                    made = status_module._from_verdict(run_id, verdict, lease, now)
                    expected = None if made is None else made.state
                    assert state_of_verdict(run_id, state, wake_at, lease, now) == expected, (
                        run_id,
                        state,
                        wake_at,
                        lease,
                    )


async def test_a_batch_takes_every_change_of_the_runs_it_picks(journal: PostgresStore) -> None:
    """Changes of ten runs queued in turn, five each: batches of three changes read each run once."""
    index = index_of(journal)
    await index.install()
    await indexed_now(journal)
    for turn in range(5):
        for run in range(10):
            await journal.insert(f"queued-{run}", f"note-{turn}", b'{"name":"n","kind":"note"}')
    assert await index.take_lease(HOLDER, 30)
    progress = Progress(HOLDER)
    await catch_up(journal, HOLDER, progress, batch=3)
    assert progress.runs == 10
    assert await listed(journal) == await no_cache(journal)
