"""Flow steps: a run's journal as the chain of nodes its flowchart shows (format section 5.1).

One list, two outputs: ``mermaid_text`` writes the Mermaid text from it and ``Flowchart`` draws
the box art from it, so the two can never disagree about what a run did.
"""

from __future__ import annotations

import enum
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass

from agenttui.journal.keys import sub_run_id
from agenttui.journal.record import Message, Record, StepKind

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


@dataclass(frozen=True, slots=True)
class FlowStep:
    """One node of a run's flowchart."""

    kind: FlowKind
    label: str
    """The node's text exactly as ``RenderMermaid`` writes it, before entity encoding."""
    failed: bool = False
    """A tool result with ``is_error`` (denials included), or a denied approval."""
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


@dataclass(frozen=True, slots=True)
class _Call:
    """A tool call as its model turn requested it."""

    name: str
    turn: int
    parallel: bool


class FlowTail:
    """Turns a run's records into flow steps one at a time, in history order, as a live tail reads them.

    ``run_id`` and ``sub_runs`` (any container of run ids, such as the mapping of child steps a
    ``Flowchart`` is given) mark the tool calls that started a sub-agent. ``lookahead`` holds
    records whose tool calls are learnt up front: ``flow_steps`` passes the whole run, so that a
    tool result is named even in a journal whose model turn comes after it. The SDK always
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
        self._turn = 0
        self._index = 0
        self._learnt = 0  # model turns whose calls are known already
        for message in (r.message for r in lookahead if _is_model(r)):
            self._learn(message)

    def step(self, record: Record) -> FlowStep | None:
        """The node for the next record of the history, or None for a record the chart skips."""
        index = self._index
        self._index += 1
        if _is_model(record):
            turn = self._turn
            self._turn += 1
            if turn == self._learnt:
                self._learn(record.message)
            return FlowStep(_LLM, "LLM", record_index=index, turn=turn)
        if record.unreadable or record.tombstone is not None:
            return None
        if record.kind == _TOOL_RESULT:
            return self._tool_step(record, index)
        if record.kind == _APPROVAL:
            call = self._calls.get(record.tool_use_id)
            label = f"approved {OK_MARK}" if record.approved else f"denied {FAIL_MARK}"
            return FlowStep(
                _APPROVAL_NODE, label, failed=not record.approved, record_index=index,
                turn=call.turn if call else None, tool_use_id=record.tool_use_id,
            )  # fmt: skip
        if record.kind == _VALUE:
            return FlowStep(_STEP, "step: " + record.name, record_index=index)
        # attempt, header, signal, saga_fail, not_started and unknown kinds are no node.
        return None

    def steps(self, records: Iterable[Record]) -> list[FlowStep]:
        """The nodes for the next records of the history, skipped records left out."""
        return [step for record in records if (step := self.step(record)) is not None]

    def _tool_step(self, record: Record, index: int) -> FlowStep:
        call = self._calls.get(record.tool_use_id)
        name = call.name if call is not None and call.name else record.tool_use_id
        label = "tool: " + name + (f" {FAIL_MARK}" if record.is_error else "")
        child = None
        if self._run_id is not None and record.tool_use_id:
            candidate = sub_run_id(self._run_id, record.tool_use_id)
            child = candidate if candidate in self._sub_runs else None
        return FlowStep(
            _TOOL, label, failed=record.is_error, record_index=index,
            turn=call.turn if call else None, parallel=call.parallel if call else False,
            tool_use_id=record.tool_use_id, child_run_id=child,
        )  # fmt: skip

    def _learn(self, message: Message | None) -> None:
        """Remember the tool calls of the next model turn; the first turn naming an id wins."""
        turn = self._learnt
        self._learnt += 1
        uses = message.tool_uses if message is not None else ()
        for use in uses:
            self._calls.setdefault(use.id, _Call(use.name, turn, len(uses) > 1))


# Enum attribute lookups cost ~0.3 µs each: a good part of the time per record on 100,000 of them.
_MODEL, _TOOL_RESULT, _APPROVAL, _VALUE = StepKind.MODEL, StepKind.TOOL_RESULT, StepKind.APPROVAL, StepKind.VALUE
_LLM, _TOOL, _APPROVAL_NODE, _STEP = FlowKind.LLM, FlowKind.TOOL, FlowKind.APPROVAL, FlowKind.STEP


def _is_model(record: Record) -> bool:
    return record.kind == _MODEL and not record.unreadable and record.tombstone is None


def flow_steps(
    records: Sequence[Record], *, run_id: str | None = None, sub_runs: Container[str] = ()
) -> list[FlowStep]:
    """The nodes of a run's flowchart: ``START``, one per drawn record, then ``DONE``.

    ``records`` is the run's history, header included. The rules are ``RenderMermaid``'s
    (format section 5.1); see ``FlowTail`` for ``run_id`` and ``sub_runs``.
    """
    tail = FlowTail(run_id=run_id, sub_runs=sub_runs, lookahead=records)
    return [START, *tail.steps(records), DONE]
