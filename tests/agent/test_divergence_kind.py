"""What kind of difference a replay's divergence is (``Divergence.kind``), in words a person acts
on: another tool called, other arguments, another decision about a call, more or fewer turns,
another ending, a tool's code answering differently."""

from __future__ import annotations

import pytest

from agenttui.journal import Record, StepKind, keys
from agenttui.journal.record import Message, ToolUsePart
from agenttui.render.diff import RowState
from agenttui.replay.verdict import Divergence


def turn(*calls: tuple[str, bytes]) -> Record:
    parts = tuple(ToolUsePart(f"c{n}", name, args) for n, (name, args) in enumerate(calls))
    return Record(keys.llm_key(1), StepKind.MODEL, message=Message("assistant", parts))


def result(call: str, value: bytes) -> Record:
    return Record(keys.tool_key(call), StepKind.TOOL_RESULT, tool_use_id=call, result=value)


def approval(call: str, approved: bool) -> Record:
    return Record(f"approval:{call}", StepKind.APPROVAL, tool_use_id=call, approved=approved)


@pytest.mark.parametrize(
    ("recorded", "replayed", "kind"),
    [
        (turn(("refund_payment", b"{}")), turn(("issue_refund", b"{}")),
         "a different tool called: issue_refund where the recording called refund_payment"),
        (turn(("refund", b'{"amount":12,"id":"A-1"}')), turn(("refund", b'{"amount":120,"id":"A-1"}')),
         "other arguments to refund: amount: 12 → 120"),
        (result("c1", b'{"status":"delivered"}'), result("c1", b'{"status":"lost"}'),
         "another tool result for call c1: the tool's code answers differently"),
        (result("c1", b'{"status":"delivered"}'),
         Record(keys.tool_key("c1"), StepKind.TOOL_RESULT, tool_use_id="c1", result=b'"unknown tool: lookup"', is_error=True),
         "call c1 fails now where the recording has its result: unknown tool: lookup"),
        (approval("c1", True), None, "another decision about call c1: the recording has approval:c1, the other side does not"),
        (turn(("lookup", b"{}")), None, "fewer turns: the recording has @llm/1, the other side does not"),
        (None, turn(("lookup", b"{}")), "more turns: the replay writes @llm/1, the other side does not"),
        (Record(keys.RUN_COMPLETE, StepKind.VALUE), None,
         "the run ends differently: the recording has run:complete, the other side does not"),
        (Record(keys.RUN_COMPLETE, StepKind.VALUE), Record(keys.RUN_ABORTED, StepKind.VALUE),
         "the run ends differently: run:complete in the recording, run:aborted now"),
    ],
)  # fmt: skip
def test_a_divergence_says_what_kind_of_difference_it_is(
    recorded: Record | None, replayed: Record | None, kind: str
) -> None:
    state = RowState.CHANGED if recorded and replayed else RowState.MISSING if recorded else RowState.EXTRA
    name = (recorded or replayed).name  # type: ignore[union-attr]  # one side at least
    assert Divergence(3, name, state, "differs", recorded, replayed).kind() == kind
