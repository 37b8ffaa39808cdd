"""Runs the render tests draw: journals built record by record, and a hypothesis strategy of charts."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from agenttui.journal import Message, Record, TextPart, Tombstone, ToolUsePart
from agenttui.render import DONE, START, FlowKind, FlowStep

HEADER = Record("@journal", "header", format="bide.journal.v1-dev")


def model(turn: int, *calls: tuple[str, str]) -> Record:
    """The ``turn``-th model record, requesting ``calls`` as (id, tool name)."""
    uses = (ToolUsePart(call_id, name, args=b"{}") for call_id, name in calls)
    return Record(f"@llm/{turn}", "model", message=Message.assistant(TextPart("thinking"), *uses))


def result(call_id: str, *, error: bool = False) -> Record:
    return Record(f"tool:{call_id}", "tool_result", tool_use_id=call_id, result=b'"ok"', is_error=error)


def value(name: str) -> Record:
    return Record(name, "value", result=b"{}")


def approval(call_id: str, approved: bool) -> Record:
    return Record(f"approval:{call_id}", "approval", tool_use_id=call_id, approved=approved)


def attempt(call_id: str) -> Record:
    return Record(f"attempt:tool:{call_id}", "attempt", tool_use_id=call_id, attempted_at=1)


# The example: start → LLM → failed charge → LLM → done.
CHAIN = [HEADER, model(0, ("c1", "charge")), result("c1", error=True), model(1)]

# Section 3 of the replay spec: one model call, one tool, then the answer.
SPEC_EXAMPLE = [HEADER, model(0, ("c1", "charge")), result("c1"), model(1)]

# ✓, ✗ and step nodes: an approved refund, a denied charge, the engine's markers.
MARKS = [
    HEADER,
    value("run:start"),
    model(0, ("c1", "refund")),
    approval("c1", True),
    attempt("c1"),
    result("c1"),
    model(1, ("c2", "charge")),
    approval("c2", False),
    result("c2", error=True),
    model(2),
    value("run:complete"),
]

# One turn calling three tools at once, one failing, each result journaled in turn.
FAN_OUT = [
    HEADER,
    model(0, ("a", "search"), ("b", "fetch"), ("c", "summarize")),
    result("a"),
    result("b", error=True),
    result("c"),
    model(1),
]


def loops(count: int, failing: tuple[int, ...] = ()) -> list[Record]:
    """``count`` LLM → search loops (the ``failing`` ones fail), then the answer."""
    records = [HEADER]
    for turn in range(count):
        records += [model(turn, (f"s{turn}", "search")), result(f"s{turn}", error=turn in failing)]
    return [*records, model(count)]


# A parent run whose second tool call started the sub-agent "refunds".
PARENT_ID = "run-1"
PARENT = [HEADER, model(0, ("c1", "lookup")), result("c1"), model(1, ("c2", "refunds")), result("c2"), model(2)]
PARENT_SUB_AGENT = 4  # the record index of the call's result
CHILD = [HEADER, model(0, ("k1", "ledger")), result("k1"), model(1)]


# -- a strategy of charts ----------------------------------------------------------------------

TRICKY = '\x1b\x00\x9b\x7f\u202e\u2066\u2028\u0301\u200b中あ✗✓#"&<`\ufffd\ud800 '
labels = st.text(st.one_of(st.characters(codec="utf-8"), st.sampled_from(TRICKY)), max_size=24)


@st.composite
def charts(draw: st.DrawFn, *, max_turns: int = 14, sub_agents: bool = False) -> list[FlowStep]:
    """Steps of a run: model turns with single, repeated or parallel tool calls, approvals, steps.

    With ``sub_agents``, some single tool calls name a child run ``child-<record index>``.
    """
    steps = [START]
    index = 1
    tools = draw(st.lists(labels, min_size=1, max_size=3))
    for turn in range(draw(st.integers(0, max_turns))):
        steps.append(FlowStep(FlowKind.LLM, "LLM", record_index=index, turn=turn))
        index += 1
        calls = draw(st.integers(0, 3))
        for _ in range(calls):
            failed = draw(st.booleans())
            label = "tool: " + draw(st.sampled_from(tools)) + (" ✗" if failed else "")
            child = f"child-{index}" if sub_agents and calls == 1 and draw(st.booleans()) else None
            steps.append(FlowStep(FlowKind.TOOL, label, failed, index, turn, calls > 1, child_run_id=child))
            index += 1 + draw(st.integers(0, 1))  # sometimes an attempt marker in between
        extra = draw(st.sampled_from(["", "", "approval", "step"]))
        if extra == "approval":
            approved = draw(st.booleans())
            label = "approved ✓" if approved else "denied ✗"
            steps.append(FlowStep(FlowKind.APPROVAL, label, not approved, index))
            index += 1
        elif extra == "step":
            steps.append(FlowStep(FlowKind.STEP, "step: " + draw(labels), record_index=index))
            index += 1
    return [*steps, DONE]


@st.composite
def charts_with_children(draw: st.DrawFn) -> tuple[list[FlowStep], dict[str, list[FlowStep]]]:
    """Steps of a run with sub-agents, and the steps of each child run."""
    steps = draw(charts(sub_agents=True))
    children = {s.child_run_id: draw(charts(max_turns=4)) for s in steps if s.child_run_id is not None}
    return steps, children


# -- a long run of every shape -----------------------------------------------------------------

LONG_RUN_ID = "run-long"
LONG_TOOLS = ("search_orders", "fetch_invoice", "charge_card", "refund", "lookup_customer", 'odd "name" <#&>')


def long_run(turns: int, seed: int = 14) -> tuple[list[Record], set[str]]:
    """A run of ``turns`` model turns with every shape the chart draws, and its sub-run ids.

    Repeated tools (loops that fold), parallel calls, failures, approvals and denials, step
    values, markers, unreadable and redacted records, results journaled before their model turn
    or for calls no turn made, and tool calls that started sub-agents. Deterministic for a seed.
    """
    rnd = random.Random(seed)
    records = [HEADER, value("run:start")]
    sub_runs: set[str] = set()
    tool = LONG_TOOLS[0]
    for turn in range(turns):
        if rnd.random() < 0.3:
            tool = rnd.choice(LONG_TOOLS)
        width = 3 if rnd.random() < 0.2 else 0 if rnd.random() < 0.05 else 1
        calls = [(f"c{turn}-{k}", tool if width == 1 else rnd.choice(LONG_TOOLS)) for k in range(width)]
        early = bool(calls) and rnd.random() < 0.01  # a result journaled before its model turn
        if early:
            records.append(result(calls[0][0]))
        records.append(model(turn, *calls))
        for call_id, _ in calls[1:] if early else calls:
            shape = rnd.random()
            if shape < 0.03:
                records.append(approval(call_id, rnd.random() < 0.7))
            elif shape < 0.05:
                records.append(attempt(call_id))
            elif shape < 0.06:
                sub_runs.add(f"{LONG_RUN_ID}>{call_id}")
            records.append(result(call_id, error=rnd.random() < 0.05))
        shape = rnd.random()
        if shape < 0.01:
            records.append(value(f"step-{turn}"))
        elif shape < 0.015:
            records.append(result(f"nobody-{turn}"))  # a result no model turn asked for
        elif shape < 0.02:
            records.append(Record(f"tool:u{turn}", "tool_result", tool_use_id=f"u{turn}", unreadable="bad bytes"))
        elif shape < 0.025:
            records.append(Record(f"@llm/r{turn}", "model", tombstone=Tombstone("ab", 1)))
    return [*records, model(turns), value("run:complete")], sub_runs
