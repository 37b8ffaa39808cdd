"""Flow steps: a run's journal as the chain of nodes its flowchart shows (format section 5.1).

One list, two outputs: ``mermaid_text`` writes the Mermaid text from it and ``Flowchart`` draws
the box art from it, so the two can never disagree about what a run did.
"""

from __future__ import annotations

import enum
from collections.abc import Container, Iterable, Sequence
from typing import NamedTuple, TypeAlias

from agenttui.journal.keys import sub_run_id
from agenttui.journal.record import Message, Record, StepKind, ToolUsePart
from agenttui.render.bulk import collector_paused

FAIL_MARK = "\u2717"  # ✗
OK_MARK = "\u2713"  # ✓


class FlowKind(enum.StrEnum):
    """What a node of the flowchart stands for."""

    USER = "user"
    LLM = "llm"
    TOOL = "tool"
    APPROVAL = "approval"
    STEP = "step"
    DONE = "done"
    UNFINISHED = "unfinished"
    """Where an unfinished run stands (halted on a call, awaiting approval...): the drawing's last
    node instead of ``done``. Mermaid has no such node: the SDK's text always ends in ``done``."""


class FlowStep(NamedTuple):
    """One node of a run's flowchart: a plain value, compared and hashed by its fields.

    A named tuple, not a frozen dataclass: a long run makes one per record, and a named tuple is
    built in 0.3 µs where a frozen dataclass takes 1.1 µs (it sets each field through
    ``object.__setattr__``). Being a tuple, it also unpacks, and equals a plain tuple of its fields.
    """

    kind: FlowKind
    label: str
    """The node's text exactly as ``RenderMermaid`` writes it, before entity encoding."""
    failed: bool = False
    """A tool result with ``is_error`` (denials included), a denied approval, or the end of a run
    stuck on a failure (``unfinished``)."""
    record_index: int | None = None
    """The record's index in the run's history (the header is index 0); None for start and done."""
    turn: int | None = None
    """The model turn (0-based count of model records) of an LLM node, or that requested a tool call."""
    parallel: bool = False
    """A tool call whose model turn requested several tool calls at once (drawn as a fan-out)."""
    tool_use_id: str = ""
    child_run_id: str | None = None
    """The run id of the sub-agent this tool call started, when the caller said it exists."""


START = FlowStep(FlowKind.USER, "user")
DONE = FlowStep(FlowKind.DONE, "done")
END_KINDS = frozenset((FlowKind.DONE, FlowKind.UNFINISHED))
"""The kinds of node a chart ends in: ``done``, or where an unfinished run stands."""
LLM_LABEL = "LLM"
APPROVED_LABEL = f"approved {OK_MARK}"
DENIED_LABEL = f"denied {FAIL_MARK}"
FAILED_SUFFIX = f" {FAIL_MARK}"
"""What a failed tool call's label ends with."""


_Call: TypeAlias = tuple[str, int | None, bool]
"""A tool call as its model turn requested it: its node's label, that turn, and whether the turn
made several calls. A plain tuple: one is made per call, and a named one takes 0.3 µs to build."""

_new = tuple.__new__
"""Builds a ``FlowStep`` from all eight fields in 0.17 µs, where ``FlowStep(...)`` takes 0.3 µs."""


