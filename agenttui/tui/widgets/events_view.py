"""EventsView: an agent's event stream, one line per event, as it happens."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence

from rich.text import Text

from agenttui.agent.events import (
    AgentEvent,
    AssistantTurn,
    Finished,
    ModelEvent,
    ToolCompleted,
    ToolStarted,
    TurnStarted,
)
from agenttui.agent.model import Finish, ReasoningDelta, TextDelta, ToolCallDelta
from agenttui.journal.describe import printable
from agenttui.journal.record import Record, StepKind
from agenttui.replay.events import events_of
from agenttui.runs.reading.view import SUMMARY_LIMIT, RecordRows
from agenttui.tui.widgets.virtual_list import VirtualList

LINE_LIMIT = 256
"""Characters of an event's line kept: a line shows as much as the pane is wide, so this keeps
what any pane shows, and a tool's 1 MB result costs the list no more than a short one."""


def event_line(event: AgentEvent) -> tuple[str, str]:
    """(kind, text) describing an event; the text is untrusted and must go through printable."""
    match event:
        case TurnStarted(turn=turn):
            return "turn", f"turn {turn} started"
        case ModelEvent(delta=TextDelta(text=text)):
            return "delta", f"  text: {text}"
        case ModelEvent(delta=ReasoningDelta(text=text)):
            return "delta", f"  thinking: {text}"
        case ModelEvent(delta=ToolCallDelta(name=name, args=args)):
            return "delta", f"  call {name} {args}"
        case ModelEvent(delta=Finish(finish=finish, usage=usage)):
            return "delta", f"  finish {finish}" + (
                f" ({usage.input_tokens} in / {usage.output_tokens} out)" if usage is not None else ""
            )
        case AssistantTurn(turn=turn, message=message, replayed=replayed, live=live):
            calls = ", ".join(c.name for c in message.tool_uses)
            what = (message.text.strip().splitlines() or [""])[0]
            source = " (LIVE)" if live else " (replayed)" if replayed else ""
            return "turn", f"assistant turn {turn}{source}: {what}" + (f" → {calls}" if calls else "")
        case ToolStarted(name=name, args=args):
            return "tool", f"tool {name} started {args.decode('utf-8', 'replace')}"
        case ToolCompleted(name=name, result=result, is_error=is_error):
            return (
                "error" if is_error else "tool",
                f"tool {name} {'failed' if is_error else 'completed'}: {result.decode('utf-8', 'replace')}",
            )
        case Finished(message=message):
            return "finished", f"finished: {message.text}"
    return "other", type(event).__name__


_KINDS = ("turn", "delta", "tool", "error", "finished", "other")
_KIND_CODES = {kind: code for code, kind in enumerate(_KINDS)}


class EventLines:
    """Event lines, packed: each line's kind as a byte and its text as UTF-8 in one buffer.

    A 50,000-record run has 25,000 events: as a tuple and a string each they took 13 MB, packed
    6 MB. A line is made again (a tuple and a string) when it is drawn.
    """

    def __init__(self, lines: Iterable[tuple[str, str]] = ()) -> None:
        self._kinds = array("b")
        self._ends = array("q")
        """Where each line's text ends in ``_text``; it starts where the one before ends."""
        self._text = bytearray()
        self.extend(lines)

    def __len__(self) -> int:
        return len(self._kinds)

    def __getitem__(self, index: int) -> tuple[str, str]:
        if index < 0:
            index += len(self._kinds)
        kind = _KINDS[self._kinds[index]]  # raises IndexError past the end, as a list does
        start = self._ends[index - 1] if index else 0
        return kind, self._text[start : self._ends[index]].decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return (self[index] for index in range(len(self)))

    def extend(self, lines: Iterable[tuple[str, str]]) -> None:
        kinds, ends, text = self._kinds, self._ends, self._text
        for kind, line in lines:
            kinds.append(_KIND_CODES[kind])
            # surrogatepass: an event's text is any string a tool returned, lone surrogates too
            text += line.encode("utf-8", "surrogatepass")
            ends.append(len(text))


