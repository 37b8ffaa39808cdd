"""Statuses from run summaries equal the exact rules' statuses, on every store, for every run the
test suite builds (the demo, the Go corpus, damaged and leased runs), and finished runs are never
read whole when the store sums them up."""

from __future__ import annotations

import dataclasses

from agenttui.demo.build import build_demo
from agenttui.journal import Journal, Record, StepKind, keys
from agenttui.runs.status import RunState, RunStatus, StatusTracker, run_status, statuses
from agenttui.stores.base import Store
from tests.conftest import StoreFactory
from tests.gocorpus import write_corpus


def comparable(status: RunStatus) -> RunStatus:
    """A status without its lease row's seconds to expiry, which move between two reads."""
    return dataclasses.replace(status, lease=None)


async def write_odd_runs(store: Store) -> None:
    """Finished runs a summary must not be fooled by, and a finished run someone still leases."""
    journal = Journal(store)
    start = Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}')
    for run_id in ("renamed", "float-usage", "redacted", "not-json", "leased-done", "foreign-format"):
        await journal.append(run_id, start)
    await store.insert("renamed", "@llm/0", b'{"name":"@llm/1","kind":"model"}')
    await store.insert("float-usage", "@llm/0", b'{"name":"@llm/0","kind":"model","usage":{"input_tokens":1.5}}')
    await store.insert("redacted", "@llm/0", b'{"redacted":{"leaf_hash":"ab","at_ms":1}}')
    await store.insert("not-json", "@llm/0", b"\x00garbage")
    await store.insert("foreign-format", "@llm/0", b'{"name":"@llm/0","kind":"model","usage":{"input_tokens":3}}')
    for run_id in ("renamed", "float-usage", "redacted", "not-json", "leased-done"):
        await journal.append(run_id, Record(keys.RUN_COMPLETE, StepKind.VALUE))
    await store.insert("foreign-format", keys.RUN_COMPLETE, b'{"name":"run:complete","kind":"value"}')
    await store.insert("header-only-other", keys.HEADER, b'{"name":"@journal","kind":"header","format":"other.v9"}')
    await store.insert("header-only-other", keys.RUN_COMPLETE, b'{"name":"run:complete","kind":"value"}')
    await store.acquire_lease("leased-done", "worker-1#1", ttl=600)
    # Unfinished runs whose tool results and earlier turns stand in by their outline: where the
    # bytes' start does not tell their kind and usage as the codec reads them, they are parsed.
    turn = b'{"name":"@llm/%d","kind":"model","message":{"role":"assistant","parts":[{"id":"c%d","name":"lookup","type":"tool_use"}]},"usage":{"input_tokens":%d}}'
    odd_results = {
        "open-plain": b'{"name":"tool:c0","kind":"tool_result","tool_use_id":"c0","result":{"kind":"x","usage":1}}',
        "open-second-kind": b'{"name":"tool:c0","kind":"tool_result","kind":"model"}',
        "open-escaped-kind": b'{"name":"tool:c0","kind":"tool_result","k\\u0069nd":"model"}',
        "open-tool-usage": b'{"name":"tool:c0","kind":"tool_result","usage":{"output_tokens":11}}',
        "open-spaces": b' { "name" : "tool:c0" , "kind" : "tool_result" } ',
    }
    for run_id, result in odd_results.items():
        await journal.append(run_id, start)
        await store.insert(run_id, "@llm/0", turn % (0, 0, 5))
        await store.insert(run_id, "tool:c0", result)
        await store.insert(run_id, "@llm/1", turn % (1, 1, 7))


async def test_summary_statuses_equal_the_exact_statuses(make_store: StoreFactory) -> None:
    writer = await make_store()
    await build_demo(writer, bulk_turns=12)
    await write_corpus(writer)
    await write_odd_runs(writer)
    store = await make_store(read_only=True)
    run_ids = [run_id async for run_id in store.runs()]
    read_whole: list[str] = []

    async def exact(run_id: str) -> RunStatus:
        read_whole.append(run_id)
        return await run_status(store, run_id)

    summed = await statuses(store, run_ids, exact)
    expected = [comparable(await run_status(store, run_id)) for run_id in run_ids]
    assert [comparable(s) for s in summed] == expected
    # Without a reader of its own, a page's short unfinished runs are read whole in one go.
    assert [comparable(s) for s in await statuses(store, run_ids)] == expected
    # A tracker's first read of many runs reads them in one go too, and reads on from there.
    tracker = StatusTracker(store)
    assert [comparable(s) for s in await tracker.statuses(run_ids)] == expected
    assert [comparable(s) for s in await tracker.statuses(run_ids)] == expected
    finished = {s.run_id for s in summed if s.state in (RunState.COMPLETE, RunState.ABORTED, RunState.CANCELLED)}
    assert len(finished) > 20
    if store.IMPLEMENTS_SUMMARIES:
        # Only runs whose summary cannot decide are read whole: the unfinished, and the odd ones.
        odd = {"redacted", "go-redacted", "float-usage", "go-v08", "go-v07"}  # tombstones, a bad member, no header
        assert finished & set(read_whole) <= odd, sorted(finished & set(read_whole))
        assert {"leased-done", "foreign-format", "refund-a1002"} <= finished - set(read_whole)
    by_id = {s.run_id: s for s in summed}
    assert by_id["leased-done"].lease_holder == "worker-1#1" and by_id["leased-done"].state == RunState.COMPLETE
    assert by_id["renamed"].state == RunState.UNREADABLE and by_id["not-json"].state == RunState.UNREADABLE
    assert by_id["header-only-other"].state == RunState.UNREADABLE
    assert by_id["open-plain"].state == RunState.STALLED and by_id["open-plain"].tokens == 12
    assert by_id["open-tool-usage"].tokens == 23 and by_id["open-second-kind"].turns == 3
