"""Builds the demo store with the runtime itself: one run in every status a run can be in."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime

from agenttui.agent.actions import approve, cancel, deny
from agenttui.agent.loop import utc_now
from agenttui.agent.model import ModelDelta, ModelRequest
from agenttui.agent.pauses import RunPaused
from agenttui.agent.scripted import Call, Turn
from agenttui.demo.desk import Effects, demo_model, desk_agent, refund_story, turns
from agenttui.journal.record import Usage
from agenttui.replay.lease import new_holder
from agenttui.replay.status import RunState
from agenttui.stores.base import Store

BULK_TURNS = 2000


class SimulatedCrash(BaseException):
    """Stands for the driving process dying mid-step (a BaseException, so nothing records it)."""


class CrashingModel:
    """A model that dies when asked for turn ``crash_at``, as a process killed mid-call would."""

    def __init__(self, model: object, crash_at: int) -> None:
        self.model, self.crash_at = model, crash_at

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        if request.turn == self.crash_at and request.agent == "refund_desk":
            raise SimulatedCrash()
        async for delta in self.model.stream(request):  # type: ignore[attr-defined]
            yield delta


@dataclass(frozen=True, slots=True)
class DemoRun:
    run_id: str
    expected: RunState
    story: str


async def _drive_with(
    store: Store, run_id: str, script: list[Turn], prompt: str, effects: Effects | None = None, *, model: object = None,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    agent = desk_agent(model or demo_model(script), store, effects, clock=clock)  # type: ignore[arg-type]
    try:
        await agent.run(run_id, prompt)
    except (RunPaused, SimulatedCrash):
        pass


def _crash_on_refund(*_: object) -> None:
    raise SimulatedCrash()


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
    runs: list[DemoRun] = []
    _drive = functools.partial(_drive_with, clock=clock)

    async def story(run_id: str, expected: RunState, text: str, build: Callable[[], object]) -> None:
        if progress is not None:
            progress(run_id)
        await build()  # type: ignore[misc]
        runs.append(DemoRun(run_id, expected, text))

    async def complete() -> None:
        script = refund_story("A-1002", 129.0)
        await _drive(store, "refund-a1002", script, "My standing mat (order A-1002) arrived damaged. Refund please.")
        await approve(store, "refund-a1002", "call_1_0", approver="ops@example.com")
        await _drive(store, "refund-a1002", script, "")

    async def failed_tool() -> None:
        script = turns(
            ("Let me find order Z-0042.", [Call("lookup_order", {"order_id": "Z-0042"})]),
            ("I could not find order Z-0042. Could you check the number on your receipt?", []),
        )
        await _drive(store, "lookup-z0042", script, "Where is my refund for order Z-0042?")

    async def denied() -> None:
        script = refund_story("A-1003", 18.75, email=False)
        await _drive(store, "refund-a1003-denied", script, "Refund the lost cable kit, order A-1003.")
        await deny(store, "refund-a1003-denied", "call_1_0", approver="ops@example.com")
        script[-1] = Turn("The refund was declined by a reviewer; I've opened a lost-parcel claim instead.", usage=Usage(500, 40))
        await _drive(store, "refund-a1003-denied", script, "")

    async def halted() -> None:
        script = refund_story("A-1004", 240.0)
        await _drive(store, "refund-a1004-halted", script, "Refund my monitor arm, order A-1004.")
        await approve(store, "refund-a1004-halted", "call_1_0", approver="ops@example.com")
        await _drive(store, "refund-a1004-halted", script, "", Effects(on_refund=_crash_on_refund))

    async def awaiting_approval() -> None:
        await _drive(store, "refund-a1005", refund_story("A-1005", 64.10), "I returned the keyboard (A-1005). Refund?")

    async def awaiting_input() -> None:
        script = turns(
            ("Let me look that order up.", [Call("lookup_order", {"order_id": "A-1001"})]),
            ("Before I refund: card or store credit?", [Call("ask_customer", {"question": "Refund to your card, or as store credit?"})]),
            ("Done.", []),
        )
        await _drive(store, "question-a1001", script, "I'd like my money back for the lamp, order A-1001.")

    async def sleeping() -> None:
        script = turns(
            ("Refund submitted earlier; waiting for the card network to settle it.",
             [Call("wait_for_settlement", {"order_id": "A-1002", "hours": 36})]),
            ("Settled: the money is back on your card.", []),
        )  # fmt: skip
        await _drive(store, "settlement-a1002", script, "Has my refund for A-1002 settled?")

    async def stalled() -> None:
        script = refund_story("A-1001", 42.5)
        await _drive(store, "refund-a1001-stalled", script, "Refund the lamp, order A-1001.", model=CrashingModel(demo_model(script), 1))

    async def cancelled() -> None:
        await _drive(store, "refund-a1001-cancelled", refund_story("A-1001", 42.5), "Refund order A-1001.")
        await cancel(store, "refund-a1001-cancelled", "customer withdrew the request")

    async def specialist() -> None:
        script = turns(
            ("Let me ask the refunds specialist.", [Call("refunds_specialist", {"task": "Is order A-1004 eligible for a full refund?"})]),
            ("Good news: order A-1004 is eligible for a full refund.", []),
        )
        await _drive(store, "eligibility-a1004", script, "Can I get a full refund on A-1004?")

    async def bulk() -> None:
        orders = ["A-1001", "A-1002", "A-1003", "A-1004", "A-1005"]
        script = [Turn(f"Auditing order {orders[n % 5]} (pass {n // 5 + 1}).", [Call("lookup_order", {"order_id": orders[n % 5]})],
                       usage=Usage(300 + n, 20)) for n in range(bulk_turns - 1)]  # fmt: skip
        script.append(Turn(f"Audit done: {bulk_turns - 1} lookups, no anomalies.", usage=Usage(300 + bulk_turns, 60)))
        agent = desk_agent(demo_model(script), store, max_turns=bulk_turns + 1, clock=clock)
        await agent.run("audit-bulk", "Audit every open order, one lookup per turn.")

    await story("refund-a1002", RunState.COMPLETE, "approved refund, emailed", complete)
    await story("lookup-z0042", RunState.COMPLETE, "a failed lookup", failed_tool)
    await story("refund-a1003-denied", RunState.COMPLETE, "a denied refund", denied)
    await story("refund-a1004-halted", RunState.HALTED, "crashed while refunding", halted)
    await story("refund-a1005", RunState.AWAITING_APPROVAL, "refund awaiting approval", awaiting_approval)
    await story("question-a1001", RunState.AWAITING_INPUT, "asked the customer", awaiting_input)
    await story("settlement-a1002", RunState.SLEEPING, "waiting 36 h for settlement", sleeping)
    await story("refund-a1001-stalled", RunState.STALLED, "crashed between turns", stalled)
    await story("refund-a1001-cancelled", RunState.CANCELLED, "cancelled by a human", cancelled)
    await story("eligibility-a1004", RunState.COMPLETE, "asked a sub-agent", specialist)
    await story("audit-bulk", RunState.COMPLETE, f"{bulk_turns} turns", bulk)
    return runs


LIVE_RUN = "live-tail"


async def write_live_run(store: Store, *, interval: float = 1.5, turns_total: int = 400, run_id: str = LIVE_RUN) -> None:
    """Keep one run in flight: a turn every ``interval`` seconds, under a held lease.

    The demo starts this in the background so the TUI has a run to tail.
    """
    orders = ["A-1001", "A-1002", "A-1003", "A-1004", "A-1005"]
    script = [Turn(f"Watching order {orders[n % 5]} (check {n + 1}).", [Call("lookup_order", {"order_id": orders[n % 5]})], usage=Usage(250, 15))
              for n in range(turns_total - 1)] + [Turn("Watch finished.")]  # fmt: skip
    agent = desk_agent(demo_model(script, latency=interval), store, max_turns=turns_total + 1)
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
