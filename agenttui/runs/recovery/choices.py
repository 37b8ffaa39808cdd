"""Which recover operations fit a run, how the TUI asks for them (a choice, a value, a confirmation),
and what the step a write decides is (``StepContext``: the call, its arguments, the asking turn, why it waits)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from agenttui.agent.factory import AgentFactory
from agenttui.errors import JournalVersionError
from agenttui.journal import keys
from agenttui.journal.describe import clip, json_value, raw_json_text
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record, StepKind, ToolUsePart
from agenttui.runs.recovery.operations import (
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
from agenttui.runs.statuses.status import RunState, RunStatus
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
class StepContext:
    """What the step a write decides is, read from the run's records: the call it waits on (its
    tool and arguments), the model turn that asked for it and the model's words in that turn, and
    why the run waits. A confirmation shows it before a person writes; the answer's prompt shows
    the question. Store text: show it inert."""

    run_id: str
    state: RunState
    why: str
    """Why the run waits, one sentence: a gate of run:start's policy, an unknown outcome, a question..."""
    tool_name: str = ""
    """The call the run waits on ("" when it waits on none: a run not at a call, or not read)."""
    tool_use_id: str = ""
    arguments: str = ""
    """The call's arguments as recorded (raw JSON, byte for byte)."""
    turn: str = ""
    """The model turn that asked for the call (``@llm/1``), "" when it was not found."""
    said: str = ""
    """The model's words in that turn."""
    asks: str = ""
    """The tool's own question: an argument named ``question``, ``prompt`` or ``message``, if any."""

    @property
    def pretty_arguments(self) -> str:
        """The arguments as indented JSON (as recorded when they are not JSON)."""
        return raw_json_text(self.arguments.encode(), indent=2) if self.arguments else ""

    def lines(self) -> list[str]:
        """The step as a confirmation shows it: why it waits, the call and its arguments in full,
        what the model said in the turn that asked for it."""
        out = [f"Why it waits: {self.why}"]
        if self.tool_use_id:
            asked = f", asked in {self.turn}" if self.turn else ""
            out += ["", f"The call: {self.tool_name} ({self.tool_use_id}){asked}:"]
            out += ["  " + line for line in (self.pretty_arguments or "(not found in the journal)").splitlines()]
        if self.asks:
            out += ["", f"The question: {self.asks}"]
        if self.said:
            out += ["", f"The model said in {self.turn}:"] + ["  " + line for line in self.said.splitlines()]
        return out


def _asking_turn(records: Sequence[Record], tool_use_id: str) -> tuple[Record, ToolUsePart] | None:
    """The last model turn that made the call ``tool_use_id``, and the call."""
    for record in reversed(records):
        if record.kind != StepKind.MODEL or record.message is None:
            continue
        call = next((c for c in record.message.tool_uses if c.id == tool_use_id), None)
        if call is not None:
            return record, call
    return None


def _why(records: Sequence[Record], status: RunStatus) -> str:
    """Why a run in ``status`` waits, from its records where they say more than its state."""
    what = f"{status.tool_name} ({status.tool_use_id})" if status.tool_use_id else "the run"
    match status.state:
        case RunState.AWAITING_APPROVAL:
            votes = sum(r.kind == StepKind.APPROVAL and r.tool_use_id == status.tool_use_id for r in records)
            if votes:
                return f"an m-of-n approval gate: {votes} decided so far, no tally yet"
            return (f"run:start's policy gates {status.tool_name}: a person approves or denies each call "
                    "before it runs")  # fmt: skip
        case RunState.AWAITING_INPUT:
            return (f"{what} asks a person a question; the answer is recorded as "
                    f"{keys.interrupt_key(status.interrupt_name)}")  # fmt: skip
        case RunState.HALTED:
            marker = next((r for r in reversed(records)
                           if r.kind == StepKind.ATTEMPT and r.tool_use_id == status.tool_use_id), None)  # fmt: skip
            when = ""
            if marker is not None and marker.attempted_at > 0:
                at = datetime.fromtimestamp(marker.attempted_at / 1000, UTC).isoformat(timespec="seconds")
                when = f" ({marker.name}, at {at})"
            return (f"outcome unknown: an attempt of {what} was recorded{when} and no result: "
                    "it may or may not have fired")  # fmt: skip
        case RunState.STALLED:
            detail = f" ({status.detail})" if status.detail else ""
            return (f"stalled: its driver stopped between steps{detail}; no driver holds its lease and nothing waits "
                    "on a person. A re-drive with your agent (--agent module:factory, with a model) goes on from "
                    "its last step")  # fmt: skip
    return status.state.value + (f": {status.detail}" if status.detail else "")


