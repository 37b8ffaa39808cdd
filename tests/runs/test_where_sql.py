"""A filter compiled to SQL over the shared run index (``runs.selection.where_sql``): on a real
PostgreSQL index of runs of every shape, some under a live or a lapsed lease row and some
asleep, random filters select every run the filter itself matches, and, of the runs whose
status is their verdict's, no other but for globs with a set (``[...]``, left to the filter)."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings

from agenttui.journal.keys import root_run_id
from agenttui.runs.selection.indexed import Paging, count_statuses, next_candidates
from agenttui.runs.selection.where import parse_where
from agenttui.runs.selection.where_sql import where_sql
from agenttui.runs.statuses.index import Verdict
from agenttui.runs.statuses.indexer import Progress, catch_up
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus, statuses_of_verdicts
from agenttui.stores.postgres import PostgresStore
from tests.pg import PostgresCluster
from tests.runs.test_where import NAME_CHARS, NOW, NOW_MS, Node, printed_filters

RUNS = 400


def population() -> list[tuple[str, Verdict]]:
    """Runs of every shape the filter reads, as the index keeps them: ids with sub-runs and
    glob characters, each state, open calls or none, counts on the filters' bounds, times or
    none, first and last exact or not (a seeded draw: the same runs every time)."""
    draw = random.Random(50)

    def name(least: int = 0) -> str:
        return "".join(draw.choice(NAME_CHARS) for _ in range(draw.randint(least, 5)))

    runs: dict[str, Verdict] = {}
    while len(runs) < RUNS:
        run_id = draw.choice([name(1), f"{name(1)}>{name(1)}", f"{name(1)}>@turn/1", "a", "a>b"])
        waits = draw.random() < 0.5
        timed = draw.random() < 0.7
        ago = [0, 1, 29, 30, 31, 60, 90, 3599, 3600, 5400, 7200, 7201, 86_400, 700_000]
        earliest, latest = sorted(NOW_MS - draw.choice(ago) * 1000 for _ in range(2))
        asleep = draw.random() < 0.1  # woken by NOW or not
        wake_at = (NOW + timedelta(hours=draw.choice([-1, 1]))).isoformat() if asleep else None
        runs[run_id] = Verdict(
            RunState.SLEEPING.value if asleep else draw.choice([state.value for state in RunState]), "detail",
            name() if waits else "", name() if waits else "", name() if waits else "",
            draw.random() < 0.2, "", draw.randint(0, 40),
            draw.choice([0, 3, 999, 1000, 1001, 1500, 10_000]), draw.choice([0, 1_499_999, 1_500_000, 2_000_001]),
            earliest if timed else None, latest if timed else None,
            draw.random() < 0.5 if timed else None, draw.random() < 0.5 if timed else None, wake_at,
        )  # fmt: skip
    return sorted(runs.items())


def leased_roots() -> dict[str, bool]:
    """A lease row, live or lapsed, on about a root in six of ``population()``'s (seeded)."""
    draw = random.Random(51)
    roots = sorted({root_run_id(run_id) for run_id, _ in population()})
    return {root: draw.random() < 0.5 for root in roots if draw.random() < 0.17}


class Indexed:
    """An index holding ``population()``'s rows, its journal empty and its indexer caught up."""

    def __init__(self, url: str, statuses: list[RunStatus]) -> None:
        self.url = url
        self.statuses = statuses
        leased = leased_roots()
        self.settled = {
            status.run_id
            for status in statuses
            if root_run_id(status.run_id) not in leased and dict(population())[status.run_id].wake_at is None
        }
        """The runs whose status is their verdict's: no lease row, no wake time."""


@pytest.fixture(scope="module")
def indexed(postgres_cluster: PostgresCluster) -> Iterator[Indexed]:
    url = postgres_cluster.schema_url("wheresql")
    rows = population()

    async def build() -> list[RunStatus]:
        store = await PostgresStore.open(url)
        try:
            index = store.run_index()
            assert index is not None
            await index.install()
            assert await index.take_lease("test", 30)
            await catch_up(store, "test", Progress("test"))
            conn = await asyncpg.connect(postgres_cluster.dsn)
            try:
                columns = ", ".join(["run_id", "root_id", "count", "last", *Verdict._fields])
                places = ", ".join(f"${at}" for at in range(1, 5 + len(Verdict._fields)))
                await conn.executemany(
                    f'INSERT INTO "{index.schema}".runs ({columns}) VALUES ({places})',
                    [(run_id, root_run_id(run_id), verdict.steps, 0, *verdict) for run_id, verdict in rows],
                )
                await conn.execute(  # the counts the indexer keeps beside its rows
                    f'INSERT INTO "{index.schema}".counts AS n (state, runs)'
                    f' SELECT state, pg_catalog.count(*) FROM "{index.schema}".runs GROUP BY state'
                    " ON CONFLICT (state) DO UPDATE SET runs = EXCLUDED.runs"
                )
                await conn.executemany(
                    f"INSERT INTO \"{store.schema}\".bide_leases VALUES ($1, $2, now() + $3 * interval '1 hour')",
                    [(root, f"worker-{root}", 1 if live else -1) for root, live in leased_roots().items()],
                )
            finally:
                await conn.close()
            return await statuses_of_verdicts(store, rows, NOW)
        finally:
            await store.close()

    yield Indexed(url, asyncio.run(build()))


