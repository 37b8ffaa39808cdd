"""The runs screen's data: every run, its status, the tree of sub-runs, filters and folds.

Kept apart from the widgets so the rules (what shows, in what order) are plain, testable Python.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from agenttui.journal.keys import parent_run_id
from agenttui.runs.state import RunState

if TYPE_CHECKING:
    from agenttui.runs.status import RunStatus

#: The status filter cycle: everything, then the states a person acts on, then the rest.
STATUS_FILTERS: tuple[tuple[str, frozenset[RunState] | None], ...] = (
    ("all", None),
    (
        "needs attention",
        frozenset(
            {
                RunState.HALTED,
                RunState.AWAITING_APPROVAL,
                RunState.AWAITING_INPUT,
                RunState.READY,
                RunState.STALLED,
                RunState.UNREADABLE,
            }
        ),
    ),
    (
        "paused",
        frozenset(
            {
                RunState.AWAITING_APPROVAL,
                RunState.AWAITING_INPUT,
                RunState.SLEEPING,
                RunState.HALTED,
                RunState.CANCELLING,
            }
        ),
    ),
    ("in-flight", frozenset({RunState.IN_FLIGHT})),
    ("finished", frozenset({RunState.COMPLETE, RunState.CANCELLED, RunState.ABORTED})),
)


class RunRow(NamedTuple):
    """One visible line of the runs list (a tuple: 100,000 of them are built on every rebuild)."""

    run_id: str
    depth: int
    status: RunStatus | None
    children: int
    folded: bool


@dataclass(slots=True)
class RunsModel:
    """All runs known so far and the view over them."""

    statuses: dict[str, RunStatus | None] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    unfolded: set[str] = field(default_factory=set)
    text_filter: str = ""
    status_filter: int = 0
    pending: int = 0
    """Runs whose status is still being computed."""

    def add_runs(self, run_ids: list[str]) -> list[str]:
        """Learn of runs (in listing order); returns the ones not known before."""
        new = [r for r in run_ids if r not in self.statuses]
        self.pending += len(new)
        for run_id in new:
            self.statuses[run_id] = None
            parent = parent_run_id(run_id)
            # insort keeps byte order (the store's) for runs that appear later, by the live feed.
            if parent is not None and parent in self.statuses:
                _place(self.children.setdefault(parent, []), run_id)
            else:
                _place(self.roots, run_id)
        return new

    def set_statuses(self, statuses: list[RunStatus]) -> None:
        for status in statuses:
            if status.run_id not in self.statuses:
                self.add_runs([status.run_id])
            if self.statuses[status.run_id] is None:
                self.pending -= 1
            self.statuses[status.run_id] = status

    @property
    def filter_name(self) -> str:
        return STATUS_FILTERS[self.status_filter][0]

    def cycle_status_filter(self) -> str:
        self.status_filter = (self.status_filter + 1) % len(STATUS_FILTERS)
        return self.filter_name

    def toggle_fold(self, run_id: str, unfold: bool | None = None) -> None:
        if run_id not in self.children:
            return
        unfold = run_id not in self.unfolded if unfold is None else unfold
        (self.unfolded.add if unfold else self.unfolded.discard)(run_id)

    def counts(self) -> Counter[RunState]:
        """How many root runs are in each state (sub-runs count with their parent)."""
        return Counter(s.state for r in self.roots if (s := self.statuses[r]) is not None)

    def _admits(self, run_id: str) -> bool:
        states = STATUS_FILTERS[self.status_filter][1]
        status = self.statuses[run_id]
        if states is not None and (status is None or status.state not in states):
            return False
        if self.text_filter:
            needle = self.text_filter.lower()
            haystack = run_id.lower() + (" " + status.detail.lower() + " " + status.state.value if status else "")
            return needle in haystack
        return True

    def rows(self) -> list[RunRow]:
        """The visible rows: roots that pass the filters, each followed by its unfolded sub-runs."""
        out: list[RunRow] = []
        statuses, children, unfolded = self.statuses, self.children, self.unfolded
        filtered = STATUS_FILTERS[self.status_filter][1] is not None or bool(self.text_filter)

        def visit(run_id: str, depth: int) -> None:
            kids = children.get(run_id, ())
            folded = run_id not in unfolded
            out.append(RunRow(run_id, depth, statuses[run_id], len(kids), folded))
            if not folded:
                for kid in kids:
                    visit(kid, depth + 1)

        # Rebuilt every half second while 100,000 statuses fill in: the common case (no filter,
        # no sub-runs, folded) makes its row without a call.
        for root in self.roots:
            if filtered and not (self._admits(root) or any(self._admits(k) for k in children.get(root, ()))):
                continue
            if root in children or root in unfolded:
                visit(root, 0)
            else:
                out.append(RunRow(root, 0, statuses[root], 0, True))
        return out


def _place(ordered: list[str], run_id: str) -> None:
    """Add ``run_id`` in order: appended when it sorts last (a listing), else inserted in place."""
    if not ordered or ordered[-1] < run_id:
        ordered.append(run_id)
    else:
        bisect.insort(ordered, run_id)
