"""The runs list's rules, as plain Python: order, folds, filters, counts."""

from __future__ import annotations

from agenttui.runs.statuses.status import RunState, RunStatus
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


def test_a_status_line_gives_back_the_status_it_was_made_from() -> None:
    from datetime import UTC, datetime

    from agenttui.stores.base import LeaseInfo
    from agenttui.tui.runs_model import StatusLine

    plain = RunStatus("a", RunState.COMPLETE, "done", steps=12, turns=3, tokens=4096)
    fuller = [
        RunStatus("b", RunState.IN_FLIGHT, "leased by w", lease_holder="w", lease=LeaseInfo("b", "w", 9e9)),
        RunStatus("c", RunState.SLEEPING, "until", wake_at=datetime(2100, 1, 1, tzinfo=UTC), tool_use_id="t1"),
        RunStatus("d", RunState.AWAITING_INPUT, interrupt_name="ask", tool_name="ask_customer"),
        RunStatus("e", RunState.STALLED, legacy=True, lease_unknown=True, lease_lapsed=True),
    ]
    line = StatusLine.of(plain)
    assert line.whole is None and line.status("a") == plain
    for status in fuller:
        line = StatusLine.of(status)
        assert line.status(status.run_id) == status and line.state == status.state
        assert (line.legacy, line.lease_unknown) == (status.legacy, status.lease_unknown)
    model = RunsModel()
    model.add_runs(["a", "b"])
    model.set_statuses([plain])
    assert [row.status for row in model.rows()] == [plain, None] and model.pending == 1


def test_rows_are_made_from_the_columns_when_asked_for() -> None:
    model = RunsModel()
    model.add_runs(["a", "b", "b>c", "d"])
    model.set_statuses([RunStatus("a", RunState.COMPLETE, "done", steps=3, turns=1, tokens=70_000),
                        RunStatus("b>c", RunState.HALTED, "refund")])  # fmt: skip
    model.toggle_fold("b", True)
    rows = model.rows()
    assert len(rows) == 4 and list(rows.run_ids()) == ["a", "b", "b>c", "d"]
    assert [(r.run_id, r.depth, r.children, r.folded) for r in rows] == [
        ("a", 0, 0, True), ("b", 0, 1, False), ("b>c", 1, 0, True), ("d", 0, 0, True),
    ]  # fmt: skip
    assert rows[0].status == RunStatus("a", RunState.COMPLETE, "done", steps=3, turns=1, tokens=70_000)
    assert rows[-1].line is None and model.pending == 2
    assert (rows.index_of("b>c"), rows.index_of("nowhere")) == (2, None)
    assert model.has_status("a") and not model.has_status("d") and not model.has_status("nowhere")
    model.set_statuses([RunStatus("a", RunState.STALLED)])  # read again: the line follows
    assert rows[0].line is not None and rows[0].line.state is RunState.STALLED and model.pending == 2
    assert model.counts() == {RunState.STALLED: 1}
    model.toggle_fold("b", False)
    assert model.rows().index_of("b>c") is None


def test_runs_listed_with_their_statuses_are_laid_in_place_by_place() -> None:
    """A reopen lists runs with the statuses the status index vouched for (``StatusColumns``):
    laid in at once when every run is new, one by one where some were known (the live feed
    named them first); a place left pending stays to be read."""
    from agenttui.runs.statuses.columns import StatusColumns

    def columns_of(statuses: list[RunStatus | None]) -> StatusColumns:
        columns = StatusColumns(len(statuses))
        for at, status in enumerate(statuses):
            if status is not None:
                columns.put(at, status)
        return columns

    done = RunStatus("a", RunState.COMPLETE, "done", steps=3, turns=1, tokens=10)
    halted = RunStatus("b>c", RunState.HALTED, "refund", tool_use_id="call_1")  # says more than a line
    model = RunsModel()
    model.add_runs(["a", "b", "b>c", "d"], columns_of([done, None, halted, None]))
    assert model.roots == ["a", "b", "d"] and model.children == {"b": ["b>c"]}
    assert model.pending == 2 and model.unread() == ["b", "d"]
    assert model.counts() == {RunState.COMPLETE: 1}  # a sub-run counts with its parent; a pending run not at all
    assert [row.status for row in model.rows()] == [done, None, None]
    model.toggle_fold("b", True)
    assert model.rows()[2].status == halted
    # Some known already: each status still goes to its own run.
    later = RunStatus("d", RunState.STALLED)
    model.add_runs(["d", "e"], columns_of([later, RunStatus("e", RunState.COMPLETE)]))
    assert model.statuses["d"] is not None and model.statuses["d"].state is RunState.STALLED
    assert model.unread() == ["b"] and model.pending == 1 and model.roots == ["a", "b", "d", "e"]
    assert [s.run_id for s in model.statuses_in({RunState.HALTED, RunState.STALLED})] == ["b>c", "d"]
