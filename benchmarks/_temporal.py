"""The Temporal side of ``benchmarks/replays.py``: the same recorded runs as Temporal workflow
histories, replayed by the Python SDK's offline ``temporalio.worker.Replayer`` (no server).

Run as a process of its own (``python -m benchmarks._temporal STORE``, driven by
``replays.py``, see ``serve``), only when ``temporalio`` is importable (``pip install -e
'.[bench]'``): nothing here is installed at run time.

The workflow, ``RefundDesk``, is the refund desk's agent loop written as a Temporal workflow of
the usual shape: each model turn an activity (``model``), each tool call an activity named as
the tool, the calls of one turn gathered; a tool that needs approval waits for a signal
(``decide``) and runs only if approved; a question to the customer waits for the answer as a
signal; the settlement wait is a durable timer; the refunds specialist (a sub-agent) is a child
workflow of the same type, its own history beside its parent's. So a history holds as many
activities as the run has model turns plus tool calls run (a denied refund and a question run
none, as in agenttui), one signal per approval or answer, one timer per wait, one child per
sub-run.

The histories are made from the store's records, not by running the workflow against a server:
the Python SDK's test server (``WorkflowEnvironment.start_time_skipping()``) and dev server
(``start_local()``) are binaries it downloads on first use, which this benchmark does not do.
Each history is written event by event as the Temporal server writes one (workflow tasks
scheduled, started and completed around each batch of commands; the ids the SDK gives its
commands: an activity's and a timer's its sequence number, a child's the sub-run's id), and
its payloads are the records' own JSON: the workflow's input the run's ``run:start`` result,
a model activity's result the ``@llm/N`` record, a tool activity's result its ``tool:`` record,
a signal's argument the ``approval:``/``interrupt:`` record, a child's result its tool record. So
payload sizes are the recording's. ``check_histories`` replays them all first and stops on any
failure (a history the workflow does not produce is a non-determinism error in replay).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import sys
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import temporalio.converter
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio import workflow
from temporalio.api.common.v1 import ActivityType, Payloads, WorkflowExecution, WorkflowType
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History as HistoryProto
from temporalio.api.history.v1 import HistoryEvent
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.client import WorkflowHistory
from temporalio.exceptions import ApplicationError
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

WORKFLOW = "refund_desk"
TASK_QUEUE = "refund-desk"
NAMESPACE = "ReplayNamespace"
ACTIVITY_TIMEOUT = timedelta(minutes=5)
#: Tools the workflow does not run as an activity of their own name.
APPROVED = {"refund_payment"}
ASKED = {"ask_customer"}
SLEEPS = {"wait_for_settlement"}
SUB_AGENTS = {"refunds_specialist"}
#: A sub-agent's turns at most (the demo's specialist's).
SUB_AGENT_TURNS = 100


@workflow.defn(name=WORKFLOW)
class RefundDesk:
    """The refund desk's agent loop as a Temporal workflow (see the module's docstring)."""

    def __init__(self) -> None:
        self.decisions: dict[str, Any] = {}

    @workflow.signal(name="decide")
    def decide(self, decision: dict[str, Any]) -> None:
        self.decisions[decision["tool_use_id"]] = decision

    @workflow.run
    async def run(self, start: dict[str, Any]) -> Any:
        for turn in range(start["settings"]["max_turns"]):
            reply = await workflow.execute_activity(
                "model", {"turn": turn}, start_to_close_timeout=ACTIVITY_TIMEOUT, result_type=dict
            )
            calls = [part for part in reply["message"]["parts"] if part["type"] == "tool_use"]
            if not calls:
                return reply["message"]
            await asyncio.gather(*(self.tool(call) for call in calls))
        raise ApplicationError("out of turns")

    async def tool(self, call: dict[str, Any]) -> Any:
        name, call_id = call["name"], call["id"]
        if name in APPROVED or name in ASKED:
            await workflow.wait_condition(lambda: call_id in self.decisions)
            decision = self.decisions[call_id]
            if name in ASKED:
                return decision["result"]
            if not decision.get("approved"):
                return "denied"
        elif name in SLEEPS:
            await workflow.sleep(timedelta(hours=call["args"]["hours"]))
            return {"order_id": call["args"]["order_id"], "settled": True}
        elif name in SUB_AGENTS:
            child_id = f"{workflow.info().workflow_id}>{call_id}"
            start = {"input": call["args"]["task"], "kind": "agent", "settings": {"max_turns": SUB_AGENT_TURNS}}
            return await workflow.execute_child_workflow(WORKFLOW, start, id=child_id)
        return await workflow.execute_activity(name, call["args"], start_to_close_timeout=ACTIVITY_TIMEOUT)


# -- histories from the store's records --------------------------------------------------------------


CONVERTER = temporalio.converter.default().payload_converter
EPOCH = datetime(2025, 10, 1, tzinfo=UTC)


def payloads(*values: Any) -> Payloads:
    return Payloads(payloads=CONVERTER.to_payloads(list(values)))


class History:
    """One workflow's events, written as the server writes them."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        self.run_id = str(uuid.UUID(bytes=hashlib.md5(workflow_id.encode()).digest()))
        self.events: list[HistoryEvent] = []
        self.clock = EPOCH

    def add(self, kind: int, attribute: str, later: timedelta = timedelta(milliseconds=5), **fields: Any) -> int:
        self.clock += later
        event = HistoryEvent(event_id=len(self.events) + 1, event_type=kind, event_time=stamp(self.clock))  # type: ignore[arg-type]
        getattr(event, attribute).CopyFrom(type(getattr(event, attribute))(**fields))
        self.events.append(event)
        return event.event_id

    def workflow_task(self) -> int:
        """A workflow task scheduled, started and completed: the id commands after it point to."""
        scheduled = self.add(EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, "workflow_task_scheduled_event_attributes",
                             task_queue=TaskQueue(name=TASK_QUEUE), start_to_close_timeout=Duration(seconds=10),
                             attempt=1)  # fmt: skip
        started = self.add(EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED, "workflow_task_started_event_attributes",
                           scheduled_event_id=scheduled, identity="bench", request_id=f"{scheduled}")  # fmt: skip
        return self.add(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, "workflow_task_completed_event_attributes",
                        scheduled_event_id=scheduled, started_event_id=started, identity="bench")  # fmt: skip


