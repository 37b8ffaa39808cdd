"""Properties of every drawing: rows fit, boxes close, the spine is unbroken, windows equal the whole."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from agenttui.render import DONE, MIN_WIDTH, Flowchart, FlowStep, cell_width
from tests.render.runs import charts, charts_with_children

WithChildren = tuple[list[FlowStep], dict[str, list[FlowStep]]]  # what charts_with_children draws

# Whole drawings of generated runs: no per-example deadline, on a shared CI machine they vary.
drawing = settings(deadline=None, max_examples=60)
widths = st.integers(MIN_WIDTH, 100)
# Past this width a frame's child is never clipped, so box geometry holds inside frames too.
FRAME_SAFE = MIN_WIDTH + 2

CORNERS = {"╭": "╮", "┌": "┐", "┏": "┓", "│": "│", "┃": "┃", "╰": "╯", "└": "┘", "┗": "┛", "+": "+", "|": "|"}
TOPS, SIDES, BOTTOMS = set("╭┌┏+"), set("│┃|"), set("╰└┗+")
CONNECTORS = set("┬┯+")
FRAME_TOPS = ("┌─── ▾", "┏━━━ ▾", "+--- v")


def unfold_all(chart: Flowchart) -> None:
    for block in range(chart.block_count):
        chart.unfold(block)


def check_geometry(rows: list[str], *, ascii: bool = False) -> None:
    """Boxes close with their corners lined up, and the spine runs from the first box to the last.

    Walks the rows as the spine does: top edge, label row, bottom edge, then either an arrow
    into the next box or fan-out rows; a frame's interior is checked as a drawing of its own.
    """
    arrow = "   v" if ascii else "   ▼"
    branches = ("   +-> ",) if ascii else ("   ├─▶ ", "   └─▶ ")
    state = "top"
    i = 0
    while i < len(rows):
        row = rows[i]
        last = i == len(rows) - 1
        if state == "top" and row.startswith(FRAME_TOPS):
            end = next(j for j in range(i + 1, len(rows)) if rows[j][0] not in SIDES)
            check_geometry([r[2:] for r in rows[i + 1 : end]], ascii=ascii)
            assert rows[end][0] in BOTTOMS
            assert (rows[end][3] in CONNECTORS) != (end == len(rows) - 1), "the spine leaves every frame but the last"
            i, state = end + 1, "edge"
            continue
        if state == "top":
            assert row[0] in TOPS, f"row {i}: a box must start here: {row!r}"
            top, state = row, "label"
        elif state == "label":
            assert row[0] in SIDES and row[-1] == CORNERS[row[0]], f"row {i}: {row!r}"
            assert cell_width(row) == cell_width(top), f"row {i}: the right side is out of line"
            state = "bottom"
        elif state == "bottom":
            assert row[0] in BOTTOMS and row[-1] == CORNERS[row[0]], f"row {i}: {row!r}"
            assert cell_width(row) == cell_width(top), f"row {i}: the right corner is out of line"
            assert (row[3] in CONNECTORS) != last, f"row {i}: the spine leaves every box but the last"
            state = "edge"
        elif row == arrow:
            state = "top"
        else:
            assert row.startswith(branches), f"row {i}: the spine is broken: {row!r}"
            assert not row.startswith("   └") or last
        i += 1
    assert state == "edge", "the drawing must end with a closed box"


@drawing
@given(charts(), widths, st.booleans())
def test_every_row_fits_the_width(steps: list[FlowStep], width: int, ascii: bool) -> None:
    chart = Flowchart(steps)
    assert all(row.cells <= width for row in chart.rows(0, chart.row_count, width, ascii=ascii))
    unfold_all(chart)
    assert all(row.cells <= width for row in chart.rows(0, chart.row_count, width, ascii=ascii))


@drawing
@given(charts_with_children(), widths, st.booleans())
def test_rows_fit_with_sub_agents_open(run: WithChildren, width: int, ascii: bool) -> None:
    steps, children = run
    chart = Flowchart(steps, children=children)
    unfold_all(chart)
    assert all(row.cells <= width for row in chart.rows(0, chart.row_count, width, ascii=ascii))


@drawing
@given(charts(), widths, st.booleans(), st.booleans())
def test_boxes_close_and_the_spine_is_unbroken(steps: list[FlowStep], width: int, ascii: bool, unfold: bool) -> None:
    chart = Flowchart(steps)
    if unfold:
        unfold_all(chart)
    check_geometry([row.text for row in chart.rows(0, chart.row_count, width, ascii=ascii)], ascii=ascii)


@drawing
@given(charts_with_children(), st.integers(FRAME_SAFE, 100), st.booleans())
def test_geometry_holds_inside_open_sub_agents(run: WithChildren, width: int, ascii: bool) -> None:
    steps, children = run
    chart = Flowchart(steps, children=children)
    unfold_all(chart)
    check_geometry([row.text for row in chart.rows(0, chart.row_count, width, ascii=ascii)], ascii=ascii)


@drawing
@given(charts_with_children(), st.integers(FRAME_SAFE, 100))
def test_an_open_frame_holds_the_childs_own_drawing(run: WithChildren, width: int) -> None:
    steps, children = run
    chart = Flowchart(steps, children=children)
    for step in steps:
        if step.child_run_id is None:
            continue
        assert step.record_index is not None  # a sub-agent's call is a record
        frame = chart.block_at(chart.row_for_record(step.record_index))
        chart.unfold(frame)
        rows = chart.block_rows(frame)
        inside = [row.text[2:] for row in chart.rows(rows.start + 2, rows.stop - 1, width)]
        child = Flowchart(children[step.child_run_id])
        assert inside == [row.text for row in child.rows(0, child.row_count, width - 2)]


@drawing
@given(charts_with_children(), st.booleans())
def test_block_heights_add_up_to_the_row_count(run: WithChildren, unfold: bool) -> None:
    steps, children = run
    chart = Flowchart(steps, children=children)
    if unfold:
        unfold_all(chart)
    assert sum(chart.block_heights()) == chart.row_count == len(chart.rows(0, chart.row_count, 60))


@drawing
@given(charts_with_children(), widths, st.data())
def test_a_window_is_the_same_rows_of_the_whole_drawing(run: WithChildren, width: int, data: st.DataObject) -> None:
    steps, children = run
    chart = Flowchart(steps, children=children)
    if data.draw(st.booleans()):
        unfold_all(chart)
    records = [s.record_index for s in steps if s.record_index is not None]
    chart.selected = data.draw(st.sampled_from(records)) if records else None
    whole = chart.rows(0, chart.row_count, width)
    start = data.draw(st.integers(0, chart.row_count))
    stop = data.draw(st.integers(start, chart.row_count + 3))
    assert chart.rows(start, stop, width) == whole[start:stop]
    # And drawn cold, before any block is in the cache.
    fresh = Flowchart(steps, children=children)
    if chart.selected is not None:
        fresh.selected = chart.selected
    if fresh.row_count == chart.row_count:  # nothing unfolded
        assert fresh.rows(start, stop, width) == whole[start:stop]


@drawing
@given(charts())
def test_records_and_rows_round_trip(steps: list[FlowStep]) -> None:
    chart = Flowchart(steps)
    for step in steps:
        if step.record_index is not None:
            row = chart.row_for_record(step.record_index)
            block = chart.block_at(row)
            assert row in chart.block_rows(block)
            assert chart.record_for_row(row) in {s.record_index for s in steps}
    unfold_all(chart)
    for step in steps:
        if step.record_index is not None:
            assert chart.record_for_row(chart.row_for_record(step.record_index)) == step.record_index


@drawing
@given(charts(), st.data())
def test_appending_draws_what_building_at_once_draws(steps: list[FlowStep], data: st.DataObject) -> None:
    split = data.draw(st.integers(1, len(steps) - 1))
    chart = Flowchart([*steps[:split], DONE])
    for step in steps[split:-1]:
        chart.append(step)
    whole = Flowchart(steps)
    assert chart.block_heights() == whole.block_heights()
    assert chart.rows(0, chart.row_count, 60) == whole.rows(0, whole.row_count, 60)


@drawing
@given(charts(), st.data())
def test_extending_in_batches_draws_what_building_at_once_draws(steps: list[FlowStep], data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, len(steps) - 1), max_size=4)) | {1, len(steps) - 1})
    chart = Flowchart([steps[0], DONE])
    for start, stop in itertools.pairwise(cuts):
        before = chart.rows(0, chart.row_count, 60)
        first = chart.extend(steps[start:stop])
        assert chart.rows(0, first, 60) == before[:first], "rows above the first changed one stay as they were"
    whole = Flowchart(steps)
    assert chart.block_heights() == whole.block_heights()
    assert chart.rows(0, chart.row_count, 60) == whole.rows(0, whole.row_count, 60)
    records = [step.record_index for step in steps if step.record_index is not None]
    for record in range(max(records, default=0) + 2):
        assert chart.row_for_record(record) == whole.row_for_record(record)


@settings(deadline=None, max_examples=30)
@given(charts(), st.integers(0, 10))
def test_folding_and_unfolding_restores_the_drawing(steps: list[FlowStep], block: int) -> None:
    chart = Flowchart(steps)
    before = chart.rows(0, chart.row_count, 60)
    block = min(block, chart.block_count - 1)
    if chart.unfold(block):
        assert chart.fold(block)
    assert chart.rows(0, chart.row_count, 60) == before
