"""The agent loop over every store: what it journals, resumes, pauses and their resolution."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from agenttui.agent import (
    Agent,
    AssistantTurn,
    Call,
    Finished,
    Interrupted,
    MemWaker,
    PendingApproval,
    ResumeHalt,
    RunEnded,
    ScriptedModel,
    Sleeping,
    ToolCompleted,
    ToolStarted,
    TurnStarted,
    tool,
    with_waker,
)
from agenttui.agent.pauses import NothingPending
from agenttui.demo.desk import Effects, OrderRef, demo_model, desk_agent, refund_story, turns
from agenttui.journal import Journal, StepKind, decode_json, encode_record
from agenttui.runs import answer, approve, cancel, deny, resolve_halt
from agenttui.stores.base import Store


async def names(store: Store, run_id: str) -> list[str]:
    return [r.name for r in await Journal(store).history(run_id)]


async def drive_to_approval(store: Store, run_id: str, effects: Effects | None = None) -> PendingApproval:
    agent = desk_agent(demo_model(refund_story("A-1002", 129.0)), store, effects)
    with pytest.raises(PendingApproval) as paused:
        await agent.run(run_id, "My standing mat arrived damaged, order A-1002.")
    return paused.value


async def test_a_run_journals_every_step_in_order(store: Store) -> None:
    effects = Effects()
    paused = await drive_to_approval(store, "r1", effects)
    assert paused.tool_name == "refund_payment" and paused.tool_use_id == "call_1_0"
    assert json.loads(paused.tool_args) == {"order_id": "A-1002", "amount": 129.0, "reason": "damaged in transit"}
    assert paused.args == (str(paused),)  # Exception.args stays the message, not the call's bytes
    await approve(store, "r1", paused.tool_use_id, approver="ops@example.com")
    agent = desk_agent(demo_model(refund_story("A-1002", 129.0)), store, effects)
    result = await agent.run_result("r1", "ignored on resume")
    assert result.message.text.startswith("Refunded $129.00")
    assert result.turns == 2  # the two turns after the approval; replayed ones are not counted
    assert await names(store, "r1") == [
        "@journal", "run:start", "@llm/0", "tool:call_0_0", "@llm/1", "approval:call_1_0",
        "attempt:tool:call_1_0", "tool:call_1_0", "@llm/2", "tool:call_2_0", "@llm/3", "run:complete",
    ]  # fmt: skip
    history = await Journal(store).history("r1")
    assert result.usage == sum((r.usage for r in history if r.usage), start=type(result.usage)())
    start = decode_json(history[1].result)
    assert start["input"] == "My standing mat arrived damaged, order A-1002."
    assert "tools" not in start  # no tool filter, as a Go loop without one writes
    refund_policy = next(t for t in start["ext"]["agenttui"]["tools"] if t["name"] == "refund_payment")
    assert refund_policy == {"name": "refund_payment", "approval": {"single": True}}
    assert effects.refunds == [("A-1002", 129.0)]


async def test_resuming_a_complete_run_replays_without_executing(store: Store) -> None:
    effects = Effects()
    agent = desk_agent(
        demo_model(turns(("Looking.", [Call("lookup_order", {"order_id": "A-1001"})]), ("Found it.", []))),
        store,
        effects,
    )
    await agent.run("r1", "where is A-1001?")
    before = await names(store, "r1")
    events = [e async for e in agent.stream("r1", "where is A-1001?")]
    assert await names(store, "r1") == before
    assert [type(e) for e in events] == [AssistantTurn, ToolCompleted, AssistantTurn, Finished]
    assert all(e.replayed for e in events if isinstance(e, (AssistantTurn, ToolCompleted)))


async def test_live_events_stream_in_order(store: Store) -> None:
    agent = desk_agent(
        demo_model(turns(("Looking.", [Call("lookup_order", {"order_id": "A-1001"})]), ("Found it.", []))), store
    )
    kinds = [type(e).__name__ for e in [e async for e in agent.stream("r1", "hi")]]
    assert kinds[0] == "TurnStarted" and kinds[-1] == "Finished"
    assert kinds.index("ToolStarted") < kinds.index("ToolCompleted")
    assert "ModelEvent" in kinds and kinds.count("AssistantTurn") == 2


async def test_a_failing_tool_is_recorded_as_an_error_result(store: Store) -> None:
    agent = desk_agent(
        demo_model(turns(("Looking.", [Call("lookup_order", {"order_id": "Z-9"})]), ("No such order.", []))), store
    )
    await agent.run("r1", "refund Z-9")
    record = await Journal(store).get("r1", "tool:call_0_0")
    assert record is not None and record.is_error and decode_json(record.result) == "no order Z-9"


async def test_a_denial_is_recorded_as_the_sdk_records_it(store: Store) -> None:
    effects = Effects()
    paused = await drive_to_approval(store, "r1", effects)
    outcome = await deny(store, "r1", paused.tool_use_id)
    assert [r.name for r in outcome.written] == ["approval:call_1_0"]  # the decision alone, as the SDK's Approve
    agent = desk_agent(demo_model(refund_story("A-1002", 129.0)), store, effects)
    await agent.run("r1", "")
    assert effects.refunds == []
    denial = await Journal(store).get("r1", "tool:call_1_0")
    assert denial is not None
    # The next drive records the denial with the tool's policy: safety always present (`{}` for a
    # side effect), and the gate, as a Go driver writes it.
    assert encode_record(dataclasses.replace(denial, salt=b"")) == (
        b'{"name":"tool:call_1_0","kind":"tool_result","tool_use_id":"call_1_0","result":"tool call denied by human",'
        b'"is_error":true,"safety":{},"approval":{"single":true}}'
    )


async def test_deciding_twice_writes_once(store: Store) -> None:
    paused = await drive_to_approval(store, "r1")
    first = await approve(store, "r1", paused.tool_use_id)
    second = await approve(store, "r1", paused.tool_use_id)
    denied = await deny(store, "r1", paused.tool_use_id)
    assert first.applied and not second.applied and not denied.applied and denied.standing.approved
    with pytest.raises(NothingPending):
        await approve(store, "r1", "call_never_made")


async def test_interrupt_waits_for_an_answer(store: Store) -> None:
    script = turns(
        ("I need to ask.", [Call("ask_customer", {"question": "Refund to card or store credit?"})]),
        ("Store credit it is.", []),
    )
    agent = desk_agent(demo_model(script), store)
    with pytest.raises(Interrupted) as asked:
        await agent.run("r1", "refund A-1001")
    assert asked.value.question == "Refund to card or store credit?"
    await answer(store, "r1", asked.value.name, "store credit")
    assert (await agent.run("r1", "")).text == "Store credit it is."
    tool_result = await Journal(store).get("r1", "tool:call_0_0")
    assert tool_result is not None and decode_json(tool_result.result) == "store credit"


async def test_durable_sleep_wakes_through_the_waker(store: Store) -> None:
    now = [datetime(2026, 11, 29, 12, 0, tzinfo=UTC)]
    script = turns(
        ("Waiting for settlement.", [Call("wait_for_settlement", {"order_id": "A-1001", "hours": 2})]), ("Settled.", [])
    )
    agent = desk_agent(demo_model(script), store, clock=lambda: now[0])
    finished = []

    async def resume(run_id: str) -> None:
        finished.append(await agent.run(run_id, ""))

    waker = MemWaker(resume)
    with with_waker(waker):
        with pytest.raises(Sleeping) as sleeping:
            await agent.run("r1", "refund A-1001")
        assert sleeping.value.wake_at == now[0] + timedelta(hours=2)
        timer = await Journal(store).get("r1", "timer:settle-A-1001")
        assert timer is not None and decode_json(timer.result) == "2026-11-29T14:00:00Z"
        # A restarted process knows nothing of the timer: re-driving into the sleep re-registers it.
        fresh_waker = MemWaker(resume)
        with with_waker(fresh_waker), pytest.raises(Sleeping):
            await agent.run("r1", "")
        assert fresh_waker.pending == [(now[0] + timedelta(hours=2), "r1")]
        assert await fresh_waker.fire_due(now[0]) == []
        now[0] += timedelta(hours=2, seconds=1)
        assert await fresh_waker.fire_due(now[0]) == ["r1"]
    assert finished[0].text == "Settled."


async def test_an_attempt_without_a_result_halts_and_resolves(store: Store) -> None:
    class Crash(BaseException):
        """Stands for the process dying while the effect runs."""

    effects = Effects()
    crashing = Effects(on_refund=lambda *_: (_ for _ in ()).throw(Crash()))
    paused = await drive_to_approval(store, "r1", effects)
    await approve(store, "r1", paused.tool_use_id)
    with pytest.raises(Crash):
        await desk_agent(demo_model(refund_story("A-1002", 129.0)), store, crashing).run("r1", "")
    agent = desk_agent(demo_model(refund_story("A-1002", 129.0)), store, effects)
    with pytest.raises(ResumeHalt) as halted:
        await agent.run("r1", "")
    assert halted.value.marker == "attempt:tool:call_1_0"
    # The human checked the payment provider: it did not fire. Retry it.
    outcome = await resolve_halt(store, "r1", "call_1_0", fired=False)
    assert outcome.written[0].kind == StepKind.NOT_STARTED
    await agent.run("r1", "")
    assert effects.refunds == [("A-1002", 129.0)]
    assert "attempt:retry:1:tool:call_1_0" in await names(store, "r1")


async def test_resolving_a_halt_as_fired_records_the_outcome(store: Store) -> None:
    class Crash(BaseException):
        pass

    effects = Effects()
    paused = await drive_to_approval(store, "r1", effects)
    await approve(store, "r1", paused.tool_use_id)
    with pytest.raises(Crash):
        await desk_agent(
            demo_model(refund_story("A-1002", 129.0)),
            store,
            Effects(on_refund=lambda *_: (_ for _ in ()).throw(Crash())),
        ).run("r1", "")
    outcome = await resolve_halt(store, "r1", "call_1_0", fired=True, result={"refund_id": "rf_manual"})
    assert outcome.standing.reconciled
    await desk_agent(demo_model(refund_story("A-1002", 129.0)), store, effects).run("r1", "")
    assert effects.refunds == []  # it had fired: never fired again


async def test_cancel_ends_the_run(store: Store) -> None:
    paused = await drive_to_approval(store, "r1")
    outcome = await cancel(store, "r1", "customer withdrew the request")
    assert outcome.standing.result is not None
    assert json.loads(outcome.standing.result) == {"reason": "customer withdrew the request"}
    with pytest.raises(RunEnded, match="customer withdrew"):
        await desk_agent(demo_model(refund_story("A-1002", 129.0)), store).run("r1", "")
    with pytest.raises(RunEnded):
        await cancel(store, "r1")
    with pytest.raises(RunEnded):
        await approve(store, "r1", paused.tool_use_id)


async def test_a_sub_agent_runs_under_its_own_run_id(store: Store) -> None:
    script = turns(
        ("Asking the specialist.", [Call("refunds_specialist", {"task": "Is A-1004 eligible?"})]),
        ("The specialist says it is eligible.", []),
    )
    result = await desk_agent(demo_model(script), store).run_result("r1", "Can A-1004 be refunded?")
    child = "r1>call_0_0"
    assert await names(store, child) == ["@journal", "run:start", "@llm/0", "tool:call_0_0", "@llm/1", "run:complete"]
    call = await Journal(store).get("r1", "tool:call_0_0")
    assert call is not None and decode_json(call.result).startswith("Eligible")
    child_usage = call.usage
    assert child_usage and result.usage.total > child_usage.total > 0


async def test_a_tool_the_agent_does_not_have_is_an_error_result(store: Store) -> None:
    @tool(read_only=True)
    async def only(args: OrderRef) -> str:
        return "x"

    agent = Agent(ScriptedModel(turns(("Hm.", [Call("vanished", {})]), ("Done.", []))), store, only)
    await agent.run("r1", "go")
    record = await Journal(store).get("r1", "tool:call_0_0")
    assert record is not None and record.is_error and decode_json(record.result) == "unknown tool: vanished"


async def test_two_events_kinds_for_a_live_tool_call(store: Store) -> None:
    agent = desk_agent(
        demo_model(turns(("Looking.", [Call("lookup_order", {"order_id": "A-1001"})]), ("Done.", []))), store
    )
    events = [e async for e in agent.stream("r1", "x")]
    started = next(e for e in events if isinstance(e, ToolStarted))
    completed = next(e for e in events if isinstance(e, ToolCompleted))
    assert started.tool_use_id == completed.tool_use_id == "call_0_0" and not completed.replayed
    assert sum(isinstance(e, TurnStarted) for e in events) == 2


@dataclasses.dataclass
class RefundArgs:
    order: str


@dataclasses.dataclass
class LookupArgs:
    customer: int


def test_tools_made_afresh_each_read_their_own_arguments_type() -> None:
    """A factory makes its tools per run (closures of one code), read once per code; a wrapped
    function is read each time: its code is the wrapper's, shared by whatever it wraps."""
    import functools

    from agenttui.agent import tool
    from agenttui.agent.tools import json_schema

    def made() -> object:
        @tool(read_only=True)
        async def refund(args: RefundArgs) -> str:
            return args.order

        return refund

    first, second = made(), made()
    assert first.args_type is second.args_type is RefundArgs  # type: ignore[attr-defined]

    def wrapped(fn: object) -> object:
        @functools.wraps(fn)  # type: ignore[arg-type]
        async def call(*args: object) -> object:
            return await fn(*args)  # type: ignore[operator]

        return call

    async def refund(args: RefundArgs) -> str:
        return args.order

    async def lookup(ctx: object, args: LookupArgs) -> str:
        return str(args.customer)

    refund_tool, lookup_tool = tool()(wrapped(refund)), tool()(wrapped(lookup))  # type: ignore[arg-type]
    assert (refund_tool.args_type, lookup_tool.args_type) == (RefundArgs, LookupArgs)
    assert (refund_tool.wants_context, lookup_tool.wants_context) == (False, True)
    assert json_schema(LookupArgs)["properties"] == {"customer": {"type": "integer"}}


async def test_the_demo_desk_says_a_denied_refund_was_declined(store: Store) -> None:
    """Its stories are written for refunds that go through: after a reviewer's deny, a re-drive
    neither emails nor says "Refunded"."""
    from agenttui.demo.build import build_demo, factory
    from agenttui.demo.desk import DECLINED, Effects, desk_tools
    from agenttui.runs.recovery.actions import deny

    await build_demo(store, bulk_turns=2)
    await deny(store, "refund-a1005", "call_1_0")
    effects = Effects()
    setup = dataclasses.replace(factory("refund-a1005"), tools=desk_tools(effects))
    answer = await setup.agent(store).run("refund-a1005", "")
    assert answer.text == DECLINED and effects.refunds == [] and effects.emails == []
