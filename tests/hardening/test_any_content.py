"""No content of a record can raise out of a status or a view: every member holds anything."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenttui.agent.runstart import RunStart
from agenttui.journal import Message, Record, StepKind, TextPart, ToolUsePart
from agenttui.journal.describe import record_json, summary
from agenttui.render.flow import flow_steps
from agenttui.render.mermaid import mermaid_text
from agenttui.replay.events import events_of
from agenttui.replay.verdict import refusal_reason
from agenttui.runs.statuses.status import status_of
from agenttui.stores.base import LeaseInfo

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False) | st.text(max_size=12)
    | st.sampled_from(["2099-01-15T10:30:00.123456789+02:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999-23:59", "2026-13-45T99:99:99Z"]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["input", "reason", "need", "approved", "tools", "ext", "settings", "kind", "name", "saga", "flow", "session"]),
        children, max_size=4),
    max_leaves=12,
)  # fmt: skip
raw_values = json_values.map(lambda v: json.dumps(v).encode())
names = st.sampled_from([
    "run:start", "run:complete", "run:cancelled", "run:aborted", "run:cancel-requested", "timer:t", "interrupt:ask-c1",
    "approval:c1", "approval-tally:c1", "attempt:tool:c1", "attempt:retry:1:tool:c1", "tool:c1", "signal:s", "@spend/x",
    "run:limits:0", "@llm/0", "@llm/1", "node:n", "c1", "attempt:c1",
])  # fmt: skip
kinds = st.sampled_from([*StepKind, "", "made-up"])
records = st.builds(
    Record,
    name=names,
    kind=kinds,
    message=st.none() | st.builds(lambda text, call_id, tool: Message.assistant(TextPart(text), ToolUsePart(call_id, tool, None)),
                                  st.text(max_size=5), st.sampled_from(["c1", "c2", ""]), st.text(max_size=5)),
    tool_use_id=st.sampled_from(["c1", "c2", ""]),
    result=st.none() | raw_values | st.just(b"not json"),
    is_error=st.booleans(),
    approved=st.booleans(),
    claim=st.sampled_from(["", "abc"]),
)  # fmt: skip
headers = st.sampled_from([[Record("@journal", StepKind.HEADER, format="bide.journal.v1-dev")], []])
leases = st.none() | st.builds(LeaseInfo, st.just("r"), st.text(max_size=5), st.floats(-1e9, 1e9))


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(headers, st.lists(records, max_size=10), leases)
def test_no_record_content_raises_out_of_a_status_or_a_view(
    header: list[Record], body: list[Record], lease: LeaseInfo | None
) -> None:
    run = header + body
    status = status_of("r", run, lease, now=datetime(2030, 1, 1, tzinfo=UTC))
    assert status.state and status.detail is not None
    mermaid_text(flow_steps(run))
    events_of("r", run)
    refusal_reason("r", run)
    for record in run:
        summary(record)
        json.dumps(record_json(record))
        RunStart.decode(record.result)
