"""Two runs side by side: their records aligned by turn, what differs, and the tokens each turn spent.

Any two runs, in any two stores: a what-if fork (a scratch store) against its original, or two
recorded runs. A turn is a model turn with the records that follow it until the next model turn;
the records before the first model turn are turn 0, so turn ``n`` is the ``n``-th model call, as a
replay counts them. Turn ``n`` of one run is set beside turn ``n`` of the other, their records
paired by step name with the journal diff's rules (``diff_journals``, ``same_outcome``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

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
    records: Sequence[Record] | None = None
    """The run's records when the caller holds them already (a fork that has just finished, its
    recording read): compared as they are, the store not read again."""


@dataclass(frozen=True, slots=True)
class TurnPair:
    """Turn ``number`` of the left run beside turn ``number`` of the right."""

    number: int
    rows: tuple[DiffRow, ...]
    """Every record of the turn on either side, paired by step name, identical ones included."""
    left_usage: Usage | None
    """Tokens the left run's turn spent; None when the left run has no such turn."""
    right_usage: Usage | None
    differing: tuple[DiffRow, ...] = field(init=False)
    """The rows that differ, in order: read on every repaint and every move between differences."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "differing", tuple(row for row in self.rows if row.state.diverges))

    @property
    def differs(self) -> bool:
        return bool(self.differing)

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
    """Two runs aligned by turn (or the turns aligned so far, while they are read). Build with
    ``compare_runs`` (records), ``compare_sides`` (stores) or, turn by turn, ``Comparison.of``
    over what ``compared_turns`` yields."""

    turns: tuple[TurnPair, ...]
    left_turns: int
    """Model turns the left run holds."""
    right_turns: int
    left_usage: Usage
    right_usage: Usage

    @classmethod
    def of(cls, turns: Sequence[TurnPair]) -> Comparison:
        def total(usages: Iterable[Usage | None]) -> Usage:
            present = [usage for usage in usages if usage]
            return Usage(
                sum(u.input_tokens for u in present),
                sum(u.output_tokens for u in present),
                sum(u.cache_read_tokens for u in present),
                sum(u.cache_write_tokens for u in present),
            )

        return cls(
            tuple(turns),
            sum(1 for turn in turns[1:] if turn.left_usage is not None),
            sum(1 for turn in turns[1:] if turn.right_usage is not None),
            total(turn.left_usage for turn in turns),
            total(turn.right_usage for turn in turns),
        )

    @property
    def diff(self) -> JournalDiff:
        """The two journals' rows, turn after turn."""
        return JournalDiff([row for turn in self.turns for row in turn.rows])

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


@dataclass(slots=True)
class _Turn:
    """One run's turn: its records, where the first stands in the run, the tokens they spent."""

    start: int
    records: list[Record]
    usage: Usage = NO_USAGE


class _TurnSplitter:
    """A run's records, fed in order, cut into turns."""

    def __init__(self) -> None:
        self.current = _Turn(0, [])
        self.seen = 0

    def feed(self, record: Record) -> _Turn | None:
        """Take the next record; the turn it ends, if it starts a new one."""
        done = None
        if record.kind == StepKind.MODEL:
            done, self.current = self.current, _Turn(self.seen, [])
        self.current.records.append(record)
        if record.usage:  # counted as a run's status counts its tokens: each record's usage
            turn = self.current
            turn.usage = record.usage if turn.usage is NO_USAGE else turn.usage + record.usage
        self.seen += 1
        return done


def pair_turns(
    number: int, left: _Turn | None, right: _Turn | None, *, markers_optional: bool = False,
    not_compared: Collection[str] = (),
) -> TurnPair:  # fmt: skip
    """Turn ``number`` of each run side by side, their records paired by step name.

    Turn against turn: a step both runs hold in different turns (a run that ended a turn sooner)
    is shown where each run holds it, not pulled into the other's turn."""
    left_records = _blanked(left.records, not_compared) if left is not None else []
    right_records = _blanked(right.records, not_compared) if right is not None else []
    left_at = left.start if left is not None else 0
    right_at = right.start if right is not None else 0
    rows = diff_journals(left_records, right_records, markers_optional=markers_optional).rows
    return TurnPair(
        number,
        tuple(_placed(row, left_at, right_at, markers_optional) for row in rows),
        None if left is None else left.usage,
        None if right is None else right.usage,
    )


