"""A run's trace, made from its records: on the runs a Go service wrote (``tests/gocorpus.py``,
the SDK's bytes) on every store, and on the demo's, a saved what-if fork's among them."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path
from typing import Any

from agenttui.journal import keys
from agenttui.journal.record import StepKind
from agenttui.replay.traces import ReplayTraces
from agenttui.runs.cost.lens import PriceBook
from agenttui.runs.statuses.state import RunState
from agenttui.runs.telemetry.export import TraceOptions, export_trace_file
from agenttui.runs.telemetry.spans import AGENT_STEP, span_id_of, trace_id_of
from agenttui.stores import open_store
from agenttui.stores.base import Store
from tests.conftest import StoreFactory
from tests.forks import APPROVED, APPROVED_REWORDED, save_fork
from tests.gocorpus import CASES, write_corpus
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

PRICES = PriceBook()


async def traces(store: Store, run_ids: list[str], **options: Any) -> dict[str, list[dict[str, Any]]]:
    """The spans of each run's trace, as the OTLP JSON lines file holds them, by run id."""
    out = io.StringIO()
    await export_trace_file(store, run_ids, out, TraceOptions(PRICES, **options))
    found = {}
    for line in out.getvalue().splitlines():
        spans = [span for rs in json.loads(line)["resourceSpans"] for ss in rs["scopeSpans"] for span in ss["spans"]]
        runs = {span["spanId"]: attributes(span)["agenttui.run.id"] for span in spans
                if "agenttui.run.id" in attributes(span)}  # fmt: skip
        for span in spans:  # which run each span is of, for the tests (not in the file)
            span["_run"] = runs.get(span["spanId"]) or runs[span["parentSpanId"]]
        found[attributes(spans[0])["agenttui.run.id"]] = spans
    return found


def _run_of(span: dict[str, Any]) -> str:
    """The run a span is of: an agent span's own, a turn's or a call's its parent agent's."""
    return str(attributes(span).get("agenttui.run.id") or span["_run"])


def attributes(item: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in item.get("attributes", [])}


def step_of(span: dict[str, Any]) -> str:
    """The record a span was made from: a tool span names its step only where it is not its call's own."""
    held = attributes(span)
    return str(held.get("agenttui.step") or keys.tool_key(held["gen_ai.tool.call.id"]))


def operation(span: dict[str, Any]) -> str | None:
    return attributes(span).get("gen_ai.operation.name")


async def test_every_go_run_is_a_trace_of_its_records(make_store: StoreFactory) -> None:
    writer = await make_store()
    await write_corpus(writer)
    store = await make_store(read_only=True)
    found = await traces(store, [case.run_id for case in CASES])
    roots = [case.run_id for case in CASES if not keys.is_sub_run(case.run_id)]
    assert sorted(found) == sorted(roots)  # a sub-run travels in its root's trace
    for case in CASES:
        if keys.is_sub_run(case.run_id):
            spans = [s for s in found[keys.root_run_id(case.run_id)] if _run_of(s) == case.run_id]
        else:
            spans = [s for s in found[case.run_id] if _run_of(s) == case.run_id]
        bodies = [json.loads(body) for body in case.records]
        names = {body["name"] for body in bodies} - set(case.tombstones)
        models = [b for b in bodies if b["kind"] == "model" and b["name"] in names]
        results = [b for b in bodies if b["kind"] in ("tool_result", "saga_fail") and b.get("tool_use_id")
                   and b["name"] in names]  # fmt: skip
        kinds = Counter(operation(span) for span in spans)
        assert kinds["invoke_agent"] == 1, case.run_id
        assert kinds["chat"] == len(models), case.run_id
        assert kinds["execute_tool"] == len({b["tool_use_id"] for b in results}), case.run_id
        root = spans[0]
        assert attributes(root)["agenttui.run.status"] == case.status.value, case.run_id
        assert root["traceId"] == f"{trace_id_of(case.run_id):032x}"
        assert ("parentSpanId" in root) == keys.is_sub_run(case.run_id), case.run_id
        assert root["spanId"] == f"{span_id_of(case.run_id, AGENT_STEP):016x}"
        assert {span["parentSpanId"] for span in spans[1:]} <= {root["spanId"]}  # turns and calls: the run's
        assert len({span["spanId"] for span in spans}) == len(spans)
        events = Counter(e["name"] for span in spans for e in span.get("events", ()))
        assert events["agenttui.redacted"] == len(case.tombstones), case.run_id
        resolved = [b for b in results if b.get("reconciled")]
        assert events["agenttui.recovery.resolved"] == len(resolved), case.run_id
        steps = [step_of(span) for span in spans[1:]] + [
            attributes(event)["agenttui.step"]
            for span in spans
            for event in span.get("events", ())
            if event["name"] != "agenttui.recovery.resolved"  # said on the result's own span
        ]
        assert sorted(steps) == sorted(json.loads(body)["name"] for body in case.records), case.run_id  # each once


