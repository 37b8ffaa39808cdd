"""The runs list's rules, as plain Python: order, folds, filters, counts."""

from __future__ import annotations

from agenttui.runs.status import RunState, RunStatus
from agenttui.tui.runs_model import RunsModel


def test_runs_that_appear_later_take_their_place_in_order() -> None:
    model = RunsModel()
    model.add_runs(["a", "c", "c>x"])
    model.add_runs(["b", "c>a", "0"])
    assert model.roots == ["0", "a", "b", "c"] and model.children["c"] == ["c>a", "c>x"]


def test_sub_runs_fold_under_their_parent_and_filters_keep_the_parent() -> None:
    model = RunsModel()
    model.add_runs(["p", "p>c1", "q"])
    model.set_statuses(
        [
            RunStatus("p", RunState.COMPLETE),
            RunStatus("p>c1", RunState.HALTED, "refund"),
            RunStatus("q", RunState.STALLED),
        ]
    )
    assert [r.run_id for r in model.rows()] == ["p", "q"]
    model.toggle_fold("p", True)
    assert [(r.run_id, r.depth) for r in model.rows()] == [("p", 0), ("p>c1", 1), ("q", 0)]
    model.text_filter = "refund"
    assert [r.run_id for r in model.rows()] == ["p", "p>c1"]
    assert model.counts()[RunState.COMPLETE] == 1 and model.pending == 0


def test_status_filters_cycle() -> None:
    model = RunsModel()
    model.add_runs(["a", "b"])
    model.set_statuses([RunStatus("a", RunState.COMPLETE), RunStatus("b", RunState.AWAITING_APPROVAL)])
    assert model.cycle_status_filter() == "needs attention"
    assert [r.run_id for r in model.rows()] == ["b"]
