"""Runs: what a run is (status, run trees) and what a person does to it (actions, the operations
a person confirms, recover), each write under the run's lease; the filter language that selects
runs (``parse_where``) and one action on all of them (``select``, ``apply_selection``).

Most names are imported when first asked for (``agenttui.lazy``), not with the package: the runs
list shows states before it reads a status, and importing ``state`` must not bring the status
rules, the actions and the agent loop behind them (benchmarks/startup.py). ``lease`` and
``recover`` are imported with it: each is also the name of its module, which, once imported,
would shadow a name given lazily; so is ``state`` (``recover`` needs it, and it is small).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agenttui.lazy import lazy_names
from agenttui.runs.lease import LeaseHeld, LeaseLost, lease
from agenttui.runs.recover import RecoverReport, recover, recover_runs
from agenttui.runs.state import RunState

if TYPE_CHECKING:
    from agenttui.runs.actions import ActionOutcome, answer, approve, cancel, deny, resolve_halt
    from agenttui.runs.batch import RunOutcome, Selection, apply_selection, select
    from agenttui.runs.status import RunStatus, is_complete, run_status, status_of
    from agenttui.runs.where import Where, WhereError, parse_where

LAZY = {
    "actions": ("ActionOutcome", "answer", "approve", "cancel", "deny", "resolve_halt"),
    "status": ("RunStatus", "is_complete", "run_status", "status_of"),
    "where": ("Where", "WhereError", "parse_where"),
    "batch": ("RunOutcome", "Selection", "apply_selection", "select"),
}
"""The modules imported when one of their names is first asked for, and those names."""

__all__ = [
    "ActionOutcome",
    "LeaseHeld",
    "LeaseLost",
    "RecoverReport",
    "RunOutcome",
    "RunState",
    "RunStatus",
    "Selection",
    "Where",
    "WhereError",
    "answer",
    "apply_selection",
    "approve",
    "cancel",
    "deny",
    "is_complete",
    "lease",
    "parse_where",
    "recover",
    "recover_runs",
    "resolve_halt",
    "run_status",
    "select",
    "status_of",
]

__getattr__ = lazy_names(__name__, LAZY)