async def test_a_run_is_the_same_bytes_every_time_it_is_exported(make_store: StoreFactory) -> None:
    writer = await make_store()
    await write_corpus(writer)
    store = await make_store(read_only=True)
    run_ids = [case.run_id for case in CASES]
    first, second = io.StringIO(), io.StringIO()
    await export_trace_file(store, run_ids, first, TraceOptions(PRICES, content=True))
    await export_trace_file(store, list(reversed(run_ids)), second, TraceOptions(PRICES, content=True))
    assert sorted(first.getvalue().splitlines()) == sorted(second.getvalue().splitlines())


async def test_each_time_is_the_best_the_records_give_and_says_how(make_store: StoreFactory) -> None:
    writer = await make_store()
    await write_corpus(writer)
    store = await make_store(read_only=True)
    timed = [case for case in CASES if any('"attempted_at":' in body for body in case.records)]
    untimed = [case for case in CASES if case not in timed]
    assert timed and untimed
    found = await traces(store, [case.run_id for case in CASES], anchor_ns=1_700_000_000_000_000_000)
    for case in timed:
        spans = [s for s in found[keys.root_run_id(case.run_id)] if s["_run"] == case.run_id]
        marked = {json.loads(b)["tool_use_id"]: json.loads(b)["attempted_at"] for b in case.records
                  if json.loads(b)["kind"] == "attempt"}  # fmt: skip
        for span in spans[1:]:
            how = attributes(span)["agenttui.time"]
            assert how in ("recorded", "not before", "not after"), (case.run_id, how)
            call = attributes(span).get("gen_ai.tool.call.id")
            if call in marked:  # a call's attempt marker is the time it started
                assert (how, int(span["startTimeUnixNano"])) == ("recorded", max(
                    json.loads(b)["attempted_at"] for b in case.records
                    if json.loads(b).get("tool_use_id") == call and json.loads(b)["kind"] == "attempt"
                ) * 1_000_000)  # fmt: skip
            assert span["startTimeUnixNano"] == span["endTimeUnixNano"]  # no duration made up
        assert marked
    for case in untimed:
        if keys.is_sub_run(case.run_id):
            continue  # its time is its parent's call's
        for span in found[case.run_id]:
            assert attributes(span)["agenttui.time"] == "unrecorded"
            assert int(span["startTimeUnixNano"]) == 1_700_000_000_000_000_000


async def test_a_sub_run_hangs_from_the_call_that_started_it(demo_db: Path) -> None:  # noqa: F811
    store = await open_store(str(demo_db), read_only=True)
    try:
        spans = (await traces(store, ["eligibility-a1004"]))["eligibility-a1004"]
    finally:
        await store.close()
    sub = "eligibility-a1004>call_0_0"
    agent = next(s for s in spans if attributes(s).get("agenttui.run.id") == sub)
    call = next(s for s in spans if attributes(s).get("gen_ai.tool.call.id") == "call_0_0"
                and step_of(s) == "tool:call_0_0" and s["parentSpanId"] == spans[0]["spanId"])  # fmt: skip
    assert agent["parentSpanId"] == call["spanId"] == f"{span_id_of('eligibility-a1004', 'tool:call_0_0'):016x}"
    assert {s["traceId"] for s in spans} == {f"{trace_id_of(sub):032x}"}
    assert attributes(agent)["agenttui.time"] == attributes(call)["agenttui.time"] == "unrecorded"  # none to give
    # Exported alone, the sub-run lands in the same trace, under the same call.
    store = await open_store(str(demo_db), read_only=True)
    try:
        alone = (await traces(store, [sub]))[sub]
    finally:
        await store.close()
    assert (alone[0]["traceId"], alone[0]["spanId"], alone[0]["parentSpanId"]) == (
        agent["traceId"], agent["spanId"], spans[0]["spanId"]
    )  # fmt: skip


