"""What-if forks: replay a run with one recorded output changed, into a scratch store.

A fork is a replay (``ReplaySession``) of the recording with one model turn or tool result
replaced by an ``Edit``. Records before the edit come from the recording, the edited one from the
edit, and later model turns from the recording for as long as the replayed loop asks for what
the recording holds: a recorded turn answers only the conversation it was recorded in (the same
input and the same tool results, in order), and a recorded tool result only the call it was
recorded for (the same id, tool and arguments). Where the loop asks for anything else, the fork
stops with ``Unanswerable`` (which turn or call, what was asked, what the recording holds), or,
when the person asked for it and their agent has a model, goes on live: every later turn is the
model's, marked live. Tools never go live: side effects stay served, as in every replay.

The fork writes only into its own ``ReplayStore`` (in memory); ``replay.save`` writes it out.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal

from agenttui.agent.events import AgentEvent, AssistantTurn
from agenttui.agent.factory import AgentSetup
from agenttui.agent.loop import Agent
from agenttui.agent.model import Model, ModelDelta, ModelRequest
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import Tool, ToolContext, ToolOutput, ToolSafety
from agenttui.errors import AgentTuiError, ConfigError
from agenttui.journal import keys
from agenttui.journal.describe import json_value
from agenttui.journal.record import Message, Record, StepKind, ToolResultPart, ToolUsePart
from agenttui.render.diff import JournalDiff, diff_journals
from agenttui.replay.breakpoints import Breakpoint
from agenttui.replay.edit import BadEdit, Edit, find_step, make_edit
from agenttui.replay.model import NoRecordedOutput, ReplayModel, recorded_deltas, recorded_model
from agenttui.replay.session import RecordedCalls, ReplaySession, ReplayState, Unanswerable
from agenttui.stores.base import Store

#: Where each turn of a fork came from.
TurnSource = Literal["recording", "edit", "live"]

#: How much of a value a reason quotes.
SHOWN = 120


def _shown(raw: bytes | None) -> str:
    text = json.dumps(json_value(raw or b"null"), ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


class ForkModel:
    """The model a fork's loop asks: the recording's turn where it answers the conversation the
    fork has, the edit at the edited turn, the person's own model from where it does not (if they
    chose to go live). Sub-runs are the recording's."""

    def __init__(self, fork: ForkSession, recorded: ReplayModel) -> None:
        self._fork = fork
        self._recorded = recorded

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        fork = self._fork
        if request.run_id != fork.run_id:
            async for delta in self._recorded.stream(request):
                yield delta
            return
        if fork.live_from is None:
            unanswered = fork.unanswered(request)
            if unanswered is None:
                if request.turn == fork.edit.turn and fork.calls_changed:
                    # The recording's later decisions and answers are about calls this turn no longer makes.
                    fork.store.stop_feeding()
                for delta in recorded_deltas(fork.turns[request.turn]):
                    yield delta
                return
            if fork.live_model is None:
                raise unanswered
            fork.live_from, fork.live_reason = request.turn, unanswered.message
            fork.store.stop_feeding()
        assert fork.live_model is not None
        async for delta in fork.live_model.stream(request):
            yield delta


