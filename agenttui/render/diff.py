"""Journal diffs: two runs' records aligned by step name, with the first divergence and its reason."""

from __future__ import annotations

import difflib
import enum
import json
import operator
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

from agenttui.journal.codec import encode_record
from agenttui.journal.describe import record_json
from agenttui.journal.record import Record, StepKind

#: Runtime mechanics, not outcomes: a replay with recorded tools writes none of them.
MARKER_KINDS = frozenset({StepKind.ATTEMPT, StepKind.NOT_STARTED, StepKind.APPROVAL})


class RowState(enum.StrEnum):
    SAME = "same"
    CHANGED = "changed"
    MISSING = "missing"
    """Recorded on the left, absent on the right."""
    EXTRA = "extra"
    """Absent on the left, present on the right."""
    PENDING = "pending"
    """Not reached yet on the right (a replay in progress)."""
    MARKER = "marker"
    """A runtime marker the right side does not write by design."""

    @property
    def diverges(self) -> bool:
        return self in (RowState.CHANGED, RowState.MISSING, RowState.EXTRA)


@dataclass(frozen=True, slots=True)
class DiffRow:
    name: str
    state: RowState
    left: Record | None
    right: Record | None
    reason: str = ""
    left_index: int | None = None
    right_index: int | None = None


@dataclass(frozen=True, slots=True)
class JournalDiff:
    rows: list[DiffRow]

    @property
    def first_divergence(self) -> DiffRow | None:
        return next((row for row in self.rows if row.state.diverges), None)

    @property
    def matches(self) -> bool:
        return self.first_divergence is None

    def counts(self) -> dict[RowState, int]:
        out = dict.fromkeys(RowState, 0)
        for row in self.rows:
            out[row.state] += 1
        return out


def comparable(record: Record) -> bytes:
    """A record's bytes with what differs between drives by design blanked: salt, claim, times."""
    return encode_record(replace(record, salt=b"", claim="", attempted_at=0))


# Every member but what differs between drives by design, and the stored bytes (salted).
_outcome = operator.attrgetter(
    *(f.name for f in fields(Record) if f.name not in {"salt", "claim", "attempted_at", "raw"})
)


def same_outcome(left: Record, right: Record) -> bool:
    """Whether two records are the same step outcome: equal ``comparable`` bytes.

    Equal members encode equally, so the members are compared first (a tuple comparison in C);
    the bytes are compared only when they differ. Re-encoding both sides of every step made a
    diff of two 10,000-record journals take a second.
    """
    return left is right or _outcome(left) == _outcome(right) or comparable(left) == comparable(right)


def _reason(left: Record, right: Record) -> str:
    if left.kind != right.kind:
        return f"different kind: {left.kind} → {right.kind}"
    if left.kind == StepKind.MODEL:
        left_calls = [(c.name, c.args) for c in left.message.tool_uses] if left.message else []
        right_calls = [(c.name, c.args) for c in right.message.tool_uses] if right.message else []
        if left_calls != right_calls:
            return "different tool call or arguments"
        return "different model output"
    if left.kind == StepKind.TOOL_RESULT:
        if left.is_error != right.is_error:
            return "different tool outcome (error vs result)"
        return "different tool result"
    return "different payload"


def diff_journals(
    left: Sequence[Record], right: Sequence[Record], *, right_partial: bool = False, markers_optional: bool = False
) -> JournalDiff:
    """Align ``left`` (usually the recording) and ``right`` by step name.

    ``right_partial``: the right side is still being written (a replay in progress), so left
    steps past the right's progress are ``pending``, not missing. ``markers_optional``: attempt,
    approval and not-started records absent on the right are runtime markers, not divergences.
    """
    right_by_name = {r.name: (i, r) for i, r in enumerate(right)}
    left_index = {r.name: i for i, r in enumerate(left)}
    # How far the right side has got: where its newest recorded step stands on the left. (Not
    # the furthest step it holds: a replay starts with the recording's inputs, approvals among
    # them, which stand late on the left though nothing after them has been replayed yet.)
    last_reached = next((left_index[r.name] for r in reversed(right) if r.name in left_index), -1)
    rows: list[DiffRow] = []
    right_cursor = 0

    def flush_extras(until: int) -> None:
        nonlocal right_cursor
        while right_cursor < until:
            record = right[right_cursor]
            if record.name not in left_index:
                rows.append(DiffRow(record.name, RowState.EXTRA, None, record, "step extra", right_index=right_cursor))
            right_cursor += 1

    for index, record in enumerate(left):
        match = right_by_name.get(record.name)
        if match is None:
            if markers_optional and record.kind in MARKER_KINDS:
                state, reason = RowState.MARKER, "runtime marker, not replayed"
            elif right_partial and index > last_reached:
                state, reason = RowState.PENDING, ""
            else:
                state, reason = RowState.MISSING, "step missing"
            rows.append(DiffRow(record.name, state, record, None, reason, left_index=index))
            continue
        right_index, other = match
        flush_extras(right_index)
        right_cursor = max(right_cursor, right_index + 1)
        if same_outcome(record, other):
            rows.append(DiffRow(record.name, RowState.SAME, record, other, left_index=index, right_index=right_index))
        else:
            rows.append(
                DiffRow(record.name, RowState.CHANGED, record, other, _reason(record, other), index, right_index)
            )
    flush_extras(len(right))
    return JournalDiff(rows)


def _pretty(record: Record | None) -> list[str]:
    if record is None:
        return []
    data = record_json(replace(record, salt=b"", claim="", attempted_at=0))
    # split("\n"), not splitlines(): a string may hold U+0085 or U+2028, which must stay on its line.
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False).split("\n")


def payload_diff(
    left: Record | None,
    right: Record | None,
    *,
    left_label: str = "recorded",
    right_label: str = "replayed",
    context: int = 3,
) -> list[str]:
    """A unified diff of two records as pretty JSON (salts, claims and times aside); a large
    ``context`` shows both sides in full."""
    return list(difflib.unified_diff(_pretty(left), _pretty(right), left_label, right_label, lineterm="", n=context))
