"""Runs: what a run is (status, run trees) and what a person does to it (actions, the operations
a person confirms, recover), each write under the run's lease."""

from agenttui.runs.actions import ActionOutcome, answer, approve, cancel, deny, resolve_halt
from agenttui.runs.lease import LeaseHeld, LeaseLost, lease
from agenttui.runs.recover import RecoverReport, recover, recover_runs
from agenttui.runs.status import RunState, RunStatus, is_complete, run_status, status_of

__all__ = [
    "ActionOutcome",
    "LeaseHeld",
    "LeaseLost",
    "RecoverReport",
    "RunState",
    "RunStatus",
    "answer",
    "approve",
    "cancel",
    "deny",
    "is_complete",
    "lease",
    "recover",
    "recover_runs",
    "resolve_halt",
    "run_status",
    "status_of",
]
