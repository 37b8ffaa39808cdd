"""Which recover operations fit a run, and how the TUI asks for them: a choice, a value, a confirmation."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agenttui.agent.factory import AgentFactory
from agenttui.errors import JournalVersionError
from agenttui.journal.describe import clip, json_value, raw_json_text
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record, StepKind
from agenttui.runs.operations import (
    Answer,
    BadValue,
    Cancel,
    Decide,
    Operation,
    Redrive,
    ReleaseLease,
    Resolve,
    parse_value,
)
from agenttui.runs.status import RunState, RunStatus
from agenttui.stores.base import Store

#: The most of the agent's words and of the call's arguments a question shows (the inspector shows all).
QUESTION_CLIP = 400


class Ask(Protocol):
    """Asks a person for a value: the value typed, or None if cancelled. Asked again, ``value`` is
    what was typed before (to be put right, not typed again) and ``problem`` why it was refused."""

    def __call__(
        self, title: str, prompt: str, placeholder: str, value: str = "", problem: str = ""
    ) -> Awaitable[str | None]: ...


async def ask_value(ask: Ask, title: str, prompt: str, placeholder: str, *, json_only: bool) -> tuple[Any] | None:
    """A value for a write (``parse_value``), asked until it is one: a refused value is asked for
    again with what was typed and why, never dropped. ``(value,)``, or None when cancelled (the
    value itself may be JSON's null)."""
    typed: str | None = ""
    problem = ""
    while True:
        typed = await ask(title, prompt, placeholder, typed or "", problem)
        if typed is None:
            return None
        try:
            return (parse_value(typed, json_only=json_only),)
        except BadValue as bad:
            problem = bad.message


@dataclass(frozen=True, slots=True)
class Question:
    """What a run awaiting input asks: the agent's words in the turn that called the tool, the
    tool's own question (an argument named ``question``, ``prompt`` or ``message``, if any) and
    the call's arguments as recorded. Store text: show it inert."""

    said: str
    asks: str
    arguments: str


def question_in(records: Sequence[Record], tool_use_id: str) -> Question | None:
    """The question of the call ``tool_use_id``, read from the last model turn that made it. Pure."""
    for record in reversed(records):
        if record.kind != StepKind.MODEL or record.message is None:
            continue
        call = next((c for c in record.message.tool_uses if c.id == tool_use_id), None)
        if call is None:
            continue
        arguments = json_value(call.args)
        asks = next((arguments[k] for k in ("question", "prompt", "message")
                     if isinstance(arguments, dict) and isinstance(arguments.get(k), str)), "")  # fmt: skip
        return Question(record.message.text.strip(), asks, raw_json_text(call.args))
    return None


async def question_of(store: Store, status: RunStatus) -> Question | None:
    """The question a run awaiting input asks (None when its asking turn cannot be read)."""
    try:
        records = await Journal(store).history(status.run_id)
    except JournalVersionError:
        return None  # a format agenttui does not write: there is no answering it here anyway
    return question_in(records, status.tool_use_id)


def _question_text(status: RunStatus, question: Question | None) -> str:
    lines = [f"{status.tool_name} ({status.tool_use_id}) asks for an answer to {status.interrupt_name}."]
    if question is not None:
        if question.asks:
            lines.append(f"The question: {clip(question.asks, QUESTION_CLIP)}")
        if question.said:
            lines.append(f"The agent said: {clip(question.said, QUESTION_CLIP)}")
        lines.append(f"The call's arguments: {clip(question.arguments, QUESTION_CLIP)}")
    lines.append(f"The answer is recorded as interrupt:{status.interrupt_name} (JSON, or plain text).")
    return "\n".join(lines)


async def _answer(status: RunStatus, question: Question | None, ask: Ask) -> Operation | None:
    value = await ask_value(
        ask, f"Answer {status.run_id}", _question_text(status, question), "your answer", json_only=False
    )
    return None if value is None else Answer(status.run_id, status.interrupt_name, value[0])


async def _fired(status: RunStatus, ask: Ask) -> Operation | None:
    value = await ask_value(ask, f"It fired: {status.tool_name} ({status.tool_use_id})",
                            'The call\'s result, as you confirmed it, in JSON (text in quotes: "sent"):',
                            '{"refund_id": "..."}', json_only=True)  # fmt: skip
    return None if value is None else Resolve(status.run_id, status.tool_use_id, True, value[0])


def why_not_drivable(status: RunStatus) -> str | None:
    """Why a run in ``status`` can be neither re-driven nor cancelled, or None when it can."""
    # A run not started has no input to drive or cancel; a saga rolling back is its driver's; a
    # run another driver holds is its driver's too (every write waits for the run's lease); a
    # saved what-if fork is a record, never driven or written to; a journal before v0.9 is read, never written.
    match status.state:
        case state if state.finished:
            return f"it has ended ({state.value})"
        case RunState.UNREADABLE:
            return "it cannot be read whole: nothing is written to it"
        case RunState.NOT_STARTED:
            return "it never started: there is no input to drive"
        case RunState.CANCELLING:
            return "its saga is rolling back: only its driver ends it"
        case RunState.IN_FLIGHT:
            return f"a live driver holds its lease ({status.lease_holder or 'another driver'})"
        case RunState.FORK:
            return "a what-if fork: never driven or written to"
    if status.legacy:
        return "a journal from before v0.9: shown and replayed, never written to"
    return None


def choices_for(
    status: RunStatus, factory_spec: str | None, factory: AgentFactory | None, question: Question | None = None
) -> list[tuple[str, Callable[[Ask], Awaitable[Operation | None]]]]:
    """The operations that make sense for a run in ``status``, each with how to build it
    (``question``: what a run awaiting input asks, shown when asking for the answer)."""

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
        out.append((f"Answer the question of {status.tool_name}", lambda ask: _answer(status, question, ask)))
    if status.state == RunState.HALTED:
        out += [(f"It did not fire: retry {status.tool_name}", ready(Resolve(run_id, call, False))),
                ("It fired: record its result", lambda ask: _fired(status, ask))]  # fmt: skip
    if why_not_drivable(status) is None:
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


def follow_up(operation: Operation, factory_spec: str | None, factory: AgentFactory | None) -> Operation | None:
    """What to offer once ``operation`` is written: a decision or an answer leaves its run ready,
    so re-drive it, when an agent is configured to drive it (None otherwise)."""
    if not isinstance(operation, Decide | Answer) or factory is None or not factory_spec:
        return None
    return Redrive(operation.run_id, factory_spec, factory)