def stamp(moment: datetime) -> Timestamp:
    value = Timestamp()
    value.FromDatetime(moment)
    return value


@dataclass
class Recording:
    """One run's records, by name (each decoded), and its sub-runs' ids."""

    run_id: str
    records: dict[str, dict[str, Any]]


def read_recordings(store: Path) -> list[Recording]:
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT run_id, name, data FROM bide_steps ORDER BY run_id, seq").fetchall()
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    for run_id, name, data in rows:
        runs.setdefault(run_id, {})[name] = json.loads(data)
    return [Recording(run_id, records) for run_id, records in runs.items()]


def history_of(recording: Recording, starts: dict[str, Any]) -> WorkflowHistory:
    """The Temporal history ``RefundDesk`` writes when it runs what ``recording`` recorded
    (``starts``: every run's ``run:start`` result, by run id: a child's input)."""
    records, history = recording.records, History(recording.run_id)
    start = records["run:start"]["result"]
    parent = recording.run_id.rsplit(">", 1)[0] if ">" in recording.run_id else None
    fields: dict[str, Any] = {}
    if parent is not None:
        fields = {"parent_workflow_namespace": NAMESPACE,
                  "parent_workflow_execution": WorkflowExecution(workflow_id=parent, run_id=History(parent).run_id),
                  "parent_initiated_event_id": 1}  # fmt: skip
    history.add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, "workflow_execution_started_event_attributes",
                workflow_type=WorkflowType(name=WORKFLOW), task_queue=TaskQueue(name=TASK_QUEUE), input=payloads(start),
                workflow_task_timeout=Duration(seconds=10), original_execution_run_id=history.run_id,
                first_execution_run_id=history.run_id, attempt=1, identity="bench", workflow_id=recording.run_id,
                **fields)  # fmt: skip
    completed = history.workflow_task()
    activities = timers = 0

    def schedule(name: str, argument: Any, after: int) -> int:
        nonlocal activities
        activities += 1
        return history.add(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, "activity_task_scheduled_event_attributes",
                           activity_id=str(activities), activity_type=ActivityType(name=name),
                           task_queue=TaskQueue(name=TASK_QUEUE), input=payloads(argument),
                           start_to_close_timeout=Duration(seconds=int(ACTIVITY_TIMEOUT.total_seconds())),
                           workflow_task_completed_event_id=after)  # fmt: skip

    def run_activity(scheduled: int, result: Any) -> None:
        started = history.add(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED, "activity_task_started_event_attributes",
                              scheduled_event_id=scheduled, identity="bench", attempt=1)  # fmt: skip
        history.add(EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, "activity_task_completed_event_attributes",
                    result=payloads(result), scheduled_event_id=scheduled, started_event_id=started, identity="bench")  # fmt: skip

    turn = 0
    pending = schedule("model", {"turn": turn}, completed)  # the model activity in flight
    while True:
        reply = records[f"@llm/{turn}"]
        run_activity(pending, reply)
        completed = history.workflow_task()
        calls = [part for part in reply["message"]["parts"] if part["type"] == "tool_use"]
        if not calls:
            history.add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED, "workflow_execution_completed_event_attributes",
                        result=payloads(reply["message"]), workflow_task_completed_event_id=completed)  # fmt: skip
            break
        # The turn's commands, in the order the workflow's gather issues them; what waits, after.
        in_flight: list[tuple[int, Any]] = []
        waits: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        for call in calls:
            name, call_id = call["name"], call["id"]
            result = records[f"tool:{call_id}"]
            if name in APPROVED:
                waits.append(("signal", records[f"approval:{call_id}"], call | {"result": result}))
            elif name in ASKED:
                waits.append(("signal", records[f"interrupt:ask-{call_id}"] | {"tool_use_id": call_id}, call))
            elif name in SLEEPS:
                timers += 1
                timer = history.add(EventType.EVENT_TYPE_TIMER_STARTED, "timer_started_event_attributes",
                                    timer_id=str(timers), workflow_task_completed_event_id=completed,
                                    start_to_fire_timeout=Duration(seconds=3600 * call["args"]["hours"]))  # fmt: skip
                waits.append(("timer", {"timer": timer, "id": str(timers)}, call))
            elif name in SUB_AGENTS:
                child_id = f"{recording.run_id}>{call_id}"
                initiated = history.add(
                    EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
                    "start_child_workflow_execution_initiated_event_attributes", namespace=NAMESPACE,
                    workflow_id=child_id, workflow_type=WorkflowType(name=WORKFLOW),
                    task_queue=TaskQueue(name=TASK_QUEUE), input=payloads(starts[child_id]),
                    workflow_task_completed_event_id=completed,
                )  # fmt: skip
                waits.append(("child", {"initiated": initiated, "id": child_id}, call | {"result": result}))
            else:
                in_flight.append((schedule(name, call["args"], completed), result))
        for scheduled, result in in_flight:
            run_activity(scheduled, result)
        for kind, wait, call in waits:
            if kind == "signal":  # an approval or an answer, some minutes later
                history.add(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, "workflow_execution_signaled_event_attributes",
                            later=timedelta(minutes=20), signal_name="decide", input=payloads(wait), identity="ops")  # fmt: skip
                completed = history.workflow_task()
                if wait.get("approved"):  # the refund runs once approved
                    run_activity(schedule(call["name"], call["args"], completed), call["result"])
                    completed = history.workflow_task()
            elif kind == "timer":
                history.add(EventType.EVENT_TYPE_TIMER_FIRED, "timer_fired_event_attributes",
                            later=timedelta(hours=call["args"]["hours"]), timer_id=wait["id"],
                            started_event_id=wait["timer"])  # fmt: skip
                completed = history.workflow_task()
            else:
                child = WorkflowExecution(workflow_id=wait["id"], run_id=History(wait["id"]).run_id)
                started = history.add(EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
                                      "child_workflow_execution_started_event_attributes", namespace=NAMESPACE,
                                      initiated_event_id=wait["initiated"], workflow_execution=child,
                                      workflow_type=WorkflowType(name=WORKFLOW))  # fmt: skip
                history.workflow_task()
                history.add(EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED,
                            "child_workflow_execution_completed_event_attributes", namespace=NAMESPACE,
                            result=payloads(call["result"]), workflow_execution=child,
                            workflow_type=WorkflowType(name=WORKFLOW), initiated_event_id=wait["initiated"],
                            started_event_id=started)  # fmt: skip
                completed = history.workflow_task()
        if not waits:
            completed = history.workflow_task()
        turn += 1
        pending = schedule("model", {"turn": turn}, completed)
    return WorkflowHistory(recording.run_id, history.events)


