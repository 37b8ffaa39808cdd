"""A replay session: re-drive a recorded run offline, one model turn at a time.

The agent loop runs against ``replay(store, run_id)`` into a ``ReplayStore``, with the run's
recorded input. Tools come from the recording (each call returns the outcome the journal holds)
or from the user's code (an ``AgentSetup``). People's decisions, answers, wake times and the
other inputs are fed from the recording as the replayed loop reaches them (``replay.feed``), so
the replay goes where the original went and its journal lists records in the recording's order.
Nothing is ever written to the store the recording is read from.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from agenttui.agent.events import AgentEvent, AssistantTurn, Finished, TurnStarted
from agenttui.agent.factory import AgentSetup
from agenttui.agent.loop import Agent, latest_attempt
from agenttui.agent.model import Model
from agenttui.agent.pauses import ResumeHalt, RunEnded, RunPaused
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety
from agenttui.errors import AgentTuiError, ConfigError, RunNotFoundError, StoreConnectionError, StoreError
from agenttui.journal import keys
from agenttui.journal.journal import decode_entry
from agenttui.journal.record import Message, Record, StepKind
from agenttui.journal.redact import Redactor
from agenttui.render.diff import JournalDiff, diff_journals
from agenttui.replay.breakpoints import Breakpoint, BreakpointCheck, BreakpointHit
from agenttui.replay.feed import ReplayStore
from agenttui.replay.legacy import LegacyKeys
from agenttui.replay.model import NoRecordedOutput, recorded_model
from agenttui.replay.verdict import (
    REQUEST_DIGESTS,
    Divergence,
    Verdict,
    VerdictKind,
    fed_results,
    refusal_reason,
    request_changes,
    without_request_digests,
)
from agenttui.runs.bundles import BundleManifest, read_manifest
from agenttui.runs.statuses.status import RunState, RunStatus, lease_row, status_of
from agenttui.stores.base import Entry, LeaseInfo, Store

#: How long a replay runs its recorded turns before it lets its event loop run others (seconds):
#: a quarter of a 60 Hz frame.
YIELD_EVERY = 0.004


class ReplayDiverged(RunPaused):
    """The replayed run left its recording: a call the journal never saw."""

    title = "Replay diverged"

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(run_id, reason)
        self.reason = reason


class Unanswerable(ReplayDiverged):
    """The replayed loop asked for something the recording holds no answer to: a fork's edit
    changed what the model was told, or which call it makes. Says which step, what was asked and
    what the recording holds."""

    title = "The recording cannot answer"

    def __init__(self, run_id: str, step: str, asked: str, holds: str) -> None:
        super().__init__(run_id, f"the recording cannot answer {step}: {asked}; {holds}")
        self.step, self.asked, self.holds = step, asked, holds


class ReplayState(enum.StrEnum):
    READY = "ready"
    RUNNING = "running"
    FINISHED = "finished"
    DIVERGED = "diverged"
    PAUSED = "paused"
    """The replay stopped where the recording stops: a pause, a halt, a cancellation, a crash."""
    FAILED = "failed"
    REFUSED = "refused"


class RecordingEnded(RunPaused):
    """The replay reached a call the recording has no result for: where the original run stopped."""

    title = "End of recording"


class DriveEnded(RunPaused):
    """The original drive stopped here (its process died after an attempt marker a person later
    voided); the replay ends this drive too and drives the run again, as the original was."""

    title = "Drive ended"


@dataclass(frozen=True)
class RecordedCalls:
    """What a recording shows of each tool call: its outcome, its attempt markers, its gate."""

    names: dict[str, str]
    """Call id to tool name, from the model turns."""
    outcomes: dict[str, Record]
    attempts: dict[str, int]
    """How many attempt markers (first and retries) each call has."""
    gates: dict[str, str]
    """``single`` or ``tally`` for each call a person had to approve."""
    stale: Mapping[str, Unanswerable] = field(default_factory=dict)
    """Calls whose recorded outcome answers another call (a fork changed the call): asked, they
    stop the replay with what is wrong."""

    @classmethod
    def of(cls, records: Sequence[Record]) -> RecordedCalls:
        names = {
            call.id: call.name
            for r in records
            if r.kind == StepKind.MODEL and r.message
            for call in r.message.tool_uses
        }
        outcomes = {
            r.tool_use_id: r for r in records if r.kind == StepKind.TOOL_RESULT and r.name.startswith(keys.TOOL_PREFIX)
        }
        # A result a redaction replaced keeps only its name: it answers the call its key names.
        by_key = {keys.tool_key(call_id): call_id for call_id in names}
        outcomes |= {by_key[r.name]: r for r in records if r.tombstone is not None and r.name in by_key}
        attempts: dict[str, int] = {}
        gates: dict[str, str] = {}
        for r in records:
            if r.kind == StepKind.ATTEMPT and keys.is_tool_attempt_key(r.name):
                attempts[r.tool_use_id] = attempts.get(r.tool_use_id, 0) + 1
            elif r.name.startswith("approval-tally:") or (r.kind == StepKind.APPROVAL and r.approver_alg):
                gates[r.tool_use_id or _tally_call(r, names)] = "tally"
            elif r.kind == StepKind.APPROVAL:
                gates.setdefault(r.tool_use_id, "single")
        for call_id, outcome in outcomes.items():
            if outcome.approval:
                gates.setdefault(call_id, "tally" if outcome.approval.need else "single")
        return cls(names, outcomes, attempts, gates)

    def safety(self, call_id: str, declared: ToolSafety | None) -> ToolSafety:
        """The policy a call ran under, as the recording shows it: an attempt marker means it
        was not retry-safe, a decision or an ``approval`` member that it was gated. A call the
        recording stops at keeps what agenttui's own ``run:start`` declared, if anything."""
        known = call_id in self.outcomes or call_id in self.attempts or call_id in self.gates
        if not known and declared is not None:
            return declared
        gate = self.gates.get(call_id, "")
        return ToolSafety(
            read_only=call_id not in self.attempts, needs_approval=bool(gate), approval_tally=gate == "tally"
        )


