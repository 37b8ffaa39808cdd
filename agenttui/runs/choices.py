"""Which recover operations fit a run, and how the TUI asks for them: a choice, a value, a confirmation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agenttui.agent.factory import AgentFactory
from agenttui.runs.operations import Answer, Cancel, Decide, Operation, Redrive, ReleaseLease, Resolve, parse_value
from agenttui.runs.status import RunState, RunStatus

Ask = Callable[[str, str, str], Awaitable[str | None]]
"""Asks a person for a value: (title, prompt, placeholder) -> the value, or None if cancelled."""


async def _answer(status: RunStatus, ask: Ask) -> Operation | None:
    name = status.interrupt_name
    value = await ask(
        f"Answer {status.run_id}",
        f"{status.detail}\nThe answer is recorded as interrupt:{name} (JSON, or plain text).",
        "your answer",
    )
    return None if value is None else Answer(status.run_id, name, parse_value(value, json_only=False))


async def _fired(status: RunStatus, ask: Ask) -> Operation | None:
    value = await ask(f"It fired: {status.tool_name} ({status.tool_use_id})",
                      'The call\'s result, as you confirmed it, in JSON (text in quotes: "sent"):', '{"refund_id": "..."}')  # fmt: skip
    return (
        None if value is None else Resolve(status.run_id, status.tool_use_id, True, parse_value(value, json_only=True))
    )


def choices_for(
    status: RunStatus, factory_spec: str | None, factory: AgentFactory | None
) -> list[tuple[str, Callable[[Ask], Awaitable[Operation | None]]]]:
    """The operations that make sense for a run in ``status``, each with how to build it."""

    def ready(operation: Operation) -> Callable[[Ask], Awaitable[Operation | None]]:
        async def build(_: Ask) -> Operation | None:
            return operation

        return build

    run_id, call = status.run_id, status.tool_use_id
    out: list[tuple[str, Callable[[Ask], Awaitable[Operation | None]]]] = []
    if status.state == RunState.AWAITING_APPROVAL:
        out += [(f"Approve {status.tool_name} ({call})", ready(Decide(run_id, call, True))),
                (f"Deny {status.tool_name} ({call})", ready(Decide(run_id, call, False)))]  # fmt: skip
    if status.state == RunState.AWAITING_INPUT:
        out.append((f"Answer the question of {status.tool_name}", lambda ask: _answer(status, ask)))
    if status.state == RunState.HALTED:
        out += [(f"It did not fire: retry {status.tool_name}", ready(Resolve(run_id, call, False))),
                ("It fired: record its result", lambda ask: _fired(status, ask))]  # fmt: skip
    # A run not started has no input to drive or cancel; a saga rolling back is its driver's; a
    # run another driver holds is its driver's too (every write waits for the run's lease).
    drivable = not status.state.finished and status.state not in (
        RunState.UNREADABLE, RunState.NOT_STARTED, RunState.CANCELLING, RunState.IN_FLIGHT)  # fmt: skip
    if drivable:
        if factory is not None and factory_spec:
            out.append(("Re-drive with your agent", ready(Redrive(run_id, factory_spec, factory))))
        out.append(("Cancel the run", ready(Cancel(run_id, "cancelled from agenttui"))))
    if status.lease_lapsed:
        out.append(("Release a lapsed lease", ready(ReleaseLease(run_id))))
    elif status.state == RunState.IN_FLIGHT and status.lease is not None:
        out.append(
            (
                f"Break the lease of {status.lease.holder} (its driver is gone)",
                ready(ReleaseLease(run_id, force=True, current=status.lease)),
            )
        )
    return out
