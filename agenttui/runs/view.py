"""One run as a viewer holds it (RunView), and its conversation as it stood at any record."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agenttui.agent.runstart import RunStart
from agenttui.journal.describe import raw_json_text
from agenttui.journal.keys import RUN_START
from agenttui.journal.record import Message, Record, StepKind


def tool_names(records: Iterable[Record]) -> dict[str, str]:
    """Each call id to its tool name, from the first model message that made the call."""
    names: dict[str, str] = {}
    _index_calls(records, names)
    return names


def _index_calls(records: Iterable[Record], names: dict[str, str]) -> None:
    for record in records:
        if record.kind == StepKind.MODEL and record.message:
            for call in record.message.tool_uses:
                names.setdefault(call.id, call.name)


class RunView:
    """One run's records as a viewer holds them while they arrive: in commit order, with the
    seq of the newest, each call id's tool name and the model turns so far, all kept up in one
    pass over each new record (a live view never reads a record twice)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.records: list[Record] = []
        self.tool_names: dict[str, str] = {}
        """Call id → tool name; the same dict for the view's lifetime, so a widget may hold it."""
        self.last_seq = -1
        """The seq of the newest record read from the store (-1: none yet); read on from it."""
        self.model_turns = 0

    def add_entries(self, entries: Sequence[tuple[int, Record]]) -> list[Record]:
        """Add the records read from the store, each with its seq, and return those that are
        new: reads that overlap (a tail racing a load) add each record once."""
        fresh = [record for seq, record in entries if seq > self.last_seq]
        if entries:
            self.last_seq = max(self.last_seq, entries[-1][0])
        self.add(fresh)
        return fresh

    def add(self, records: Sequence[Record]) -> None:
        """Add records that follow the ones held (a replay's, which have no seq)."""
        self.records.extend(records)
        _index_calls(records, self.tool_names)
        self.model_turns += sum(record.kind == StepKind.MODEL for record in records)

    def clear(self) -> None:
        """Forget every record (a replay that went back starts its journal again)."""
        self.records.clear()
        self.tool_names.clear()
        self.last_seq = -1
        self.model_turns = 0


@dataclass(frozen=True, slots=True)
class Utterance:
    """One voice in a conversation: who (``user``, ``assistant``, ``tool <name>``, ``human``), and
    what: the assistant's message, or for every other voice plain, untrusted text."""

    speaker: str
    index: int
    """The record it comes from."""
    text: str = ""
    message: Message | None = None
    is_error: bool = False
    """A tool's result that is an error."""


def conversation_at(records: Sequence[Record], index: int, names: Mapping[str, str] | None = None) -> list[Utterance]:
    """The conversation as it stood after record ``index``: the user's input, every assistant
    message, tool result and human decision up to it, in order."""
    upto = records[: index + 1]
    names = names if names is not None else tool_names(upto)
    said: list[Utterance] = []
    for at, record in enumerate(upto):
        if record.name == RUN_START:
            start = RunStart.decode(record.result)
            said.append(Utterance("user", at, start.input.text or raw_json_text(record.result)))
        elif record.kind == StepKind.MODEL and record.message is not None:
            said.append(Utterance("assistant", at, message=record.message))
        elif record.kind == StepKind.TOOL_RESULT:
            name = names.get(record.tool_use_id, record.tool_use_id)
            said.append(Utterance(f"tool {name}", at, raw_json_text(record.result, indent=2), is_error=record.is_error))
        elif record.kind == StepKind.APPROVAL:
            said.append(Utterance("human", at, f"{'approved' if record.approved else 'denied'} {record.tool_use_id}"))
        elif record.name.startswith("interrupt:"):
            said.append(Utterance("human", at, raw_json_text(record.result)))
    return said