def _tally_call(record: Record, names: dict[str, str]) -> str:
    """The call an ``approval-tally:<enc id>`` record decides (its key holds the encoded id)."""
    encoded = record.name.partition(":")[2]
    return next((call_id for call_id in names if keys.encode_id(call_id) == encoded), encoded)


@dataclass(frozen=True, slots=True)
class RecordedTool(Tool):
    """A stand-in for a recorded tool: each call is served its recorded outcome, verbatim, under
    the policy the recording shows for it; it never runs anything."""

    calls: RecordedCalls | None = None
    declared: ToolSafety | None = None

    def safety_for(self, tool_use_id: str) -> ToolSafety:
        assert self.calls is not None
        return self.calls.safety(tool_use_id, self.declared)

    def denied(self, tool_use_id: str) -> ToolOutput:
        assert self.calls is not None
        recorded = self.calls.outcomes.get(tool_use_id)
        return ToolOutput(None, recorded=recorded) if recorded is not None else Tool.denied(self, tool_use_id)

    async def run(self, ctx: ToolContext) -> ToolOutput:
        assert self.calls is not None
        call_id = ctx.tool_use_id
        if (stale := self.calls.stale.get(call_id)) is not None:
            raise Unanswerable(ctx.run_id, stale.step, stale.asked, stale.holds)
        if call_id not in self.calls.names:
            raise ReplayDiverged(ctx.run_id, f"call {call_id} ({self.name}) was never made in the recording")
        # An attempt the recording goes on from (a later one is recorded) ended its drive there,
        # whether the call has a result or the recording stops at the last attempt.
        if call_id in self.calls.attempts:
            generation, _ = await latest_attempt(ctx.journal, ctx.run_id, call_id)
            if generation + 1 < self.calls.attempts[call_id]:
                raise DriveEnded(
                    ctx.run_id, f"the original drive of call {call_id} ({self.name}) stopped after attempt {generation}"
                )
        outcome = self.calls.outcomes.get(call_id)
        if outcome is None:
            raise RecordingEnded(ctx.run_id, f"the recording ends here: call {call_id} ({self.name}) has no result")
        return ToolOutput(None, recorded=outcome)


