"""The agent loop: model turn, tool calls, repeat; every step journaled, every re-drive a resume.

What one run journals, in order (the same names and kinds a Go Bide run writes):
``@journal``, ``run:start``, then per turn ``@llm/<n>`` and for each call it makes
(``approval:<c>`` by a human,) (``attempt:tool:<c>`` for a non-retry-safe tool,) ``tool:<c>``;
finally ``run:complete``. Driving a run id again resumes it: recorded steps are replayed from the
journal, never executed twice.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from agenttui.agent.events import (
    AgentEvent,
    AssistantTurn,
    Finished,
    ModelEvent,
    ToolCompleted,
    ToolStarted,
    TurnStarted,
)
from agenttui.agent.model import Model, ModelRequest, TurnAssembler, request_digests
from agenttui.agent.pauses import PendingApproval, ResumeHalt, RollbackRequested, RunEnded, tally_approved
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import DENIED_TEXT, Tool, ToolContext, ToolOutput, ToolSafety
from agenttui.errors import AgentTuiError
from agenttui.journal import keys
from agenttui.journal.codec import decode_json, encode_record
from agenttui.journal.journal import Journal
from agenttui.journal.record import Message, Record, StepKind, ToolResultPart, ToolUsePart, Usage
from agenttui.stores.base import Store


class TurnLimitExceeded(AgentTuiError):
    title = "Turn limit"


class UnreadableJournal(AgentTuiError):
    """A run holding a record that cannot be decoded cannot be driven safely."""

    title = "Unreadable journal"


@dataclass(frozen=True, slots=True)
class Result:
    """A run's telemetry envelope; in memory only, never journaled."""

    message: Message
    usage: Usage
    """Sum over every model call of the run, sub-runs included."""
    turns: int
    """Live model turns of this invocation; replayed turns are not counted."""
    duration: float
    run_id: str


