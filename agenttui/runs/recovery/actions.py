"""What a human does to a paused run: approve, deny, answer, resolve a halt, cancel.

Each action is one or two at-most-once journal inserts: pressing it twice, or two people
pressing it at once, writes once. Each returns the records it wrote (empty when the step was
already decided, with the decision that stands).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agenttui.agent.loop import UnreadableJournal, attempt_voided, latest_attempt
from agenttui.agent.pauses import AlreadyDecided, NoApprovalGate, NothingPending, RunEnded, RunNotStarted
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import ToolSafety, encode_result, interrupt_name
from agenttui.errors import RunNotFoundError
from agenttui.journal import keys
from agenttui.journal.inert import shell_word
from agenttui.journal.journal import Journal, RunJournal
from agenttui.journal.record import Record, StepKind
from agenttui.runs.statuses.forks import ForkRefused, fork_mark
from agenttui.stores.base import Store


@dataclass(frozen=True, slots=True)
class ActionOutcome:
    """What an action wrote (``written``), and the record that decides the step afterwards."""

    written: tuple[Record, ...]
    standing: Record

    @property
    def applied(self) -> bool:
        """False when an earlier decision already held the step and nothing was written."""
        return bool(self.written)

    def already(self) -> str:
        """What the standing record had decided, in words (for an outcome not ``applied``)."""
        record = self.standing
        if record.kind == StepKind.APPROVAL:
            by = f" by {record.approver}" if record.approver else ""
            return f"call {record.tool_use_id} was already {'approved' if record.approved else 'denied'}{by}"
        if record.name.startswith("interrupt:"):
            return f"{record.name.partition(':')[2]} was already answered: {_shown(record.result)}"
        if record.kind == StepKind.NOT_STARTED:
            return f"call {record.tool_use_id} was already resolved: it did not fire"
        if record.kind == StepKind.TOOL_RESULT:
            return f"call {record.tool_use_id} already has its result: {_shown(record.result)}"
        if record.name == keys.RUN_CANCELLED:
            return "the run was already cancelled"
        return f"{record.name} was already recorded"


async def _require_open(journal: Journal, run_id: str, read: RunJournal | None = None) -> list[Record]:
    """The run's history, if a person may act on it: started, not ended, wholly readable (a
    decision taken on a run whose state cannot be read in full could be the wrong one), and not
    a saved what-if fork (a record of what might have been: nothing is written to one).

    ``read``: the run as its caller has just read it whole under the run's lease (a bulk action
    reads each run again under it, to check it is as it was selected): what the store holds
    then, as a read here would be, checked as it is rather than read again."""
    history = journal.opened(read) if read is not None and read.run_id == run_id else await journal.history(run_id)
    if not history:
        raise RunNotFoundError(run_id)
    if (mark := fork_mark({r.name: r for r in history})) is not None:
        raise ForkRefused(run_id, mark)
    if bad := next((r for r in history if r.unreadable or r.tombstone), None):
        raise UnreadableJournal(
            f"run {run_id!r} holds an unreadable or redacted record ({bad.name}): nothing is written to it"
        )
    names = [r.name for r in history]
    if keys.RUN_START not in names:
        raise RunNotStarted(run_id)
    if (end := keys.first_end_marker(names)) is not None:
        raise RunEnded(run_id, end)
    return history


async def decide_approval(
    store: Store, run_id: str, tool_use_id: str, *, approved: bool, approver: str = "", read: RunJournal | None = None
) -> ActionOutcome:
    """Record a human's decision on a gated call, as the SDK's ``Approve`` does: the decision
    alone. The next drive runs the call, or records its denial (with the tool's policy).
    ``read``: the run as just read under its lease (``_require_open``)."""
    journal = Journal(store)
    history = await _require_open(journal, run_id, read)
    await _require_gate(journal, run_id, tool_use_id, history)
    decision = Record(
        keys.approval_key(tool_use_id), StepKind.APPROVAL, tool_use_id=tool_use_id, approved=approved, approver=approver
    )
    standing, won = await journal.insert(run_id, decision)
    return ActionOutcome((standing,) if won else (), standing)


async def _require_gate(journal: Journal, run_id: str, tool_use_id: str, history: list[Record]) -> None:
    """Refuse a decision on a call that awaits none (``NoApprovalGate``), before it is written
    for ever: a call whose result is recorded, one attempted (its outcome is what is open), one
    with an m-of-n gate (its decision is a tally of signed votes), and one whose tool, by the
    policy ``run:start`` records, asks a question or has no gate. Where the journal cannot tell
    (a Go service's run records no policy), an open call may be decided, as the SDK's
    ``Approve`` lets it. A call decided already passes: the insert names the standing decision."""
    by_name = {r.name: r for r in history}
    if keys.approval_key(tool_use_id) in by_name:
        return
    call = next((c for r in reversed(history) if r.message for c in r.message.tool_uses if c.id == tool_use_id), None)
    if call is None:
        raise NothingPending(f"run {run_id!r} made no call {tool_use_id!r}")
    what = f"call {tool_use_id!r} ({call.name}) of run {run_id!r}"
    if keys.tool_key(tool_use_id) in by_name:
        raise NoApprovalGate(f"{what} already has its result: it awaits no approval; nothing written")
    _, marker = await latest_attempt(journal, run_id, tool_use_id)
    if marker is not None and not await attempt_voided(journal, run_id, marker):
        raise NoApprovalGate(
            f"{what} was attempted and its outcome is unknown: it awaits no approval but a resolution"
            f" ({_cli('resolve', run_id, tool_use_id)} --fired or --not-fired); nothing written"
        )
    votes = [r for r in history if r.kind == StepKind.APPROVAL and r.tool_use_id == tool_use_id]
    if votes or keys.approval_tally_key(tool_use_id) in by_name:
        raise NoApprovalGate(
            f"{what} has an m-of-n gate ({len(votes)} signed decisions so far): it is decided by a tally of"
            " signed votes, which approve and deny do not write; nothing written"
        )
    start = by_name.get(keys.RUN_START)
    policy = RunStart.decode(start.result).policy(call.name) if start is not None else None
    if policy is not None and policy.interrupts:
        raise NoApprovalGate(
            f"{what} asks a question: it awaits an answer, not an approval"
            f" ({_cli('answer', run_id, interrupt_name(tool_use_id))} VALUE); nothing written"
        )
    if policy is not None and not policy.needs_approval:
        raise NoApprovalGate(f"{what} has no approval gate (run:start records {call.name}'s policy); nothing written")


def _cli(command: str, run_id: str, *words: str) -> str:
    """The command that fits instead, for a person to run (the store left for them to fill in)."""
    return " ".join(["agenttui", command, "STORE", *(shell_word(w) for w in (run_id, *words))])


async def approve(store: Store, run_id: str, tool_use_id: str, approver: str = "") -> ActionOutcome:
    return await decide_approval(store, run_id, tool_use_id, approved=True, approver=approver)


async def deny(store: Store, run_id: str, tool_use_id: str, approver: str = "") -> ActionOutcome:
    return await decide_approval(store, run_id, tool_use_id, approved=False, approver=approver)


async def answer(store: Store, run_id: str, name: str, value: Any, *, read: RunJournal | None = None) -> ActionOutcome:
    """Record the answer to the interrupt ``name``, which must be the one the run waits on.

    Where the journal names the question (an agenttui tool declared ``interrupts=True``), any
    other name is refused: an answer under it would be recorded for ever while the run still
    waits. Where it cannot (a Go tool's question), the run must at least have a call open.
    ``read``: the run as just read under its lease (``_require_open``).
    """
    journal = Journal(store)
    history = await _require_open(journal, run_id, read)
    if (existing := next((r for r in history if r.name == keys.interrupt_key(name)), None)) is not None:
        raise AlreadyDecided(f"{name} of run {run_id!r} was already answered: {_shown(existing.result)}", existing)
    from agenttui.runs.statuses.status import (  # status reads the loop: imported here, not at the top
        RunState,
        status_of,
    )

    waiting = status_of(run_id, history)
    if waiting.interrupt_name and waiting.interrupt_name != name:
        raise NothingPending(f"run {run_id!r} waits on {waiting.interrupt_name!r}, not {name!r}: answer that one")
    if not waiting.interrupt_name and waiting.state != RunState.STALLED:
        raise NothingPending(f"run {run_id!r} is {waiting.state.value}: it waits on no question")
    if not waiting.interrupt_name:
        _may_ask(run_id, history)
    record = Record(keys.interrupt_key(name), StepKind.VALUE, result=encode_result(value))
    standing, won = await journal.insert(run_id, record)
    return ActionOutcome((standing,) if won else (), standing)


def _may_ask(run_id: str, history: list[Record]) -> None:
    """Refuse an answer to a stalled run that cannot be waiting on a question: one with no call
    open (it stopped between turns), or whose open calls' tools ask none by the policy its
    ``run:start`` records. A Go tool's question leaves no trace until answered, so a Go run with
    a call open may take one."""
    results = {r.name for r in history if r.name.startswith(keys.TOOL_PREFIX)}
    turns = [r for r in history if r.kind == StepKind.MODEL and r.message is not None]
    calls = turns[-1].message.tool_uses if turns and turns[-1].message is not None else ()
    open_calls = [call for call in calls if keys.tool_key(call.id) not in results]
    if not open_calls:
        raise NothingPending(f"run {run_id!r} stopped between steps with no call open: it waits on no question"
                             f" (re-drive it: {_cli('redrive', run_id)} --agent MODULE:FACTORY)")  # fmt: skip
    start = next((r for r in history if r.name == keys.RUN_START), None)
    policies = RunStart.decode(start.result if start is not None else None).policies
    if policies and not any(policies.get(call.name, _ASKS).interrupts for call in open_calls):
        names = ", ".join(f"{call.name} ({call.id})" for call in open_calls)
        raise NothingPending(f"run {run_id!r} waits on no question: by run:start's policy, {names} asks none")


#: A tool the recorded policy does not name: it may ask, as far as the journal knows.
_ASKS = ToolSafety(interrupts=True)


def _shown(raw: bytes | None) -> str:
    return (raw or b"null").decode("utf-8", "replace")[:200]


async def resolve_halt(
    store: Store,
    run_id: str,
    tool_use_id: str,
    *,
    fired: bool,
    result: Any = None,
    is_error: bool = False,
    read: RunJournal | None = None,
) -> ActionOutcome:
    """Resolve a call whose outcome is unknown, as the human confirms it.

    ``fired=False``: the effect did not happen; a ``not_started`` record voids the attempt, and the
    next drive attempts the call again. ``fired=True``: it happened, with ``result``; a reconciled
    tool result is recorded and the next drive goes on from it. ``read``: the run as just read
    under its lease (``_require_open``).
    """
    journal = Journal(store)
    await _require_open(journal, run_id, read)
    if await journal.get(run_id, keys.tool_key(tool_use_id)) is not None:
        raise NothingPending(f"call {tool_use_id!r} of run {run_id!r} already has a result")
    _, marker = await latest_attempt(journal, run_id, tool_use_id)
    if marker is None or await attempt_voided(journal, run_id, marker):
        raise NothingPending(f"call {tool_use_id!r} of run {run_id!r} has no attempt with an unknown outcome")
    if fired:
        record = Record(keys.tool_key(tool_use_id), StepKind.TOOL_RESULT, tool_use_id=tool_use_id,
                        result=encode_result(result), is_error=is_error, reconciled=True,
                        evidence=json.dumps({"resolved_by": "human"}).encode())  # fmt: skip
    else:
        record = Record(
            keys.not_started_key(marker.claim, marker.name),
            StepKind.NOT_STARTED,
            tool_use_id=tool_use_id,
            claim=marker.claim,
        )
    standing, won = await journal.insert(run_id, record)
    return ActionOutcome((standing,) if won else (), standing)


async def cancel(store: Store, run_id: str, reason: str = "", *, read: RunJournal | None = None) -> ActionOutcome:
    """End the run with ``run:cancelled {"reason"}``; refuses a run not started or already ended.
    ``read``: the run as just read under its lease (``_require_open``)."""
    journal = Journal(store)
    await _require_open(journal, run_id, read)
    record = Record(
        keys.RUN_CANCELLED, StepKind.VALUE, result=json.dumps({"reason": reason}, ensure_ascii=False).encode()
    )
    standing, won = await journal.insert(run_id, record)
    return ActionOutcome((standing,) if won else (), standing)