class ForkSession(ReplaySession):
    """A replay of ``run_id`` with ``edit`` in place of the recorded step. Create with
    ``await ForkSession.create``; step it and read it as a ``ReplaySession``."""

    def __init__(
        self, source: Store, run_id: str, original: list[Record], edit: Edit, base: ReplaySession, *,
        setup: AgentSetup | None, live: bool,
    ) -> None:  # fmt: skip
        self.original = original
        """The recording as it is; ``recording`` is it with the edit in place."""
        self.edit = edit
        self.live_from: int | None = None
        """The first turn a live model answered (None while the recording answers)."""
        self.live_reason = ""
        """Why the fork went live: what the recording could not answer."""
        self._outcomes = {r.tool_use_id: r for r in original if r.kind == StepKind.TOOL_RESULT}
        edited = [edit.edited if r.name == edit.name else r for r in original]
        super().__init__(source, run_id, edited, base.start, setup, recorded_status=base.recorded_status,
                         refusal=base.refusal)  # fmt: skip
        self.live_model: Model | None = setup.model if live and setup is not None else None
        """The model that answers where the recording cannot, when the person chose to go live."""
        self.calls_changed = edit.turn is not None and _calls(edit.original) != _calls(edit.edited)
        """The edited turn makes other calls than the recorded one (then no recorded input is fed after it)."""
        self.turns = [r for r in self.recording if r.kind == StepKind.MODEL and r.name.startswith("@llm/")]
        """The model turns the fork serves: the recording's, the edited one in its place."""
        self._told, told_by_turn = _told_in_recording(original)
        """What the model was told in the recording (see ``_told_in_recording``)."""
        self._told_before = [1]
        """How many of those messages each turn's request holds."""
        for results in told_by_turn:
            self._told_before.append(self._told_before[-1] + bool(results))
        self._seen = self._told_count = 0
        """How far the conversation of the last request was checked: its messages, and of those
        the ones the model was told (the input and tool results)."""

    @classmethod
    async def create(
        cls, source: Store, run_id: str, at: str, value: str, setup: AgentSetup | None = None, *,
        is_error: bool | None = None, live: bool = False,
    ) -> ForkSession:  # fmt: skip
        """A fork of ``run_id`` at the step ``at`` with ``value`` (JSON text, see ``replay.edit``).

        ``live``: go on with ``setup``'s model where the recording cannot answer. Raises
        ``BadEdit`` for an edit that does not fit, ``ConfigError`` for ``live`` without a model,
        ``RunNotFoundError``; a run the loop cannot re-drive raises ``BadEdit`` saying why.
        """
        if live and (setup is None or setup.model is None):
            raise ConfigError("going live needs --agent with a factory that gives a model")
        base = await ReplaySession.open(source, run_id)
        if base.refusal:
            raise BadEdit(f"run {run_id!r} cannot be forked: {base.refusal}")
        edit = make_edit(find_step(base.recording, at), value, is_error=is_error)
        return cls(source, run_id, base.recording, edit, base, setup=setup, live=live)

    # -- what the fork changes in a replay ---------------------------------------------------

    def _recorded_calls(self, recording: Sequence[Record]) -> RecordedCalls:
        calls = RecordedCalls.of(recording)
        if self.edit.turn is None or self.edit.edited.message is None:
            return calls
        before = {c.id: c for r in self.original if r.kind == StepKind.MODEL and r.message for c in r.message.tool_uses}
        stale: dict[str, Unanswerable] = {}
        for call in self.edit.edited.message.tool_uses:
            was = before.get(call.id)
            step, asked = f"tool:{call.id}", f"the edit calls {_call(call)}"
            if was is None:
                stale[call.id] = Unanswerable(self.run_id, step, asked, "the recording never made that call")
            elif was.name != call.name or json_value(was.args or b"{}") != json_value(call.args or b"{}"):
                stale[call.id] = Unanswerable(
                    self.run_id, step, asked, f"the recording holds the result of {_call(was)}"
                )
        return dataclasses.replace(calls, stale=stale)

    async def _model(self) -> Model:
        self.live_from, self.live_reason = None, ""
        self._seen = self._told_count = 0
        return ForkModel(self, recorded_model(self.source, self.run_id, self.recording))

    def _build_agent(self, model: Model) -> Agent:
        agent = super()._build_agent(model)
        call_id, names = self.edit.call_id, self._names()
        # Your read-only tool would run again and answer the edited call itself: serve it the edit.
        if call_id and self.setup is not None and (tool := agent.tools.get(names.get(call_id, ""))) is not None:
            agent.tools[tool.name] = EditedCall(tool.name, tool.fn, tool.description, tool.args_type, tool.safety,
                                                inner=tool, call_id=call_id, outcome=self.edit.edited)  # fmt: skip
        return agent

    def _emitted(self, event: AgentEvent) -> AgentEvent:
        if isinstance(event, AssistantTurn) and event.run_id == self.run_id and self.source_of(event.turn) == "live":
            return dataclasses.replace(event, live=True)
        return event

    def _differs_on_purpose(self) -> frozenset[str]:
        return frozenset({self.edit.name})

    async def diff_from_original(self) -> JournalDiff:
        """The recording as it was against the fork so far, the edit its first difference: what
        a person reads in the diff pane (``diff``, against the recording with the edit in place,
        is what the fork's own verdict and breakpoints judge)."""
        replayed = await self.replayed()
        return diff_journals(self._comparable(self.original), self._comparable(replayed), right_partial=not self.done)

    @property
    def mode(self) -> str:
        live = " then live" if self.live_model is not None else ""
        return f"{super().mode}{live}"

    # -- where a turn comes from -------------------------------------------------------------

    def source_of(self, turn: int) -> TurnSource:
        if self.live_from is not None and turn >= self.live_from:
            return "live"
        return "edit" if turn == self.edit.turn else "recording"

    def unanswered(self, request: ModelRequest) -> AgentTuiError | None:
        """Why the recording's turn ``request.turn`` does not answer this request, or None.

        A turn's request holds the whole conversation; only the messages added since the last
        turn are checked (what came before them was, and a long run stays linear).
        """
        turn = request.turn
        if turn >= len(self.turns):
            return NoRecordedOutput(self.run_id, turn, len(self.turns))
        messages = request.messages
        seen, told = (self._seen, self._told_count) if len(messages) >= self._seen else (0, 0)  # a new drive
        fits = True
        for message in messages[seen:]:
            if message.role == "assistant":
                continue
            if told >= len(self._told) or not _same_message(message, self._told[told]):
                fits = False
                break
            told += 1
        if fits:
            self._seen, self._told_count = len(messages), told
        if turn == self.edit.turn or (fits and told == self._told_before[turn]):
            return None
        everything = [m for m in messages if m.role != "assistant"]
        expected = self._told[: self._told_before[turn]]
        if everything[:1] != expected[:1]:
            return Unanswerable(self.run_id, f"@llm/{turn}", "the fork's input differs", "the recording's does not")
        asked, holds = _first_difference(everything[1:], expected[1:], self._names())
        return Unanswerable(self.run_id, f"@llm/{turn}", f"turn {turn} is asked after {asked}",
                            f"the recording's turn {turn} answered {holds}")  # fmt: skip

    def _names(self) -> dict[str, str]:
        return {
            c.id: c.name for r in self.recording if r.kind == StepKind.MODEL and r.message for c in r.message.tool_uses
        }

    @property
    def stopped_unanswered(self) -> bool:
        """The fork stopped where the recording could not answer (or the loop failed)."""
        return self.progress.state in (ReplayState.DIVERGED, ReplayState.FAILED)

    @property
    def exit_code(self) -> int:
        """The CLI's: 0 finished, stopped where the recording stops or at a breakpoint; 3 stopped
        where the recording cannot answer; 2 refused."""
        if self.progress.state == ReplayState.REFUSED:
            return 2
        return 3 if self.stopped_unanswered else 0

    def outcome(self) -> str:
        """One line saying where the fork ended and why."""
        progress = self.progress
        if progress.breakpoint is not None and not self.done:
            return progress.breakpoint.summary()
        match progress.state:
            case ReplayState.FINISHED:
                answer = next((e for e in reversed(progress.events) if isinstance(e, AssistantTurn)), None)
                text = answer.message.text if answer is not None else ""
                return "finished" + (f": {text[:SHOWN]}" if text else "")
            case ReplayState.PAUSED:
                return f"paused: {progress.reason}"
            case ReplayState.DIVERGED | ReplayState.FAILED:
                return f"stopped: {progress.reason}"
        return progress.state.value