@dataclass(slots=True)
class _Drive:
    """State of one invocation of a run."""

    run_id: str
    recorded: dict[str, Record]
    start: RunStart | None = None
    """The run's ``run:start``, read or written before the first turn: its policies are the floor."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class Agent:
    """An agent: a model, a store to journal into, and tools.

    ``clock`` is what durable sleeps and attempt markers read (inject one in tests).
    """

    takes_redacted_results = False
    """Whether a call's result that a redaction replaced (a tombstone under ``tool:<c>``) is taken
    as the call's outcome, as the store holds it. Off, a run holding a tombstone is refused, as
    the SDK refuses it (the run is over); a replay turns it on to re-drive the recorded turns."""

    recorded_policy_is_floor = True
    """Whether each call runs under the stricter of its tool's policy and the one ``run:start``
    recorded for it (``ToolSafety.at_least``): whoever drives a run, with whatever factory, a tool
    the run gated never runs without its decision. A replay, which runs nothing, compares yours."""

    def __init__(
        self,
        model: Model,
        store: Store,
        *tools: Tool,
        name: str = "agent",
        system_prompt: str = "",
        max_turns: int = 100,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.name = name
        self.model = model
        self.store = store
        self.journal = Journal(store)
        self.tools = {t.name: t for t in tools}
        self._specs = tuple(t.spec for t in tools)
        self.system_prompt = system_prompt
        self._prompt_digest, self._tools_digest = request_digests(system_prompt, self._specs)
        self.max_turns = max_turns
        self.clock = clock

    # -- entry points ------------------------------------------------------------------------

    async def run(self, run_id: str, input: str | Message) -> Message:
        """Drive the run to its answer (or a pause, raised) and return the final message."""
        async for event in self.stream(run_id, input):
            if isinstance(event, Finished):
                return event.message
        raise AssertionError("a run's stream ends with Finished or raises")

    async def run_result(self, run_id: str, input: str | Message) -> Result:
        started = time.monotonic()
        live_turns = 0
        answer = Message.assistant()
        async for event in self.stream(run_id, input):
            if isinstance(event, TurnStarted):
                live_turns += 1
            elif isinstance(event, Finished):
                answer = event.message
        usage = await run_usage(self.journal, run_id)
        return Result(answer, usage, live_turns, time.monotonic() - started, run_id)

    async def stream(self, run_id: str, input: str | Message) -> AsyncGenerator[AgentEvent, None]:
        """The run's events as it goes; replayed turns re-emit ``AssistantTurn(replayed=True)``."""
        history = await self.journal.history(run_id)
        if bad := next((r for r in history if r.unreadable or (r.tombstone and not self._takes(r))), None):
            raise UnreadableJournal(f"run {run_id!r} holds an unreadable or redacted record ({bad.name})")
        drive = _Drive(run_id, {r.name: r for r in history})
        end = keys.first_end_marker(r.name for r in history)
        if end is not None and end != keys.RUN_COMPLETE:
            reason = decode_json(drive.recorded[end].result) if drive.recorded[end].result else ""
            raise RunEnded(run_id, end, reason.get("reason", "") if isinstance(reason, dict) else str(reason))
        if keys.RUN_CANCEL_REQUESTED in drive.recorded:
            raise RollbackRequested(run_id)
        start = drive.start = await self._start(drive, input)
        messages: list[Message] = [start.input]
        for turn in range(self.max_turns + 1):
            if turn == self.max_turns:
                raise TurnLimitExceeded(f"run {run_id!r} reached its limit of {self.max_turns} turns")
            message = None
            async for event in self._model_turn(drive, turn, messages):
                if isinstance(event, AssistantTurn):
                    message = event.message
                yield event
            assert message is not None
            messages.append(message)
            if not message.tool_uses:
                await self.journal.append(run_id, Record(keys.RUN_COMPLETE, StepKind.VALUE))
                yield Finished(run_id, message)
                return
            results: list[ToolResultPart] = []
            for call in message.tool_uses:
                async for event in self._tool_call(drive, call):
                    if isinstance(event, ToolCompleted):
                        results.append(ToolResultPart(event.tool_use_id, event.result, event.is_error))
                    yield event
            messages.append(Message("tool", tuple(results)))

    # -- steps -------------------------------------------------------------------------------

    async def _start(self, drive: _Drive, input: str | Message) -> RunStart:
        if (recorded := drive.recorded.get(keys.RUN_START)) is not None:
            return RunStart.decode(recorded.result)  # a resume: the recorded input wins
        start = RunStart(
            Message.user(input) if isinstance(input, str) else input,
            settings={
                "max_turns": self.max_turns,
                **({"system_prompt": self.system_prompt} if self.system_prompt else {}),
            },
            policies={t.name: t.safety for t in self.tools.values()},
        )
        record = await self.journal.append(drive.run_id, Record(keys.RUN_START, StepKind.VALUE, result=start.encode()))
        return RunStart.decode(record.result)

    async def _model_turn(self, drive: _Drive, turn: int, messages: list[Message]) -> AsyncIterator[AgentEvent]:
        key = keys.llm_key(turn)
        if (recorded := drive.recorded.get(key)) is not None:
            yield AssistantTurn(drive.run_id, turn, recorded.message or Message.assistant(), replayed=True)
            return
        if await self.journal.get(drive.run_id, keys.RUN_CANCELLED) is not None:
            raise RunEnded(drive.run_id, keys.RUN_CANCELLED)
        yield TurnStarted(drive.run_id, turn)
        assembler = TurnAssembler()
        request = ModelRequest(drive.run_id, turn, tuple(messages), self._specs, self.system_prompt, self.name)
        async for delta in self.model.stream(request):
            assembler.add(delta)
            yield ModelEvent(drive.run_id, turn, delta)
        message = assembler.message()
        finish = assembler.finish
        record = Record(
            key,
            StepKind.MODEL,
            message=message,
            usage=finish.usage if finish else None,
            finish=finish.finish if finish else ("tool_use" if message.tool_uses else "stop"),
            raw_finish=finish.raw_finish if finish else "",
            model=finish.model if finish else None,
            discarded_usage=finish.discarded_usage if finish else None,
            prompt_digest=self._prompt_digest,
            tools_digest=self._tools_digest,
        )
        winner = await self.journal.append(drive.run_id, record)
        drive.recorded[key] = winner
        # Another driver may have recorded this turn first: its message is the run's truth.
        yield AssistantTurn(drive.run_id, turn, winner.message or message, replayed=False)

    async def _tool_call(self, drive: _Drive, call: ToolUsePart) -> AsyncIterator[AgentEvent]:
        run_id, key = drive.run_id, keys.tool_key(call.id)
        if (recorded := drive.recorded.get(key)) is not None:
            yield self._completed(run_id, call, recorded, replayed=True)
            return
        # A run cancelled since the model asked for this call must not fire it.
        if await self.journal.get(run_id, keys.RUN_CANCELLED) is not None:
            raise RunEnded(run_id, keys.RUN_CANCELLED)
        tool = self.tools.get(call.name)
        safety = self._policy(drive, call, tool)
        if safety is not None and safety.needs_approval:
            approved = await self._decision(run_id, call.id, safety)
            if approved is None:
                raise PendingApproval(run_id, call.id, call.name, call.args or b"{}")
            if not approved:
                output = tool.denied(call.id) if tool is not None else ToolOutput(DENIED_TEXT, is_error=True)
                denial = _result_record(key, call.id, output, safety)
                recorded = drive.recorded[key] = await self.journal.append(run_id, denial)
                yield self._completed(run_id, call, recorded, replayed=False)
                return
        if safety is not None and not safety.retry_safe:
            await self._mark_attempt(drive, call)
        yield ToolStarted(run_id, call.id, call.name, call.args or b"{}")

        async def execute() -> Record:
            if tool is None:
                return _result_record(key, call.id, ToolOutput(f"unknown tool: {call.name}", is_error=True), None)
            output = await tool.run(ToolContext(run_id, call.id, call.name, call.args or b"{}", self))
            return _result_record(key, call.id, output, safety)

        recorded = drive.recorded[key] = await self.journal.do(run_id, key, execute)
        yield self._completed(run_id, call, recorded, replayed=False)

    def _policy(self, drive: _Drive, call: ToolUsePart, tool: Tool | None) -> ToolSafety | None:
        """The policy ``call`` runs under: its tool's, no looser than the run recorded (a tool
        this agent lacks keeps the recorded gate: its call is not settled before its decision)."""
        declared = tool.safety_for(call.id) if tool is not None else None
        recorded = drive.start.policy(call.name) if self.recorded_policy_is_floor and drive.start else None
        if declared is None:
            return recorded
        return declared.at_least(recorded)

    async def _decision(self, run_id: str, tool_use_id: str, safety: ToolSafety) -> bool | None:
        """The human decision on a gated call: approved, denied, or None while there is none."""
        if safety.approval_tally:
            tally = await self.journal.get(run_id, keys.approval_tally_key(tool_use_id))
            return None if tally is None else tally_approved(tally)
        decision = await self.journal.get(run_id, keys.approval_key(tool_use_id))
        return None if decision is None else decision.approved

    async def _mark_attempt(self, drive: _Drive, call: ToolUsePart) -> None:
        """Journal an attempt marker, or halt if an earlier attempt's outcome is unknown."""
        generation, marker = await latest_attempt(self.journal, drive.run_id, call.id)
        if marker is not None and not await attempt_voided(self.journal, drive.run_id, marker):
            raise ResumeHalt(drive.run_id, call.id, call.name, marker.name)
        next_generation = 0 if marker is None else generation + 1
        name = keys.attempt_key(call.id) if next_generation == 0 else keys.retry_attempt_key(next_generation, call.id)
        mine = Record(name, StepKind.ATTEMPT, tool_use_id=call.id, attempted_at=int(self.clock().timestamp() * 1000),
                      claim=os.urandom(16).hex())  # fmt: skip
        _, won = await self.journal.insert(drive.run_id, mine)
        if not won:  # another driver is attempting the same call right now
            raise ResumeHalt(drive.run_id, call.id, call.name, name)

    def _takes(self, record: Record) -> bool:
        """Whether this drive takes ``record``, a tombstone, as a call's outcome."""
        return self.takes_redacted_results and record.name.startswith(keys.TOOL_PREFIX)

    @staticmethod
    def _completed(run_id: str, call: ToolUsePart, record: Record, *, replayed: bool) -> ToolCompleted:
        # A redacted result tells the model what the store holds: that it was redacted.
        result = encode_record(record) if record.tombstone is not None else record.result or b"null"
        return ToolCompleted(run_id, call.id, call.name, result, record.is_error, replayed)


