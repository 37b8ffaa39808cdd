"""Two runs side by side: their records aligned by turn, what differs, and the tokens each turn spent.

Any two runs, in any two stores: a what-if fork (a scratch store) against its original, or two
recorded runs. A turn is a model turn with the records that follow it until the next model turn;
the records before the first model turn are turn 0, so turn ``n`` is the ``n``-th model call, as a
replay counts them. Turn ``n`` of one run is set beside turn ``n`` of the other, their records
paired by step name with the journal diff's rules (``diff_journals``, ``same_outcome``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from agenttui.errors import RunNotFoundError
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record, StepKind, Usage
from agenttui.render.diff import MARKER_KINDS, DiffRow, JournalDiff, RowState, diff_journals
from agenttui.stores.base import Store

NO_USAGE = Usage()


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a run in a store, and what to call it on screen."""

    store: Store
    run_id: str
    label: str


@dataclass(frozen=True, slots=True)
class TurnPair:
    """Turn ``number`` of the left run beside turn ``number`` of the right."""

    number: int
    rows: tuple[DiffRow, ...]
    """Every record of the turn on either side, paired by step name, identical ones included."""
    left_usage: Usage | None
    """Tokens the left run's turn spent; None when the left run has no such turn."""
    right_usage: Usage | None

    @property
    def differing(self) -> tuple[DiffRow, ...]:
        return tuple(row for row in self.rows if row.state.diverges)

    @property
    def differs(self) -> bool:
        return any(row.state.diverges for row in self.rows)

    @property
    def left_tokens(self) -> int:
        return (self.left_usage or NO_USAGE).total

    @property
    def right_tokens(self) -> int:
        return (self.right_usage or NO_USAGE).total

    @property
    def token_delta(self) -> int:
        """Right minus left: what the right run spent more (negative: less) in this turn."""
        return self.right_tokens - self.left_tokens


@dataclass(frozen=True, slots=True)
class Difference:
    """Where two runs first part: the turn, and the record."""

    turn: int
    row: DiffRow

    def words(self, left_label: str = "left", right_label: str = "right") -> str:
        """The difference as a person reads it: "turn 3 · tool:call_2_0: different tool result"."""
        row = self.row
        if row.state == RowState.MISSING:
            what = f"only in {left_label}"
        elif row.state == RowState.EXTRA:
            what = f"only in {right_label}"
        else:
            what = row.reason
        return f"turn {self.turn} · {row.name}: {what}"


@dataclass(frozen=True, slots=True)
class Comparison:
    """Two runs aligned by turn. Build with ``compare_runs`` (records) or ``compare_sides`` (stores)."""

    turns: tuple[TurnPair, ...]
    diff: JournalDiff
    """The two journals aligned by step name: the rows the turns group."""
    left_turns: int
    """Model turns the left run holds."""
    right_turns: int
    left_usage: Usage
    right_usage: Usage

    @property
    def first_difference(self) -> Difference | None:
        return next((Difference(turn.number, row) for turn in self.turns for row in turn.differing), None)

    @property
    def same(self) -> bool:
        return not any(turn.differs for turn in self.turns)

    @property
    def differing_turns(self) -> tuple[TurnPair, ...]:
        return tuple(turn for turn in self.turns if turn.differs)

    @property
    def token_delta(self) -> int:
        """Right minus left, over the whole runs."""
        return self.right_usage.total - self.left_usage.total


def turn_numbers(records: Sequence[Record]) -> list[int]:
    """Each record's turn: 0 before the first model turn, then ``n`` from the ``n``-th model turn on."""
    turn, out = 0, []
    for record in records:
        if record.kind == StepKind.MODEL:
            turn += 1
        out.append(turn)
    return out


def _usage_by_turn(records: Sequence[Record], turns: Sequence[int]) -> list[Usage]:
    """Tokens spent in each turn, counted as a run's status counts them (each record's ``usage``)."""
    out = [NO_USAGE] * ((turns[-1] + 1) if turns else 1)
    for record, turn in zip(records, turns, strict=True):
        if record.usage:
            out[turn] = out[turn] + record.usage
    return out


def compare_runs(left: Sequence[Record], right: Sequence[Record], *, markers_optional: bool = False) -> Comparison:
    """``left`` and ``right`` aligned by turn, with what differs and the tokens each turn spent.

    ``markers_optional``: attempt, approval and not-started records present on one side only are
    runtime mechanics, not differences (a fork replayed with recorded tools writes none of them).
    """
    left_turn, right_turn = turn_numbers(left), turn_numbers(right)
    left_usage, right_usage = _usage_by_turn(left, left_turn), _usage_by_turn(right, right_turn)
    left_spans, right_spans = _spans(left_turn), _spans(right_turn)
    turns: list[TurnPair] = []
    for number in range(max(len(left_spans), len(right_spans))):
        left_at, left_end = left_spans[number] if number < len(left_spans) else (len(left), len(left))
        right_at, right_end = right_spans[number] if number < len(right_spans) else (len(right), len(right))
        # Turn against turn: a step both runs hold in different turns (a run that ended a turn
        # sooner) is shown where each run holds it, not pulled into the other's turn.
        rows = diff_journals(left[left_at:left_end], right[right_at:right_end], markers_optional=markers_optional).rows
        turns.append(
            TurnPair(
                number,
                tuple(_placed(row, left_at, right_at, markers_optional) for row in rows),
                left_usage[number] if number < len(left_usage) else None,
                right_usage[number] if number < len(right_usage) else None,
            )
        )
    diff = JournalDiff([row for turn in turns for row in turn.rows])
    return Comparison(
        tuple(turns),
        diff,
        left_turn[-1] if left_turn else 0,
        right_turn[-1] if right_turn else 0,
        sum(left_usage, NO_USAGE),
        sum(right_usage, NO_USAGE),
    )


def _spans(turns: Sequence[int]) -> list[tuple[int, int]]:
    """Where each turn's records start and end, by turn number (a run always has a turn 0)."""
    spans = [(0, 0)]
    for index, turn in enumerate(turns):
        if turn == len(spans):
            spans.append((index, index))
        spans[turn] = (spans[turn][0], index + 1)
    return spans


def _placed(row: DiffRow, left_at: int, right_at: int, markers_optional: bool) -> DiffRow:
    """A turn's row with its indexes in the whole runs. With ``markers_optional``, a marker only
    the right side holds is treated as ``diff_journals`` treats one only the left holds."""
    state, reason = row.state, row.reason
    if markers_optional and state == RowState.EXTRA and row.right is not None and row.right.kind in MARKER_KINDS:
        state, reason = RowState.MARKER, "runtime marker, not replayed"
    return replace(
        row,
        state=state,
        reason=reason,
        left_index=None if row.left_index is None else row.left_index + left_at,
        right_index=None if row.right_index is None else row.right_index + right_at,
    )


async def compare_sides(left: Side, right: Side, *, markers_optional: bool = False) -> Comparison:
    """Read both runs (each from its own store) and compare them (``compare_runs``).

    Raises ``RunNotFoundError`` for a side with no records, ``JournalVersionError`` for a journal
    format agenttui does not read."""
    records = []
    for side in (left, right):
        history = await Journal(side.store).history(side.run_id)
        if not history:
            raise RunNotFoundError(side.run_id)
        records.append(history)
    return compare_runs(records[0], records[1], markers_optional=markers_optional)
