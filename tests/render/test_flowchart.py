"""The Flowchart: its block index, windows, cache, live tail, folds, selection and cursor mapping."""

from __future__ import annotations

from agenttui.render import DONE, MIN_WIDTH, START, Flowchart, FlowKind, FlowStep, Role, flow_steps, mermaid_text
from agenttui.render.blocks import END_LINES
from agenttui.render.flow import unfinished
from tests.render import runs


def texts(chart: Flowchart, width: int = 80, **kw: bool) -> list[str]:
    return [row.text for row in chart.rows(0, chart.row_count, width, **kw)]


def test_heights_are_known_before_anything_is_drawn() -> None:
    chart = Flowchart(flow_steps(runs.FAN_OUT))
    # user, LLM, three fan-out rows, LLM, done: boxes of 3 rows, each after an arrow row.
    assert chart.block_heights() == [3, 4, 3, 4, 4]
    assert chart.row_count == 18
    assert not chart._cache


def test_a_window_draws_only_the_blocks_under_it() -> None:
    chart = Flowchart(flow_steps(runs.loops(2)))
    window = chart.rows(5, 9, 80)
    assert len(chart._cache) == 2  # rows 5 to 8 fall in the first LLM box and the tool box after it
    assert [row.text for row in window] == texts(chart)[5:9]


def test_windows_are_clamped_to_the_chart() -> None:
    chart = Flowchart(flow_steps(runs.CHAIN))
    assert chart.rows(-5, 2, 80) == chart.rows(0, 2, 80)
    last = chart.row_count - 1
    assert chart.rows(last, last + 10, 80) == chart.rows(last, last + 1, 80)
    assert chart.rows(7, 7, 80) == []
    assert Flowchart().rows(0, 10, 80) == []


def test_cached_blocks_are_drawn_once_per_width_and_mode() -> None:
    chart = Flowchart(flow_steps(runs.CHAIN))
    first = chart.rows(0, chart.row_count, 80)
    assert chart.rows(0, chart.row_count, 80) == first
    assert len(chart._cache) == chart.block_count
    chart.rows(0, chart.row_count, 40)
    chart.rows(0, chart.row_count, 80, ascii=True)
    assert len(chart._cache) == 3 * chart.block_count


def test_rows_are_role_tagged_spans() -> None:
    rows = Flowchart(flow_steps(runs.CHAIN)).rows(0, 12, 80)
    assert list(rows[1]) == [("│ ", Role.BORDER), ("user", Role.LABEL), (" │", Role.BORDER)]
    assert [span.role for span in rows[2]] == [Role.BORDER, Role.EDGE, Role.BORDER]
    assert [(span.text, span.role) for span in rows[3]] == [("   ▼", Role.EDGE)]
    assert {span.role for span in rows[8]} | {span.role for span in rows[9]} == {Role.ERROR}


def test_step_nodes_are_muted() -> None:
    rows = Flowchart(flow_steps(runs.MARKS)).rows(4, 7, 80)
    assert rows[1].text == "│ step: run:start │"
    assert {span.role for row in rows for span in row} == {Role.MUTED, Role.EDGE}  # the connector is an edge


def test_the_selected_record_is_highlighted_and_never_cached() -> None:
    chart = Flowchart(flow_steps(runs.CHAIN))
    chart.rows(0, chart.row_count, 80)
    chart.selected = 2
    row = chart.rows(9, 10, 80)[0]
    assert [span.role for span in row] == [Role.ERROR, Role.SELECTED, Role.ERROR]
    chart.selected = None
    assert [span.role for span in chart.rows(9, 10, 80)[0]] == [Role.ERROR, Role.ERROR, Role.ERROR]


def test_a_selected_record_in_a_fan_out_or_a_fold() -> None:
    chart = Flowchart(flow_steps(runs.FAN_OUT))
    chart.selected = 3
    row = chart.rows(chart.row_for_record(3), chart.row_for_record(3) + 1, 80)[0]
    assert row.text == "   ├─▶ tool: fetch ✗" and row[1].role == Role.SELECTED
    chart = Flowchart(flow_steps(runs.loops(3)))
    chart.selected = 4
    row = chart.rows(chart.row_for_record(4), chart.row_for_record(4) + 1, 80)[0]
    assert row[1].role == Role.SELECTED