def _blanked(records: list[Record], not_compared: Collection[str]) -> list[Record]:
    """Model turns with the members named in ``not_compared`` emptied (what a replay with recorded
    tools cannot reproduce: a foreign agent's digests, ``ReplaySession.not_compared``)."""
    if not not_compared:
        return records
    blank: dict[str, Any] = dict.fromkeys(not_compared, "")  # Record members by name
    return [dataclasses.replace(r, **blank) if r.kind == StepKind.MODEL else r for r in records]


def _placed(row: DiffRow, left_at: int, right_at: int, markers_optional: bool) -> DiffRow:
    """A turn's row with its indexes in the whole runs. With ``markers_optional``, a marker only
    the right side holds is treated as ``diff_journals`` treats one only the left holds."""
    state, reason = row.state, row.reason
    if markers_optional and state == RowState.EXTRA and row.right is not None and row.right.kind in MARKER_KINDS:
        state, reason = RowState.MARKER, "runtime marker, not replayed"
    return DiffRow(
        row.name, state, row.left, row.right, reason,
        None if row.left_index is None else row.left_index + left_at,
        None if row.right_index is None else row.right_index + right_at,
    )  # fmt: skip


def _split(records: Iterable[Record]) -> list[_Turn]:
    splitter = _TurnSplitter()
    turns = [done for record in records if (done := splitter.feed(record)) is not None]
    return [*turns, splitter.current]


def compare_runs(
    left: Sequence[Record], right: Sequence[Record], *, markers_optional: bool = False,
    not_compared: Collection[str] = (),
) -> Comparison:  # fmt: skip
    """``left`` and ``right`` aligned by turn, with what differs and the tokens each turn spent.

    ``markers_optional``: attempt, approval and not-started records present on one side only are
    runtime mechanics, not differences (a fork replayed with recorded tools writes none of them).
    ``not_compared``: members of the model turns left out of the comparison on both sides (a
    replay's ``not_compared``: the digests of a foreign agent's prompt and tools).
    """
    left_turns, right_turns = _split(left), _split(right)
    return Comparison.of(
        [
            pair_turns(
                number,
                left_turns[number] if number < len(left_turns) else None,
                right_turns[number] if number < len(right_turns) else None,
                markers_optional=markers_optional,
                not_compared=not_compared,
            )
            for number in range(max(len(left_turns), len(right_turns)))
        ]
    )


async def _read_turns(side: Side) -> AsyncIterator[_Turn]:
    """``side``'s run a turn at a time, as its pages are read (or from the records it holds).
    Raises ``RunNotFoundError`` for a run with no records."""
    splitter = _TurnSplitter()
    if side.records is not None:
        for record in side.records:
            if (done := splitter.feed(record)) is not None:
                yield done
    else:
        async for _, record in Journal(side.store).entries(side.run_id):
            if (done := splitter.feed(record)) is not None:
                yield done
    if not splitter.seen:
        raise RunNotFoundError(side.run_id)
    yield splitter.current


async def compared_turns(
    left: Side, right: Side, *, markers_optional: bool = False, not_compared: Collection[str] = ()
) -> AsyncIterator[TurnPair]:
    """The two runs turn by turn, each pair as soon as both of its turns are read: a long run's
    first turns show while its last are still being read. Raises ``RunNotFoundError`` for a side
    with no records. A journal of any format is read (a viewer never refuses one)."""
    left_turns, right_turns = _read_turns(left), _read_turns(right)
    number = 0
    while True:
        left_turn = await anext(left_turns, None)
        right_turn = await anext(right_turns, None)
        if left_turn is None and right_turn is None:
            return
        yield pair_turns(number, left_turn, right_turn, markers_optional=markers_optional, not_compared=not_compared)
        number += 1


async def compare_sides(
    left: Side, right: Side, *, markers_optional: bool = False, not_compared: Collection[str] = ()
) -> Comparison:
    """Both runs (each from its own store, or the records a side holds) aligned by turn: the
    ``Comparison`` of all ``compared_turns`` (the same options as ``compare_runs``)."""
    turns = compared_turns(left, right, markers_optional=markers_optional, not_compared=not_compared)
    return Comparison.of([turn async for turn in turns])
