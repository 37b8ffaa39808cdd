"""A long run of every shape, drawn exactly as before: digests of its Mermaid text, nodes and drawings.

The digests were taken from the renderer before its nodes and index were made cheaper (the
frozen-dataclass ``FlowStep``, one method call per record): any change to what a long run draws
shows up here, where the small golden files might not reach (loops thousands long, fan-outs and
folds next to each other, results before their model turn).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from agenttui.render import Flowchart, FlowStep, flow_steps, mermaid_text
from tests.render import runs

TURNS = 3_000


def digest(lines: Iterable[object]) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(str(line).encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()[:16]


def fields(step: FlowStep) -> tuple[object, ...]:
    return (step.kind.value, step.label, step.failed, step.record_index, step.turn, step.parallel,
            step.tool_use_id, step.child_run_id)  # fmt: skip


def long_chart() -> tuple[list[FlowStep], Flowchart, int]:
    records, sub_runs = runs.long_run(TURNS)
    children = {run_id: flow_steps(runs.CHILD) for run_id in sub_runs}
    steps = flow_steps(records, run_id=runs.LONG_RUN_ID, sub_runs=children)
    return steps, Flowchart(steps, children=children), len(records)


def test_the_nodes_and_mermaid_text_are_as_before() -> None:
    steps, _, _ = long_chart()
    assert (len(steps), digest(map(fields, steps)), digest([mermaid_text(steps)])) == EXPECTED_NODES


def test_the_drawings_are_as_before() -> None:
    _, chart, _ = long_chart()
    drawings = [chart.text(100), chart.text(100, ascii=True), chart.text(24)]
    assert (chart.row_count, chart.block_count, digest(drawings)) == EXPECTED_DRAWINGS


def test_rows_and_records_map_as_before() -> None:
    _, chart, records = long_chart()
    rows = [chart.row_for_record(record) for record in range(records)]
    back = [chart.record_for_row(row) for row in range(chart.row_count)]
    assert (digest(rows), digest(back), digest(chart.block_heights())) == EXPECTED_MAPS


def test_folding_draws_as_before() -> None:
    _, chart, _ = long_chart()
    for block in range(0, chart.block_count, 5):
        chart.unfold(block)
    chart.selected = 1_001
    unfolded = chart.text(80)
    for block in range(0, chart.block_count, 3):
        chart.toggle(chart.block_rows(block).start)
    assert (chart.row_count, digest([unfolded, chart.text(80)])) == EXPECTED_FOLDS


EXPECTED_NODES = (7_269, "1b8e4dd3ee3dd23d", "7c8c30e96a2d7edc")
EXPECTED_DRAWINGS = (15_521, 4_077, "6dd0bd0aeba8eda1")
EXPECTED_MAPS = ("8c57fd3b0ac69466", "24d1cb584f336e46", "1f6ff4695768b138")
EXPECTED_FOLDS = (18_879, "a49f3c4466d9916c")