def test_record_and_row_follow_each_other() -> None:
    chart = Flowchart(flow_steps(runs.MARKS))
    assert chart.row_for_record(2) == 9 and chart.record_for_row(9) == 2
    # The attempt marker (record 4) has no node: the cursor stays on the node before it.
    assert chart.row_for_record(4) == chart.row_for_record(3)
    # The header comes before every node: the start node.
    assert chart.row_for_record(0) == 1
    assert chart.record_for_row(0) is None and chart.record_for_row(chart.row_count - 1) is None
    # Every row of a box, the arrow into it included, shows the box's record.
    assert {chart.record_for_row(row) for row in range(7, 11)} == {2}


def test_a_fold_maps_all_its_records_to_its_label_row() -> None:
    chart = Flowchart(flow_steps(runs.loops(5)))
    assert {chart.row_for_record(r) for r in range(1, 11)} == {5}
    assert chart.record_for_row(5) == 1
    chart.unfold(chart.block_at(5))
    assert [chart.record_for_row(chart.row_for_record(r)) for r in range(1, 12)] == list(range(1, 12))


def test_three_identical_loops_fold_two_do_not() -> None:
    assert Flowchart(flow_steps(runs.loops(2))).block_count == 7
    chart = Flowchart(flow_steps(runs.loops(3)))
    assert chart.block_count == 4 and chart.is_folded(1)


def test_loops_of_different_tools_or_with_parallel_calls_do_not_fold() -> None:
    records = [runs.HEADER]
    for turn in range(6):
        records += [runs.model(turn, (f"c{turn}", "search" if turn % 2 else "fetch")), runs.result(f"c{turn}")]
    assert Flowchart(flow_steps(records)).block_count == 14
    records = [runs.HEADER]
    for turn in range(4):
        records += [runs.model(turn, (f"a{turn}", "search"), (f"b{turn}", "search"))]
        records += [runs.result(f"a{turn}"), runs.result(f"b{turn}")]
    assert Flowchart(flow_steps(records)).block_count == 10  # start, 4 × (LLM, fan-out), done


def test_folding_re_indexes_only_the_rows_below() -> None:
    chart = Flowchart(flow_steps(runs.loops(4) + runs.MARKS[1:]))
    before = texts(chart)
    fold = chart.block_at(5)
    assert chart.unfold(fold) and not chart.unfold(fold)
    assert chart.row_count == len(before) + 4 * 8 - 4
    assert texts(chart)[-20:] == before[-20:]
    assert chart.fold(fold) and texts(chart) == before


def test_toggle_by_row() -> None:
    chart = Flowchart(flow_steps(runs.loops(3)))
    assert not chart.toggle(0)  # the start box does not fold
    assert chart.toggle(5) and not chart.is_folded(1)
    assert chart.toggle(20) and chart.is_folded(1)


def test_toggle_inside_an_open_sub_agent_folds_the_childs_block() -> None:
    child = flow_steps(runs.loops(3))
    children = {"run-1>c2": child}
    chart = Flowchart(flow_steps(runs.PARENT, run_id="run-1", sub_runs=children), children=children)
    frame = chart.block_at(chart.row_for_record(runs.PARENT_SUB_AGENT))
    assert chart.unfold(frame)
    top = chart.block_rows(frame).start
    rows = chart.row_count
    assert chart.toggle(top + 2 + 5)  # the child's fold, inside the frame
    assert chart.row_count == rows + 20 and not chart.is_folded(frame)
    assert chart.toggle(top + 1)  # the frame's title folds the frame
    assert chart.is_folded(frame)


def test_append_adds_a_node_before_done_without_re_indexing() -> None:
    steps = flow_steps(runs.MARKS)
    chart = Flowchart([START, DONE])
    for step in steps[1:-1]:
        first_changed = chart.append(step)
        assert step.record_index is not None
        assert first_changed <= chart.row_for_record(step.record_index)
    assert texts(chart) == texts(Flowchart(steps))