def histories_of(store: Path) -> list[WorkflowHistory]:
    recordings = read_recordings(store)
    starts = {recording.run_id: recording.records["run:start"]["result"] for recording in recordings}
    return [history_of(recording, starts) for recording in recordings]


# -- replaying ---------------------------------------------------------------------------------------


def replayer(*, sandboxed: bool) -> Replayer:
    """The SDK's offline replayer for ``RefundDesk``: by default (``sandboxed``) the workflow runs
    in the SDK's sandbox, as a worker runs it unless told not to; else unsandboxed."""
    if sandboxed:
        return Replayer(workflows=[RefundDesk])
    return Replayer(workflows=[RefundDesk], workflow_runner=UnsandboxedWorkflowRunner())


async def replay(histories: Iterable[WorkflowHistory], *, sandboxed: bool) -> tuple[int, dict[str, str]]:
    """Replay every history with one replayer: how many replayed, and the failures by run id."""

    async def each() -> AsyncIterator[WorkflowHistory]:
        for history in histories:
            yield history

    results = await replayer(sandboxed=sandboxed).replay_workflows(each(), raise_on_replay_failure=False)
    failures = {run_id: f"{type(error).__name__}: {error}" for run_id, error in results.replay_failures.items()}
    return len(list(histories)) - len(failures), failures