@dataclass(frozen=True, slots=True)
class EditedCall(Tool):
    """One of your tools, with the edited call served the edit instead of running."""

    inner: Tool | None = None
    call_id: str = ""
    outcome: Record | None = None

    def safety_for(self, tool_use_id: str) -> ToolSafety:
        assert self.inner is not None
        return self.inner.safety_for(tool_use_id)

    async def run(self, ctx: ToolContext) -> ToolOutput:
        assert self.inner is not None
        if ctx.tool_use_id == self.call_id:
            return ToolOutput(None, recorded=self.outcome)
        return await self.inner.run(ctx)


def _calls(record: Record) -> list[tuple[str, str, object]]:
    uses = record.message.tool_uses if record.message else ()
    return [(c.id, c.name, json_value(c.args or b"{}")) for c in uses]


def _call(call: ToolUsePart) -> str:
    return f"{call.name} {_shown(call.args or b'{}')} ({call.id})"


def _told_in_recording(recording: Sequence[Record]) -> tuple[list[Message], list[list[ToolResultPart]]]:
    """What the model was told in the recording: the input, then the tool results after each turn
    that made calls (as the loop sends them); and those results turn by turn ([] for a turn
    without calls, or one whose results the recording does not all hold)."""
    start = next((r for r in recording if r.name == keys.RUN_START), None)
    messages = [RunStart.decode(start.result if start else None).input]
    outcomes = {r.tool_use_id: r for r in recording if r.kind == StepKind.TOOL_RESULT}
    by_turn: list[list[ToolResultPart]] = []
    for record in recording:
        if record.kind != StepKind.MODEL or not record.name.startswith("@llm/"):
            continue
        calls = record.message.tool_uses if record.message else ()
        if not calls or any(c.id not in outcomes for c in calls):
            by_turn.append([])
            continue
        results = [ToolResultPart(c.id, outcomes[c.id].result or b"null", outcomes[c.id].is_error) for c in calls]
        by_turn.append(results)
        messages.append(Message("tool", tuple(results)))
    return messages, by_turn


