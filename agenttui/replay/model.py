"""Replay: a model that re-emits a run's recorded model turns instead of calling an LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from agenttui.agent.model import Finish, ModelDelta, ModelRequest, ReasoningDelta, TextDelta, ToolCallDelta
from agenttui.errors import AgentTuiError, JournalVersionError, RunNotFoundError
from agenttui.journal.journal import Journal, decode_entry, journal_format
from agenttui.journal.record import SUPPORTED_FORMATS, Message, ReasoningPart, Record, StepKind, TextPart, ToolUsePart
from agenttui.stores.base import Store


class NoRecordedOutput(AgentTuiError):
    """The replayed loop asked for a turn the recording never produced: it diverged."""

    title = "Replay diverged"

    def __init__(self, run_id: str, turn: int, recorded: int) -> None:
        super().__init__(f"run {run_id!r} recorded {recorded} model turns; the replay asked for turn {turn}")
        self.run_id, self.turn, self.recorded = run_id, turn, recorded


class ReplayModel:
    """Streams run ``request.run_id``'s recorded model turn ``request.turn``.

    Sub-runs of the tree are read on first use, so a replayed sub-agent is pinned to its own
    recording too. Never writes to the store it reads.
    """

    def __init__(self, journal: Journal, turns: dict[str, list[Record]]) -> None:
        self._journal = journal
        self._turns = turns

    async def turns_of(self, run_id: str) -> list[Record]:
        if run_id not in self._turns:
            self._turns[run_id] = await model_turns(self._journal, run_id)
        return self._turns[run_id]

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        turns = await self.turns_of(request.run_id)
        if request.turn >= len(turns):
            raise NoRecordedOutput(request.run_id, request.turn, len(turns))
        for delta in recorded_deltas(turns[request.turn]):
            yield delta


def recorded_deltas(record: Record) -> list[ModelDelta]:
    """A model record as the stream that produced it: one delta per part, then the finish, which
    carries the recorded message itself (parts a stream cannot express, such as images, a
    reasoning part's ``redacted`` or a call's ``signature``, survive the replay)."""
    deltas: list[ModelDelta] = []
    message = record.message
    calls = 0
    for part in message.parts if message else ():
        match part:
            case TextPart(text=text):
                deltas.append(TextDelta(text))
            case ReasoningPart(text=text, signature=signature):
                deltas.append(ReasoningDelta(text, signature))
            case ToolUsePart(id=call_id, name=name, args=args):
                deltas.append(ToolCallDelta(calls, call_id, name, (args or b"{}").decode("utf-8", "replace")))
                calls += 1
    # The recorded finish as it stands, even empty (a pre-v0.9 record has none): the replay's
    # record must carry what the recording does, not the reason the SDK's Replay would derive.
    deltas.append(
        Finish(
            record.finish,
            record.usage,
            record.raw_finish,
            record.model,
            record.discarded_usage,
            message or Message("assistant"),
        )
    )
    return deltas


async def replay(store: Store, run_id: str) -> ReplayModel:
    """A model re-emitting ``run_id``'s recorded outputs (the spec's ``Replay``).

    Raises ``RunNotFoundError`` for a run with no records and ``JournalVersionError`` for a run
    in a format agenttui does not read.
    """
    journal = Journal(store)
    return ReplayModel(journal, {run_id: await model_turns(journal, run_id)})


def recorded_model(source: Store, run_id: str, recording: Sequence[Record]) -> ReplayModel:
    """``replay`` of a run whose records are in hand (a replay session's recording): its model
    turns are not read again; its sub-runs' are, on first use.

    Raises ``JournalVersionError`` for a run in a format agenttui does not read.
    """
    if recording and recording[0].is_header and (found := journal_format(recording[0])) not in SUPPORTED_FORMATS:
        raise JournalVersionError(run_id, found)
    turns = [r for r in recording if r.kind == StepKind.MODEL and r.name.startswith("@llm/")]
    return ReplayModel(Journal(source), {run_id: turns})


async def model_turns(journal: Journal, run_id: str) -> list[Record]:
    """The run's model records, in order; only they are decoded (a long run is mostly tool results).

    Raises ``RunNotFoundError`` for a run with no records, ``JournalVersionError`` for one whose
    header names a format agenttui does not read.
    """
    turns: list[Record] = []
    first = True
    async for entry in journal.store.load(run_id):
        if first:
            # A headerless journal (before v0.9) replays too; a header naming another format does not.
            found = journal_format(record := decode_entry(entry))
            if found not in SUPPORTED_FORMATS and record.is_header:
                raise JournalVersionError(run_id, found)
            first = False
            if not record.is_header and record.kind == StepKind.MODEL and entry.name.startswith("@llm/"):
                turns.append(record)
        elif entry.name.startswith("@llm/"):
            record = decode_entry(entry)
            if record.kind == StepKind.MODEL:
                turns.append(record)
    if first:
        raise RunNotFoundError(run_id)
    return turns
