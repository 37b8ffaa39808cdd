"""Builds the demo store with the runtime itself: one run in every status a run can be in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from agenttui.agent.factory import AgentSetup
from agenttui.agent.loop import utc_now
from agenttui.agent.model import Model, ModelDelta, ModelRequest
from agenttui.agent.pauses import RunPaused
from agenttui.agent.scripted import Call, Turn
from agenttui.demo.desk import (
    SPECIALIST,
    SPECIALIST_PROMPT,
    SYSTEM_PROMPT,
    Effects,
    demo_model,
    desk_agent,
    desk_tools,
    refund_story,
    turns,
)
from agenttui.journal import keys
from agenttui.journal.codec import go_json
from agenttui.journal.journal import Journal
from agenttui.journal.keys import parent_run_id, root_run_id
from agenttui.journal.record import Message, Record, Safety, StepKind, TextPart, ToolUsePart, Usage
from agenttui.runs.recovery.actions import approve, cancel, deny
from agenttui.runs.recovery.lease import new_holder
from agenttui.runs.statuses.status import RunState
from agenttui.stores.base import Store

BULK_TURNS = 2000
LIVE_TURNS = 400
LIVE_RUN = "live-tail"
_ORDERS = ["A-1001", "A-1002", "A-1003", "A-1004", "A-1005"]


class SimulatedCrash(BaseException):
    """Stands for the driving process dying mid-step (a BaseException, so nothing records it)."""


class CrashingModel:
    """A model that dies when ``agent`` asks for turn ``crash_at``, as a process killed mid-call
    would (a sub-agent's name: the process dies inside a sub-run)."""

    def __init__(self, model: Model, crash_at: int, *, agent: str = "refund_desk") -> None:
        self.model, self.crash_at, self.agent = model, crash_at, agent

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        if request.turn == self.crash_at and request.agent == self.agent:
            raise SimulatedCrash()
        async for delta in self.model.stream(request):
            yield delta


def _crash_on_refund(*_: object) -> None:
    raise SimulatedCrash()


def bulk_script(count: int) -> list[Turn]:
    script = [Turn(f"Auditing order {_ORDERS[n % 5]} (pass {n // 5 + 1}).", [Call("lookup_order", {"order_id": _ORDERS[n % 5]})],
                   usage=Usage(300 + n, 20)) for n in range(count - 1)]  # fmt: skip
    return [*script, Turn(f"Audit done: {count - 1} lookups, no anomalies.", usage=Usage(300 + count, 60))]


def live_script(count: int) -> list[Turn]:
    script = [Turn(f"Watching order {_ORDERS[n % 5]} (check {n + 1}).", [Call("lookup_order", {"order_id": _ORDERS[n % 5]})],
                   usage=Usage(250, 15)) for n in range(count - 1)]  # fmt: skip
    return [*script, Turn("Watch finished.")]


#: Every demo run's model script, so a re-drive (the demo's factory) continues its story.
SCRIPTS: dict[str, list[Turn]] = {
    "refund-a1002": refund_story("A-1002", 129.0),
    "lookup-z0042": turns(
        ("Let me find order Z-0042.", [Call("lookup_order", {"order_id": "Z-0042"})]),
        ("I could not find order Z-0042. Could you check the number on your receipt?", []),
    ),
    "refund-a1003-denied": [
        *refund_story("A-1003", 18.75, email=False)[:2],
        Turn("The refund was declined by a reviewer; I've opened a lost-parcel claim instead.", usage=Usage(500, 40)),
    ],
    "refund-a1004-halted": refund_story("A-1004", 240.0),
    "refund-a1005": refund_story("A-1005", 64.10),
    "question-a1001": turns(
        ("Let me look that order up.", [Call("lookup_order", {"order_id": "A-1001"})]),
        ("Before I refund: card or store credit?", [Call("ask_customer", {"question": "Refund to your card, or as store credit?"})]),
        ("Noted: store credit of $42.50 issued for order A-1001.", []),
    ),
    "settlement-a1002": turns(
        ("Refund submitted earlier; waiting for the card network to settle it.",
         [Call("wait_for_settlement", {"order_id": "A-1002", "hours": 36})]),
        ("Settled: the money is back on your card.", []),
    ),
    "refund-a1001-stalled": refund_story("A-1001", 42.5),
    "refund-a1001-cancelled": refund_story("A-1001", 42.5),
    "refund-a1005-approved": refund_story("A-1005", 64.10),
    "refund-a1006-in-flight": refund_story("A-1002", 129.0),
    "lookup-a1001-damaged": turns(
        ("Let me find order A-1001.", [Call("lookup_order", {"order_id": "A-1001"})]),
        ("Order A-1001, the walnut desk lamp, was delivered.", []),
    ),
    "eligibility-a1004": turns(
        ("Let me ask the refunds specialist.", [Call("refunds_specialist", {"task": "Is order A-1004 eligible for a full refund?"})]),
        ("Good news: order A-1004 is eligible for a full refund.", []),
    ),
}  # fmt: skip


def factory(run_id: str) -> AgentSetup:
    """The demo's agent factory (``--agent agenttui.demo.build:factory``): real desk tools, and the
    run's own script as the model a re-drive continues with."""
    root = root_run_id(run_id)
    script = SCRIPTS.get(root)
    max_turns = 100
    if script is None and root == "audit-bulk":
        script, max_turns = bulk_script(BULK_TURNS), BULK_TURNS + 1
    elif script is None and root.startswith(LIVE_RUN):
        script, max_turns = live_script(LIVE_TURNS), LIVE_TURNS + 1
    model = demo_model(script) if script else None
    tools = desk_tools()
    if parent_run_id(run_id) is not None:  # the specialist's run, which a desk's call started
        specialist_tools = [t for t in tools if t.name == "lookup_order"]
        return AgentSetup(specialist_tools, model, name=SPECIALIST, system_prompt=SPECIALIST_PROMPT)
    return AgentSetup(tools, model, name="refund_desk", system_prompt=SYSTEM_PROMPT, max_turns=max_turns)


#: Runs the refund desk's Python loop cannot write (a saga's rollback, a signal sent ahead, a
#: damaged row): written record by record, as a Go service writes them.
SAGA_ORDER = "A-1003"
IN_FLIGHT_HOLDER = "refund-worker-2-4242#8c1d5e7f9a0b3c2d"


async def write_saga(store: Store, run_id: str, *, rolled_back: bool) -> None:
    """A Go saga that refunded, then either failed to email and rolled back (``run:aborted``),
    or was asked to roll back before it emailed (``run:cancel-requested``, no end yet)."""
    journal = Journal(store)
    error = go_json("smtp: 550 mailbox unavailable")
    refund = {"order_id": SAGA_ORDER, "amount": 18.75, "reason": "lost"}
    records = [
        Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"Refund the lost cable kit (A-1003) and tell the customer.","saga":true,"kind":"agent"}'),
        Record(keys.llm_key(0), StepKind.MODEL, message=Message.assistant(TextPart("Refunding A-1003."), ToolUsePart("call_0_0", "refund_payment", go_json(refund))),
               usage=Usage(380, 30), finish="tool_use"),
        Record(keys.attempt_key("call_0_0"), StepKind.ATTEMPT, tool_use_id="call_0_0", attempted_at=1_767_225_600_000, claim="5608d3daa98f802ac851ca33910d95c3"),
        Record(keys.tool_key("call_0_0"), StepKind.TOOL_RESULT, tool_use_id="call_0_0", result=b'{"refund_id":"rf_A-1003","amount":18.75}', safety=Safety()),
    ]  # fmt: skip
    if not rolled_back:
        records.append(
            Record(
                keys.RUN_CANCEL_REQUESTED,
                StepKind.VALUE,
                result=go_json({"reason": "customer called: hold the refund"}),
            )
        )
    else:
        records += [
            Record(keys.llm_key(1), StepKind.MODEL, message=Message.assistant(TextPart("Emailing alan."), ToolUsePart("call_1_0", "send_email", go_json({"to": "alan@example.com", "subject": "Refunded"}))),
                   usage=Usage(420, 30), finish="tool_use"),
            Record(keys.tool_key("call_1_0"), StepKind.SAGA_FAIL, tool_use_id="call_1_0", result=error, safety=Safety()),
            Record(keys.RUN_ABORTED, StepKind.VALUE, result=error),
        ]  # fmt: skip
    for record in records:
        await journal.append(run_id, record)