class RunEventLines:
    """A run's events (``events_of``: a line per model turn and tool result), drawn from the
    run's rows: a model turn's line is its row's summary with the turn before it, a tool's its
    row's summary reworded. Only where the row does not give the very line (a summary cut
    short, a record that does not decode) is the line kept.

    A 50,000-record run's lines took 13 MB as strings, 6 MB packed (``EventLines``): text its
    rows hold already.
    """

    def __init__(self, rows: RecordRows) -> None:
        self._rows = rows
        self._records = array("q")
        """The record (the row) each event is of."""
        self._turns = array("q")
        """A model turn's number; -1 for a tool (completed), -2 for a tool that failed."""
        self._cuts = array("q")
        """Where the row's summary gives the first part of the line (the text, the tool's name)."""
        self._rests = array("q")
        """Where the rest starts (the calls, the result); -1: there is none."""
        self._kept: dict[int, tuple[str, str]] = {}
        """The lines the rows do not give, by event."""

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> tuple[str, str]:
        if index < 0:
            index += len(self._records)
        record = self._records[index]  # raises IndexError past the end, as a list does
        kept = self._kept.get(index)
        if kept is not None:
            return kept
        return self._line(self._rows.summary(record), self._turns[index], self._cuts[index], self._rests[index])

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return (self[index] for index in range(len(self)))

    def extend(self, lines: Iterable[tuple[str, str]]) -> None:
        raise TypeError("a run's event lines come with its records (add_records)")

    def add_records(self, run_id: str, first: int, records: Sequence[Record], first_turn: int,
                    names: dict[str, str]) -> int:  # fmt: skip
        """Add the events of ``records`` (``events_of``), the rows from ``first`` on; returns how many.

        A line is shaped from its row's summary and the record, without making the event: a
        50,000-record run's events, made and each line formatted twice to compare, took 0.3 s of
        CPU as its records loaded. Where a row's summary is whole (shorter than the rows' cut)
        it holds the line's very text; only where it is not (cut short, a record that does not
        decode, a result that is not there) is the event made and its line kept if it differs.
        """
        rows, add_record, add_turn = self._rows, self._records.append, self._turns.append
        add_cut, add_rest = self._cuts.append, self._rests.append
        turn, added = first_turn, 0
        for at, record in enumerate(records, first):
            kind = record.kind
            if kind != _MODEL and kind != _TOOL_RESULT:
                continue
            summary = rows.summary(at)
            shape = self._whole_shape(record, turn, summary, names)
            if shape is None:
                shape = self._kept_shape(run_id, record, turn, summary, names)
            add_record(at)
            add_turn(shape[0])
            add_cut(shape[1])
            add_rest(shape[2])
            turn += kind == _MODEL
            added += 1
        return added

    @staticmethod
    def _whole_shape(record: Record, turn: int, summary: str, names: dict[str, str]) -> tuple[int, int, int] | None:
        """(turn, cut, rest) of the record's event where its row's ``summary`` is whole and holds
        the line's text (``describe.summary``: "<text> → calls <names>", "<name><flags>: <result>");
        None where it may not."""
        if len(summary) >= SUMMARY_LIMIT or record.unreadable or record.tombstone is not None:
            return None
        if record.kind == _MODEL:
            message = record.message
            calls = len(", ".join(part.name for part in message.tool_uses)) if message is not None else 0
            if not calls:
                return turn, len(summary), -1
            tail = len("calls ") + calls
            if len(summary) == tail:  # no text: "calls <names>"
                return turn, 0, len("calls ")
            cut = len(summary) - tail - len(" → ")
            return turn, cut, cut + len(" → calls ")
        if record.result is None:  # the event says "null", the summary nothing
            return None
        cut = len(names.get(record.tool_use_id) or record.tool_use_id)
        colon = summary.find(": ", cut)
        return (-2 if record.is_error else -1), cut, colon + 2 if colon >= 0 else -1

    def _kept_shape(
        self, run_id: str, record: Record, turn: int, summary: str, names: dict[str, str]
    ) -> tuple[int, int, int]:
        """(turn, cut, rest) of the record's event, from the event itself; its line is kept
        where the row's summary does not give it."""
        (event,) = events_of(run_id, [record], first_turn=turn, names=names)
        kind, text = event_line(event)
        line = (kind, text[:LINE_LIMIT])
        shape = self._shape(event, summary)
        if self._line(summary, *shape) != line:
            self._kept[len(self._records)] = line
        return shape

    @staticmethod
    def _shape(event: AgentEvent, summary: str) -> tuple[int, int, int]:
        """(turn, cut, rest) of ``event`` as ``_line`` reads its row's ``summary`` (``describe.summary``)."""
        if isinstance(event, AssistantTurn):
            what = (event.message.text.strip().splitlines() or [""])[0]
            calls = bool(event.message.tool_uses)
            return event.turn, len(what), (len(what) + len(" → calls ") if what else len("calls ")) if calls else -1
        if isinstance(event, ToolCompleted):  # the summary: the name, its flags, ": ", the result
            cut = len(event.name)
            colon = summary.find(": ", cut)
            return (-2 if event.is_error else -1), cut, colon + 2 if colon >= 0 else -1
        return 0, 0, -1

    @staticmethod
    def _line(summary: str, turn: int, cut: int, rest: int) -> tuple[str, str]:
        if turn >= 0:
            text = f"assistant turn {turn} (replayed): {summary[:cut]}" + (f" → {summary[rest:]}" if rest >= 0 else "")
            return "turn", text[:LINE_LIMIT]
        name, result = summary[:cut], summary[rest:] if rest >= 0 else ""
        if turn == -2:
            return "error", f"tool {name} failed: {result}"[:LINE_LIMIT]
        return "tool", f"tool {name} completed: {result}"[:LINE_LIMIT]


_MODEL, _TOOL_RESULT = StepKind.MODEL, StepKind.TOOL_RESULT
"""The records ``events_of`` makes an event of, one each."""


class EventsView(VirtualList[tuple[str, str]]):
    """Events, newest last; the list follows the newest while the cursor is on it."""

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.items = EventLines()

    def show_run(self, lines: RunEventLines, added: int) -> None:
        """Show ``lines`` (a run's, kept by the screen, not copied), of which the last ``added``
        are new."""
        if self.items is not lines:
            self.set_items(lines)
            return
        at_end = self.cursor >= len(lines) - added - 1
        self.items_added()
        if at_end and len(lines):
            self.cursor = len(lines) - 1

    def set_items(self, items: Iterable[tuple[str, str]]) -> None:
        super().set_items(items if isinstance(items, RunEventLines) else EventLines(items))

    def add(self, events: Sequence[AgentEvent]) -> None:
        at_end = self.cursor >= len(self.items) - 1
        self.extend([(kind, text[:LINE_LIMIT]) for kind, text in map(event_line, events)])
        if at_end and self.items:
            self.cursor = len(self.items) - 1

    def render_item(self, item: tuple[str, str], index: int, width: int) -> Text:
        kind, text = item
        style = self.error() if kind == "error" else self.muted() if kind == "delta" else ""
        # Cut before escaping: a tool's 10 MB result made every key press here take half a second.
        return Text(printable(text[: width * 2]), style=style, no_wrap=True)
