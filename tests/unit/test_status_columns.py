"""``StatusColumns``: many runs' statuses as columns, as a reopen lays them out and fits them to a
listing (``runs.status.kept_statuses``)."""

from __future__ import annotations

import pytest

from agenttui.runs.statuses.columns import StatusColumns
from agenttui.runs.statuses.status import RunState, RunStatus

DONE = RunStatus("a", RunState.COMPLETE, "done", steps=3, turns=1, tokens=10)
HALTED = RunStatus("b", RunState.HALTED, "refund", tool_use_id="call_1")  # says more than its line
STALLED = RunStatus("c", RunState.STALLED, steps=2)


def laid() -> StatusColumns:
    columns = StatusColumns.of_lines(["complete", "halted", "stalled"], ["done", "", ""], [3, 0, 2], [1, 0, 0],
                                     [10, 0, 0])  # fmt: skip
    columns.put(1, HALTED)
    return columns


def statuses(columns: StatusColumns, run_ids: list[str]) -> list[RunStatus | None]:
    return [columns.status(at, run_id) for at, run_id in enumerate(run_ids)]


def test_lines_laid_as_columns_give_back_their_statuses() -> None:
    assert statuses(laid(), ["a", "b", "c"]) == [DONE, HALTED, STALLED]


def test_a_state_not_known_here_is_pending_and_a_detail_not_a_string_is_refused() -> None:
    columns = StatusColumns.of_lines(["complete", "no-such-state"], ["", ""], [1, 1], [0, 0], [0, 0])
    assert columns.pending_count() == 1 and columns.places([None]) == [1]
    with pytest.raises(TypeError):
        StatusColumns.of_lines(["complete"], [7], [1], [0], [0])  # type: ignore[list-item]  # an index not as written
    with pytest.raises(TypeError):
        StatusColumns.of_lines(["complete"], [""], ["1"], [0], [0])  # type: ignore[list-item]


def test_sliced_taken_and_cleared_places_keep_each_status_with_its_run() -> None:
    assert statuses(laid().sliced(1), ["b", "c"]) == [HALTED, STALLED]
    # Taken in another order, a place below zero pending (a run the index does not hold).
    assert statuses(laid().taken([2, -1, 1, 0]), ["c", "new", "b", "a"]) == [STALLED, None, HALTED, DONE]
    cleared = laid()
    cleared.clear(1)  # a run that changed since: to be read again
    assert statuses(cleared, ["a", "b", "c"]) == [DONE, None, STALLED] and cleared.whole == {}
