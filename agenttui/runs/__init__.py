"""Runs: what a run is and what a person does to it, in rooms by concept:

- ``statuses``: a run's state and status, read from the journal and the lease table; the status
  index kept in the user's cache; many statuses kept as columns and read in a useful order; where a
  run stands as its flowchart's last node; whether a run is a saved what-if fork.
- ``reading``: one run as a viewer holds it (its rows, records and conversation at any record),
  finding text in it, and its tree of sub-runs.
- ``recovery``: what a person does to a run (approve, deny, answer, resolve, cancel, re-drive),
  described before it is done (``Operation``), each write under the run's lease; what a drive runs
  first; recover.
- ``selection``: the filter language (``parse_where``) and one action on every run it selects
  (``select``, ``apply_selection``).
- ``cost``: what runs cost, from records and from a store.
- ``bundles``: runs exported to a portable file and imported elsewhere, redacted on the way out.

Every name below is imported when first asked for (``agenttui.lazy``), not with the package: the
runs list shows states before it reads a status, and importing ``statuses.state`` must not bring
the status rules, the actions and the agent loop behind them (benchmarks/startup.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agenttui.lazy import lazy_names

if TYPE_CHECKING:
    from agenttui.runs.recovery.actions import ActionOutcome, answer, approve, cancel, deny, resolve_halt
    from agenttui.runs.recovery.lease import LeaseHeld, LeaseLost, lease
    from agenttui.runs.recovery.recover import RecoverReport, recover, recover_runs
    from agenttui.runs.selection.batch import RunOutcome, Selection, apply_selection, select
    from agenttui.runs.selection.where import Where, WhereError, parse_where
    from agenttui.runs.statuses.state import RunState
    from agenttui.runs.statuses.status import RunStatus, is_complete, run_status, status_of

LAZY = {
    "statuses.state": ("RunState",),
    "recovery.lease": ("LeaseHeld", "LeaseLost", "lease"),
    "recovery.recover": ("RecoverReport", "recover", "recover_runs"),
    "recovery.actions": ("ActionOutcome", "answer", "approve", "cancel", "deny", "resolve_halt"),
    "statuses.status": ("RunStatus", "is_complete", "run_status", "status_of"),
    "selection.where": ("Where", "WhereError", "parse_where"),
    "selection.batch": ("RunOutcome", "Selection", "apply_selection", "select"),
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