class FlowTail:
    """Turns a run's records into flow steps one at a time, in history order, as a live tail reads them.

    ``run_id`` and ``sub_runs`` (any container of run ids, such as the mapping of child steps a
    ``Flowchart`` is given) mark the tool calls that started a sub-agent. ``lookahead`` is the
    run's history from its first record, for a journal whose tool result comes before the model
    turn that requested the call: when a record names a call no model turn seen so far made, the
    later model turns are learnt from it. ``flow_steps`` passes the whole run. The SDK always
    journals a model turn before its tool results, so a live tail needs no lookahead.
    """

    def __init__(
        self,
        *,
        run_id: str | None = None,
        sub_runs: Container[str] = (),
        lookahead: Iterable[Record] = (),
    ) -> None:
        self._run_id = run_id
        self._sub_runs = sub_runs
        self._calls: dict[str, _Call] = {}
        # One string per distinct label, shared by every node that shows it:
        self._labels: dict[str, str] = {}  # tool name -> "tool: <name>"
        self._failed_labels: dict[str, str] = {}  # "tool: <name>" -> "tool: <name> ✗"
        self._turn = 0
        self._index = 0
        self._learnt = 0  # model turns whose calls are known already
        self._lookahead: Iterable[Record] | None = lookahead  # None once read

    def step(self, record: Record) -> FlowStep | None:
        """The node for the next record of the history, or None for a record the chart skips."""
        steps = self.steps((record,))
        return steps[0] if steps else None

    def steps(self, records: Iterable[Record]) -> list[FlowStep]:
        """The nodes for the next records of the history, skipped records left out."""
        # This runs once per record, 100,000 times for a long run: the rules for model turns and
        # tool results are inline, over locals, since a method call per record costs a good part.
        out: list[FlowStep] = []
        add = out.append
        calls, run_id = self._calls, self._run_id
        index, turn = self._index - 1, self._turn
        with collector_paused():  # a long run's nodes are many objects, all kept
            try:
                for record in records:
                    index += 1
                    if record.unreadable or record.tombstone is not None:
                        continue
                    kind = record.kind
                    if kind == _MODEL:
                        if turn == self._learnt:
                            self._learn(turn, record.message)
                        add(_new(FlowStep, (_LLM, LLM_LABEL, False, index, turn, False, "", None)))
                        turn += 1
                    elif kind == _TOOL_RESULT:
                        call_id, failed = record.tool_use_id, record.is_error
                        label, call_turn, parallel = calls.get(call_id) or self._call_not_seen(call_id)
                        if failed:
                            label = self._failed_label(label)
                        child = self._child(run_id, call_id) if run_id is not None and call_id else None
                        add(_new(FlowStep, (_TOOL, label, failed, index, call_turn, parallel, call_id, child)))
                    elif kind == _APPROVAL:
                        call_id, approved = record.tool_use_id, record.approved
                        call_turn = (calls.get(call_id) or self._call_not_seen(call_id))[1]
                        label = APPROVED_LABEL if approved else DENIED_LABEL
                        add(FlowStep(_APPROVAL_NODE, label, not approved, index, call_turn, False, call_id))
                    elif kind == _VALUE:
                        add(FlowStep(_STEP, "step: " + record.name, False, index))
                    # attempt, header, signal, saga_fail, not_started and unknown kinds are no node.
            finally:
                self._index, self._turn = index + 1, turn
        return out

    def _learn(self, turn: int, message: Message | None) -> None:
        """Remember the tool calls of model turn ``turn``, the next one; the first turn naming an id wins."""
        self._learnt += 1
        if message is None:
            return
        uses = [part for part in message.parts if isinstance(part, ToolUsePart)]
        calls, labels, parallel = self._calls, self._labels, len(uses) > 1
        for use in uses:
            if use.id not in calls:
                name = use.name or use.id  # a result names a nameless call by its id
                calls[use.id] = (labels.get(name) or self._tool_label(name), turn, parallel)

    def _call_not_seen(self, call_id: str) -> _Call:
        """A call no model turn seen so far made: learnt from the rest of the lookahead, else a stand-in."""
        if self._lookahead is not None:
            seen = 0
            for record in self._lookahead:
                if record.kind == _MODEL and not record.unreadable and record.tombstone is None:
                    if seen == self._learnt:
                        self._learn(seen, record.message)
                    seen += 1
            self._lookahead = None
            call = self._calls.get(call_id)
            if call is not None:
                return call
        # Not remembered: a model turn yet to come may still make it.
        return (self._labels.get(call_id) or self._tool_label(call_id), None, False)

    def _tool_label(self, name: str) -> str:
        return self._labels.setdefault(name, "tool: " + name)

    def _failed_label(self, label: str) -> str:
        return self._failed_labels.get(label) or self._failed_labels.setdefault(label, label + FAILED_SUFFIX)

    def _child(self, run_id: str, call_id: str) -> str | None:
        """The sub-run this call started, if the caller said it exists."""
        candidate = sub_run_id(run_id, call_id)
        return candidate if candidate in self._sub_runs else None


# Enum attribute lookups cost ~0.3 µs each: a good part of the time per record on 100,000 of them.
_MODEL, _TOOL_RESULT, _APPROVAL, _VALUE = StepKind.MODEL, StepKind.TOOL_RESULT, StepKind.APPROVAL, StepKind.VALUE
_LLM, _TOOL, _APPROVAL_NODE, _STEP = FlowKind.LLM, FlowKind.TOOL, FlowKind.APPROVAL, FlowKind.STEP


def unfinished(label: str, *, failed: bool = False) -> FlowStep:
    """The node an unfinished run's drawing ends in, saying where it stands.

    ``failed``: stuck on a failure (halted on a call whose outcome is unknown, a replay that
    diverged), drawn as a failure is. What the label says is the caller's to decide from the
    run's status (``runs.chart_end``): render reads no store.
    """
    return FlowStep(FlowKind.UNFINISHED, label, failed=failed)


def flow_steps(
    records: Sequence[Record], *, run_id: str | None = None, sub_runs: Container[str] = (), end: FlowStep = DONE
) -> list[FlowStep]:
    """The nodes of a run's flowchart: ``START``, one per drawn record, then ``end`` (``DONE``).

    ``records`` is the run's history, header included. The rules are ``RenderMermaid``'s
    (format section 5.1); see ``FlowTail`` for ``run_id`` and ``sub_runs``. ``end`` is the last
    node the terminal drawing shows (``unfinished``); Mermaid text always ends in ``done``.
    """
    tail = FlowTail(run_id=run_id, sub_runs=sub_runs, lookahead=records)
    return [START, *tail.steps(records), end]
