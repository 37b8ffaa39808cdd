"""Golden drawings: the flowchart of known runs, compared with text files under ``golden/``.

Set ``AGENTTUI_UPDATE_GOLDEN=1`` to rewrite the files after a deliberate change, then review the
diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agenttui.render import Flowchart, flow_steps, mermaid_text, render_text
from tests.render import runs

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("AGENTTUI_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8", newline="")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


# The issue's target drawing, verbatim: the golden file must never drift from it.
ISSUE_EXAMPLE = """\
╭──────╮
│ user │
╰──┬───╯
   ▼
┌─────┐
│ LLM │
└──┬──┘
   ▼
┏━━━━━━━━━━━━━━━━┓
┃ tool: charge ✗ ┃
┗━━┯━━━━━━━━━━━━━┛
   ▼
┌─────┐
│ LLM │
└──┬──┘
   ▼
╭──────╮
│ done │
╰──────╯
"""


def test_the_chain_is_the_issues_example() -> None:
    text = render_text(flow_steps(runs.CHAIN))
    assert text == ISSUE_EXAMPLE
    check_golden("chain.txt", text)


def test_approvals_denials_and_step_nodes() -> None:
    check_golden("marks.txt", render_text(flow_steps(runs.MARKS)))


def test_entity_coded_labels() -> None:
    # What a hostile run might name its tools: Mermaid metacharacters, an escape sequence, a
    # bidi override, a C1 control. Mermaid gets entities; the terminal gets visible stand-ins.
    records = [
        runs.HEADER,
        runs.model(0, ("c1", 'say "hi" & <b>#1`'), ("c2", "\x1b[31mred\x1b[0m\u202egnp.exe\x9b")),
        runs.result("c1"),
        runs.result("c2", error=True),
        runs.model(1),
    ]
    steps = flow_steps(records)
    check_golden("entities.mmd", mermaid_text(steps))
    check_golden("entities.txt", render_text(steps))


def test_parallel_calls_fan_out() -> None:
    check_golden("fan_out.txt", render_text(flow_steps(runs.FAN_OUT)))


def sub_agent_chart(*, unfolded: bool = False) -> Flowchart:
    children = {f"{runs.PARENT_ID}>c2": flow_steps(runs.CHILD)}
    steps = flow_steps(runs.PARENT, run_id=runs.PARENT_ID, sub_runs=children)
    chart = Flowchart(steps, children=children)
    if unfolded:
        assert chart.unfold(chart.block_at(chart.row_for_record(runs.PARENT_SUB_AGENT)))
    return chart


def test_a_sub_agent_is_folded_by_default() -> None:
    check_golden("sub_agent_folded.txt", sub_agent_chart().text(80))


def test_an_unfolded_sub_agent_is_a_titled_frame() -> None:
    check_golden("sub_agent_unfolded.txt", sub_agent_chart(unfolded=True).text(80))


def test_repeated_loops_fold_with_their_failures() -> None:
    check_golden("loops_folded.txt", render_text(flow_steps(runs.loops(41, failing=(7, 30)))))


def test_unfolded_loops_are_every_box() -> None:
    chart = Flowchart(flow_steps(runs.loops(3, failing=(1,))))
    assert chart.unfold(chart.block_at(chart.row_for_record(1)))
    check_golden("loops_unfolded.txt", chart.text(80))


@pytest.mark.parametrize("run", ["CHAIN", "FAN_OUT", "MARKS"])
def test_ascii_mode(run: str) -> None:
    check_golden(f"ascii_{run.lower()}.txt", render_text(flow_steps(getattr(runs, run)), ascii=True))


def test_ascii_mode_folds() -> None:
    text = sub_agent_chart(unfolded=True).text(80, ascii=True)
    text += render_text(flow_steps(runs.loops(5, failing=(2,))), ascii=True)
    assert text.isascii()
    check_golden("ascii_folds.txt", text)


def test_labels_are_cut_to_the_width() -> None:
    records = [
        runs.HEADER,
        runs.model(0, ("c1", "a_tool_with_a_rather_long_name"), ("c2", "another_long_tool_name")),
        runs.result("c1", error=True),
        runs.result("c2"),
        runs.model(1, ("c3", "一个很长的中文工具名称")),
        runs.result("c3", error=True),
        runs.value("a_step_whose_name_does_not_fit"),
        runs.model(2),
    ]
    check_golden("cut_at_24.txt", render_text(flow_steps(records), width=24))