def shape_of(histories: Sequence[WorkflowHistory]) -> dict[str, int]:
    """What the histories hold: events, activities, signals, timers, children, payload bytes."""
    kinds = Counter(event.event_type for history in histories for event in history.events)
    payload_bytes = 0
    for history in histories:
        for event in history.events:
            attributes = getattr(event, event.WhichOneof("attributes") or "")
            for name in ("input", "result"):
                if attributes.DESCRIPTOR.fields_by_name.get(name) is not None and attributes.HasField(name):
                    payload_bytes += sum(len(payload.data) for payload in getattr(attributes, name).payloads)
    return {
        "histories": len(histories),
        "events": sum(kinds.values()),
        "activities": kinds[EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED],
        "signals": kinds[EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED],
        "timers": kinds[EventType.EVENT_TYPE_TIMER_STARTED],
        "children": kinds[EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED],
        "workflow_tasks": kinds[EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED],
        "payload_bytes": payload_bytes,
        "bytes": sum(HistoryProto(events=history.events).ByteSize() for history in histories),
    }


# -- the worker process that ``benchmarks/replays.py`` times them in ----------------------------------


def serve(store: Path) -> None:
    """Build the histories of ``store``, replay them all once (unsandboxed: every one must replay),
    print what they hold as a JSON line; then, for each line read (``unsandboxed`` or
    ``sandboxed``), replay them all again and print that round's figures as a JSON line: wall,
    CPU (``time.process_time``: every thread of this process, the SDK's core included) and peak RSS
    (``VmHWM``, reset before the round where the kernel allows it).

    A process of its own, so the histories held in memory (about 20 KB of protobuf an event), the
    SDK and its runtime's threads weigh on none of agenttui's figures."""
    import time

    import temporalio

    cpu = time.process_time()
    histories = histories_of(store)
    build_cpu_s = time.process_time() - cpu
    cpu = time.process_time()
    replayed, failures = asyncio.run(replay(histories, sandboxed=False))
    print(json.dumps({"version": temporalio.__version__, "shape": shape_of(histories), "build_cpu_s": build_cpu_s,
                      "check_cpu_s": time.process_time() - cpu, "replayed": replayed,
                      "failures": dict(list(failures.items())[:3]), "failed": len(failures)}), flush=True)  # fmt: skip
    for line in sys.stdin:
        try:
            Path("/proc/self/clear_refs").write_text("5")
        except OSError:
            pass
        started, cpu = time.perf_counter(), time.process_time()
        replayed, failures = asyncio.run(replay(histories, sandboxed=line.strip() == "sandboxed"))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        status = Path("/proc/self/status").read_text()
        rss = next(int(row.split()[1]) for row in status.splitlines() if row.startswith("VmHWM:")) / 1024
        print(json.dumps({"wall_s": wall, "cpu_s": cpu, "rss_mb": rss, "replayed": replayed, "failed": len(failures),
                          "failures": dict(list(failures.items())[:1])}), flush=True)  # fmt: skip


if __name__ == "__main__":  # python -m benchmarks._temporal STORE
    # The workflow imported from its module by name, not as __main__: the SDK's sandbox imports
    # a workflow's module again by its name.
    from benchmarks._temporal import serve as serving

    serving(Path(sys.argv[1]))