def test_append_grows_fan_outs_and_folds_loops() -> None:
    steps = flow_steps(runs.loops(5) + runs.FAN_OUT[1:])
    chart = Flowchart(steps[:1])
    for step in steps[1:]:
        chart.append(step)
    assert texts(chart) == texts(Flowchart(steps))
    assert chart.block_heights() == Flowchart(steps).block_heights()


def test_append_keeps_the_rows_above_the_change() -> None:
    chart = Flowchart([START, DONE])
    for step in flow_steps(runs.loops(4, failing=(1,)))[1:-1]:
        before = texts(chart)
        first = chart.append(step)
        assert texts(chart)[:first] == before[:first]


def test_panes_narrower_than_the_minimum_are_drawn_at_the_minimum() -> None:
    chart = Flowchart(flow_steps(runs.FAN_OUT))
    assert texts(chart, width=3) == texts(chart, width=MIN_WIDTH)
    assert max(row.cells for row in chart.rows(0, chart.row_count, 3)) <= MIN_WIDTH


def test_steps_read_from_mermaid_draw_without_records() -> None:
    steps = [START, FlowStep(FlowKind.LLM, "LLM"), FlowStep(FlowKind.TOOL, "tool: t"), DONE]
    chart = Flowchart(steps)
    assert chart.record_for_row(5) is None and chart.row_for_record(7) == 1


# -- where the run stands ----------------------------------------------------------------------

WAITING = unfinished("awaiting approval: refund")
HALTED = unfinished("halted on refund: outcome unknown", failed=True)


def test_an_unfinished_end_is_a_dashed_box_in_its_own_role() -> None:
    chart = Flowchart(flow_steps(runs.CHAIN, end=WAITING))
    assert chart.end == WAITING
    rows = chart.rows(chart.row_count - 4, chart.row_count, 80)
    assert [row.text for row in rows] == [
        "   ▼",
        "┌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌┐",
        "╎ awaiting approval: refund ╎",
        "└╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌┘",
    ]
    assert {span.role for row in rows[1:] for span in row} == {Role.UNFINISHED}
    halted = Flowchart(flow_steps(runs.CHAIN, end=HALTED))
    rows = halted.rows(halted.row_count - 3, halted.row_count, 80)
    assert rows[0].text.startswith("┏╍╍") and rows[1].text.startswith("╏ halted")
    assert {span.role for row in rows for span in row} == {Role.ERROR}
    assert halted.text(80, ascii=True).splitlines()[-2] == ": halted on refund: outcome unknown :"
    assert chart.record_for_row(chart.row_count - 2) is None


def test_where_a_run_stands_wraps_at_words_at_the_width_the_chart_is_fit_to() -> None:
    why = unfinished("halted on refund_payment: outcome unknown, the call may have fired", failed=True)
    chart = Flowchart(flow_steps(runs.CHAIN, end=why))
    one_line = chart.row_count  # not fit yet: one line, cut, as every other box
    assert chart.fit(40) and chart.row_count == one_line + 1
    assert texts(chart, 40)[-4:] == [
        "┏╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍┓",
        "╏ halted on refund_payment: outcome ╏",
        "╏ unknown, the call may have fired  ╏",
        "┗╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍╍┛",
    ]
    assert not chart.fit(40)  # the same width again: nothing to do
    # Narrower: more lines, at most END_LINES, the last cut; every window agrees with the whole.
    assert chart.fit(MIN_WIDTH) and chart.block_heights()[-1] == 1 + 2 + END_LINES
    assert texts(chart, MIN_WIDTH)[-5:-1] == ["╏ halted   ╏", "╏ on       ╏", "╏ refund_p ╏", "╏ ayment…  ╏"]
    whole = texts(chart, MIN_WIDTH)
    assert len(whole) == chart.row_count
    assert [row.text for row in chart.rows(chart.row_count - 5, chart.row_count, MIN_WIDTH)] == whole[-5:]
    # Wide: one line again; an end set later wraps at the width fit before.
    assert chart.fit(120) and chart.row_count == one_line
    chart.fit(30)
    chart.set_end(unfinished("awaiting approval: refund_payment (call_1_0), gated by run:start"))
    assert texts(chart, 30)[-4:-1] == [
        "╎ awaiting approval:         ╎",
        "╎ refund_payment (call_1_0), ╎",
        "╎ gated by run:start         ╎",
    ]
    assert len(chart.text(30).splitlines()) == chart.row_count


