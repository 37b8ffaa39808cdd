"""Many runs' statuses kept as columns: what a list of 100,000 runs shows, without an object a run.

Each run has a place; at that place each column holds a number or a string of its status line
(state, detail, steps, turns, tokens). A status that says more than its line (a lease, an open
call, a wake time, a legacy journal, a fork: 13% of the production-shaped store's runs) is kept
whole beside them, so that ``status`` gives back the very status put in. On 100,000 runs a
tuple a run took 20 MB, and the collector scanned them all.

Imports no status rules: a runs list paints its first rows before it reads a status
(benchmarks/startup.py).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Collection, Sequence
from functools import cache
from operator import attrgetter
from typing import TYPE_CHECKING

from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import INT64_MAX, INT64_MIN

if TYPE_CHECKING:
    from agenttui.runs.statuses.status import RunStatus

#: Every state, in the order the ``states`` column numbers them.
STATES: tuple[RunState, ...] = tuple(RunState)
#: Each state's number in the ``states`` column.
STATE_INDEX: dict[RunState, int] = {state: index for index, state in enumerate(STATES)}
#: Each state's number, by the state's value.
STATE_INDEX_OF_VALUE: dict[str, int] = {state.value: index for index, state in enumerate(STATES)}
#: The number in the ``states`` column of a run whose status is not known yet.
PENDING = -1

#: A status's members that its line holds; the others are kept only ``whole``.
LINE_FIELDS = frozenset({"run_id", "state", "detail", "steps", "turns", "tokens"})


@cache
def _others_of() -> tuple[Callable[[RunStatus], tuple[object, ...]], tuple[object, ...]]:
    """What reads a status's members kept only whole at once (in C), and their defaults."""
    from agenttui.runs.statuses.status import RunStatus

    names = [name for name in RunStatus._fields if name not in LINE_FIELDS]
    return attrgetter(*names), tuple(RunStatus._field_defaults[name] for name in names)


def says_more_than_its_line(status: RunStatus) -> bool:
    """Whether ``status`` holds more than its line (state, detail, steps, turns, tokens)."""
    others, defaults = _others_of()
    return others(status) != defaults


