"""A run as OpenTelemetry spans, by the GenAI conventions (``conventions``). Pure: records in,
spans out, the same spans every time.

- **A trace per run tree**, its id made from the root run's id: a run exported twice, or a
  sub-run exported apart from its root, lands in the same trace with the same span ids.
- **An ``invoke_agent`` span per run**, a sub-run's a child of the ``execute_tool`` span of the
  call that started it (of its parent's agent span while that call has no result). The run's
  status and, where priced, its cost are its attributes.
- **A ``chat`` span per model turn** (provider and model where recorded, the four token counts)
  and **an ``execute_tool`` span per tool result** (name, call id, ``error.type`` when it failed,
  its safety and approval gate), children of their run's agent span.
- **Every other record is a span event** of its run's agent span, or of the tool span its call
  has: approvals and denials, interrupts and their answers, signals, timers, cancellations,
  attempts (one whose outcome is unknown says so), dropped requests, recovery's resolutions.
- **Content only when asked** (``content=True``): the run's input and answer, each turn's output
  message, each call's arguments and result, as the conventions' JSON.
- **Times.** The journal carries few: an attempt marker's ``attempted_at``. Records are committed
  in time order, so a record written after a marker was written at or after its time, and one
  before it at or before. Each span and event gets the best time its records give, and says how
  it was found (``agenttui.time``): ``recorded``, ``not before`` (the latest marker before it),
  ``not after`` (the first marker after it), ``from the run that started it``, ``from its
  tree`` or ``unrecorded`` (the anchor the caller gives, by default the Unix epoch). A span's
  duration is never made up: model turns and tool calls last no time, and an agent span runs from
  its first child's time to its last one's.
- **A saved what-if fork** is a trace of its own, linked to its recording's agent span, and never
  reports an effect as executed: its tool results are ``served_tool`` spans (no
  ``gen_ai.operation.name``), and its turns served from the recording ``recorded_turn`` spans
  carrying the recording's tokens apart (``agenttui.usage.recorded_tokens``); only the turns it
  ran live are ``chat`` spans.

Every string value is inert (``journal.inert``): no control, bidi or invisible character reaches a
UI that renders attributes raw.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from agenttui.agent.pauses import tally_approved
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import DENIED_TEXT
from agenttui.journal import keys
from agenttui.journal.describe import json_value
from agenttui.journal.inert import printable, printable_id, safe_json
from agenttui.journal.record import Message, Part, ReasoningPart, Record, StepKind, TextPart, ToolUsePart
from agenttui.runs.cost.lens import RunCost, dollars_json, sent_tokens
from agenttui.runs.statuses.forks import FORK_ORIGIN, fork_mark
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus, end_reason
from agenttui.runs.telemetry import conventions as c

AttributeValue: TypeAlias = str | bool | int | float | tuple[str, ...]
Attributes: TypeAlias = dict[str, AttributeValue]
SpanKind: TypeAlias = Literal["internal", "client"]

#: The step name a run's own agent span is made from (no record has it: names start otherwise).
AGENT_STEP = "@run"
_NS = 1_000_000


@dataclass(frozen=True, slots=True)
class Moment:
    """A time a span or event is given, and how the records gave it."""

    ns: int
    """Unix nanoseconds."""
    how: str


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    at: Moment
    attributes: Attributes


@dataclass(frozen=True, slots=True)
class SpanLink:
    trace_id: int
    span_id: int
    attributes: Attributes


@dataclass(slots=True)
class Span:
    """One span as OTLP carries it; ``error`` set makes its status ``ERROR`` with that text."""

    trace_id: int
    span_id: int
    parent_id: int | None
    name: str
    kind: SpanKind
    start: Moment
    end: Moment
    attributes: Attributes
    events: list[SpanEvent] = field(default_factory=list)
    links: tuple[SpanLink, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TracedRun:
    """A run as the mapping reads it: its records (header first), its status, and its cost with
    every run below it (None where it could not be priced or was not asked for)."""

    run_id: str
    records: Sequence[Record]
    status: RunStatus
    cost: RunCost | None = None
    replay: ReplayOf | None = None
    """Set for a replay of the run (``records`` then the replay's journal), not the run itself."""


@dataclass(frozen=True, slots=True)
class ReplayOf:
    """What a replay of a recorded run found, for its trace (``TracedRun.replay``)."""

    verdict: str
    """``matches``, ``matches-so-far``, ``diverged`` or ``refused`` (``replay.verdict.VerdictKind``)."""
    detail: str
    agent: str
    """The agent replayed: ``recorded`` (the recording's outputs and tools), or an ``--agent`` spec."""
    served: frozenset[str] | None
    """The tools served from the recording (None: every one, as with the recorded agent); another
    tool ran again (read-only: a replay runs no side effect)."""


def replay_trace_id_of(run_id: str) -> int:
    """The trace of a replay of ``run_id``: its own, never the recording's."""
    return _hashed(b"agenttui/replay-trace", run_id, 16)


def trace_id_of(run_id: str) -> int:
    """The trace of ``run_id``'s tree: the same for every run of it, whoever exports it."""
    return _hashed(b"agenttui/trace", keys.root_run_id(run_id), 16)


def span_id_of(run_id: str, step: str) -> int:
    """The span a run's record ``step`` is (``AGENT_STEP``: the run's own agent span)."""
    return _hashed(b"agenttui/span", f"{run_id}\x00{step}", 8)


def _hashed(purpose: bytes, text: str, size: int) -> int:
    digest = hashlib.sha256(purpose + b"\x00" + text.encode("utf-8", "surrogateescape")).digest()
    return int.from_bytes(digest[:size], "big") or 1  # an id of zeros is invalid in OTLP


def spans_of_tree(runs: Sequence[TracedRun], *, content: bool = False, anchor_ns: int = 0) -> list[Span]:
    """The spans of a run and every run below it (``runs``, parents before their sub-runs), in
    order: each run's agent span, then its turns and calls in journal order. ``anchor_ns``: the
    time of a tree no record of which carries one."""
    tree_earliest = min((t for run in runs for t in _marker_times(run.records)), default=None)
    fallback = (
        Moment(tree_earliest * _NS, "from its tree") if tree_earliest is not None else Moment(anchor_ns, "unrecorded")
    )
    call_spans: dict[str, tuple[int, Moment]] = {}
    spans: list[Span] = []
    for run in runs:
        parent = keys.parent_run_id(run.run_id) if keys.is_sub_run(run.run_id) else None  # a session's turn: its own
        started_by = call_spans.get(run.run_id)
        parent_span = started_by[0] if started_by else span_id_of(parent, AGENT_STEP) if parent else None
        inherited = fallback
        if started_by is not None:  # a call with no time of its own gives none to the run it started
            at = started_by[1]
            inherited = at if at.how == "unrecorded" else Moment(at.ns, "from the run that started it")
        mapped = _RunSpans(run, content=content, parent_span=parent_span, fallback=inherited)
        spans += mapped.spans()
        call_spans.update(mapped.sub_run_parents())
    return spans


class _RunSpans:
    """One run's spans, made in one pass over its records."""

    def __init__(self, run: TracedRun, *, content: bool, parent_span: int | None, fallback: Moment) -> None:
        self.run = run
        self.run_id = run.run_id
        self.records = run.records
        self.content = content
        self.replay = run.replay
        # A replay's spans are of its own trace, their ids of their own: a backend that holds the
        # recording and its replay never takes one's span for the other's.
        self.ids_of = run.run_id if self.replay is None else f"{run.run_id}\x00replay"
        self.trace_id = trace_id_of(run.run_id) if self.replay is None else replay_trace_id_of(run.run_id)
        self.agent_id = span_id_of(self.ids_of, AGENT_STEP)
        self.parent_span = parent_span
        self.moments = _moments(run.records, fallback)
        self.calls: dict[str, ToolUsePart] = {}  # each call, as the first model message that made it
        for r in run.records:
            if r.kind == StepKind.MODEL and r.message:
                for part in r.message.tool_uses:
                    self.calls.setdefault(part.id, part)
        self.results = {r.tool_use_id: r for r in run.records if r.kind in _RESULT_KINDS and r.tool_use_id}
        self.attempted: dict[str, int] = {}  # each call's latest attempt marker's time
        for r in run.records:
            if r.kind == StepKind.ATTEMPT and r.tool_use_id and r.attempted_at > self.attempted.get(r.tool_use_id, 0):
                self.attempted[r.tool_use_id] = r.attempted_at
        self.names_held = {r.name for r in run.records}
        self.tool_spans: dict[str, Span] = {}
        self.fork_live_from = _fork_live_from(run) if run.status.state == RunState.FORK else None

    @property
    def served(self) -> bool:
        """Its turns and tools were served from a recording, not run: a saved fork, or a replay."""
        return self.fork_live_from is not None or self.replay is not None

    def spans(self) -> list[Span]:
        agent = self._agent_span()
        children: list[Span] = []
        turn = 0
        for at, record in enumerate(self.records):
            moment = self.moments[at]
            if record.kind == StepKind.MODEL and record.name.startswith("@llm/"):
                children.append(self._turn_span(record, moment, turn))
                turn += 1
            elif record.kind in _RESULT_KINDS and record.tool_use_id and self.results.get(record.tool_use_id) is record:
                span = self._tool_span(record, self._call_moment(record.tool_use_id, moment))
                self.tool_spans[record.tool_use_id] = span
                children.append(span)
        for at, record in enumerate(self.records):
            if (event := self._event(record, self.moments[at])) is not None:
                owner = self.tool_spans.get(record.tool_use_id) if record.tool_use_id else None
                (owner or agent).events.append(event)
        times = [moment for span in children for moment in (span.start, span.end)]
        times += [event.at for event in agent.events]
        if times:
            agent.start = min(times, key=lambda m: m.ns)
            agent.end = max(times, key=lambda m: m.ns)
        agent.attributes[c.TIME] = agent.start.how
        return [agent, *children]

    def sub_run_parents(self) -> dict[str, tuple[int, Moment]]:
        """The span each sub-run this run's calls started hangs from, with its time, by sub-run id."""
        return {
            keys.sub_run_id(self.run_id, call_id): (span.span_id, span.start)
            for call_id, span in self.tool_spans.items()
        }

    # -- the run's agent span ------------------------------------------------------------------

    def _agent_span(self) -> Span:
        run, status = self.run, self.run.status
        started = self._record(keys.RUN_START)
        start = RunStart.decode(started.result) if started is not None else None
        attributes: Attributes = {
            c.RUN_ID: printable_id(self.run_id),
            c.CONVERSATION_ID: printable_id(self.run_id),
            c.RUN_STATUS: status.state.value,
            c.RUN_TURNS: status.turns,
            c.RUN_TOKENS: status.tokens,
            c.STEP: AGENT_STEP,
        }
        if status.detail:
            attributes[c.RUN_STATUS_DETAIL] = printable(status.detail)
        name = "invoke_agent"
        if start is not None:
            attributes[c.RUN_KIND] = printable(start.kind)
            flow = (start.flow or {}).get("name")
            if isinstance(flow, str) and flow:
                attributes[c.AGENT_NAME] = printable(flow)
                name += f" {printable(flow)}"
        links: tuple[SpanLink, ...] = ()
        if self.replay is not None:
            name = f"replay {printable_id(self.run_id)}"
            attributes |= {c.REPLAY_VERDICT: self.replay.verdict, c.REPLAY_AGENT: printable(self.replay.agent)}
            if self.replay.detail:
                attributes[c.REPLAY_DETAIL] = printable(self.replay.detail)
            link = SpanLink(trace_id_of(self.run_id), span_id_of(self.run_id, AGENT_STEP), {c.LINK: "replay of"})
            links = (link,)
            del attributes[c.CONVERSATION_ID]  # the recording's conversation; this trace is no conversation
        elif self.fork_live_from is not None:
            name = f"fork {printable_id(status.fork_of)}"
            attributes[c.FORK_OF] = printable_id(status.fork_of)
            links = (
                SpanLink(trace_id_of(status.fork_of), span_id_of(status.fork_of, AGENT_STEP), {c.LINK: "fork of"}),
            )
        else:
            attributes[c.OPERATION] = c.INVOKE_AGENT
        if run.cost is not None:
            _put_cost(attributes, run.cost)
        if self.content and start is not None:
            attributes[c.INPUT_MESSAGES] = _json([_message_json(start.input)])
            prompt = start.settings.get("system_prompt")
            if isinstance(prompt, str) and prompt:
                attributes[c.SYSTEM_INSTRUCTIONS] = _json([{"type": "text", "content": prompt}])
            if (answer := self._answer()) is not None:
                attributes[c.OUTPUT_MESSAGES] = _json([_message_json(answer.message or Message.assistant(), answer)])
        moment = self.moments[0] if self.moments else Moment(0, "unrecorded")
        error = _replay_error(self.replay) if self.replay is not None else _run_error(status)
        return Span(self.trace_id, self.agent_id, self.parent_span, name, "internal", moment, moment, attributes,
                    links=links, error=error)  # fmt: skip

    def _record(self, name: str) -> Record | None:
        return next((r for r in self.records if r.name == name), None)

    def _answer(self) -> Record | None:
        """A complete run's answer: its last model turn before ``run:complete``."""
        answer = None
        for record in self.records:
            if record.name in keys.END_MARKERS:
                return answer if record.name == keys.RUN_COMPLETE else None
            if record.kind == StepKind.MODEL:
                answer = record
        return None

    # -- model turns and tool calls ------------------------------------------------------------

    def _turn_span(self, record: Record, moment: Moment, turn: int) -> Span:
        model = record.model
        usage = record.usage
        recorded = self.replay is not None or (self.fork_live_from is not None and turn < self.fork_live_from)
        attributes: Attributes = {c.STEP: printable_id(record.name), c.TIME: moment.how}
        if model is not None and model.provider:
            attributes[c.PROVIDER] = printable(model.provider)
        if model is not None and model.model:
            attributes[c.REQUEST_MODEL] = printable(model.model)
        if record.finish:
            attributes[c.FINISH_REASONS] = (printable(record.finish),)
        if usage is not None and recorded:
            attributes[c.RECORDED_TOKENS] = usage.total
        elif usage is not None:
            attributes[c.INPUT_TOKENS] = sent_tokens(usage)
            attributes[c.OUTPUT_TOKENS] = usage.output_tokens
            if usage.cache_read_tokens:
                attributes[c.CACHE_READ_TOKENS] = usage.cache_read_tokens
            if usage.cache_write_tokens:
                attributes[c.CACHE_CREATION_TOKENS] = usage.cache_write_tokens
        if record.discarded_usage:
            attributes[c.DISCARDED_TOKENS] = record.discarded_usage.total
        if self.content and record.message is not None:
            attributes[c.OUTPUT_MESSAGES] = _json([_message_json(record.message, record)])
        if recorded:
            name = "recorded_turn"
        else:
            attributes[c.OPERATION] = c.CHAT
            name = f"chat {attributes[c.REQUEST_MODEL]}" if c.REQUEST_MODEL in attributes else "chat"
        span_id = span_id_of(self.ids_of, record.name)
        return Span(self.trace_id, span_id, self.agent_id, name, "client", moment, moment, attributes)

    def _call_moment(self, call_id: str, at_result: Moment) -> Moment:
        """A call's time: its latest attempt marker's (recorded), else its result's."""
        marked = self.attempted.get(call_id)
        return Moment(marked * _NS, "recorded") if marked else at_result

    def _tool_span(self, record: Record, moment: Moment) -> Span:
        call_id = record.tool_use_id
        call = self.calls.get(call_id)
        tool = call.name if call is not None else ""
        attributes: Attributes = {c.TOOL_CALL_ID: printable_id(call_id), c.TIME: moment.how}
        if record.name != keys.tool_key(call_id):  # a legacy journal's name, or a saga's: not the call's own
            attributes[c.STEP] = printable_id(record.name)
        if tool:
            attributes[c.TOOL_NAME] = printable_id(tool)
        if (error := _tool_error(record)) is not None:
            attributes[c.ERROR_TYPE] = error
        safety = record.safety
        if safety is not None or record.read_only:
            read_only = bool(safety and safety.read_only) or record.read_only
            idempotent = bool(safety and safety.idempotent)
            attributes[c.TOOL_SAFETY] = _SAFETY[read_only, idempotent]
        if record.approval:
            policy = record.approval
            attributes[c.TOOL_APPROVAL] = "single" if policy.single else f"{policy.need} of {len(policy.approvers)}"
        if record.reconciled:
            attributes[c.TOOL_RECONCILED] = True
        if self.content:
            if call is not None and call.args is not None:
                attributes[c.TOOL_ARGUMENTS] = _json(json_value(call.args))
            if record.result is not None:
                attributes[c.TOOL_RESULT] = _json(json_value(record.result))
        if self.served:
            ran = self.replay is not None and self.replay.served is not None and tool not in self.replay.served
            kind = "replayed_tool" if ran else "served_tool"  # ran: a read-only tool of the agent replayed
            name = f"{kind} {printable_id(tool)}" if tool else kind
        else:
            attributes[c.OPERATION] = c.EXECUTE_TOOL
            name = f"execute_tool {printable_id(tool)}" if tool else "execute_tool"
        span_id = span_id_of(self.ids_of, record.name)
        span = Span(self.trace_id, span_id, self.agent_id, name, "internal", moment, moment, attributes, error=error)
        if record.reconciled:  # a person resolved the halted call: a recovery action, said where it landed
            said: Attributes = {c.TIME: moment.how, "agenttui.outcome": "fired"}  # it happened, as resolved
            if self.content and record.evidence is not None:
                said["agenttui.evidence"] = _json(json_value(record.evidence))
            span.events.append(SpanEvent("agenttui.recovery.resolved", moment, said))
        return span

    # -- everything else: events ---------------------------------------------------------------

    def _event(self, record: Record, moment: Moment) -> SpanEvent | None:
        named = _event_of(record, self)
        if named is None:
            return None
        name, attributes = named
        attributes = {c.STEP: printable_id(record.name), c.TIME: moment.how, **attributes}
        return SpanEvent(name, moment, attributes)


_RESULT_KINDS = frozenset({StepKind.TOOL_RESULT, StepKind.SAGA_FAIL})
#: A call's recorded safety, in words: (read only, idempotent).
_SAFETY = {
    (True, True): "read-only, idempotent",
    (True, False): "read-only",
    (False, True): "idempotent",
    (False, False): "side effect",
}


def _event_of(record: Record, run: _RunSpans) -> tuple[str, Attributes] | None:
    """What span event a record is, if any (model turns and results are spans; the header nothing)."""
    name, kind = record.name, record.kind
    if record.tombstone is not None:
        return "agenttui.redacted", {}
    if record.unreadable:
        return "agenttui.unreadable", {"agenttui.why": printable(record.unreadable)}
    if record.is_header or kind == StepKind.MODEL or (kind in _RESULT_KINDS and record.tool_use_id):
        return None
    if kind == StepKind.ATTEMPT:
        attributes: Attributes = {c.TOOL_CALL_ID: printable_id(record.tool_use_id)} if record.tool_use_id else {}
        if record.tool_use_id and record.tool_use_id not in run.results and not _voided(record, run.names_held):
            attributes["agenttui.outcome"] = "unknown"
        return "agenttui.attempt", attributes
    if kind == StepKind.NOT_STARTED:
        return "agenttui.attempt.voided", {c.TOOL_CALL_ID: printable_id(record.tool_use_id)}
    if kind == StepKind.APPROVAL:
        attributes = {"agenttui.approval.decision": "approved" if record.approved else "denied"}
        if record.tool_use_id:
            attributes[c.TOOL_CALL_ID] = printable_id(record.tool_use_id)
        if record.approver:
            attributes["agenttui.approver"] = printable(record.approver)
        return "agenttui.approval", attributes
    if kind == StepKind.SIGNAL:
        return "agenttui.signal", _with_payload(run, record, {})
    for prefix, event in _VALUE_EVENTS:
        if name.startswith(prefix):
            return event, _value_attributes(run, record, prefix)
    if kind == StepKind.VALUE:
        return "agenttui.step", _with_payload(run, record, {})
    return "agenttui.record", {"agenttui.kind": printable(kind)}


#: Value records by their name's prefix, and the event each is (the first prefix that matches).
_VALUE_EVENTS = (
    (keys.RUN_START, "agenttui.run.started"),
    (keys.RUN_COMPLETE, "agenttui.run.completed"),
    (keys.RUN_ABORTED, "agenttui.run.aborted"),
    (keys.RUN_CANCELLED, "agenttui.run.cancelled"),
    (keys.RUN_CANCEL_REQUESTED, "agenttui.run.cancel_requested"),
    ("run:limits:", "agenttui.run.limits_amended"),
    ("timer:", "agenttui.timer"),
    ("interrupt:", "agenttui.interrupt.answered"),
    ("approval-tally:", "agenttui.approval.tally"),
    ("await-timeout:", "agenttui.await.timeout"),
    ("await-resolved:", "agenttui.await.resolved"),
    ("@spend/", "agenttui.request.failed"),
    ("@spend-late/", "agenttui.request.late"),
    (FORK_ORIGIN, "agenttui.fork.origin"),
)


def _value_attributes(run: _RunSpans, record: Record, prefix: str) -> Attributes:
    attributes: Attributes = {}
    if prefix.endswith(":") and len(record.name) > len(prefix):
        attributes["agenttui.name"] = printable_id(record.name[len(prefix) :])
    if prefix in (keys.RUN_ABORTED, keys.RUN_CANCELLED, keys.RUN_CANCEL_REQUESTED):
        reason = end_reason(record)
        if reason:
            attributes["agenttui.reason"] = printable(reason)
    elif prefix == "timer:":
        wake = json_value(record.result)
        if isinstance(wake, str):
            attributes["agenttui.timer.wake_at"] = printable(wake)
    elif prefix in ("@spend/", "@spend-late/") and record.discarded_usage:
        attributes[c.DISCARDED_TOKENS] = record.discarded_usage.total
    elif prefix == "approval-tally:":
        attributes["agenttui.approval.decision"] = "approved" if tally_approved(record) else "denied"
    if prefix in ("interrupt:", "await-resolved:"):
        return _with_payload(run, record, attributes)
    return attributes


def _with_payload(run: _RunSpans, record: Record, attributes: Attributes) -> Attributes:
    """``attributes`` with the record's value, when content is asked for."""
    if run.content and record.result is not None:
        attributes["agenttui.value"] = _json(json_value(record.result))
    return attributes


def _voided(marker: Record, names: Collection[str]) -> bool:
    return bool(marker.claim) and keys.not_started_key(marker.claim, marker.name) in names


def _tool_error(record: Record) -> str | None:
    """A failed call's ``error.type``: why it failed, in a word (None: it did not)."""
    if record.kind == StepKind.SAGA_FAIL:
        return "outcome_unknown" if record.outcome_unknown else "saga_failed"
    if not record.is_error:
        return None
    return "denied" if json_value(record.result) == DENIED_TEXT else "tool_error"


def _run_error(status: RunStatus) -> str | None:
    if status.state in (RunState.ABORTED, RunState.UNREADABLE):
        return printable(f"{status.state.value}: {status.detail}" if status.detail else status.state.value)
    return None


def _replay_error(replay: ReplayOf) -> str | None:
    if replay.verdict in ("diverged", "refused"):
        return printable(f"{replay.verdict}: {replay.detail}" if replay.detail else replay.verdict)
    return None


def _put_cost(attributes: Attributes, cost: RunCost) -> None:
    total, own = cost.total, cost.own
    if (usd := dollars_json(total.total_cost)) is not None:
        attributes[c.COST] = usd
    if (usd := dollars_json(own.total_cost)) is not None:
        attributes[c.OWN_COST] = usd
    if total.unpriced:
        attributes[c.UNPRICED_MODELS] = tuple(printable(name) for name in sorted(total.unpriced))


def _fork_live_from(run: TracedRun) -> int | None:
    """A saved fork's first live turn (its turns from there on called a model), or one past its
    last turn when none was live. None for a run that is no fork."""
    held = {r.name: r for r in run.records if r.name in (keys.RUN_START, FORK_ORIGIN)}
    mark = fork_mark(held)
    if mark is None:
        return None
    turn = mark.live_from.removeprefix("@llm/")
    return int(turn) if turn.isdigit() else sum(1 for r in run.records if r.kind == StepKind.MODEL) + 1


# -- times ---------------------------------------------------------------------------------------


def _marker_times(records: Sequence[Record]) -> Iterable[int]:
    return (r.attempted_at for r in records if r.kind == StepKind.ATTEMPT and r.attempted_at > 0)


def _moments(records: Sequence[Record], fallback: Moment) -> list[Moment]:
    """Each record's time: its own (an attempt marker's), else the latest marker's before it,
    else the first marker's after it, else ``fallback``."""
    known = [r.attempted_at if r.kind == StepKind.ATTEMPT and r.attempted_at > 0 else 0 for r in records]
    after: list[int] = []
    latest = 0
    for ms in reversed(known):
        latest = ms or latest
        after.append(latest)
    after.reverse()
    moments = []
    before = 0
    for ms, next_known in zip(known, after, strict=True):
        if ms:
            before = max(before, ms)
            moments.append(Moment(ms * _NS, "recorded"))
        elif before:
            moments.append(Moment(before * _NS, "not before"))
        elif next_known:
            moments.append(Moment(next_known * _NS, "not after"))
        else:
            moments.append(fallback)
    return moments


# -- content -------------------------------------------------------------------------------------


def _json(value: Any) -> str:
    """A value as the one-line JSON text an attribute holds, inert."""
    return safe_json(value, indent=None)


def _message_json(message: Message, record: Record | None = None) -> dict[str, Any]:
    """A message in the conventions' shape: ``{"role", "parts": [...], "finish_reason"?}``."""
    out: dict[str, Any] = {"role": message.role, "parts": [_part_json(part) for part in message.parts]}
    if record is not None and record.finish:
        out["finish_reason"] = record.finish
    return out


def _part_json(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ReasoningPart):
        return {"type": "reasoning", "content": part.text}
    if isinstance(part, ToolUsePart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": json_value(part.args)}
    return {"type": getattr(part, "type", type(part).__name__.removesuffix("Part").lower())}
