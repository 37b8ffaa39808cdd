"""Journal diffs: alignment by step name, and a replay in progress."""

from __future__ import annotations

from agenttui.journal.record import Record, StepKind
from agenttui.render.diff import DiffRow, RowState, diff_journals


def value(name: str, result: bytes = b'"ok"') -> Record:
    return Record(name, StepKind.VALUE, result=result)


RECORDING = [
    value("@journal"),
    value("run:start"),
    value("@llm/0"),
    value("tool:c0"),
    value("@llm/1"),
    value("approval:c1"),
    value("tool:c1"),
]


def states(rows: list[DiffRow]) -> list[tuple[str, RowState]]:
    return [(row.name, row.state) for row in rows]


def test_a_replay_in_progress_is_pending_past_its_newest_step_even_with_inputs_copied_first() -> None:
    # A replay store starts with the recording's inputs (the approval among them), then replays.
    replayed = [value("@journal"), value("run:start"), value("approval:c1"), value("@llm/0"), value("tool:c0")]
    diff = diff_journals(RECORDING, replayed, right_partial=True)
    assert states(diff.rows) == [
        ("@journal", RowState.SAME), ("run:start", RowState.SAME), ("@llm/0", RowState.SAME), ("tool:c0", RowState.SAME),
        ("@llm/1", RowState.PENDING), ("approval:c1", RowState.SAME), ("tool:c1", RowState.PENDING),
    ]  # fmt: skip
    assert diff.matches


def test_a_finished_replay_names_what_it_missed_changed_and_added() -> None:
    replayed = [value("@journal"), value("run:start"), value("@llm/0"), value("tool:c0", b'"other"'), value("extra")]
    diff = diff_journals(RECORDING, replayed)
    assert states(diff.rows)[3:] == [
        ("tool:c0", RowState.CHANGED), ("@llm/1", RowState.MISSING), ("approval:c1", RowState.MISSING),
        ("tool:c1", RowState.MISSING), ("extra", RowState.EXTRA),
    ]  # fmt: skip
    assert diff.first_divergence is not None and diff.first_divergence.name == "tool:c0"
