"""A replay session: re-drive a recorded run offline, one model turn at a time.

The agent loop runs against ``replay(store, run_id)`` into a fresh in-memory store, with the
run's recorded input. Tools come from the recording (each call returns the result the journal
holds; a call it never saw is a divergence) or from the user's code (an ``AgentSetup``). Human
decisions (approvals, answers) and journaled wake times are inputs, not outputs: they are copied
into the fresh store first, so the replay goes where the original went. Nothing is ever written
to the store the recording is read from.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from agenttui.agent.events import AgentEvent, AssistantTurn, Finished, TurnStarted
from agenttui.agent.factory import AgentSetup
from agenttui.agent.loop import Agent
from agenttui.agent.pauses import RunPaused
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety
from agenttui.errors import AgentTuiError, RunNotFoundError
from agenttui.journal import keys
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record, StepKind
from agenttui.render.diff import JournalDiff, diff_journals
from agenttui.replay.model import NoRecordedOutput, replay
from agenttui.stores.base import Store
from agenttui.stores.memory import MemStore

#: Records a replay copies from the recording before it starts: decisions made by people, and
#: wake times, which a replay must see as the original did.
_INPUT_PREFIXES = ("approval:", "approval-tally:", "interrupt:", "timer:", "signal:")


class ReplayDiverged(RunPaused):
    """The replayed run left its recording: a call the journal never saw."""

    title = "Replay diverged"

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(run_id, reason)
        self.reason = reason


class ReplayState(enum.StrEnum):
    READY = "ready"
    RUNNING = "running"
    FINISHED = "finished"
    DIVERGED = "diverged"
    PAUSED = "paused"
    FAILED = "failed"


class RecordingEnded(RunPaused):
    """The replay reached a call the recording has no result for: where the original run stopped."""

    title = "End of recording"


def recorded_tools(records: Sequence[Record], start: RunStart) -> list[Tool]:
    """Stand-ins for the recording's tools: each call returns the recorded result, verbatim.

    Each stand-in keeps its tool's recorded policy (gates, retry safety), so the replay writes the
    same approvals checks and attempt markers the original did. The tools come in ``run:start``'s
    order, then any other tool the recording called.
    """
    results = {r.tool_use_id: r for r in records if r.kind == StepKind.TOOL_RESULT}
    calls = {call.id: call.name for r in records if r.kind == StepKind.MODEL and r.message for call in r.message.tool_uses}
    recorded_names = [name for name, _ in start.tools]
    names = recorded_names + sorted(set(calls.values()) - set(recorded_names))

    def stand_in(name: str) -> Tool:
        async def recorded(ctx: ToolContext, args: dict) -> ToolOutput:
            record = results.get(ctx.tool_use_id)
            if record is not None:
                return ToolOutput(None, is_error=record.is_error, usage=record.usage, raw=record.result or b"null")
            if ctx.tool_use_id in calls:
                raise RecordingEnded(ctx.run_id, f"the recording ends here: call {ctx.tool_use_id} ({name}) has no result")
            raise ReplayDiverged(ctx.run_id, f"call {ctx.tool_use_id} ({name}) was never made in the recording")

        # A tool run:start does not describe has no effect a stand-in could guard: read-only.
        safety = start.policy(name) or ToolSafety(read_only=True)
        return Tool(name, recorded, f"recorded results of {name}", None, safety)

    return [stand_in(name) for name in names]


@dataclass
class ReplayProgress:
    """Where the session is: turns replayed so far, of how many recorded, and the outcome."""

    turn: int = 0
    recorded_turns: int = 0
    state: ReplayState = ReplayState.READY
    reason: str = ""
    events: list[AgentEvent] = field(default_factory=list)


class ReplaySession:
    """Steps a recorded run through the agent loop again. Create with ``await ReplaySession.open``."""

    def __init__(self, source: Store, run_id: str, recording: list[Record], start: RunStart, setup: AgentSetup | None) -> None:
        self.source = source
        self.run_id = run_id
        self.recording = recording
        self.start = start
        self.setup = setup
        self.progress = ReplayProgress(recorded_turns=sum(r.kind == StepKind.MODEL for r in recording))
        self.store: MemStore = MemStore()
        self._events: AsyncIterator[AgentEvent] | None = None
        self._held: AgentEvent | None = None
        self._replayed: list[Record] = []
        self._replayed_seq = -1

    @classmethod
    async def open(cls, source: Store, run_id: str, setup: AgentSetup | None = None) -> ReplaySession:
        """Read the recording; ``setup`` None replays with the recorded tool results."""
        recording = await Journal(source).history(run_id)
        if not recording:
            raise RunNotFoundError(run_id)
        start_record = next((r for r in recording if r.name == keys.RUN_START), None)
        if start_record is None:
            raise AgentTuiError(f"run {run_id!r} has no run:start record: there is no input to replay with")
        return cls(source, run_id, recording, RunStart.decode(start_record.result), setup)

    @property
    def mode(self) -> str:
        return "recorded tools" if self.setup is None else f"{self.setup.name} tools (your code)"

    async def _reset(self) -> None:
        if self._events is not None:
            await self._events.aclose()  # type: ignore[attr-defined]
        self.store = MemStore()
        self._replayed, self._replayed_seq = [], -1
        journal = Journal(self.store)
        for record in self.recording:
            if record.name.startswith(_INPUT_PREFIXES):
                await journal.append(self.run_id, record)
        model = await replay(self.source, self.run_id)
        agent = self._agent(model)
        self._events = agent.stream(self.run_id, self.start.input).__aiter__()
        self._held = None
        self.progress = ReplayProgress(recorded_turns=self.progress.recorded_turns, state=ReplayState.RUNNING)

    def _agent(self, model: object) -> Agent:
        settings = self.start.settings
        if self.setup is not None:
            return self.setup.agent(self.store, model)  # type: ignore[arg-type]
        return Agent(model, self.store, *recorded_tools(self.recording, self.start), name="agent",  # type: ignore[arg-type]
                     system_prompt=str(settings.get("system_prompt", "")), max_turns=int(settings.get("max_turns", 100_000)))  # fmt: skip

    @property
    def done(self) -> bool:
        return self.progress.state not in (ReplayState.READY, ReplayState.RUNNING)

    async def step(self, on_event: Callable[[AgentEvent], None] | None = None) -> list[AgentEvent]:
        """Replay one model turn and the tool calls it makes; return its events."""
        if self.progress.state == ReplayState.READY:
            await self._reset()
        if self.done or self._events is None:
            return []
        events: list[AgentEvent] = []
        if self._held is not None:
            events.append(self._held)
            if on_event:
                on_event(self._held)
            self._held = None
        try:
            async for event in self._events:
                if isinstance(event, TurnStarted) and any(isinstance(e, TurnStarted) for e in events):
                    self._held = event  # the next turn begins: stop before it
                    break
                events.append(event)
                if on_event:
                    on_event(event)
                if isinstance(event, Finished):
                    self.progress.state = ReplayState.FINISHED
            else:
                if self.progress.state == ReplayState.RUNNING:
                    self.progress.state = ReplayState.FINISHED
        except NoRecordedOutput as exc:
            self.progress.state, self.progress.reason = ReplayState.DIVERGED, f"no recorded output: {exc.message}"
        except ReplayDiverged as exc:
            self.progress.state, self.progress.reason = ReplayState.DIVERGED, exc.reason
        except RecordingEnded as exc:
            self.progress.state, self.progress.reason = ReplayState.PAUSED, exc.message
        except RunPaused as exc:
            self.progress.state, self.progress.reason = ReplayState.PAUSED, exc.message
        except AgentTuiError as exc:
            self.progress.state, self.progress.reason = ReplayState.FAILED, exc.message
        # A turn counts once the model's message is in: a turn the recording lacks is no turn.
        if any(isinstance(e, AssistantTurn) for e in events):
            self.progress.turn += 1
        self.progress.events.extend(events)
        return events

    async def run_to_end(self, on_turn: Callable[[int], None] | None = None) -> ReplayProgress:
        """Replay until the run finishes, pauses or diverges."""
        while not self.done:
            await self.step()
            if on_turn:
                on_turn(self.progress.turn)
        return self.progress

    async def jump(self, turn: int) -> ReplayProgress:
        """Replay from the start up to ``turn`` turns (replay is deterministic: back is forward again)."""
        self.progress = ReplayProgress(recorded_turns=self.progress.recorded_turns)
        await self._reset()
        while self.progress.turn < turn and not self.done:
            await self.step()
        return self.progress

    async def back(self) -> ReplayProgress:
        return await self.jump(max(0, self.progress.turn - 1))

    async def replayed(self) -> list[Record]:
        """The replay's journal so far. Read incrementally: each step decodes only what it wrote."""
        async for entry, record in Journal(self.store).entries(self.run_id, after=self._replayed_seq):
            self._replayed.append(record)
            self._replayed_seq = entry.seq
        return list(self._replayed)

    async def diff(self) -> JournalDiff:
        """The recording against the replay so far."""
        return diff_journals(self.recording, await self.replayed(), right_partial=not self.done)

    async def aclose(self) -> None:
        if self._events is not None:
            await self._events.aclose()  # type: ignore[attr-defined]
