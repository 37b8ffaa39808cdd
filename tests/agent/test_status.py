"""Run status: every state produced by a real run, read back from each store."""

from __future__ import annotations

import json

import pytest

from agenttui.demo.build import CrashingModel, SimulatedCrash, build_demo
from agenttui.demo.desk import demo_model, desk_agent, refund_story
from agenttui.journal import Journal, Record, StepKind
from agenttui.replay.fork import fork_run
from agenttui.replay.save import plan_save
from agenttui.runs import RunState, is_complete, run_status
from agenttui.stores.base import Store
from tests.conftest import StoreFactory

#: The halted run's first turn, reworded: the fork replays on to the refund the recording halted on.
SAME_LOOKUP = json.dumps({"role": "assistant", "parts": [
    {"type": "text", "text": "Looking A-1004 up."},
    {"type": "tool_use", "id": "call_0_0", "name": "lookup_order", "args": {"order_id": "A-1004"}},
]})  # fmt: skip


async def test_every_status_from_real_runs(make_store: StoreFactory) -> None:
    writer = await make_store()
    runs = await build_demo(writer, bulk_turns=12)
    # in-flight: an unfinished run whose driver holds a live lease
    script = refund_story("A-1001", 42.5)
    with pytest.raises(SimulatedCrash):
        await desk_agent(CrashingModel(demo_model(script), 1), writer).run("in-flight", "refund A-1001")
    await writer.acquire_lease("in-flight", "worker-7#1", ttl=60)
    # unreadable: bytes no journal reader can decode
    await Journal(writer).append("broken", Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
    await writer.insert("broken", "@llm/0", b"\x00garbage")
    # fork: a what-if fork of the halted run, saved into the store beside it
    fork = await fork_run(writer, "refund-a1004-halted", "@llm/0", SAME_LOOKUP)
    await (await plan_save(fork, writer, where="the store")).apply(writer)
    reader = await make_store(read_only=True)
    expected = {r.run_id: r.expected for r in runs} | {
        "in-flight": RunState.IN_FLIGHT, "broken": RunState.UNREADABLE, "refund-a1004-halted~fork-1": RunState.FORK,
    }  # fmt: skip
    seen = {run_id: (await run_status(reader, run_id)) async for run_id in reader.runs()}
    assert {run_id: s.state for run_id, s in seen.items() if ">" not in run_id} == expected
    assert set(RunState) == set(expected.values()) | {RunState.ABORTED}  # no agent run aborts: that is a saga's end
    assert seen["refund-a1005"].tool_name == "refund_payment" and seen["refund-a1005"].tool_use_id == "call_1_0"
    assert seen["settlement-a1002"].wake_at is not None
    assert seen["refund-a1004-halted"].detail.startswith("refund_payment")
    assert seen["in-flight"].lease_holder == "worker-7#1"
    assert seen["refund-a1001-cancelled"].detail == "customer withdrew the request"
    assert "@llm/0" in seen["broken"].detail
    assert seen["eligibility-a1004>call_0_0"].state == RunState.COMPLETE
    assert seen["audit-bulk"].turns == 12 and seen["audit-bulk"].tokens > 0


async def test_a_lapsed_lease_is_not_in_flight(make_store: StoreFactory) -> None:
    store = await make_store()
    await build_demo(store, bulk_turns=2)
    await store.acquire_lease("refund-a1001-stalled", "gone#1", ttl=0.01)
    import asyncio

    await asyncio.sleep(0.1)  # the lapse is on the store's clock
    assert (await run_status(store, "refund-a1001-stalled")).state == RunState.STALLED


async def test_is_complete_takes_the_first_end_marker(store: Store) -> None:
    journal = Journal(store)
    await journal.append("r", Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
    await journal.append("r", Record("run:cancelled", StepKind.VALUE, result=b'{"reason":"stop"}'))
    await journal.append("r", Record("run:complete", StepKind.VALUE))
    assert not await is_complete(store, "r")
    assert (await run_status(store, "r")).state == RunState.CANCELLED


async def test_a_journal_of_a_newer_format_is_unreadable(store: Store) -> None:
    await store.insert("r", "@journal", b'{"name":"@journal","kind":"header","format":"bide.journal.v1"}')
    await store.insert("r", "run:start", b'{"name":"run:start","kind":"value","result":{"input":"x"}}')
    status = await run_status(store, "r")
    assert status.state == RunState.UNREADABLE and "bide.journal.v1" in status.detail


async def test_a_headerless_journal_reads_as_legacy(store: Store) -> None:
    await store.insert("r", "run:start", b'{"name":"run:start","kind":"value","result":{"input":"x","saga":false}}')
    status = await run_status(store, "r")
    assert status.legacy and status.state == RunState.STALLED and status.detail == "no model turn recorded"