@dataclass(frozen=True, slots=True)
class ServedTool(RecordedTool):
    """One of your tools that is not read-only, served from the recording as a durable-execution
    replayer serves an activity: it runs under the policy your code declares (its attempt markers
    and gates are written, and count), and each call gets its recorded outcome instead of running."""

    def safety_for(self, tool_use_id: str) -> ToolSafety:
        if self._decided_not_run(tool_use_id):
            # The recording stops at this call, decided and never attempted (a run approved and
            # not yet re-driven): the replay stops there too, without a marker the original never wrote.
            return dataclasses.replace(self.safety, idempotent=True)
        return self.safety

    async def run(self, ctx: ToolContext) -> ToolOutput:
        assert self.calls is not None
        if self._decided_not_run(ctx.tool_use_id):
            # No outcome will show the call's gate: compare it with the recording's here.
            recorded, yours = self.calls.gates.get(ctx.tool_use_id, ""), _gate(self.safety)
            if recorded != yours:
                raise ReplayDiverged(ctx.run_id, f"another decision about call {ctx.tool_use_id} ({self.name}):"
                                     f" {_GATES[recorded]} in the recording, {_GATES[yours]} in your code")  # fmt: skip
        return await RecordedTool.run(self, ctx)  # a slotted dataclass has no zero-argument super()

    def _decided_not_run(self, call_id: str) -> bool:
        calls = self.calls
        assert calls is not None
        return call_id in calls.gates and call_id not in calls.outcomes and call_id not in calls.attempts


def _gate(safety: ToolSafety) -> str:
    """A policy's gate as ``RecordedCalls.gates`` names it."""
    return "tally" if safety.approval_tally else "single" if safety.needs_approval else ""


_GATES = {"": "ungated", "single": "gated on a person's approval", "tally": "gated on m-of-n approvals"}


def serve_side_effects(
    setup: AgentSetup,
    records: Sequence[Record],
    live: Collection[str] = (),
    *,
    calls: RecordedCalls | None = None,
    start: RunStart | None = None,
) -> tuple[AgentSetup, tuple[str, ...]]:
    """``setup`` with every tool that is not read-only (and not named in ``live``) served from the
    recording (``calls``, read from ``records`` unless given); and the names of the tools served.
    A replay never fires a side effect unasked: a tool runs for being read-only only where the
    run's ``start`` recorded it read-only too (or recorded no policy for it)."""
    calls = calls or RecordedCalls.of(records)
    tools: list[Tool] = []
    for tool in setup.tools:
        if read_only(tool, start) or tool.name in live:
            tools.append(tool)
        else:
            tools.append(ServedTool(tool.name, tool.fn, tool.description, tool.args_type, tool.safety, calls=calls))
    served = tuple(t.name for t in tools if isinstance(t, ServedTool))
    return dataclasses.replace(setup, tools=tools), served


def read_only(tool: Tool, start: RunStart | None) -> bool:
    """Whether ``tool`` is read-only by your code and by the run's recorded policy (``start``'s,
    where it records one): only then does a replay run it for real unasked."""
    return tool.safety.at_least(start.policy(tool.name) if start is not None else None).read_only


