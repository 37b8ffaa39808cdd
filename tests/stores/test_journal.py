"""The Journal over every store: header, at-most-once steps, history and format checks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from agenttui.errors import JournalVersionError
from agenttui.journal import JOURNAL_FORMAT, Journal, Record, StepKind, encode_record
from agenttui.stores.base import Store
from tests.conftest import StoreFactory


def value(name: str, result: bytes = b"1") -> Record:
    return Record(name, StepKind.VALUE, result=result)


async def test_first_write_puts_the_header_first(store: Store) -> None:
    journal = Journal(store)
    await journal.append("run-1", value("run:start", b'{"input":"hi"}'))
    history = await journal.history("run-1")
    assert [r.name for r in history] == ["@journal", "run:start"]
    assert history[0].is_header and history[0].format == JOURNAL_FORMAT
    assert len(history[0].salt) == 32 and len(history[1].salt) == 32
    entry = await store.get("run-1", "@journal")
    assert entry is not None and entry.data.startswith(
        b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev","salt":"'
    )


async def test_do_runs_a_step_once(store: Store) -> None:
    journal = Journal(store)
    calls = 0

    async def step() -> Record:
        nonlocal calls
        calls += 1
        return value("fetch", b'{"n":%d}' % calls)

    first = await journal.do("run-1", "fetch", step)
    again = await journal.do("run-1", "fetch", step)
    assert calls == 1 and first == again and first.result == b'{"n":1}'


async def test_concurrent_callers_share_one_call(store: Store) -> None:
    journal = Journal(store)
    calls = 0
    release = asyncio.Event()

    async def step() -> Record:
        nonlocal calls
        calls += 1
        await release.wait()
        return value("slow")

    waiting = [asyncio.create_task(journal.do("run-1", "slow", step)) for _ in range(10)]
    await asyncio.sleep(0)
    release.set()
    results = await asyncio.gather(*waiting)
    assert calls == 1 and len({r.salt for r in results}) == 1


async def test_the_outcome_is_recorded_even_if_the_caller_is_cancelled(store: Store) -> None:
    journal = Journal(store)
    started, release = asyncio.Event(), asyncio.Event()

    async def step() -> Record:
        started.set()
        await release.wait()
        return value("effect", b'"fired"')

    caller = asyncio.create_task(journal.do("run-1", "effect", step))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    release.set()
    recorded = await journal.do("run-1", "effect", step)  # joins the still-running step
    assert recorded.result == b'"fired"'
    assert (await journal.get("run-1", "effect")) == recorded


async def test_a_failing_step_records_nothing(store: Store) -> None:
    journal = Journal(store)

    async def step() -> Record:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await journal.do("run-1", "bad", step)
    assert await journal.get("run-1", "bad") is None


async def test_two_journals_racing_one_step_agree(make_store: StoreFactory) -> None:
    one, two = Journal(await make_store()), Journal(await make_store())

    def step_of(who: int) -> Callable[[], Awaitable[Record]]:
        async def step() -> Record:
            await asyncio.sleep(0)
            return value("race", b'"%d"' % who)

        return step

    results = await asyncio.gather(*(j.do("run-1", "race", step_of(i)) for i, j in enumerate([one, two] * 4)))
    assert len({r.result for r in results}) == 1
    assert [r.name for r in await one.history("run-1")] == ["@journal", "race"]


async def test_a_headerless_run_is_refused_by_history(store: Store) -> None:
    await store.insert("old", "run:start", encode_record(value("run:start")))
    journal = Journal(store)
    with pytest.raises(JournalVersionError) as caught:
        await journal.history("old")
    assert caught.value.found == ""
    with pytest.raises(JournalVersionError):
        await journal.append("old", value("more"))
    read = await journal.read("old")
    assert read.format == "" and [r.name for r in read.records] == ["run:start"]


async def test_a_run_in_another_format_names_it(store: Store) -> None:
    header = encode_record(Record("@journal", "header", format="bide.journal.v1"))
    await store.insert("future", "@journal", header)
    with pytest.raises(JournalVersionError, match=r"bide\.journal\.v1'") as caught:
        await Journal(store).history("future")
    assert caught.value.found == "bide.journal.v1"


async def test_an_unreadable_record_does_not_hide_the_rest(store: Store) -> None:
    journal = Journal(store)
    await journal.append("run-1", value("a"))
    await store.insert("run-1", "b", b"{not json")
    await store.insert("run-1", "c", encode_record(value("wrong-name")))
    await journal.append("run-1", value("d"))
    records = await journal.history("run-1")
    assert [r.name for r in records] == ["@journal", "a", "b", "c", "d"]
    assert records[2].unreadable and records[3].unreadable and "stored as" in records[3].unreadable
    assert not records[4].unreadable


async def test_an_empty_run_has_no_format(store: Store) -> None:
    journal = Journal(store)
    assert await journal.format("none") is None
    assert await journal.history("none") == []
