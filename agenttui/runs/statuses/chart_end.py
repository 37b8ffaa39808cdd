"""Where a run stands, as the last node of its drawn flowchart: ``done``, or what an unfinished run waits on."""

from __future__ import annotations

from agenttui.render.flow import DONE, FlowStep, unfinished
from agenttui.runs.statuses.status import RunState, RunStatus


def chart_end(status: RunStatus) -> FlowStep:
    """The node a run's terminal drawing ends in, read from its status alone.

    A finished run ends in ``done``, as its Mermaid text does. An unfinished one ends in where it
    stands: halted on the call whose outcome is unknown, awaiting approval of a call, sleeping
    until its wake time... The Mermaid text is the SDK's and ends in ``done`` whatever the status.
    """
    state = status.state
    if state.finished:
        return DONE
    call = status.tool_name or status.tool_use_id or "a call"
    if state == RunState.HALTED:
        return unfinished(f"halted on {call}: outcome unknown", failed=True)
    if state == RunState.AWAITING_APPROVAL:
        return unfinished(f"awaiting approval: {call}")
    if state == RunState.AWAITING_INPUT:
        return unfinished(f"awaiting input: {call}")
    if state == RunState.SLEEPING:
        until = status.wake_at.isoformat(timespec="seconds") if status.wake_at else "its wake time"
        return unfinished(f"sleeping until {until}")
    if state == RunState.FORK:
        return unfinished(f"what-if fork of {status.fork_of}: never driven")
    if state == RunState.IN_FLIGHT:
        return unfinished(f"in flight: leased by {status.lease_holder}" if status.lease_holder else "in flight")
    if state == RunState.READY and status.tool_name:
        # "refund_payment (call_1) approved: re-drive to go on" -> "refund_payment approved"
        what = status.detail.replace(f" ({status.tool_use_id})", "").removesuffix(": re-drive to go on")
        return unfinished(f"ready to re-drive: {what}")
    return unfinished(_STATE_LABELS.get(state, state.value))


_STATE_LABELS = {
    RunState.READY: "ready: re-drive to go on",
    RunState.STALLED: "stalled: nothing pending, re-drive to go on",
    RunState.CANCELLING: "cancelling: rolling back",
    RunState.NOT_STARTED: "not started",
    RunState.UNREADABLE: "unreadable",
}
"""What an unfinished run that names no call says it is."""
