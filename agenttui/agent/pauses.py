"""Durable pauses: the run stops, its journal says where, and a human or a timer lets it go on.

Each pause is an exception the run raises out of ``Agent.run``; none is journaled (the journal
already shows what is open). ``recover`` counts a pause as a successful re-drive. Whether an
m-of-n tally ended an approval pause (``tally_approved``) is read here too: by the loop, and by a
run's status without the loop.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from agenttui.errors import AgentTuiError
from agenttui.journal.keys import root_run_id

if TYPE_CHECKING:
    from agenttui.journal.record import Record


class RunPaused(AgentTuiError):
    """Base of the durable pauses. ``run_id`` is the run that paused (a sub-run, maybe)."""

    title = "Run paused"

    def __init__(self, run_id: str, message: str) -> None:
        super().__init__(message)
        self.run_id = run_id

    @property
    def root_run_id(self) -> str:
        return root_run_id(self.run_id)


class PendingApproval(RunPaused):
    """A tool call that needs a human's approval before it runs."""

    title = "Awaiting approval"

    def __init__(self, run_id: str, tool_use_id: str, tool_name: str, args: bytes) -> None:
        super().__init__(run_id, f"run {run_id!r}: {tool_name} call {tool_use_id!r} awaits approval")
        # Not ``args``: that is BaseException.args, which would turn the bytes into a tuple of ints.
        self.tool_use_id, self.tool_name, self.tool_args = tool_use_id, tool_name, args


class Interrupted(RunPaused):
    """A tool asked a human a question; the run goes on once it is answered."""

    title = "Awaiting input"

    def __init__(self, run_id: str, name: str, question: str) -> None:
        super().__init__(run_id, f"run {run_id!r} asks ({name}): {question}")
        self.name, self.question = name, question


class Sleeping(RunPaused):
    """A durable sleep: the run waits until ``wake_at``, then a Waker (or recover) re-drives it."""

    title = "Sleeping"

    def __init__(self, run_id: str, name: str, wake_at: datetime) -> None:
        super().__init__(run_id, f"run {run_id!r} sleeps ({name}) until {wake_at.isoformat()}")
        self.name, self.wake_at = name, wake_at


class ResumeHalt(RunPaused):
    """A side effect whose outcome is unknown: it was attempted, and no result was recorded.

    Re-firing it could do it twice, so the run halts until a human resolves it (``resolve_halt``).
    """

    title = "Outcome unknown"

    def __init__(self, run_id: str, tool_use_id: str, tool_name: str, marker: str) -> None:
        super().__init__(
            run_id, f"run {run_id!r}: {tool_name} call {tool_use_id!r} was attempted and has no outcome ({marker})"
        )
        self.tool_use_id, self.tool_name, self.marker = tool_use_id, tool_name, marker


class RunEnded(AgentTuiError):
    """The run already ended without an answer to return (cancelled or aborted)."""

    title = "Run ended"

    def __init__(self, run_id: str, marker: str, reason: str = "") -> None:
        super().__init__(f"run {run_id!r} ended with {marker}" + (f": {reason}" if reason else ""))
        self.run_id, self.marker, self.reason = run_id, marker, reason


class RunNotStarted(AgentTuiError):
    """An action that needs a started run (no ``run:start`` record)."""

    title = "Run not started"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} has no run:start record")
        self.run_id = run_id


class NothingPending(AgentTuiError):
    """A human action on a call or question that is not waiting for one."""

    title = "Nothing to do"


class NoApprovalGate(NothingPending):
    """An approval or a denial of a call that awaits none: its result is recorded, it asks a
    question, it was attempted, or its tool has no gate. A decision is permanent, so none is
    written; the message names the call's gate (or that it has none) and what fits instead."""

    title = "No approval awaited"


class RollbackRequested(AgentTuiError):
    """A saga whose rollback was requested (``run:cancel-requested``): only a saga driver, which
    runs its compensations, may drive it on; agenttui's loop does not roll back."""

    title = "Rollback requested"

    def __init__(self, run_id: str) -> None:
        super().__init__(
            f"run {run_id!r} is a saga whose rollback was requested: a saga driver must end it, not a re-drive"
        )
        self.run_id = run_id


class AlreadyDecided(AgentTuiError):
    """An action on a step that is already decided: nothing was written, and ``standing`` is the
    record that decides it (pressed twice, or two people at once)."""

    title = "Already decided"

    def __init__(self, message: str, standing: object) -> None:
        super().__init__(message)
        self.standing = standing


def tally_approved(tally: Record) -> bool:
    """Whether a terminal m-of-n tally (``approval-tally:<c>``) approved the call."""
    # Here, not at the top: recover imports the pauses, and the codec would bring the records
    # with it into the runs list's start-up (benchmarks/startup.py).
    from agenttui.journal.codec import decode_json

    try:
        value = decode_json(tally.result)
    except ValueError:
        return False
    if not isinstance(value, dict):
        return False
    approved, need = value.get("approved"), value.get("need")
    if isinstance(approved, bool):
        return approved
    if isinstance(approved, list):
        approved = len(approved)
    return isinstance(approved, int) and isinstance(need, int) and approved >= need > 0


def interrupt_name(tool_use_id: str) -> str:
    """The interrupt a call of a tool declared ``interrupts=True`` asks under (agenttui's convention)."""
    return f"ask-{tool_use_id}"
