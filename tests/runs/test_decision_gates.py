"""A decision is written only on a call that awaits one: approve and deny refuse a call whose
result is recorded, a question, a call attempted, an m-of-n gate and a tool without a gate,
naming the call's gate and what fits instead, and write nothing. The check is the core's
(``decide_approval``), so the CLI and the TUI's operation (``Decide``) both meet it."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from agenttui.agent.pauses import AlreadyDecided, NoApprovalGate
from agenttui.errors import RunNotFoundError
from agenttui.runs.recovery.operations import Decide, ReleaseLease
from agenttui.stores.base import Store
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import CASES, GoRun

GO = {case.run_id: case for case in CASES}


async def entries(store: SQLiteStore | MemStore, run_id: str) -> list[tuple[str, bytes]]:
    return [(entry.name, entry.data) async for entry in store.load(run_id)]


async def go_store(*cases: GoRun) -> MemStore:
    store = MemStore()
    for case in cases:
        for name, data in case.entries():
            await store.insert(case.run_id, name, data)
    return store


@pytest.mark.parametrize(
    ("run_id", "call", "says"),
    [
        ("refund-a1005", "call_0_0", "call 'call_0_0' (lookup_order) of run 'refund-a1005' already has its result"),
        ("question-a1001", "call_1_0", "asks a question: it awaits an answer, not an approval (agenttui answer STORE "
                                       "question-a1001 ask-call_1_0 VALUE)"),
        ("settlement-a1002", "call_0_0", "(wait_for_settlement) of run 'settlement-a1002' has no approval gate"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("approved", [True, False])
async def test_a_call_without_a_gate_is_never_decided(
    demo_db: Path, run_id: str, call: str, says: str, approved: bool
) -> None:
    store = await SQLiteStore.open(demo_db, create=False)
    try:
        before = await entries(store, run_id)
        with pytest.raises(NoApprovalGate) as refused:
            await Decide(run_id, call, approved).apply(store)  # what the TUI applies, and the CLI
        assert says in refused.value.message and refused.value.message.endswith("nothing written")
        assert await entries(store, run_id) == before
        assert await store.get_lease(run_id) is None  # the lease taken to decide is given back
    finally:
        await store.close()


async def test_a_go_call_attempted_or_under_an_m_of_n_gate_is_refused() -> None:
    quorum = GO["go-quorum"]
    open_quorum = dataclasses.replace(quorum, run_id="go-quorum-open", records=quorum.records[:3])  # one vote so far
    store = await go_store(GO["go-halted"], open_quorum)
    halted = await entries(store, "go-halted")
    with pytest.raises(NoApprovalGate, match=r"was attempted and its outcome is unknown: .*agenttui resolve STORE "
                                             r"go-halted toolu_05 --fired or --not-fired"):  # fmt: skip
        await Decide("go-halted", "toolu_05", True).apply(store)
    assert await entries(store, "go-halted") == halted
    voted = await entries(store, "go-quorum-open")
    with pytest.raises(NoApprovalGate, match=r"has an m-of-n gate \(1 signed decisions so far\)"):
        await Decide("go-quorum-open", "toolu_04", False).apply(store)
    assert await entries(store, "go-quorum-open") == voted


async def test_a_go_call_the_journal_cannot_show_gated_may_still_be_decided() -> None:
    """A Go service's run records no tool policy: its open call may await a gate, as the SDK's
    ``Approve`` allows; and a call decided already names the standing decision (exit 4)."""
    store = await go_store(GO["go-awaiting-approval"], GO["go-approved-not-driven"])
    assert "approved: wrote approval:toolu_03" in await Decide("go-awaiting-approval", "toolu_03", True).apply(store)
    with pytest.raises(AlreadyDecided):
        await Decide("go-approved-not-driven", "toolu_03", False).apply(store)


async def test_every_store_refuses_alike_and_releases_only_a_run_it_knows(store: Store) -> None:
    for case in (GO["go-halted"], GO["go-awaiting-approval"]):
        for name, data in case.entries():
            await store.insert(case.run_id, name, data)
    with pytest.raises(NoApprovalGate):
        await Decide("go-halted", "toolu_05", False).apply(store)
    assert "approved: wrote approval:toolu_03" in await Decide("go-awaiting-approval", "toolu_03", True).apply(store)
    with pytest.raises(RunNotFoundError):
        await ReleaseLease("no-such-run").apply(store)
    assert await ReleaseLease("go-halted").apply(store) == "nothing to release: the run holds no lease"
    # A lease row with no record yet is a run too: its driver died before writing its first one.
    assert await store.acquire_lease("orphan", "gone-worker", ttl=0.05)
    await asyncio.sleep(0.2)
    assert await ReleaseLease("orphan").apply(store) == "released the lapsed lease of gone-worker"
