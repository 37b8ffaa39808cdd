"""Flow steps: the nodes of a run's flowchart, by the rules of ``RenderMermaid`` (format section 5.1)."""

from __future__ import annotations

import pytest

from agenttui.errors import CorruptRecordError
from agenttui.journal import Message, Record, Tombstone, ToolUsePart
from agenttui.journal.codec import unreadable_record
from agenttui.render import DONE, START, FlowKind, FlowStep, FlowTail, flow_steps
from tests.render import runs


def labels(records: list[Record]) -> list[str]:
    return [step.label for step in flow_steps(records)]


def test_the_chart_is_bracketed_by_start_and_done() -> None:
    assert flow_steps([]) == [START, DONE]
    assert flow_steps([runs.HEADER]) == [START, DONE]


def test_each_kind_maps_to_its_label() -> None:
    assert labels(runs.MARKS) == [
        "user", "step: run:start", "LLM", "approved ✓", "tool: refund", "LLM", "denied ✗",
        "tool: charge ✗", "LLM", "step: run:complete", "done",
    ]  # fmt: skip


def test_record_indices_count_the_header_and_skipped_records() -> None:
    steps = flow_steps(runs.MARKS)
    assert [s.record_index for s in steps] == [None, 1, 2, 3, 5, 6, 7, 8, 9, 10, None]


def test_failures_are_failed_tool_results_and_denials() -> None:
    assert [s.failed for s in flow_steps(runs.MARKS)] == [
        False, False, False, False, False, False, True, True, False, False, False,
    ]  # fmt: skip


def test_skipped_kinds_consume_no_node() -> None:
    records = [
        runs.HEADER,
        runs.attempt("c1"),
        Record("signal:go", "signal", result=b"1"),
        Record("tool:c1", "saga_fail", tool_use_id="c1"),
        Record("attempt:not-started:x:attempt:tool:c1", "not_started", tool_use_id="c1", claim="x"),
        Record("mystery", "some_future_kind"),
        Record("empty", ""),
        unreadable_record("tool:c9", b"{not json", CorruptRecordError("bad JSON")),
        Record("redacted", "", tombstone=Tombstone("ab", 1)),
        runs.value("kept"),
    ]
    assert labels(records) == ["user", "step: kept", "done"]


def test_an_unreadable_record_of_a_drawn_kind_is_skipped() -> None:
    broken = Record("@llm/0", "model", unreadable="bad bytes")
    redacted = Record("tool:c1", "tool_result", tool_use_id="c1", tombstone=Tombstone("ab", 1))
    assert labels([runs.HEADER, broken, redacted]) == ["user", "done"]


def test_the_tool_name_comes_from_the_first_model_turn_that_requested_the_call() -> None:
    records = [
        runs.HEADER,
        runs.model(0, ("c1", "first")),
        runs.model(1, ("c1", "second")),
        runs.result("c1"),
    ]
    assert labels(records)[3] == "tool: first"


def test_the_tool_name_is_found_in_a_later_model_turn_too() -> None:
    # Never written by the SDK, but RenderMermaid looks the name up in the whole history.
    records = [runs.HEADER, runs.result("c1"), runs.model(0, ("c1", "late"))]
    assert labels(records)[1] == "tool: late"


def test_an_unknown_call_or_an_empty_name_falls_back_to_the_id() -> None:
    records = [
        runs.HEADER,
        Record("@llm/0", "model", message=Message.assistant(ToolUsePart("c2", ""))),
        runs.result("c1", error=True),
        runs.result("c2"),
    ]
    assert labels(records)[2:4] == ["tool: c1 ✗", "tool: c2"]


def test_a_model_record_without_a_message_is_still_an_llm_node() -> None:
    assert labels([runs.HEADER, Record("@llm/0", "model")]) == ["user", "LLM", "done"]


def test_turns_and_parallel_calls() -> None:
    steps = flow_steps([*runs.FAN_OUT, runs.model(2, ("d", "alone")), runs.result("d")])
    assert [(s.kind, s.turn, s.parallel, s.tool_use_id) for s in steps[1:-1]] == [
        (FlowKind.LLM, 0, False, ""),
        (FlowKind.TOOL, 0, True, "a"),
        (FlowKind.TOOL, 0, True, "b"),
        (FlowKind.TOOL, 0, True, "c"),
        (FlowKind.LLM, 1, False, ""),
        (FlowKind.LLM, 2, False, ""),
        (FlowKind.TOOL, 2, False, "d"),
    ]


def test_a_call_that_started_an_existing_sub_agent_names_its_run() -> None:
    steps = flow_steps(runs.PARENT, run_id=runs.PARENT_ID, sub_runs={"run-1>c2"})
    assert [s.child_run_id for s in steps if s.kind == FlowKind.TOOL] == [None, "run-1>c2"]
    # Without the run id, or with no such run, there is no sub-agent to show.
    assert all(s.child_run_id is None for s in flow_steps(runs.PARENT, sub_runs={"run-1>c2"}))
    assert all(s.child_run_id is None for s in flow_steps(runs.PARENT, run_id=runs.PARENT_ID))


def test_sub_run_ids_encode_the_call_id() -> None:
    records = [runs.HEADER, runs.model(0, ("call/1", "t")), runs.result("call/1")]
    steps = flow_steps(records, run_id="r", sub_runs={"r>call%2F1"})
    assert steps[2].child_run_id == "r>call%2F1"


def test_a_live_tail_gives_the_same_steps_record_by_record() -> None:
    for records in (runs.MARKS, runs.FAN_OUT, runs.loops(4, failing=(2,)), runs.PARENT):
        tail = FlowTail()
        live = [step for record in records if (step := tail.step(record)) is not None]
        assert [START, *live, DONE] == flow_steps(records)


def test_a_live_tail_continues_where_a_batch_left_off() -> None:
    tail = FlowTail()
    first = tail.steps(runs.MARKS[:5])
    rest = tail.steps(runs.MARKS[5:])
    assert [START, *first, *rest, DONE] == flow_steps(runs.MARKS)


def test_steps_are_plain_values() -> None:
    step = FlowStep(FlowKind.TOOL, "tool: t", record_index=3)
    assert step == FlowStep(FlowKind.TOOL, "tool: t", record_index=3)
    assert hash(step) == hash(FlowStep(FlowKind.TOOL, "tool: t", record_index=3))


def test_steps_cannot_be_changed() -> None:
    step = FlowStep(FlowKind.TOOL, "tool: t", record_index=3)
    with pytest.raises(AttributeError):
        step.label = "tool: u"  # type: ignore[misc]  # (what is being tested)


def test_the_nodes_of_one_tool_share_their_label() -> None:
    # One string per distinct label, however many calls: a long run holds a few, not one a node.
    steps = flow_steps(runs.loops(5, failing=(1, 3)))
    ok = [s.label for s in steps if s.kind == FlowKind.TOOL and not s.failed]
    failed = [s.label for s in steps if s.failed]
    assert len({id(label) for label in ok}) == 1 and len({id(label) for label in failed}) == 1
    assert ok[0] == "tool: search" and failed[0] == "tool: search ✗"


def test_a_result_before_its_model_turn_reads_the_rest_of_the_run_once() -> None:
    records = [runs.HEADER, runs.result("c1"), runs.model(0, ("c1", "late"), ("c2", "other")), runs.result("c2")]
    steps = flow_steps(records)
    assert [(s.label, s.turn, s.parallel) for s in steps[1:-1]] == [
        ("tool: late", 0, True), ("LLM", 0, False), ("tool: other", 0, True),
    ]  # fmt: skip
