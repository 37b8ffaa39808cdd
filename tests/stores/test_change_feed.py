"""The change feed's polls: a store nothing is written to is asked one cheap question a poll
(``Store.write_mark``), and the feed reports nothing; a write, by a writer that never notifies
(a Go service's), is reported at the next poll."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agenttui.stores import changes
from agenttui.stores.memory import MemStore
from agenttui.stores.postgres import PostgresStore
from tests.pg import PostgresCluster


class CountingMarks(MemStore):
    """A real in-memory store that counts what a poll asks of it."""

    def __init__(self) -> None:
        super().__init__()
        self.marks_asked = 0
        self.listed = 0

    async def write_mark(self) -> object | None:
        self.marks_asked += 1
        return await super().write_mark()

    def runs(self, **filters: object):  # type: ignore[no-untyped-def]
        self.listed += 1
        return super().runs(**filters)  # type: ignore[arg-type]


async def test_a_poll_of_a_quiet_store_reads_nothing_and_a_write_is_reported() -> None:
    store = CountingMarks()
    await store.insert("run-1", "a", b"1")
    reported: list[set[str] | None] = []
    polls = asyncio.Queue[None]()

    async def poll_sleep(seconds: float) -> None:
        await polls.put(None)
        await asyncio.sleep(0)

    feed = asyncio.create_task(changes._poll(store, reported.append, lambda state: None, sleep=poll_sleep))
    try:
        for _ in range(20):
            await polls.get()
        assert reported == [] and store.listed == 0
        assert 19 <= store.marks_asked <= 21  # one question a poll
        await store.handle().insert("run-2", "a", b"1")
        for _ in range(3):
            await polls.get()
        assert reported == [None]  # once, at the next poll: the reads it starts say which
    finally:
        feed.cancel()


@pytest.mark.postgres
async def test_a_silent_writers_commit_to_postgres_is_reported_by_a_poll(
    postgres_cluster: PostgresCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "POLL_INTERVAL", 0.02)
    monkeypatch.setattr(changes, "QUIET_BEFORE_POLLING", 0.0)
    # (That a quiet server is not read again is the write mark's contract test: other tests write
    # to this cluster meanwhile, and the mark is the server's.)
    schema = "feed_" + tmp_path.name[-12:].lower().replace("-", "_")
    reader = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    silent = await PostgresStore.open(postgres_cluster.dsn, schema=schema, notify=False)
    reported: list[set[str] | None] = []
    listening = asyncio.Event()
    feed = asyncio.create_task(changes.follow_changes(reader, reported.append, lambda state: listening.set()))
    try:
        await asyncio.wait_for(listening.wait(), 30)  # the feed has noted where the store is
        await silent.insert("run-1", "a", b"1")
        for _ in range(500):
            if None in reported:
                break
            await asyncio.sleep(0.01)
        assert None in reported, "the silent writer's commit was reported by a poll"
    finally:
        feed.cancel()
        await reader.close()
        await silent.close()


@pytest.mark.postgres
async def test_with_a_shared_run_index_a_poll_names_the_runs_a_silent_writer_wrote(
    postgres_cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Go writers never notify: a poll then reads the index's change marks and the lease table,
    not the store, and names the runs: those written, and a leased root with its sub-runs."""
    from agenttui.runs.statuses.indexer import Progress, catch_up

    monkeypatch.setattr(changes, "POLL_INTERVAL", 0.02)
    monkeypatch.setattr(changes, "QUIET_BEFORE_POLLING", 0.0)
    url = postgres_cluster.schema_url("tail")
    silent = await PostgresStore.open(url, notify=False)
    reader = await PostgresStore.open(url, read_only=True)
    for run_id in ("root", "root>child", "other"):
        await silent.insert(run_id, "a", b"1")
    index = silent.run_index()
    assert index is not None
    await index.install()
    assert await index.take_lease("test", 30)
    await catch_up(silent, "test", Progress("test"))
    reported: list[set[str] | None] = []
    listening = asyncio.Event()
    feed = asyncio.create_task(changes.follow_changes(reader, reported.append, lambda state: listening.set()))

    async def next_report() -> set[str] | None:
        for _ in range(1000):
            if reported:
                return reported.pop(0)
            await asyncio.sleep(0.01)
        raise AssertionError("nothing was reported")

    try:
        await asyncio.wait_for(listening.wait(), 30)
        await asyncio.sleep(0.1)  # the tail has noted where the index is
        reported.clear()
        await silent.insert("other", "b", b"2")
        assert await next_report() == {"other"}
        await catch_up(silent, "test", Progress("test"))  # indexed: named by its row now, not again
        await silent.acquire_lease("root", "a-go-node", 60)
        assert await next_report() == {"root", "root>child"}
    finally:
        feed.cancel()
        await reader.close()
        await silent.close()
