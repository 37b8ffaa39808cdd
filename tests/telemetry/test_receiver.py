"""The trace export read back from a real OTLP receiver (Arize Phoenix on loopback, ``conftest``):
what a team's backend holds after ``agenttui export --otlp`` is every span, with the turns'
tokens summing to ``agenttui cost``'s, and the GenAI conventions' attributes."""

from __future__ import annotations

import json
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tests.processes import agenttui
from tests.telemetry.conftest import Phoenix
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

#: Runs of the demo store of every kind a trace maps: sub-runs, a denial, a halt, an approval
#: pending, an answer pending, a sleep, a cancellation, a saga's abort, an unreadable record.
EVERY_KIND = (
    "status=complete or status=halted or status=awaiting-approval or status=awaiting-input or status=sleeping"
    " or status=cancelled or status=aborted or status=unreadable or status=cancelling"
)


def file_spans(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The spans of an OTLP JSON lines file, by trace id."""
    by_trace: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    by_trace[span["traceId"]].append(span)
    return by_trace


def test_a_backend_holds_every_span_with_costs_tokens(phoenix: Phoenix, demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    project = f"agenttui-{uuid.uuid4().hex[:8]}"
    written = agenttui("export", str(demo_db), "--where", EVERY_KIND, "--otel", str(tmp_path / "runs.jsonl"))
    assert written.returncode == 0, written.stderr
    in_file = file_spans(tmp_path / "runs.jsonl")
    expected = sum(map(len, in_file.values()))

    sent = agenttui("export", str(demo_db), "--where", EVERY_KIND, "--otlp", phoenix.otlp,
                    env={"OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"})  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith(f"sent to {phoenix.otlp}/v1/traces: {len(in_file)} traces, {expected:,} spans")

    held = phoenix.spans(project, expect=expected)
    assert len(held) == expected  # none dropped, none doubled
    by_trace = Counter(span["context"]["trace_id"] for span in held)
    assert by_trace == {trace: len(spans) for trace, spans in in_file.items()}  # each run's spans, each run whole

    costs = {line["run"]: line for line in json.loads(agenttui("cost", str(demo_db), "--json").stdout)["lines"]}
    agents = [span for span in held if span["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
    roots = {span["attributes"]["agenttui.run.id"]: span for span in agents if span["parent_id"] is None}
    assert set(roots) <= set(costs) and len(roots) == len(in_file)
    for run_id, root in roots.items():
        trace = root["context"]["trace_id"]
        chats = [s["attributes"] for s in held
                 if s["context"]["trace_id"] == trace and s["attributes"].get("gen_ai.operation.name") == "chat"]  # fmt: skip
        cost = costs[run_id]
        sent_tokens = cost["input_tokens"] + cost["cache_read_tokens"] + cost["cache_write_tokens"]
        assert sum(a.get("gen_ai.usage.input_tokens", 0) for a in chats) == sent_tokens, run_id
        assert sum(a.get("gen_ai.usage.output_tokens", 0) for a in chats) == cost["output_tokens"], run_id
        assert sum(a.get("gen_ai.usage.cache_read.input_tokens", 0) for a in chats) == cost["cache_read_tokens"]
        assert root["attributes"]["agenttui.cost.usd"] == cost["cost_usd"], run_id
        assert root["attributes"]["gen_ai.conversation.id"] == run_id
        assert len(chats) == cost["turns"] + sum(1 for a in agents
                                                 if a["context"]["trace_id"] == trace and a["parent_id"] is not None
                                                 for _ in range(a["attributes"]["agenttui.run.turns"]))  # fmt: skip

    # The conventions, as the backend read them: Phoenix files gen_ai spans by kind.
    kinds = Counter(span["span_kind"] for span in held)
    assert kinds["AGENT"] == len(agents) and kinds["LLM"] > 0 and kinds["TOOL"] > 0
    tools = [span for span in held if span["attributes"].get("gen_ai.operation.name") == "execute_tool"]
    assert all({"gen_ai.tool.name", "gen_ai.tool.call.id"} <= set(s["attributes"]) for s in tools)
    denied = [s for s in tools if s["attributes"].get("error.type") == "denied"]
    assert denied and all(s["status_code"] == "ERROR" for s in denied)
    halted = roots["refund-a1004-halted"]
    assert halted["attributes"]["agenttui.run.status"] == "halted"
    unknown = [e for e in halted["events"] if e["name"] == "agenttui.attempt"]
    assert [e["attributes"].get("agenttui.outcome") for e in unknown] == ["unknown"]
    assert roots["saga-a1003-rolled-back"]["status_code"] == "ERROR"
    # Without --content, no message, argument or result left the machine.
    assert not any(key.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r"))
                   for span in held for key in span["attributes"])  # fmt: skip