async def selected(url: str, text: str) -> set[str]:
    store = await PostgresStore.open(url, read_only=True)
    try:
        index = store.run_index()
        assert index is not None
        sql = where_sql(parse_where(text), NOW_MS)
        chosen = await index.select(sql.settled, sql.settled_args, unsettled=(sql.unsettled, sql.unsettled_args))
        assert chosen is not None and not chosen.pending
        return {row[0] for row in [*chosen.rows, *chosen.unsettled]}
    finally:
        await store.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(printed_filters())
def test_the_sql_selects_every_run_the_filter_matches(indexed: Indexed, printed: tuple[Node, str]) -> None:
    _, text = printed
    where = parse_where(text)
    matched = {status.run_id for status in indexed.statuses if where.matches(status, NOW)}
    chosen = asyncio.run(selected(indexed.url, text))
    assert matched <= chosen
    if "[" not in text:  # every other test is said exactly in SQL, of a run its verdict decides
        assert chosen & indexed.settled == matched & indexed.settled


def test_the_population_has_every_shape(indexed: Indexed) -> None:
    assert {status.state for status in indexed.statuses} == set(RunState)
    assert any(status.times is None for status in indexed.statuses)
    assert any(root_run_id(status.run_id) != status.run_id for status in indexed.statuses)
    assert {RunState.IN_FLIGHT, RunState.SLEEPING, RunState.READY} <= {s.state for s in indexed.statuses}
    assert any(status.lease_lapsed for status in indexed.statuses)
    assert len(indexed.settled) > RUNS / 2


@pytest.mark.parametrize("text", ["", "leased", "lapsed", "status=in-flight", "status=sleeping,ready", "sub"])
def test_a_selection_read_a_few_rows_a_page_holds_what_it_holds_read_whole(indexed: Indexed, text: str) -> None:
    """Each page reads the runs of its own range a lease row or the clock decides: a sub-run
    past a page's start under a leased top-level run before it (``a`` < ``a-x`` < ``a>b``) too."""

    async def paged() -> set[str]:
        store = await PostgresStore.open(indexed.url, read_only=True)
        try:
            paging, found = Paging(parse_where(text)), set()
            while not paging.done:
                page = await next_candidates(store, paging, NOW, limit=3)
                assert page is not None
                found |= {status.run_id for status in page}
            return found
        finally:
            await store.close()

    assert asyncio.run(paged()) == asyncio.run(selected(indexed.url, text))


def test_counts_decide_what_a_lease_or_the_clock_moves_as_every_status_does(indexed: Indexed) -> None:
    """Counted on the database, a live lease row's runs (sub-runs too) are in flight, a lapsed
    one's and a woken run's are as their verdicts and the clock make them: each as read."""

    async def counted() -> Counter[RunState]:
        store = await PostgresStore.open(indexed.url, read_only=True)
        try:
            return await count_statuses(store, NOW)
        finally:
            await store.close()

    assert asyncio.run(counted()) == Counter(status.state for status in indexed.statuses)


@pytest.mark.parametrize(
    "text",
    [
        "status=in-flight", "not status=in-flight", "status=sleeping", "status=ready,halted", "not status=ready",
        "leased", "lapsed", "not leased", "lease=worker-*", "not lease=worker-*", "tool=*", "not tool=*",
        "call=* or interrupt=*", "status=halted and not leased", "status=in-flight and tool=*",
    ],
)  # fmt: skip
def test_what_a_lease_or_the_clock_decides_is_selected(indexed: Indexed, text: str) -> None:
    """The tests a lease row or the clock moves, each alone and negated (random filters reach
    them seldom): every run they match is selected."""
    where = parse_where(text)
    matched = {status.run_id for status in indexed.statuses if where.matches(status, NOW)}
    chosen = asyncio.run(selected(indexed.url, text))
    assert matched <= chosen
    assert chosen & indexed.settled == matched & indexed.settled
