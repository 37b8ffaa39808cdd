"""Mermaid text: the SDK's dialect byte for byte, entity-coded labels, and reading it back."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agenttui.agent import Agent, Call, ScriptedModel, Turn, tool
from agenttui.errors import AgentTuiError
from agenttui.render import (
    FlowKind,
    MermaidSyntaxError,
    flow_steps,
    mermaid_of,
    mermaid_text,
    parse_mermaid,
    render_mermaid,
)
from agenttui.render.mermaid import decode_label, encode_label
from agenttui.stores.base import Store
from tests.render import runs

# Section 3 of the replay spec, verbatim; Go writes every line with "\n", the last one too.
SPEC_EXAMPLE = """\
flowchart TD
  start([user])
  n0["LLM"]
  start --> n0
  n1["tool: charge"]
  n0 --> n1
  n2["LLM"]
  n1 --> n2
  n2 --> done([done])
"""

# The same run as the runtime journals it: the engine's run:start and run:complete markers are
# value steps, so they are nodes too.
SPEC_EXAMPLE_WITH_MARKERS = """\
flowchart TD
  start([user])
  n0["step: run:start"]
  start --> n0
  n1["LLM"]
  n0 --> n1
  n2["tool: charge"]
  n1 --> n2
  n3["LLM"]
  n2 --> n3
  n4["step: run:complete"]
  n3 --> n4
  n4 --> done([done])
