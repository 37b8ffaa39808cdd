"""The shared run index under writes and SIGKILLs: its indexers (``agenttui index run``, real
processes, two at times: one a standby) are killed at random moments while runs are written;
in every snapshot a reader takes meanwhile, each run with no change queued is as its row says,
and once the writes stop and an indexer catches up, every status read through the index is the
one ``--no-cache`` reads from the journal."""

from __future__ import annotations

import asyncio
import random
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import asyncpg
import pytest

from agenttui.runs.selection.indexed import count_statuses
from agenttui.runs.statuses import index as status_index
from agenttui.runs.statuses.shared import in_use
from agenttui.runs.statuses.status import RunStatus, list_statuses
from agenttui.stores.postgres import PostgresStore
from tests.gocorpus import CASES
from tests.pg import PostgresCluster
from tests.runs.test_summary_statuses import comparable

#: How many rounds of writes, kills and checks; each ends with the index caught up and compared.
ROUNDS = 3
#: The indexers' batch: small, so that a kill lands inside many batches.
BATCH = 7

#: Every run with no change queued whose row's validator is not its journal's (or that the
#: journal holds and the index does not), in the reader's one snapshot: none, ever.
STALE = """
SELECT run_id FROM (
    SELECT COALESCE(j.run_id, r.run_id) FROM (SELECT run_id, count(*) AS count, max(seq) AS last FROM {steps} GROUP BY run_id) AS j
    FULL JOIN {index}.runs AS r ON r.run_id = j.run_id
    WHERE (j.count, j.last) IS DISTINCT FROM (r.count, r.last)
) AS differing (run_id)
WHERE run_id IS NOT NULL AND NOT EXISTS (SELECT FROM {index}.changes AS c WHERE c.run_id = differing.run_id)
"""


def start_indexer(url: str, holder: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agenttui",
            "index",
            "run",
            url,
            "--holder",
            holder,
            "--batch",
            str(BATCH),
            "--lease",
            "1",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture
async def journal(postgres_cluster: PostgresCluster) -> AsyncIterator[tuple[PostgresStore, str]]:
    url = postgres_cluster.schema_url("kills")
    store = await PostgresStore.open(url)
    index = store.run_index()
    assert index is not None
    await index.install()
    yield store, url
    await store.close()


async def statuses(store: PostgresStore, *, through_index: bool) -> list[RunStatus]:
    if not through_index:
        status_index.disable()
    try:
        return [comparable(status) async for status in list_statuses(store)]
    finally:
        status_index.disable(False)


async def test_kills_at_any_moment_lose_and_double_nothing(
    journal: tuple[PostgresStore, str], postgres_cluster: PostgresCluster
) -> None:
    store, url = journal
    index = store.run_index()
    assert index is not None
    steps = f'"{store.schema}".bide_steps'
    check = STALE.format(steps=steps, index=f'"{index.schema}"')
    draw = random.Random(47)
    # Every case of the Go corpus, written entry by entry in an interleaved order (each case's
    # entries in its own order), under a run id of each round's: statuses of every kind, passing
    # through their unfinished ones.
    rounds = [
        [[(f"r{round_number}-{case.run_id}", name, data) for name, data in case.entries()] for case in CASES]
        for round_number in range(ROUNDS)
    ]
    indexers: list[subprocess.Popen[bytes]] = []
    kills = 0
    reader = await asyncpg.connect(postgres_cluster.dsn)
    try:
        for round_number, ours in enumerate(rounds):
            while any(ours):
                if not indexers or draw.random() < 0.15:  # a second, as a standby, now and then
                    indexers.append(start_indexer(url, f"indexer-{len(indexers)}-{draw.randrange(1000)}"))
                for _ in range(draw.randint(1, 12)):
                    if live := [entries for entries in ours if entries]:
                        run_id, name, data = draw.choice(live).pop(0)
                        assert (await store.insert(run_id, name, data)).won
                await asyncio.sleep(draw.uniform(0, 0.05))
                if draw.random() < 0.3 and indexers:
                    victim = indexers.pop(draw.randrange(len(indexers)))
                    victim.send_signal(signal.SIGKILL)
                    victim.wait()
                    kills += 1
                async with reader.transaction(isolation="repeatable_read", readonly=True):
                    assert await reader.fetch(check) == []
            # The writes of the round are done: the indexers left catch up, or a new one.
            if not indexers:
                indexers.append(start_indexer(url, f"indexer-last-{round_number}"))
            for _ in range(600):
                state = await index.state()
                if state.pending == 0 and state.caught_up_seconds is not None and await in_use(store):
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"the indexers did not catch up: {await index.state()}")
            async with reader.transaction(isolation="repeatable_read", readonly=True):
                assert await reader.fetch(check) == []
            exact = await statuses(store, through_index=False)
            assert await statuses(store, through_index=True) == exact
            # The counts kept with the rows, moved by every batch that committed and by none that did not.
            assert await count_statuses(store, datetime.now(UTC)) == Counter(status.state for status in exact)
    finally:
        for indexer in indexers:
            indexer.send_signal(signal.SIGKILL)
            indexer.wait()
        await reader.close()
    assert kills >= ROUNDS  # the draw killed indexers every round, not once


async def test_sigterm_gives_the_lease_up_at_once(journal: tuple[PostgresStore, str]) -> None:
    """A service manager's stop: the indexer ends with 143 and its lease is free for a standby
    at once, not a lease's life later."""
    store, url = journal
    index = store.run_index()
    assert index is not None
    indexer = start_indexer(url, "stopped-by-a-service-manager")
    try:
        for _ in range(600):
            if (await index.state()).holder == "stopped-by-a-service-manager":
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the indexer never took the lease")
        indexer.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(indexer.wait, 30) == 128 + signal.SIGTERM
        assert (await index.state()).holder == ""
    finally:
        if indexer.poll() is None:
            indexer.kill()
            indexer.wait()
