"""Fitting to the width by priority, without Pilot: ids cut in the middle, header parts that wrap
between parts, the runs list's columns, and the footer's keys."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding

from agenttui.tui.layout import (
    elide_shared,
    fit_in_order,
    flow_parts,
    lines_of,
    middle_truncate,
    shared_ends,
)
from agenttui.tui.widgets.key_footer import KEY_PRIORITY, Shown, fitting_keys, key_width
from agenttui.tui.widgets.runs_table import (
    COUNT_WIDTHS,
    DETAIL_WANT,
    ID_COMFORT,
    ID_MIN,
    STATUS_WIDTH,
    counts_width,
    label_width,
    runs_columns,
)


def test_an_id_is_cut_in_the_middle_keeping_both_ends() -> None:
    assert middle_truncate("run-abcdef-uvwxyz", 11) == "run-a…vwxyz"
    assert middle_truncate("run-abc", 11) == "run-abc"
    assert len(middle_truncate("run-" + "x" * 100, 16)) == 16
    assert middle_truncate("漢字漢字漢字", 7) == "漢…字"  # cells, not characters: never a wide character cut in two


def test_ids_lose_what_they_all_share_first() -> None:
    ids = [f"tenant-acme/{name}-2f9c1e7a-0123" for name in ("refund-a1002", "audit-bulk")]
    prefix, suffix = shared_ends(ids, None, None)
    assert (prefix, suffix) == ("tenant-acme/", "-2f9c1e7a-0123")
    assert elide_shared(ids[0], 22, prefix, suffix) == "…refund-a1002…"
    assert elide_shared(ids[0], 60, prefix, suffix) == ids[0]  # whole where it fits
    # Measured as runs are listed: a later id shortens what they share.
    assert shared_ends(["tenant-beta/x-2f9c1e7a-0123"], prefix, suffix) == ("tenant-", "-2f9c1e7a-0123")
    # A single id shares all of itself: it is only cut in the middle.
    alone = "tenant-acme/refund-a1002-2f9c1e7a"
    assert elide_shared(alone, 16, *shared_ends([alone], None, None)) == "tenant-a…f9c1e7a"


def test_header_parts_wrap_between_parts_never_inside_one() -> None:
    parts = [Text("run refund-a1005"), Text("5 records"), Text("? awaiting-approval · refund_payment (call_1_0)")]
    assert (
        flow_parts(parts, 200).plain == "run refund-a1005   5 records   ? awaiting-approval · refund_payment (call_1_0)"
    )
    narrow = flow_parts(parts, 60)
    assert narrow.plain.split("\n") == [
        "run refund-a1005   5 records",
        "? awaiting-approval · refund_payment (call_1_0)",
    ]
    assert lines_of(narrow) == 2
    long_id = flow_parts([Text("run tenant-acme/" + "x" * 80 + "-0123", style="bold"), Text("5 records")], 40)
    assert long_id.plain.split("\n") == ["run tenant-acme/xxxx…xxxxxxxxxxxxxx-0123", "5 records"]
    assert long_id.spans or long_id.style  # still bold
    assert flow_parts([Text("a"), Text(""), Text("b")], 80).plain == "a   b"  # empty parts leave no gap


def test_an_explanation_longer_than_a_line_wraps_at_words_on_lines_of_its_own() -> None:
    reason = Text("stopped at breakpoint tool:refund_payment after turn 1: turn 1 calls refund_payment (call_1_0)")
    shown = flow_parts([Text("replay refund-a1005"), Text("turn 2 of 2"), reason], 40).plain.split("\n")
    assert shown == [
        "replay refund-a1005   turn 2 of 2",
        "stopped at breakpoint",
        "tool:refund_payment after turn 1: turn 1",
        "calls refund_payment (call_1_0)",
    ]
    cut = flow_parts([reason], 30).plain.split("\n")
    assert len(cut) == 3 and cut[-1].endswith("…")  # only the last line is cut


def test_items_fit_in_order_of_importance() -> None:
    assert fit_in_order([8, 8, 10, 30], 30) == 3
    assert fit_in_order([8, 30, 2], 30) == 1  # the short third never shows where the second did not
    assert fit_in_order([8, 8], 5, always=1) == 1  # help shows whatever the width


def test_runs_columns_give_way_by_priority() -> None:
    demo = label_width("  refund-a1001-cancelled".strip())  # the demo's widest line: 24 cells
    assert demo == 24
    at_80 = runs_columns(79, demo)  # 80 columns, less the scrollbar
    assert at_80.id_width == 24 and not at_80.counts
    assert 79 - at_80.id_width - 1 - STATUS_WIDTH >= 34  # what a run waits on keeps the rest
    at_100 = runs_columns(99, demo)
    assert not at_100.counts and 99 - 25 - STATUS_WIDTH >= DETAIL_WANT  # the counts go first
    assert not runs_columns(118, demo).counts and runs_columns(119, demo).counts  # cost too: from 120 columns
    at_160 = runs_columns(159, demo)
    assert at_160.counts and at_160.id_width == demo
    long_ids = 70
    assert runs_columns(79, long_ids).id_width == ID_COMFORT  # long ids are cut, the detail keeps room
    assert runs_columns(159, long_ids).id_width == 24 + 20  # what is left, shared with the detail
    assert runs_columns(400, long_ids).id_width == 64  # the id column's cap
    assert runs_columns(50, long_ids).id_width == ID_MIN  # never below: the detail narrows instead
    # A saved view's columns: fewer fit sooner; none leaves the detail the room.
    assert (
        runs_columns(109, demo, ("tokens", "cost")).counts == ("tokens", "cost") and not runs_columns(109, demo).counts
    )
    assert runs_columns(159, demo, ()).counts == ()
    assert "STEPS" in at_160.header() and at_160.header().index("STATUS") == demo + 1
    assert at_160.header().index("PENDING") == demo + 1 + STATUS_WIDTH + counts_width(tuple(COUNT_WIDTHS))


def test_sub_runs_measure_by_their_last_part() -> None:
    assert label_width("refund-a1002") == 14
    assert label_width("eligibility-a1004>call_0_0") == 2 + 2 + 1 + len("call_0_0")


def _shown(*bindings: Binding) -> Shown:
    return tuple((b, True, "", b.key_display or b.key) for b in bindings)


RUNS_KEYS = _shown(
    Binding("l", "unfold", "Unfold", id="runs.unfold"),
    Binding("enter", "choose", "Open", id="list.choose", key_display="⏎"),
    Binding("slash", "filter", "Filter", id="runs.filter", key_display="/"),
    Binding("s", "cycle_status", "Status filter", id="runs.status-filter"),
    Binding("o", "operate", "Act on run", id="runs.operate"),
    Binding("q", "quit", "Quit", id="app.quit"),
    Binding("question_mark", "help", "Help", id="app.help", key_display="?"),
    Binding("ctrl+p", "command_palette", "palette", show=False, key_display="^p"),
    Binding("m", "mark", "Mark", show=False, id="runs.mark"),
)


def test_the_footer_keeps_the_most_important_keys_that_fit() -> None:
    everything = fitting_keys(RUNS_KEYS, "ctrl+p", 200)
    assert [action for _, action in everything] == [
        "help", "quit", "choose", "filter", "operate", "cycle_status", "command_palette", "unfold",
    ]  # fmt: skip
    width_80 = fitting_keys(RUNS_KEYS, "ctrl+p", 80)
    assert [action for _, action in width_80] == [
        "help", "quit", "choose", "filter", "operate", "cycle_status", "command_palette",
    ]  # fmt: skip
    assert sum(key_width(d, b.description, palette=b.key == "ctrl+p") for b, _, _, d in RUNS_KEYS
               if (b.key, b.action) in width_80) <= 80  # fmt: skip
    assert [action for _, action in fitting_keys(RUNS_KEYS, "ctrl+p", 20)] == ["help", "quit"]
    assert [action for _, action in fitting_keys(RUNS_KEYS, "ctrl+p", 3)] == ["help"]  # always
    assert KEY_PRIORITY[0] == "app.help"