async def test_a_saved_fork_is_its_own_trace_and_reports_no_effect_executed(demo_db: Path) -> None:  # noqa: F811
    store = await open_store(str(demo_db))
    try:
        fork_id = await save_fork(store, APPROVED, APPROVED_REWORDED)
        found = await traces(store, [fork_id, APPROVED])
    finally:
        await store.close()
    fork, recording = found[fork_id], found[APPROVED]
    assert attributes(fork[0])["agenttui.run.status"] == RunState.FORK.value
    assert fork[0]["traceId"] != recording[0]["traceId"]
    (link,) = fork[0]["links"]
    assert (link["traceId"], link["spanId"], attributes(link)) == (
        recording[0]["traceId"], recording[0]["spanId"], {"agenttui.link": "fork of"}
    )  # fmt: skip
    assert not any(operation(span) in ("execute_tool", "invoke_agent") for span in fork)
    served = [span for span in fork if span["name"].startswith("served_tool")]
    assert served and all(
        "gen_ai.usage.input_tokens" not in attributes(s) for s in fork[1:] if s["name"] == "recorded_turn"
    )
    assert any(operation(span) == "execute_tool" for span in recording)


async def test_content_travels_only_when_asked_and_redacted_as_a_bundle(demo_db: Path) -> None:  # noqa: F811
    store = await open_store(str(demo_db), read_only=True)
    try:
        plain = (await traces(store, ["refund-a1002"]))["refund-a1002"]
        full = (await traces(store, ["refund-a1002"], content=True, redact=("order_id",)))["refund-a1002"]
    finally:
        await store.close()
    content_keys = {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
                    "gen_ai.tool.call.result", "gen_ai.system_instructions"}  # fmt: skip
    assert not content_keys & {key for span in plain for key in attributes(span)}
    held = {key for span in full for key in attributes(span)}
    assert {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments"} <= held
    arguments = [json.loads(attributes(s)["gen_ai.tool.call.arguments"]) for s in full
                 if "gen_ai.tool.call.arguments" in attributes(s)]  # fmt: skip
    assert arguments and all(a.get("order_id") == "[redacted]" for a in arguments if "order_id" in a)
    assert any("order_id" in a for a in arguments)
    output = json.loads(attributes(full[1])["gen_ai.output.messages"])
    assert output[0]["role"] == "assistant" and {p["type"] for p in output[0]["parts"]} <= {"text", "tool_call"}


def test_every_step_kind_the_format_names_maps_to_a_span_or_an_event() -> None:
    kinds = {kind.value for kind in StepKind}
    assert kinds == {"model", "tool_result", "value", "signal", "approval", "attempt", "saga_fail", "not_started",
                     "header"}, "a new kind: say in runs.telemetry.spans what it becomes"  # fmt: skip
    assert keys.RUN_START.startswith("run:")


async def test_a_replay_is_its_own_trace_its_verdict_on_it_and_no_effect_executed(demo_db: Path) -> None:  # noqa: F811
    store = await open_store(str(demo_db), read_only=True)
    try:
        recording = (await traces(store, ["refund-a1002"]))["refund-a1002"]
        replayed = (await traces(store, ["refund-a1002"], replayer=ReplayTraces()))["refund-a1002"]
        changed_agent = ReplayTraces("tests.tui.changed_agent:factory")
        changed = (await traces(store, ["refund-a1002"], replayer=changed_agent))["refund-a1002"]
        again = (await traces(store, ["refund-a1002"], replayer=ReplayTraces()))["refund-a1002"]
    finally:
        await store.close()
    assert replayed == again  # the same bytes every time
    root = replayed[0]
    assert root["name"] == "replay refund-a1002" and root["traceId"] != recording[0]["traceId"]
    assert {s["spanId"] for s in replayed}.isdisjoint(s["spanId"] for s in recording)
    (link,) = root["links"]
    assert (link["traceId"], link["spanId"], attributes(link)) == (
        recording[0]["traceId"], recording[0]["spanId"], {"agenttui.link": "replay of"}
    )  # fmt: skip
    assert attributes(root)["agenttui.replay.verdict"] == "matches"
    assert attributes(root)["agenttui.replay.agent"] == "recorded"
    # Nothing a replay did is reported as a model called or an effect executed.
    assert not any(operation(span) for span in replayed)
    assert sorted(s["name"].split(" ")[0] for s in replayed[1:]) == sorted(
        "recorded_turn" if operation(s) == "chat" else "served_tool" for s in recording[1:]
    )
    assert "gen_ai.usage.input_tokens" not in json.dumps(replayed)
    # A replay with other code that diverges says so, on its span's status.
    assert attributes(changed[0])["agenttui.replay.verdict"] == "diverged"
    assert changed[0]["status"]["code"] == 2 and changed[0]["status"]["message"].startswith("diverged: ")
    assert attributes(changed[0])["agenttui.replay.agent"] == "tests.tui.changed_agent:factory"