class StatusColumns:
    """Statuses by place, as columns; a place holds ``PENDING`` until a status is put there."""

    __slots__ = ("details", "states", "steps", "tokens", "turns", "whole")

    def __init__(self, pending: int = 0) -> None:
        self.states: array[int] = array("b", [PENDING]) * pending
        """Each status's state, as its number in ``STATES``."""
        self.details: list[str] = [""] * pending
        self.steps: array[int] = array("q", [0]) * pending
        self.turns: array[int] = array("q", [0]) * pending
        self.tokens: array[int] = array("q", [0]) * pending
        self.whole: dict[int, RunStatus] = {}
        """The statuses that say more than a line does, by place (and those a reopen read apart
        from the index, as their place's status)."""

    @classmethod
    def of_lines(
        cls,
        states: Sequence[str],
        details: Sequence[str],
        steps: Sequence[int],
        turns: Sequence[int],
        tokens: Sequence[int],
    ) -> StatusColumns:
        """Columns of status lines given as columns (each state by its value; one not known
        here is pending), each column made at once. Raises ``TypeError`` or ``OverflowError``
        where a detail is not a string or a count not a number of 64 bits."""
        if not all(isinstance(detail, str) for detail in details):
            raise TypeError("a status line's detail is not a string")
        columns = cls()
        number_of = STATE_INDEX_OF_VALUE.get
        columns.states = array("b", [number_of(state, PENDING) for state in states])
        columns.details = list(details)
        columns.steps, columns.turns, columns.tokens = array("q", steps), array("q", turns), array("q", tokens)
        return columns

    def sliced(self, start: int) -> StatusColumns:
        """The places from ``start`` on, as columns of their own."""
        columns = StatusColumns()
        columns.states, columns.details = self.states[start:], self.details[start:]
        columns.steps, columns.turns, columns.tokens = self.steps[start:], self.turns[start:], self.tokens[start:]
        columns.whole = {at - start: status for at, status in self.whole.items() if at >= start}
        return columns

    def taken(self, places: Sequence[int]) -> StatusColumns:
        """The statuses at ``places``, in their order, as columns of their own (a place below
        zero: pending)."""
        columns = StatusColumns()
        columns.states = array("b", [self.states[at] if at >= 0 else PENDING for at in places])
        columns.details = [self.details[at] if at >= 0 else "" for at in places]
        columns.steps = array("q", [self.steps[at] if at >= 0 else 0 for at in places])
        columns.turns = array("q", [self.turns[at] if at >= 0 else 0 for at in places])
        columns.tokens = array("q", [self.tokens[at] if at >= 0 else 0 for at in places])
        whole = self.whole
        columns.whole = {to: whole[at] for to, at in enumerate(places) if at in whole}
        return columns

    def __len__(self) -> int:
        return len(self.states)

    def extend(self, other: StatusColumns) -> None:
        """Add ``other``'s places after these, each column at once."""
        start = len(self.states)
        self.states.extend(other.states)
        self.details += other.details
        self.steps.extend(other.steps)
        self.turns.extend(other.turns)
        self.tokens.extend(other.tokens)
        self.whole.update((start + at, status) for at, status in other.whole.items())

    def put(self, at: int, status: RunStatus) -> None:
        """Keep ``status`` at place ``at``. A token count no column of 64 bits holds (a store's
        absurd figure) is capped in its column, and the status kept whole with the figure."""
        tokens = status.tokens
        absurd = not INT64_MIN <= tokens <= INT64_MAX
        if absurd:
            tokens = INT64_MAX if tokens > 0 else INT64_MIN
        self.put_line(at, STATE_INDEX[status.state], status.detail, status.steps, status.turns, tokens)
        if absurd or says_more_than_its_line(status):
            self.whole[at] = status

    def put_line(self, at: int, state: int, detail: str, steps: int, turns: int, tokens: int) -> None:
        """Keep at place ``at`` a status that says no more than its line (``state``: its number)."""
        self.steps[at], self.turns[at], self.tokens[at] = steps, turns, tokens  # first: may raise TypeError
        self.details[at] = detail
        self.states[at] = state
        self.whole.pop(at, None)

    def clear(self, at: int) -> None:
        """Leave place ``at`` pending."""
        self.states[at] = PENDING
        self.whole.pop(at, None)

    def pending_count(self) -> int:
        """How many places hold no status yet (counted on the column's bytes, in C)."""
        return self.states.tobytes().count(_byte_of(None))

    def places(self, states: Collection[RunState | None]) -> list[int]:
        """The places whose status is in one of ``states`` (None: pending), in order. Found by
        the column's bytes (one byte a place), in C: a look at 100,000 runs asks for a few."""
        data = self.states.tobytes()
        found: list[int] = []
        for state in states:
            byte = _byte_of(state)
            at = data.find(byte)
            while at != -1:
                found.append(at)
                at = data.find(byte, at + 1)
        return sorted(found)

    def status(self, at: int, run_id: str) -> RunStatus | None:
        """The status at place ``at`` (``run_id``'s), None while pending."""
        state = self.states[at]
        if state == PENDING:
            return None
        if (whole := self.whole.get(at)) is not None:
            return whole
        from agenttui.runs.statuses.status import RunStatus

        return RunStatus(run_id, STATES[state], self.details[at], steps=self.steps[at], turns=self.turns[at],
                         tokens=self.tokens[at])  # fmt: skip


def _byte_of(state: RunState | None) -> bytes:
    """The byte of the ``states`` column that stands for ``state`` (None: pending)."""
    return (PENDING if state is None else STATE_INDEX[state]).to_bytes(1, "little", signed=True)