def test_set_end_replaces_the_closing_node_and_appends_keep_it_last() -> None:
    steps = flow_steps(runs.MARKS)
    chart = Flowchart([START, DONE])
    first = chart.set_end(WAITING)
    assert chart.end == WAITING and first == 0
    for step in steps[1:-1]:
        chart.append(step)
    assert texts(chart) == texts(Flowchart([*steps[:-1], WAITING]))
    before = texts(chart)
    first = chart.set_end(HALTED)
    assert texts(chart)[:first] == before[:first] and chart.end == HALTED
    assert chart.set_end(HALTED) == chart.row_count  # nothing changed
    chart.set_end(DONE)
    assert texts(chart) == texts(Flowchart(steps))
    # A chart of start alone gains an end; an empty one, its first node.
    alone = Flowchart([START])
    alone.set_end(WAITING)
    assert alone.end == WAITING and alone.block_count == 2
    empty = Flowchart()
    assert empty.row_count == 0
    empty.set_end(DONE)
    assert empty.end == DONE and empty.row_count == 3


def test_mermaid_never_writes_the_unfinished_end() -> None:
    assert mermaid_text(flow_steps(runs.MARKS, end=HALTED)) == mermaid_text(flow_steps(runs.MARKS))


def test_the_current_turns_nodes_are_highlighted_and_drawn_uncached() -> None:
    chart = Flowchart(flow_steps(runs.MARKS))
    chart.rows(0, chart.row_count, 80)  # everything cached, no turn current
    chart.current_turn = 1  # model turn 1: its LLM node, the denial and the failed charge
    current = [
        row.text.strip("│┃ ")
        for row in chart.rows(0, chart.row_count, 80)
        if any(span.role == Role.CURRENT for span in row)
    ]
    assert current == ["LLM", "denied ✗", "tool: charge ✗"]
    chart.selected = 7  # the selected node outranks the current turn
    roles = {span.role for span in chart.rows(chart.row_for_record(7), chart.row_for_record(7) + 1, 80)[0]}
    assert Role.SELECTED in roles and Role.CURRENT not in roles
    chart.current_turn = None
    assert not any(span.role == Role.CURRENT for row in chart.rows(0, chart.row_count, 80) for span in row)


def test_nodes_marked_changed_are_drawn_so_even_once_cached() -> None:
    chart = Flowchart(flow_steps(runs.MARKS))
    chart.rows(0, chart.row_count, 80)  # everything cached, nothing marked

    def changed() -> list[str]:
        rows = chart.rows(0, chart.row_count, 80)
        return [row.text.strip("│┃ ") for row in rows if any(span.role == Role.CHANGED for span in row)]

    chart.mark_changed([7])
    assert chart.changed == {7} and changed() == [
        chart.rows(chart.row_for_record(7), chart.row_for_record(7) + 1, 80)[0].text.strip("│┃ ")
    ]
    chart.selected = 7  # the selected node outranks the mark
    assert changed() == []
    chart.selected = None
    chart.mark_changed([])
    assert changed() == []


def test_the_current_turn_in_a_fan_out_and_a_fold() -> None:
    chart = Flowchart(flow_steps(runs.FAN_OUT))
    chart.current_turn = 0
    fan = [row for row in chart.rows(0, chart.row_count, 80) if row.text.startswith(("   ├", "   └"))]
    assert len(fan) == 3 and all(row[1].role == Role.CURRENT for row in fan)
    folded = Flowchart(flow_steps(runs.loops(5)))
    folded.current_turn = 3  # inside the fold: the folded box is the turn's
    label = folded.rows(5, 6, 80)[0]
    assert label.text.startswith("│ ▸ LLM → tool: search") and label[1].role == Role.CURRENT
    folded.current_turn = 5  # the answer after the fold
    assert folded.rows(5, 6, 80)[0][1].role == Role.LABEL