def recorded_tools(records: Sequence[Record], start: RunStart, calls: RecordedCalls | None = None) -> list[Tool]:
    """Stand-ins for the recording's tools: those ``run:start`` names, then any other tool called.
    ``calls`` is what they serve (read from ``records`` unless given)."""
    calls = calls or RecordedCalls.of(records)
    declared = list(dict.fromkeys([*start.policies, *start.tools]))
    names = declared + sorted(set(calls.names.values()) - set(declared))

    async def never_called(args: dict[str, Any]) -> None:  # RecordedTool.run serves every call
        raise AssertionError("a recorded tool is never run")

    return [
        RecordedTool(name, never_called, f"recorded results of {name}", calls=calls, declared=start.policy(name))
        for name in names
    ]


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redaction of the bundle a recording was read from, where it replaced values in the run."""

    redactor: Redactor
    """Every path the bundle redacted, applied to the replay's records as to the recording's."""
    paths: tuple[str, ...]
    """The paths that replaced a value in this run: what the verdict names."""

    @classmethod
    def of(cls, manifest: BundleManifest | None, run_id: str) -> Redaction | None:
        """The run's redaction by its source's manifest (``read_manifest``), if any."""
        if manifest is None or not (paths := manifest.redacted_in(run_id)):
            return None
        return cls(manifest.redactor(), paths)


@dataclass(frozen=True)
class RunRead:
    """What ``ReplaySession.open`` reads of a run in its source: its entries, its lease row (as
    ``lease_row`` reads it) and the source's bundle manifest. A suite reads them for a page of
    runs at once (``read_runs``); a session reads its own run's otherwise."""

    entries: Sequence[Entry]
    lease: LeaseInfo | None
    manifest: BundleManifest | None

    @classmethod
    async def of(cls, source: Store, run_id: str) -> RunRead:
        entries = [entry async for entry in source.load(run_id)]
        return cls(entries, await lease_row(source, run_id), await read_manifest(source))


async def read_runs(source: Store, run_ids: Sequence[str]) -> dict[str, RunRead]:
    """``RunRead.of`` each run, in three round trips for them all (one run at a time, a run's
    three reads were a twentieth of its replay). A run the store could not read at once, or whose
    entries need more than ``load_runs`` says (an id not stored as text), is left out: its
    session reads it itself, and says why it fails."""
    try:
        loaded = await source.load_runs(run_ids)
        roots = {keys.root_run_id(run_id) for run_id in run_ids}
        leases = await source.get_leases(roots) if source.IMPLEMENTS_LEASES else {}  # none: no lease row
        manifest = await read_manifest(source)
    except StoreConnectionError:
        raise
    except StoreError:
        return {}
    return {
        run_id: RunRead(entries, leases.get(keys.root_run_id(run_id)), manifest)
        for run_id, entries in loaded.items()
        if not any(entry.damage for entry in entries)
    }


@dataclass
class ReplayProgress:
    """Where the session is: turns replayed so far, of how many recorded, and the outcome."""

    turn: int = 0
    recorded_turns: int = 0
    state: ReplayState = ReplayState.READY
    reason: str = ""
    events: list[AgentEvent] = field(default_factory=list)
    breakpoint: BreakpointHit | None = None
    """The breakpoint the last ``run_to_end`` stopped at (the replay can go on from there)."""