def step_context_in(records: Sequence[Record], status: RunStatus) -> StepContext:
    """What the step ``status`` names is, read from the run's ``records``. Pure."""
    context = StepContext(status.run_id, status.state, _why(records, status), status.tool_name, status.tool_use_id)
    if not status.tool_use_id or (found := _asking_turn(records, status.tool_use_id)) is None:
        return context
    turn, call = found
    arguments = json_value(call.args)
    asks = next((arguments[k] for k in ("question", "prompt", "message")
                 if isinstance(arguments, dict) and isinstance(arguments.get(k), str)), "")  # fmt: skip
    said = turn.message.text.strip() if turn.message is not None else ""
    return replace(context, arguments=raw_json_text(call.args), turn=turn.name, said=said, asks=asks)


async def step_context_of(store: Store, status: RunStatus) -> StepContext:
    """What the step ``status`` names is (its state alone when its records cannot be read)."""
    try:
        records = await Journal(store).history(status.run_id)
    except JournalVersionError:
        records = []  # a format agenttui does not write: nothing is written to it anyway
    return step_context_in(records, status)


def _question_text(status: RunStatus, question: StepContext | None) -> str:
    lines = [f"{status.tool_name} ({status.tool_use_id}) asks for an answer to {status.interrupt_name}."]
    if question is not None and question.tool_use_id:
        if question.asks:
            lines.append(f"The question: {clip(question.asks, QUESTION_CLIP)}")
        if question.said:
            lines.append(f"The agent said: {clip(question.said, QUESTION_CLIP)}")
        lines.append(f"The call's arguments: {clip(question.arguments, QUESTION_CLIP)}")
    lines.append(f"The answer is recorded as interrupt:{status.interrupt_name} (JSON, or plain text).")
    return "\n".join(lines)


async def _answer(status: RunStatus, question: StepContext | None, ask: Ask) -> Operation | None:
    value = await ask_value(
        ask, f"Answer {status.run_id}", _question_text(status, question), "your answer", json_only=False
    )
    return None if value is None else Answer(status.run_id, status.interrupt_name, value[0])


async def _fired(status: RunStatus, ask: Ask) -> Operation | None:
    value = await ask_value(ask, f"It fired: {status.tool_name} ({status.tool_use_id})",
                            'The call\'s result, as you confirmed it, in JSON (text in quotes: "sent"):',
                            '{"refund_id": "..."}', json_only=True)  # fmt: skip
    return None if value is None else Resolve(status.run_id, status.tool_use_id, True, value[0], status.tool_name)


#: Why nothing is written to a headerless journal of an SDK before v0.9 (``RunStatus.legacy``).
LEGACY_REFUSAL = "a journal from before v0.9: shown and replayed, never written to"


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
        return LEGACY_REFUSAL
    return None


def choices_for(
    status: RunStatus, factory_spec: str | None, factory: AgentFactory | None, question: StepContext | None = None
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
        tool = status.tool_name
        out += [(f"Approve {tool} ({call})", ready(Decide(run_id, call, True, tool_name=tool))),
                (f"Deny {tool} ({call})", ready(Decide(run_id, call, False, tool_name=tool)))]  # fmt: skip
    if status.state == RunState.AWAITING_INPUT:
        out.append((f"Answer the question of {status.tool_name}", lambda ask: _answer(status, question, ask)))
    if status.state == RunState.HALTED:
        out += [(f"It did not fire: retry {status.tool_name}", ready(Resolve(run_id, call, False, tool_name=status.tool_name))),
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
