"""Runs: what a run is (status, run trees) and what a person does to it (actions, the operations
a person confirms, recover), each write under the run's lease.

The actions are imported when one of them is first asked for (``__getattr__``), not with the
package: the runs list reads ``status``, and importing it must not bring the actions and the
agent loop behind them (benchmarks/startup.py).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agenttui.runs.lease import LeaseHeld, LeaseLost, lease
from agenttui.runs.recover import RecoverReport, recover, recover_runs
from agenttui.runs.status import RunState, RunStatus, is_complete, run_status, status_of

if TYPE_CHECKING:
    from agenttui.runs.actions import ActionOutcome, answer, approve, cancel, deny, resolve_halt

LAZY = {"actions": ("ActionOutcome", "answer", "approve", "cancel", "deny", "resolve_halt")}
"""The modules imported when one of their names is first asked for, and those names."""

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


def __getattr__(name: str) -> Any:
    for module, names in LAZY.items():
        if name in names:
            value = getattr(import_module(f"{__name__}.{module}"), name)
            globals()[name] = value  # asked once
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