"""


@dataclass
class Charge:
    amount: int


def test_the_spec_example_byte_for_byte() -> None:
    assert mermaid_of(runs.SPEC_EXAMPLE) == SPEC_EXAMPLE


async def test_render_mermaid_reads_a_real_run_from_its_store(store: Store) -> None:
    # The spec's example run, driven by the runtime: one model call, one tool, the answer.
    @tool()
    async def charge(args: Charge) -> dict[str, str]:
        """Charge a card (not retry-safe: it gets an attempt marker, which the chart skips)."""
        return {"charge_id": "ch_1"}

    model = ScriptedModel([Turn(calls=[Call("charge", {"amount": 5})]), Turn("Charged.")])
    await Agent(model, store, charge).run("pay-1", "charge 5")
    assert await render_mermaid(store, "pay-1") == SPEC_EXAMPLE_WITH_MARKERS
    assert await render_mermaid(store, "never-ran") == "flowchart TD\n  start([user])\n  start --> done([done])\n"


def test_engine_markers_are_step_nodes() -> None:
    records = [runs.HEADER, runs.value("run:start"), *runs.SPEC_EXAMPLE[1:], runs.value("run:complete")]
    assert mermaid_of(records) == SPEC_EXAMPLE_WITH_MARKERS


def test_a_run_with_no_nodes_goes_straight_to_done() -> None:
    assert mermaid_of([runs.HEADER]) == "flowchart TD\n  start([user])\n  start --> done([done])\n"


def test_skipped_records_consume_no_node_number() -> None:
    text = mermaid_of(runs.MARKS)
    assert '  n3["tool: refund"]\n  n2 --> n3\n' in text  # the attempt marker before it took no number


@pytest.mark.parametrize(
    ("label", "encoded"),
    [
        ('a"b', '"a#34;b"'),
        ("#1", '"#35;1"'),
        ("a&b", '"a#38;b"'),
        ("<b>", '"#60;b>"'),
        ("`x`", '"#96;x#96;"'),
        ("\x00\x1f\x7f", '"#0;#31;#127;"'),
        ("\x80\x9f", '"#128;#159;"'),
        ("bad\ufffd", '"bad#65533;"'),
        ("lone\udcff", '"lone#65533;"'),  # invalid UTF-8 read by Go is U+FFFD
        ("ok ✓ ✗ > ' é 中 \xa0", '"ok ✓ ✗ > \' é 中 \xa0"'),
    ],
)
def test_labels_are_entity_encoded(label: str, encoded: str) -> None:
    assert encode_label(label) == encoded


def test_parse_reads_back_the_spec_example() -> None:
    steps = parse_mermaid(SPEC_EXAMPLE)
    assert [(s.kind, s.label, s.failed, s.turn) for s in steps] == [
        (FlowKind.USER, "user", False, None),
        (FlowKind.LLM, "LLM", False, 0),
        (FlowKind.TOOL, "tool: charge", False, 0),
        (FlowKind.LLM, "LLM", False, 1),
        (FlowKind.DONE, "done", False, None),
    ]


def test_parse_infers_kinds_failures_and_fan_outs() -> None:
    steps = parse_mermaid(mermaid_text(flow_steps(runs.MARKS + runs.FAN_OUT[1:])))
    assert [(s.kind, s.failed) for s in steps[2:4]] == [(FlowKind.LLM, False), (FlowKind.APPROVAL, False)]
    assert [(s.kind, s.failed) for s in steps[6:8]] == [(FlowKind.APPROVAL, True), (FlowKind.TOOL, True)]
    assert [s.parallel for s in steps if s.kind == FlowKind.TOOL] == [False, False, True, True, True]


def test_parse_tolerates_crlf_and_blank_lines() -> None:
    text = SPEC_EXAMPLE.replace("\n", "\r\n").replace("  n1[", "\n\n  n1[")
    assert parse_mermaid(text) == parse_mermaid(SPEC_EXAMPLE)


@given(st.lists(st.text(st.characters(codec=None), max_size=12)))
def test_round_trip_keeps_every_label(names: list[str]) -> None:
    records = [runs.HEADER]
    for turn, name in enumerate(names):
        records += [runs.model(turn, (f"c{turn}", name)), runs.result(f"c{turn}", error=turn % 3 == 0)]
    steps = flow_steps(records)
    text = mermaid_text(steps)
    parsed = parse_mermaid(text)
    # A lone surrogate (invalid UTF-8) was written as U+FFFD, and reads back as that.
    assert [s.label for s in parsed] == [re.sub("[\ud800-\udfff]", "\ufffd", s.label) for s in steps]
    assert [(s.kind, s.failed) for s in parsed] == [(s.kind, s.failed) for s in steps]
    assert mermaid_text(parsed) == text


def test_entities_decode_to_their_characters() -> None:
    assert decode_label("a#34;b#35;#65533;#128512;") == 'a"b#\ufffd\U0001f600'


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("", 1, "the text ends where 'flowchart TD' belongs"),
        ("graph LR\n", 1, "expected 'flowchart TD'"),
        ("flowchart TD\n  start((user))\n", 2, "expected '  start([user])'"),
        ('flowchart TD\n  start([user])\n  n1["LLM"]\n', 3, "expected the node"),
        ('flowchart TD\n  start([user])\n  n0["LLM"]\n  n0 --> start\n', 4, "expected the edge '  start --> n0'"),
        ('flowchart TD\n  start([user])\n  n0["say hi"]\n', 3, "a label RenderMermaid never writes"),
        ('flowchart TD\n  start([user])\n  n0["tool: a#b"]\n', 3, "where the dialect writes an entity"),
        ('flowchart TD\n  start([user])\n  n0["tool: "x""]\n', 3, "holds '\"' where the dialect writes"),
        ('flowchart TD\n  start([user])\n  n0["tool: #55296;"]\n', 3, "is not a character"),
        ('flowchart TD\n  start([user])\n  n0["LLM"]\n  start --> n0\n', 4, "the text ends where"),
        ("flowchart TD\n  start([user])\n  start --> done([done])\n  %% note\n", 4, "text after the closing edge"),
        ("flowchart TD\n  start([user])\n  start-->done([done])\n", 3, "expected the node"),
    ],
)
def test_anything_outside_the_dialect_names_its_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(MermaidSyntaxError) as caught:
        parse_mermaid(text)
    assert caught.value.line_number == line
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"line {line}: ")
    assert isinstance(caught.value, AgentTuiError)
