"""Replay: a recorded run re-driven offline reproduces its answer and its journal."""

from __future__ import annotations

import dataclasses

import pytest

from agenttui.agent import Call, ModelRequest, ToolCompleted
from agenttui.demo.desk import demo_model, desk_agent, turns
from agenttui.errors import RunNotFoundError
from agenttui.journal import Journal, Record, encode_record
from agenttui.replay import NoRecordedOutput, events_of, replay, replay_events
from agenttui.stores.base import Store
from agenttui.stores.memory import MemStore
from tests.conftest import StoreFactory

SCRIPT = turns(
    (
        "Looking the order up.",
        [Call("lookup_order", {"order_id": "A-1004"}), Call("lookup_order", {"order_id": "A-1001"})],
    ),
    ("Asking the specialist.", [Call("refunds_specialist", {"task": "Is A-1004 eligible?"})]),
    ("Emailing.", [Call("send_email", {"to": "edsger@example.com", "subject": "Eligible"})]),
    ("A-1004 is eligible; I emailed the customer.", []),
)
PROMPT = "Is A-1004 refundable? Tell the customer."


def comparable(records: list[Record]) -> list[bytes]:
    """The journal with what differs between drives by design (salts, claims, times) blanked."""
    return [encode_record(dataclasses.replace(r, salt=b"", claim="", attempted_at=0)) for r in records]


async def test_a_replay_reproduces_the_answer_and_the_journal(store: Store) -> None:
    original = await desk_agent(demo_model(SCRIPT), store).run("r1", PROMPT)
    fresh = MemStore()
    replayed = await desk_agent(await replay(store, "r1"), fresh).run("r1", PROMPT)
    assert replayed == original
    for run_id in ("r1", "r1>call_1_0"):  # the sub-agent's journal too: replay is exact across the tree
        assert comparable(await Journal(fresh).history(run_id)) == comparable(await Journal(store).history(run_id))


async def test_asking_for_one_turn_more_is_no_recorded_output(store: Store) -> None:
    await desk_agent(demo_model(SCRIPT), store).run("r1", PROMPT)
    model = await replay(store, "r1")
    with pytest.raises(NoRecordedOutput) as diverged:
        async for _ in model.stream(ModelRequest("r1", 4, ())):
            pass
    assert diverged.value.turn == 4 and diverged.value.recorded == 4


async def test_a_replay_never_writes_to_the_store_it_reads(make_store: StoreFactory) -> None:
    writer = await make_store()
    await desk_agent(demo_model(SCRIPT), writer).run("r1", PROMPT)
    reader = await make_store(read_only=True)
    await desk_agent(await replay(reader, "r1"), MemStore()).run("r1", PROMPT)


async def test_replay_of_an_unknown_run(store: Store) -> None:
    with pytest.raises(RunNotFoundError):
        await replay(store, "nope")


async def test_replay_events_match_what_a_resume_re_emits(store: Store) -> None:
    agent = desk_agent(demo_model(SCRIPT), store)
    await agent.run("r1", PROMPT)
    resumed = [e async for e in agent.stream("r1", PROMPT) if type(e).__name__ in ("AssistantTurn", "ToolCompleted")]
    events = await replay_events(store, "r1")
    assert events == resumed
    assert [type(e).__name__ for e in events] == ["AssistantTurn", "ToolCompleted", "ToolCompleted", "AssistantTurn",
                                                  "ToolCompleted", "AssistantTurn", "ToolCompleted", "AssistantTurn"]  # fmt: skip
    assert isinstance(events[1], ToolCompleted) and events[1].name == "lookup_order" and not events[1].is_error
    assert events == events_of("r1", await Journal(store).history("r1"))


#: What a replay of each demo run finds: complete runs match to the end, unfinished ones up to
#: where they stop, and runs the loop cannot re-drive are refused.
DEMO_VERDICTS = {
    "audit-bulk": "matches", "eligibility-a1004": "matches", "lookup-z0042": "matches", "refund-a1002": "matches",
    "refund-a1003-denied": "matches",
    "question-a1001": "matches-so-far", "refund-a1001-cancelled": "matches-so-far", "refund-a1001-stalled": "matches-so-far",
    "refund-a1004-halted": "matches-so-far", "refund-a1005": "matches-so-far", "refund-a1005-approved": "matches-so-far",
    "settlement-a1002": "matches-so-far", "refund-a1006-in-flight": "matches-so-far",
    "lookup-a1001-damaged": "refused", "reply-a1006": "refused", "saga-a1003-cancelling": "refused", "saga-a1003-rolled-back": "refused",
}  # fmt: skip


async def test_every_demo_run_replays_with_its_verdict(store: Store) -> None:
    from agenttui.demo.build import build_demo, factory
    from agenttui.replay.session import replay_verdict

    await build_demo(store, bulk_turns=4)
    found = {}
    for run_id in DEMO_VERDICTS:
        _, verdict = await replay_verdict(store, run_id)
        found[run_id] = verdict.kind.value
    assert found == DEMO_VERDICTS
    # With the demo's own code as the agent, the finished runs match too: everything it writes counts.
    for run_id in ("refund-a1002", "refund-a1003-denied", "lookup-z0042", "eligibility-a1004"):
        _, verdict = await replay_verdict(store, run_id, factory(run_id))
        assert verdict.kind.value == "matches", (run_id, verdict.summary())


# -- a result a redaction replaced ----------------------------------------------------------------


async def test_a_redacted_result_is_fed_to_the_replay_and_tells_the_model_so(make_store: StoreFactory) -> None:
    from agenttui.replay.session import ReplaySession
    from tests.gocorpus import write_corpus

    store = await make_store()
    await write_corpus(store)
    entry = await store.get("go-redacted", "tool:toolu_13")
    assert entry is not None
    tombstone = entry.data
    session = await ReplaySession.open(store, "go-redacted")
    await session.run_to_end()
    told = [e for e in session.progress.events if isinstance(e, ToolCompleted)]
    assert [(e.tool_use_id, e.result) for e in told] == [("toolu_13", tombstone)]
    replayed = {r.name: r for r in await session.replayed()}
    assert replayed["tool:toolu_13"].raw == tombstone  # the store's bytes, as they stand


async def test_a_live_drive_still_refuses_a_run_holding_a_redacted_result(make_store: StoreFactory) -> None:
    from agenttui.agent.loop import UnreadableJournal
    from tests.gocorpus import write_corpus

    store = await make_store()
    await write_corpus(store)
    agent = desk_agent(demo_model(SCRIPT), store)
    with pytest.raises(UnreadableJournal, match="tool:toolu_13"):
        await agent.run("go-redacted", "Look up my card")