def _result_record(key: str, tool_use_id: str, output: ToolOutput, safety: ToolSafety | None) -> Record:
    """The ``tool:<c>`` record of a call's output, with the policy it ran under."""
    if output.recorded is not None:
        return dataclasses.replace(output.recorded, name=key, salt=b"")
    return Record(
        key,
        StepKind.TOOL_RESULT,
        usage=output.usage,
        tool_use_id=tool_use_id,
        result=output.result_json(),
        is_error=output.is_error,
        safety=safety.recorded() if safety is not None else None,
        approval=safety.approval_policy() if safety is not None else None,
    )


async def latest_attempt(journal: Journal, run_id: str, tool_use_id: str) -> tuple[int, Record | None]:
    """The newest attempt marker of a call and its generation (0 for ``attempt:tool:<c>``)."""
    latest: tuple[int, Record | None] = (0, None)
    generation = 0
    while True:
        name = keys.attempt_key(tool_use_id) if generation == 0 else keys.retry_attempt_key(generation, tool_use_id)
        marker = await journal.get(run_id, name)
        if marker is None:
            return latest
        latest = (generation, marker)
        generation += 1


async def attempt_voided(journal: Journal, run_id: str, marker: Record) -> bool:
    """Whether a ``not_started`` record says the marker's effect never fired."""
    return await journal.get(run_id, keys.not_started_key(marker.claim, marker.name)) is not None


async def run_usage(journal: Journal, run_id: str) -> Usage:
    """Every model call's usage, plus the sub-run usage tool results carry."""
    total = Usage()
    for record in await journal.history(run_id):
        if record.kind in (StepKind.MODEL, StepKind.TOOL_RESULT, StepKind.SAGA_FAIL) and record.usage:
            total += record.usage
    return total