def _first_difference(told: Sequence[Message], expected: Sequence[Message], names: dict[str, str]) -> tuple[str, str]:
    """The first tool result the fork told the model that the recording did not, in words."""
    said = [p for m in told for p in m.parts if isinstance(p, ToolResultPart)]
    held = [p for m in expected for p in m.parts if isinstance(p, ToolResultPart)]
    for index in range(max(len(said), len(held))):
        mine = said[index] if index < len(said) else None
        theirs = held[index] if index < len(held) else None
        if mine is not None and theirs is not None and _same_result(mine, theirs):
            continue
        return _result_words(mine, names, "returned"), _result_words(theirs, names, "returning")
    return "the same results in other messages", "them as the recording sent them"


def _same_message(a: Message, b: Message) -> bool:
    """The same message, tool results compared as JSON values (your tool may format its own)."""
    if a == b:
        return True
    if a.role != b.role or len(a.parts) != len(b.parts):
        return False
    return all(
        isinstance(x, ToolResultPart) and isinstance(y, ToolResultPart) and _same_result(x, y)
        for x, y in zip(a.parts, b.parts, strict=True)
    )


def _same_result(a: ToolResultPart, b: ToolResultPart) -> bool:
    return a.tool_use_id == b.tool_use_id and a.is_error == b.is_error and json_value(a.result) == json_value(b.result)


def _result_words(part: ToolResultPart | None, names: dict[str, str], verb: str) -> str:
    if part is None:
        return "no further result"
    error = " (an error)" if part.is_error else ""
    name = names.get(part.tool_use_id, "")
    return f"{part.tool_use_id}{f' ({name})' if name else ''} {verb} {_shown(part.result)}{error}"


def turn_sources(fork: ForkSession, turns: int) -> list[TurnSource]:
    """Where each of the first ``turns`` turns came from."""
    return [fork.source_of(turn) for turn in range(turns)]


async def fork_run(
    source: Store, run_id: str, at: str, value: str, setup: AgentSetup | None = None, *,
    is_error: bool | None = None, live: bool = False, until: Sequence[Breakpoint] = (),
) -> ForkSession:  # fmt: skip
    """Fork ``run_id`` at ``at`` with ``value`` and replay it to its end or a breakpoint: the CLI's
    ``fork``. The caller closes the session (``aclose``) once it has read the fork."""
    fork = await ForkSession.create(source, run_id, at, value, setup, is_error=is_error, live=live)
    await fork.run_to_end(breakpoints=until)
    return fork
