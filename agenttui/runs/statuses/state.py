"""What a run is, in one word: its state (its status says why, ``status.py``).

Apart from the status rules, so that what only names and shows states (the runs list's first
screen, the command line's ``--status``) imports no records, codec or agent (benchmarks/startup.py).
"""

from __future__ import annotations

import enum


class RunState(enum.StrEnum):
    COMPLETE = "complete"
    ABORTED = "aborted"
    CANCELLED = "cancelled"
    CANCELLING = "cancelling"
    """A saga whose rollback was requested (``run:cancel-requested``) and has not ended yet."""
    HALTED = "halted"
    AWAITING_APPROVAL = "awaiting-approval"
    AWAITING_INPUT = "awaiting-input"
    SLEEPING = "sleeping"
    READY = "ready"
    """What the run waited on has come (a decision, an answer, its wake time): re-drive it."""
    IN_FLIGHT = "in-flight"
    STALLED = "stalled"
    NOT_STARTED = "not-started"
    """No ``run:start``: the run never started (a session's journal, a signal sent ahead)."""
    FORK = "fork"
    """A saved what-if fork (``runs.forks``): a record of what might have been, never driven or written to."""
    UNREADABLE = "unreadable"

    @property
    def finished(self) -> bool:
        return self in (RunState.COMPLETE, RunState.ABORTED, RunState.CANCELLED)

    @property
    def paused(self) -> bool:
        return self in (RunState.AWAITING_APPROVAL, RunState.AWAITING_INPUT, RunState.SLEEPING, RunState.HALTED)

    @property
    def icon(self) -> str:
        """A one-cell mark, so a status reads without colour."""
        return _ICONS[self]


_ICONS = {
    RunState.COMPLETE: "✓",
    RunState.ABORTED: "✗",
    RunState.CANCELLED: "⊘",
    RunState.CANCELLING: "⊖",
    RunState.HALTED: "‼",
    RunState.AWAITING_APPROVAL: "?",
    RunState.AWAITING_INPUT: "…",
    RunState.SLEEPING: "◷",
    RunState.READY: "▷",
    RunState.IN_FLIGHT: "▶",
    RunState.STALLED: "■",
    RunState.NOT_STARTED: "○",
    RunState.FORK: "⋔",
    RunState.UNREADABLE: "!",
}