class ReplaySession:
    """Steps a recorded run through the agent loop again. Create with ``await ReplaySession.open``."""

    def __init__(
        self, source: Store, run_id: str, recording: list[Record], start: RunStart, setup: AgentSetup | None, *,
        recorded_status: RunStatus, refusal: str = "", live_tools: Collection[str] = (),
        redaction: Redaction | None = None, input_given: bool = False,
    ) -> None:  # fmt: skip
        self.source = source
        self.run_id = run_id
        self.recording = recording
        self.start = start
        self.input_given = input_given
        """``start`` holds the input the caller gave: the journal (written before v0.8) has none."""
        self.legacy_keys = LegacyKeys.of(recording)
        """The recording's raw-id keys and the loop's for the same records (a journal before v0.8)."""
        self.loop_recording = self.legacy_keys.for_loop(recording) if self.legacy_keys else recording
        """The recording under the keys the loop reads and writes: what the replay is fed."""
        self.tombstones = () if refusal else fed_results(recording)
        """Tool results a redaction replaced: fed to the loop as the store holds them."""
        self._tombstoned = {r.name: r for r in recording if r.name in self.tombstones}
        self.served: tuple[str, ...] = ()
        """Your tools that are not read-only, served from the recording instead of running."""
        self.live: tuple[str, ...] = ()
        """Your tools that are not read-only and run for real, as asked (``live_tools``)."""
        self.calls = self._recorded_calls(self.loop_recording)
        """What the recorded tools serve: each call's outcome, markers and gate."""
        if setup is not None:
            setup, self.served = serve_side_effects(
                setup, self.loop_recording, live_tools, calls=self.calls, start=start
            )
            self.live = tuple(t.name for t in setup.tools if not read_only(t, start) and t.name in live_tools)
        self.setup = setup
        self.recorded_status = recorded_status
        """The recording's own status: where it stops, when it is unfinished."""
        self.refusal = refusal
        """Why the run cannot be replayed ("" when it can); a refused session never drives."""
        self.progress = ReplayProgress(recorded_turns=sum(r.kind == StepKind.MODEL for r in recording))
        if refusal:
            self.progress.state, self.progress.reason = ReplayState.REFUSED, refusal
        held = tuple(m for m in REQUEST_DIGESTS if any(getattr(r, m) for r in recording if r.kind == StepKind.MODEL))
        self.not_compared: tuple[str, ...] = (
            held if setup is None else tuple(m for m in REQUEST_DIGESTS if m not in held)
        )
        """Members of the recording this replay cannot judge, and so names: the digests of the
        prompt and tool list the model was sent, with recorded tools (they stand in for an agent
        whose prompt and tools are not here), or with your agent those the recording holds none
        of (it was written before agenttui recorded them); and the paths a bundle's export
        redacted in this run. With your agent, everything else it writes counts."""
        self.redaction = redaction
        """The recording comes from a redacted bundle: its paths are applied to both sides before
        they are compared, so a redacted value is never compared (and the verdict names them)."""
        if redaction is not None:
            self.not_compared += redaction.paths
        self.store = ReplayStore(run_id, self.loop_recording)
        self._agent: Agent | None = None
        self._events: AsyncGenerator[AgentEvent, None] | None = None
        self._held: AgentEvent | None = None
        self._replayed: list[Record] = []
        self._replayed_seq = -1
        self._reading = asyncio.Lock()
        """One reader of the replayed journal at a time: two would both append what they read."""

    @classmethod
    async def open(
        cls, source: Store, run_id: str, setup: AgentSetup | None = None, *, live_tools: Collection[str] = (),
        input: str | None = None, given: RunRead | None = None,
    ) -> ReplaySession:  # fmt: skip
        """Read the recording (``given``: already read, by ``read_runs``); ``setup`` None replays
        with the recorded tool results.

        With ``setup``, your tools run, except those not declared read-only: they are served from
        the recording, unless named in ``live_tools`` (then they run for real: the caller has asked
        a person first). The replay writes only into its own store, never the source.
        ``input`` is the run's input (the user's message) for a journal written before v0.8,
        which records none; without it such a run is refused.
        Raises ``RunNotFoundError`` for a run with no records, ``ConfigError`` for an ``input``
        given to a run that records its own. A run the loop cannot re-drive opens as a refused
        session (``refusal`` says why).
        """
        read = given if given is not None else await RunRead.of(source, run_id)
        recording = [decode_entry(entry) for entry in read.entries]
        if not recording:
            raise RunNotFoundError(run_id)
        start_record = next((r for r in recording if r.name == keys.RUN_START), None)
        if input is not None and start_record is not None:
            raise ConfigError(
                f"run {run_id!r} records its own input (run:start): --input is for journals written before v0.8,"
                " which record none"
            )

        status = status_of(run_id, recording, read.lease, forks=False)
        refusal = refusal_reason(run_id, recording, input_given=input is not None)
        if not refusal and status.state == RunState.UNREADABLE:
            refusal = f"the run is unreadable: {status.detail}"
        if start_record is None and input is not None:
            start = RunStart(Message.user(input))
        else:
            start = RunStart.decode(start_record.result if start_record else None)
        return cls(
            source, run_id, recording, start, setup, recorded_status=status, refusal=refusal, live_tools=live_tools,
            redaction=Redaction.of(read.manifest, run_id), input_given=start_record is None and input is not None,
        )  # fmt: skip

    @property
    def mode(self) -> str:
        if self.setup is None:
            return "recorded tools"
        # Which tools are live or served, the verdict and the status bar name; this stays short.
        return f"{self.setup.name} tools (your code, side effects {'LIVE' if self.live else 'served'})"

    async def _reset(self) -> None:
        if self._events is not None:
            await self._events.aclose()
        if not self.store.untouched:  # the one made with the session serves its first drive
            self.store = ReplayStore(self.run_id, self.loop_recording)
        self._replayed, self._replayed_seq = [], -1
        await self.store.feed_due()
        self._agent = self._build_agent(await self._model())
        self._events = self._drive()
        self._held = None
        self.progress = ReplayProgress(recorded_turns=self.progress.recorded_turns, state=ReplayState.RUNNING)

    def _recorded_calls(self, recording: Sequence[Record]) -> RecordedCalls:
        """What the recorded tools serve (a fork changes it)."""
        return RecordedCalls.of(recording)

    async def _model(self) -> Model:
        """The model the replayed loop asks (a fork's answers where the recording cannot)."""
        return recorded_model(self.source, self.run_id, self.recording)

    def _emitted(self, event: AgentEvent) -> AgentEvent:
        """An event of the replayed loop as the session reports it (a fork marks its live turns)."""
        return event

    def _drive(self) -> AsyncGenerator[AgentEvent, None]:
        assert self._agent is not None
        return self._agent.stream(self.run_id, self.start.input)

    def _build_agent(self, model: Model) -> Agent:
        settings = self.start.settings
        if self.setup is not None:
            agent = self.setup.agent(self.store, model)
        else:
            agent = Agent(model, self.store, *recorded_tools(self.loop_recording, self.start, self.calls), name="agent",
                          system_prompt=str(settings.get("system_prompt", "")), max_turns=int(settings.get("max_turns", 100_000)))  # fmt: skip
        agent.takes_redacted_results = True  # fed as the store holds them (tombstones)
        # A replay checks your code's policy against the recording's, so it drives under yours;
        # a tool that runs for real, as asked, runs under the recorded policy too.
        agent.recorded_policy_is_floor = bool(self.live)
        agent.journal = self.store.journal()  # what the loop writes is read back without decoding
        return agent

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

        def emit(event: AgentEvent) -> None:
            event = self._emitted(event)
            events.append(event)
            if on_event:
                on_event(event)

        if self._held is not None:
            emit(self._held)
            self._held = None
        # A recording of several drives (a crash, a person's resolution, a re-drive) is replayed
        # as several drives: where the original drive stopped after an attempt, or halted on one
        # a person then resolved, the replay drives again (a bounded number of times).
        drives_left = len(self.recording)
        while True:
            try:
                async for event in self._events:
                    if isinstance(event, TurnStarted) and any(isinstance(e, TurnStarted) for e in events):
                        self._held = event  # the next turn begins: stop before it
                        break
                    emit(event)
                    if isinstance(event, Finished):
                        self.progress.state = ReplayState.FINISHED
                else:
                    if self.progress.state == ReplayState.RUNNING:
                        self.progress.state = ReplayState.FINISHED
            except (DriveEnded, ResumeHalt) as exc:
                drives_left -= 1
                resolved = isinstance(exc, DriveEnded) or await self.store.adopt_resolution(exc.tool_use_id)
                if resolved and drives_left > 0:
                    self._events = self._drive()
                    continue
                self.progress.state, self.progress.reason = ReplayState.PAUSED, exc.message
            except NoRecordedOutput as exc:
                self._no_recorded_output(exc)
            except ReplayDiverged as exc:
                self.progress.state, self.progress.reason = ReplayState.DIVERGED, exc.reason
            except (RunPaused, RunEnded) as exc:
                self.progress.state, self.progress.reason = ReplayState.PAUSED, exc.message
            except AgentTuiError as exc:
                self.progress.state, self.progress.reason = ReplayState.FAILED, exc.message
            break
        # A turn counts once the model's message is in: a turn the recording lacks is no turn.
        if any(isinstance(e, AssistantTurn) for e in events):
            self.progress.turn += 1
        self.progress.events.extend(events)
        return events

    def _no_recorded_output(self, exc: NoRecordedOutput) -> None:
        """Asking for the turn after the last recorded one is where an unfinished recording stops
        (its run crashed or stalled before that turn); past a finished one, it is a divergence."""
        if exc.run_id == self.run_id and exc.turn == exc.recorded and not self.recorded_status.state.finished:
            self.progress.state = ReplayState.PAUSED
            self.progress.reason = f"the recording ends here: it has no model turn {exc.turn}"
        else:
            self.progress.state, self.progress.reason = ReplayState.DIVERGED, f"no recorded output: {exc.message}"

    async def run_to_end(
        self, on_turn: Callable[[int], None] | None = None, breakpoints: Sequence[Breakpoint] = ()
    ) -> ReplayProgress:
        """Replay until the run finishes, pauses or diverges, or a turn meets one of
        ``breakpoints`` (``progress.breakpoint`` says which; calling again goes on from there).
        ``on_turn`` is told after each turn; the events so far are in ``progress.events``."""
        self.progress.breakpoint = None
        await self._newly_replayed()
        checked = len(self._replayed)
        check = self.breakpoint_check(breakpoints) if breakpoints else None
        loop = asyncio.get_running_loop()
        yielded = loop.time()
        watched = on_turn is not None or check is not None
        while not self.done:
            events = await self.step()
            if on_turn:
                on_turn(self.progress.turn)
            # A recorded turn never waits on anything: give the loop it runs on a turn, so a
            # TUI's keys and paints are not held up for the whole replay: after each turn where
            # someone watches the turns (a TUI's frames and diff read between them), else every
            # few milliseconds (a turn of the event loop each recorded turn was 3-9% of run_to_end's CPU).
            if watched or loop.time() - yielded >= YIELD_EVERY:
                await asyncio.sleep(0)
                yielded = loop.time()
            if check is not None:
                # What the turn wrote is counted from where the last check stopped, not from what
                # this read returns: a reader of ``replayed`` between the two (the TUI's diff)
                # reads the same records first, and the breakpoint would miss them.
                await self._newly_replayed()
                written, checked = self._replayed[checked:], len(self._replayed)
                if hit := check.check(self.progress.turn - 1, events, written):
                    self.progress.breakpoint = hit
                    break
        return self.progress

    def breakpoint_check(self, breakpoints: Sequence[Breakpoint]) -> BreakpointCheck:
        """A check of ``breakpoints`` from here on, its token total counting what is replayed so far."""
        check = BreakpointCheck(breakpoints, {r.name: r for r in self.recording}, self._differs_on_purpose())
        check.tokens = sum(r.usage.total for r in self._replayed if r.kind == StepKind.MODEL and r.usage)
        return check

    def _differs_on_purpose(self) -> frozenset[str]:
        """Step names a ``divergence`` breakpoint passes over (a fork's edited step)."""
        return frozenset()

    async def _newly_replayed(self) -> list[Record]:
        """The records the replay wrote since the last read (``replayed``), decoded once."""
        async with self._reading:
            before = len(self._replayed)
            async for entry in self.store.load(self.run_id, after=self._replayed_seq):
                self._replayed_seq, record = entry.seq, self.store.record_of(entry)
                if self.store.legacy and record.is_header:
                    continue  # the header a legacy replay runs under
                if self.input_given and record.name == keys.RUN_START:
                    continue  # the run:start the loop writes with the input given: the journal has none
                self._replayed.append(self.legacy_keys.as_recorded(record))
            return self._replayed[before:]

    async def jump(self, turn: int) -> ReplayProgress:
        """Replay from the start up to ``turn`` turns (replay is deterministic: back is forward again)."""
        if self.refusal:
            return self.progress
        self.progress = ReplayProgress(recorded_turns=self.progress.recorded_turns)
        await self._reset()
        while self.progress.turn < turn and not self.done:
            await self.step()
        return self.progress

    async def back(self) -> ReplayProgress:
        return await self.jump(max(0, self.progress.turn - 1))

    async def replayed(self) -> list[Record]:
        """The replay's journal so far. Read incrementally: each step decodes only what it wrote."""
        await self._newly_replayed()
        return list(self._replayed)

    def _comparable(self, records: Sequence[Record], made: Mapping[int, Record] | None = None) -> list[Record]:
        """``records`` as they are compared; ``made``: records already made comparable, by the
        id of the record each was made from (one the replay kept as the recording's is not made again)."""
        if made:
            return [made.get(id(r)) or self._comparable([r])[0] for r in records]
        if self._tombstoned:
            # What a redacted result said is gone: whatever the replay holds there is not compared.
            records = [self._tombstoned.get(r.name, r) for r in records]
        if self.redaction is not None:
            records = [self.redaction.redactor.redact_record(r) for r in records]
        # The request's digests are judged apart (``request_changes``), never as a difference in a record.
        return [without_request_digests(r) for r in records]

    async def diff(self) -> JournalDiff:
        """The recording against the replay so far."""
        replayed = await self.replayed()
        recording = self._comparable(self.recording)
        # A matching replayed record is the recording's own (``ReplayStore``): it compares as its
        # twin, the same object, found equal at once.
        made = {id(original): comparable for original, comparable in zip(self.recording, recording, strict=True)}
        return diff_journals(recording, self._comparable(replayed, made), right_partial=not self.done)

    async def verdict(self, diff: JournalDiff | None = None) -> Verdict:
        """What the replay found, once it is done (``run_to_end``); ``diff`` is ``self.diff()``
        when the caller already has it."""
        found = partial(
            Verdict, not_compared=self.not_compared, served=self.served, live=self.live,
            redacted=self.redaction.paths if self.redaction is not None else (), tombstones=self.tombstones,
            input_given=self.input_given and not self.refusal,
        )  # fmt: skip
        if self.refusal:
            return found(VerdictKind.REFUSED, self.refusal)
        if self.setup is not None:  # recorded tools stand in for an agent whose prompt is not here
            found = partial(found, request_changes=request_changes(self.recording, await self.replayed()))
        first = (diff or await self.diff()).first_divergence
        hit = self.progress.breakpoint
        if first is None and hit is not None and not self.done:
            return found(VerdictKind.MATCHES_SO_FAR, f"{hit.breakpoint.text}: {hit.why}", stopped="breakpoint")
        state, reason = self.progress.state, self.progress.reason
        if first is not None:
            loop_reason = (
                state in (ReplayState.DIVERGED, ReplayState.FAILED) and first.left is not None and first.right is None
            )
            why = reason if loop_reason and reason else first.reason
            return found(VerdictKind.DIVERGED, why, divergence=Divergence.of(first, why))
        if state in (ReplayState.DIVERGED, ReplayState.FAILED):
            return found(VerdictKind.DIVERGED, reason)
        status = self.recorded_status
        if state == ReplayState.FINISHED and status.state.finished:
            return found(VerdictKind.MATCHES)
        return found(VerdictKind.MATCHES_SO_FAR, status.detail or reason, stopped=status.state.value)

    async def aclose(self) -> None:
        if self._events is not None:
            await self._events.aclose()


async def replay_verdict(
    source: Store, run_id: str, setup: AgentSetup | None = None, *, live_tools: Collection[str] = (),
    until: Sequence[Breakpoint] = (), input: str | None = None, given: RunRead | None = None,
) -> tuple[ReplaySession, Verdict]:  # fmt: skip
    """Replay ``run_id`` to its end (or the first of ``until`` met) and judge it: the CLI's
    ``replay`` and a CI check. ``input``: the run's input, for a journal before v0.8 (none
    recorded); ``given``: the run as ``read_runs`` read it."""
    session = await ReplaySession.open(source, run_id, setup, live_tools=live_tools, input=input, given=given)
    try:
        await session.run_to_end(breakpoints=until)
        return session, await session.verdict()
    finally:
        await session.aclose()
