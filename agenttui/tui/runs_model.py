"""The runs screen's data: every run, its status, the tree of sub-runs, filters and folds.

Kept apart from the widgets so the rules (what shows, in what order) are plain, testable Python.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

from agenttui.journal.keys import parent_run_id
from agenttui.runs.statuses.columns import PENDING, STATE_INDEX, STATES, StatusColumns, says_more_than_its_line
from agenttui.runs.statuses.state import RunState

if TYPE_CHECKING:
    from agenttui.runs.cost.lens import RunCost
    from agenttui.runs.selection.where import Where
    from agenttui.runs.statuses.status import RunStatus

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


class StatusLine(NamedTuple):
    """A run's status as the runs list shows it: what its row shows and its filters read.

    The model keeps these values in columns (``RunsModel``) and makes a line when one is asked
    for. A status that says more (a lease, an open call, a wake time, a legacy journal; 13% of the
    production-shaped store's runs) is kept ``whole``, so that ``status`` gives back the very
    status read.
    """

    state_index: int
    detail: str
    steps: int
    turns: int
    tokens: int
    whole: RunStatus | None = None

    @classmethod
    def of(cls, status: RunStatus) -> StatusLine:
        whole = status if says_more_than_its_line(status) else None
        return cls(STATE_INDEX[status.state], status.detail, status.steps, status.turns, status.tokens, whole)

    @property
    def state(self) -> RunState:
        return STATES[self.state_index]

    @property
    def legacy(self) -> bool:
        return self.whole is not None and self.whole.legacy

    @property
    def lease_unknown(self) -> bool:
        return self.whole is not None and self.whole.lease_unknown

    def status(self, run_id: str) -> RunStatus:
        """The status this line was made from (``run_id``'s)."""
        if self.whole is not None:
            return self.whole
        from agenttui.runs.statuses.status import RunStatus

        return RunStatus(run_id, self.state, self.detail, steps=self.steps, turns=self.turns, tokens=self.tokens)


class ShownCost(NamedTuple):
    """A run's cost as the runs list shows and sorts it: its sub-runs rolled up, the spend its
    dropped requests wasted included."""

    dollars: float
    """What the priced part cost; -1 where none of it is priced (sorted last)."""
    text: str
    """As ``runs.cost.format_cost`` writes it (``unknown``; ``$0.0123+?`` where part of it is not
    known: a model with no price, or records that could not be read)."""

    @classmethod
    def of(cls, cost: RunCost) -> ShownCost:
        from agenttui.runs.cost.lens import Spend, format_cost

        total = cost.total
        spent = Spend(total.usage + total.wasted, total.total_cost, unpriced=total.unpriced)
        text = format_cost(spent)
        if cost.unreadable and not text.endswith("+?") and text != "unknown":
            text += "+?"
        return cls(-1.0 if text == "unknown" else float(spent.cost), text)


class RunRow(NamedTuple):
    """One visible line of the runs list, made when it is asked for (``RunRows``)."""

    run_id: str
    depth: int
    line: StatusLine | None
    """None while the run's status is being computed."""
    children: int
    folded: bool
    cost: ShownCost | None = None
    """A top-level run's cost, once read (``RunsModel.costs``)."""

    @property
    def status(self) -> RunStatus | None:
        """The run's status, whole (made again from its line: keep it no longer than needed)."""
        return None if self.line is None else self.line.status(self.run_id)


class StatusLines(Mapping[str, StatusLine | None]):
    """Each run's status line, by run id, in listing order: a view of a ``RunsModel``'s runs."""

    def __init__(self, model: RunsModel) -> None:
        self._model = model

    def __getitem__(self, run_id: str) -> StatusLine | None:
        return self._model.line(self._model.runs[run_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._model.runs)

    def __len__(self) -> int:
        return len(self._model.runs)


class RunRows:
    """The visible rows of a ``RunsModel``, packed: each row's run (its place in the model) in an
    array, and the depth, sub-runs and fold of the few rows that are not a folded root with no
    sub-runs; a ``RunRow`` is made when one is asked for, with the status line the model holds
    then. A rebuild of 100,000 rows makes no object per row.
    """

    def __init__(
        self, model: RunsModel, at: Iterable[int] = (), shapes: dict[int, tuple[int, int, bool]] | None = None
    ) -> None:
        self._model = model
        self._at = array("q", at)
        self._shapes = shapes if shapes is not None else {}
        """(depth, sub-runs, folded) of the rows that are not (0, 0, True), by row."""

    def __len__(self) -> int:
        return len(self._at)

    def __getitem__(self, index: int) -> RunRow:
        if index < 0:
            index += len(self._at)
        at = self._at[index]  # raises IndexError past the end, as a list does
        model = self._model
        depth, children, folded = self._shapes.get(index, _ROOT)
        run_id = model.run_ids[at]
        return RunRow(run_id, depth, model.line(at), children, folded, model.costs.get(run_id) if not depth else None)

    def __iter__(self) -> Iterator[RunRow]:
        return (self[index] for index in range(len(self)))

    def extend(self, rows: Iterable[RunRow]) -> None:
        for row in rows:
            if (row.depth, row.children, row.folded) != _ROOT:
                self._shapes[len(self._at)] = (row.depth, row.children, row.folded)
            self._at.append(self._model.runs[row.run_id])

    def run_ids(self) -> Iterator[str]:
        """The run of each row, in order, without making the rows."""
        ids = self._model.run_ids
        return (ids[at] for at in self._at)

    def index_of(self, run_id: str) -> int | None:
        """The row that shows ``run_id``, if one does."""
        at = self._model.runs.get(run_id)
        if at is None:
            return None
        try:
            return self._at.index(at)
        except ValueError:
            return None


_ROOT = (0, 0, True)
"""The shape of most rows: a root with no sub-runs (so folded)."""


@dataclass(slots=True)
class RunsModel:
    """All runs known so far and the view over them.

    Kept as columns: each run's place in the listing order (``runs``), its id, and its status
    (``StatusColumns``: numbers in arrays beside a list of details).
    """

    runs: dict[str, int] = field(default_factory=dict)
    """Every run known, by id: its place in ``run_ids`` and the status columns (listing order)."""
    run_ids: list[str] = field(default_factory=list)
    children: dict[str, list[str]] = field(default_factory=dict)
    roots: list[str] = field(default_factory=list)
    unfolded: set[str] = field(default_factory=set)
    text_filter: str = ""
    status_filter: int = 0
    costs: dict[str, ShownCost] = field(default_factory=dict)
    """Each top-level run's cost, its sub-runs rolled up, once read."""
    by_cost: bool = False
    """Top-level runs in order of cost, the largest first (else the listing's order)."""
    _columns: StatusColumns = field(default_factory=StatusColumns)
    """Each run's status, at its place in ``run_ids``."""
    _parsed: tuple[str, Where | None, str] = ("", None, "")
    """The text filter last read (``_reading``): its text, expression and error."""

    @property
    def pending(self) -> int:
        """How many runs' statuses are still being computed."""
        return self._columns.pending_count()

    @property
    def statuses(self) -> StatusLines:
        """Every run known and its status line (None: still being computed)."""
        return StatusLines(self)

    def has_status(self, run_id: str) -> bool:
        """Whether ``run_id`` is known and its status read."""
        at = self.runs.get(run_id)
        return at is not None and self._columns.states[at] != PENDING

    def line(self, at: int) -> StatusLine | None:
        """The status line of run ``at`` (its place in ``run_ids``), None while being computed."""
        columns = self._columns
        state = columns.states[at]
        if state == PENDING:
            return None
        return StatusLine(state, columns.details[at], columns.steps[at], columns.turns[at], columns.tokens[at],
                          columns.whole.get(at))  # fmt: skip

    def add_runs(self, run_ids: list[str], statuses: StatusColumns | None = None) -> list[str]:
        """Learn of runs (in listing order), with their ``statuses`` where known (a status index's,
        place by place); returns the ones not known before."""
        runs = self.runs
        new = [r for r in run_ids if r not in runs]
        first = len(self.run_ids)
        # Each column grows at once: a listing adds 100,000 runs in pages of thousands.
        runs.update(zip(new, range(first, first + len(new)), strict=True))
        self.run_ids += new
        if statuses is not None and len(new) == len(run_ids):
            self._columns.extend(statuses)
        else:
            self._columns.extend(StatusColumns(len(new)))
            if statuses is not None:  # some were known already (the change feed named them)
                self.set_statuses(list(filter(None, map(statuses.status, range(len(run_ids)), run_ids))))
        top = [run_id for run_id in new if ">" not in run_id]
        if top and top == sorted(top) and (not self.roots or self.roots[-1] < top[0]):
            self.roots += top  # a listing's top-level runs, in order, after those known: at once
            placing = [run_id for run_id in new if ">" in run_id] if len(top) < len(new) else []
        else:
            placing = new
        for run_id in placing:
            parent = parent_run_id(run_id)
            # insort keeps byte order (the store's) for runs that appear later, by the live feed.
            if parent is not None and parent in runs:
                _place(self.children.setdefault(parent, []), run_id)
            else:
                _place(self.roots, run_id)
        return new

    def set_statuses(self, statuses: list[RunStatus]) -> None:
        runs, columns = self.runs, self._columns
        for status in statuses:
            if status.run_id not in runs:
                self.add_runs([status.run_id])
            columns.put(runs[status.run_id], status)

    def sub_runs(self, run_ids: Iterable[str]) -> dict[str, list[str]]:
        """The sub-runs known below each of ``run_ids``, at every depth."""
        children = self.children
        below: dict[str, list[str]] = {}
        for run_id in run_ids:
            found, waiting = below.setdefault(run_id, []), list(children.get(run_id, ()))
            while waiting:
                kid = waiting.pop()
                found.append(kid)
                waiting.extend(children.get(kid, ()))
        return below

    def unread(self) -> list[str]:
        """The runs whose status is still being computed, in listing order."""
        return [self.run_ids[at] for at in self._columns.places([None])]

    def statuses_in(self, states: Collection[RunState]) -> list[RunStatus]:
        """The status of every run in one of ``states``."""
        columns, run_ids = self._columns, self.run_ids
        return [status for at in columns.places(states) if (status := columns.status(at, run_ids[at])) is not None]

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
        runs, states = self.runs, self._columns.states
        # Every place's state counted at once (its byte, in C), less the sub-runs': every run is
        # a root or some run's sub-run.
        counted = Counter(states.tobytes())
        counted.subtract(states[runs[kid]] % 256 for kids in self.children.values() for kid in kids)
        counted.pop(PENDING % 256, None)
        return Counter({STATES[index]: n for index, n in counted.items() if n})

    @property
    def where(self) -> Where | None:
        """The text filter read as a filter expression (``runs.where``), when it is one."""
        return self._reading()[0]

    @property
    def filter_error(self) -> str:
        """Why the text filter, meant as an expression, does not parse ("" when it does, or is
        plain words). While it does not, no run passes: what is listed (and marked, and acted on
        in bulk) is never more than the filter typed asked for, as the CLI refuses the same text."""
        return self._reading()[1]

    def _reading(self) -> tuple[Where | None, str]:
        """The text filter as an expression or an error, parsed once each time the text changes:
        an expression when it parses, plain words when it does not and does not look like one
        (``a1004``), else the error."""
        text, where, error = self._parsed
        if text != self.text_filter:
            from agenttui.runs.selection.where import WhereError, looks_like_where, parse_where

            text, where, error = self.text_filter, None, ""
            if text:
                try:
                    where = parse_where(text)
                except WhereError as bad:
                    error = bad.message if looks_like_where(text) else ""
            self._parsed = (text, where, error)
        return where, error

    def _admitter(self) -> Callable[[str], bool]:
        """Whether a run passes the filters in force, as one cheap test a row (100,000 rows are
        tested on each key typed in the filter)."""
        states = STATUS_FILTERS[self.status_filter][1]
        where, error = self._reading()
        if error:
            return lambda run_id: False
        needle = "" if where is not None else self.text_filter.lower()
        matches = where.matcher(datetime.now(UTC)) if where is not None else None
        line_of, runs = self.line, self.runs

        def admits(run_id: str) -> bool:
            status = line_of(runs[run_id])
            if states is not None and (status is None or status.state not in states):
                return False
            if matches is not None:
                return status is not None and matches(status.status(run_id))
            if needle:
                haystack = run_id.lower() + (" " + status.detail.lower() + " " + status.state.value if status else "")
                return needle in haystack
            return True

        return admits

    def ordered_roots(self) -> list[str]:
        """The top-level runs in the order shown: the listing's, or by cost, the largest first
        (those not costed yet last, in the listing's order)."""
        if not self.by_cost:
            return self.roots
        costs, unknown = self.costs, ShownCost(-2.0, "")
        return sorted(self.roots, key=lambda run_id: -costs.get(run_id, unknown).dollars)

    def rows(self) -> RunRows:
        """The visible rows: roots that pass the filters, each followed by its unfolded sub-runs."""
        at: list[int] = []
        shapes: dict[int, tuple[int, int, bool]] = {}
        runs, children, unfolded = self.runs, self.children, self.unfolded
        roots = self.ordered_roots()
        filtered = STATUS_FILTERS[self.status_filter][1] is not None or bool(self.text_filter)
        admits = self._admitter()

        def visit(run_id: str, depth: int) -> None:
            kids = children.get(run_id, ())
            folded = run_id not in unfolded
            if (depth, len(kids), folded) != _ROOT:
                shapes[len(at)] = (depth, len(kids), folded)
            at.append(runs[run_id])
            if not folded:
                for kid in kids:
                    visit(kid, depth + 1)

        if not filtered and not unfolded:  # every root, folded: their places at once
            shapes = {row: (0, len(children[root]), True) for row, root in enumerate(roots) if root in children}
            return RunRows(self, map(runs.__getitem__, roots), shapes)
        # Rebuilt every half second while 100,000 statuses fill in: a folded root with no
        # sub-runs, most of them, adds its place alone.
        add = at.append
        for root in roots:
            if filtered and not (admits(root) or any(admits(k) for k in children.get(root, ()))):
                continue
            if root in children or root in unfolded:
                visit(root, 0)
            else:
                add(runs[root])
        return RunRows(self, at, shapes)


def _place(ordered: list[str], run_id: str) -> None:
    """Add ``run_id`` in order: appended when it sorts last (a listing), else inserted in place."""
    if not ordered or ordered[-1] < run_id:
        ordered.append(run_id)
    else:
        bisect.insort(ordered, run_id)