#: Every root run ``build_demo`` writes (the live writer's runs are ``live-tail-<pid>``).
DEMO_RUN_IDS = frozenset({*SCRIPTS, "audit-bulk", "saga-a1003-rolled-back", "saga-a1003-cancelling", "reply-a1006"})


def is_demo_run(run_id: str) -> bool:
    """A run the demo writes, or a fork of one a person saved into the demo's store."""
    base = run_id.partition("~fork-")[0]
    return base in DEMO_RUN_IDS or base.startswith(LIVE_RUN)


@dataclass(frozen=True, slots=True)
class DemoRun:
    run_id: str
    expected: RunState
    story: str


async def build_demo(
    store: Store,
    *,
    bulk_turns: int = BULK_TURNS,
    progress: Callable[[str], None] | None = None,
    clock: Callable[[], datetime] = utc_now,
) -> list[DemoRun]:
    """Drive the refund desk into ``store`` once per story; return the runs and their statuses.

    ``clock`` pins every time the runs record (sleeps, attempts), for reproducible stores.
    """

    async def drive(
        run_id: str, prompt: str = "", effects: Effects | None = None, *, crash_at: int | None = None
    ) -> None:
        model = demo_model(SCRIPTS[run_id])
        agent = desk_agent(model if crash_at is None else CrashingModel(model, crash_at), store, effects, clock=clock)
        try:
            await agent.run(run_id, prompt)
        except (RunPaused, SimulatedCrash):
            pass  # the story stops where a real one would: paused, or its process dead

    async def complete() -> None:
        await drive("refund-a1002", "My standing mat (order A-1002) arrived damaged. Refund please.")
        await approve(store, "refund-a1002", "call_1_0", approver="ops@example.com")
        await drive("refund-a1002")

    async def denied() -> None:
        await drive("refund-a1003-denied", "Refund the lost cable kit, order A-1003.")
        await deny(store, "refund-a1003-denied", "call_1_0", approver="ops@example.com")
        await drive("refund-a1003-denied")

    async def halted() -> None:
        await drive("refund-a1004-halted", "Refund my monitor arm, order A-1004.")
        await approve(store, "refund-a1004-halted", "call_1_0", approver="ops@example.com")
        await drive("refund-a1004-halted", effects=Effects(on_refund=_crash_on_refund))

    async def cancelled() -> None:
        await drive("refund-a1001-cancelled", "Refund order A-1001.")
        await cancel(store, "refund-a1001-cancelled", "customer withdrew the request")

    async def ready() -> None:
        await drive("refund-a1005-approved", "Refund my keyboard, order A-1005.")
        await approve(store, "refund-a1005-approved", "call_1_0", approver="ops@example.com")

    async def not_started() -> None:
        # A reply sent to a run that was never started: the SDK's Signal writes it all the same.
        await Journal(store).append(
            "reply-a1006",
            Record(keys.signal_key("customer-reply"), StepKind.SIGNAL, result=go_json("yes, card please")),
        )

    async def unreadable() -> None:
        # Its process died before turn 1, and a bad disk or a buggy writer left turn 1 cut short.
        await drive("lookup-a1001-damaged", "Where is order A-1001?", crash_at=1)
        await store.insert(
            "lookup-a1001-damaged", "@llm/1", b'{"name":"@llm/1","kind":"model","message":{"role":"assis'
        )

    async def in_flight() -> None:
        # Another worker is driving it: its lease is live (for a day, so the demo store shows it
        # whether or not the TUI's own live writer runs).
        await drive("refund-a1006-in-flight", "Refund the desk mat, order A-1002.", crash_at=1)
        await store.acquire_lease("refund-a1006-in-flight", IN_FLIGHT_HOLDER, ttl=24 * 3600)

    async def bulk() -> None:
        agent = desk_agent(demo_model(bulk_script(bulk_turns)), store, max_turns=bulk_turns + 1, clock=clock)
        await agent.run("audit-bulk", "Audit every open order, one lookup per turn.")

    stories: list[tuple[str, RunState, str, Callable[[], Awaitable[object]]]] = [
        ("refund-a1002", RunState.COMPLETE, "approved refund, emailed", complete),
        ("lookup-z0042", RunState.COMPLETE, "a failed lookup", lambda: drive("lookup-z0042", "Where is my refund for order Z-0042?")),
        ("refund-a1003-denied", RunState.COMPLETE, "a denied refund", denied),
        ("refund-a1004-halted", RunState.HALTED, "crashed while refunding", halted),
        ("refund-a1005", RunState.AWAITING_APPROVAL, "refund awaiting approval",
         lambda: drive("refund-a1005", "I returned the keyboard (A-1005). Refund?")),
        ("question-a1001", RunState.AWAITING_INPUT, "asked the customer",
         lambda: drive("question-a1001", "I'd like my money back for the lamp, order A-1001.")),
        ("settlement-a1002", RunState.SLEEPING, "waiting 36 h for settlement",
         lambda: drive("settlement-a1002", "Has my refund for A-1002 settled?")),
        ("refund-a1001-stalled", RunState.STALLED, "crashed between turns",
         lambda: drive("refund-a1001-stalled", "Refund the lamp, order A-1001.", crash_at=1)),
        ("refund-a1001-cancelled", RunState.CANCELLED, "cancelled by a human", cancelled),
        ("eligibility-a1004", RunState.COMPLETE, "asked a sub-agent", lambda: drive("eligibility-a1004", "Can I get a full refund on A-1004?")),
        ("refund-a1005-approved", RunState.READY, "approved, not re-driven yet", ready),
        ("saga-a1003-rolled-back", RunState.ABORTED, "a Go saga that rolled back", lambda: write_saga(store, "saga-a1003-rolled-back", rolled_back=True)),
        ("saga-a1003-cancelling", RunState.CANCELLING, "a Go saga asked to roll back", lambda: write_saga(store, "saga-a1003-cancelling", rolled_back=False)),
        ("reply-a1006", RunState.NOT_STARTED, "a signal sent ahead of its run", not_started),
        ("lookup-a1001-damaged", RunState.UNREADABLE, "a damaged record", unreadable),
        ("refund-a1006-in-flight", RunState.IN_FLIGHT, "driven by another worker", in_flight),
        ("audit-bulk", RunState.COMPLETE, f"{bulk_turns} turns", bulk),
    ]  # fmt: skip
    runs = []
    for run_id, expected, text, build in stories:
        if progress is not None:
            progress(run_id)
        await build()
        runs.append(DemoRun(run_id, expected, text))
    return runs


async def write_live_run(
    store: Store, *, interval: float = 1.5, turns_total: int = LIVE_TURNS, run_id: str = LIVE_RUN
) -> None:
    """Keep one run in flight: a turn every ``interval`` seconds, under a held lease.

    The demo starts this in a separate process so the TUI has a run to tail.
    """
    agent = desk_agent(demo_model(live_script(turns_total), latency=interval), store, max_turns=turns_total + 1)
    holder = new_holder()
    if not await store.acquire_lease(run_id, holder, ttl=interval * 4):
        return  # another demo process is already writing it

    async def renew() -> None:
        while True:
            await asyncio.sleep(interval)
            await store.renew_lease(run_id, holder, ttl=interval * 4)

    renewer = asyncio.create_task(renew())
    try:
        await agent.run(run_id, "Watch the open orders and report anything odd.")
    finally:
        renewer.cancel()
        await store.release_lease(run_id, holder)
