"""One run as a viewer holds it (RunView): a compact row per record, the records themselves read
back on demand, and the run's conversation as it stood at any record."""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from agenttui.agent.runstart import RunStart
from agenttui.journal.describe import kind_icon, raw_json_text, summary
from agenttui.journal.journal import decode_entry
from agenttui.journal.keys import RUN_START
from agenttui.journal.record import Message, Record, StepKind
from agenttui.stores.base import Store, seq_order

SUMMARY_LIMIT = 256
"""Characters of a record's summary its row keeps. A list cuts the summary to its width, so a
row shows the same as long as the list is narrower than this; and a 1 MB tool result costs its
row no more than a short one."""
DECODED_BUDGET = 256_000
"""Bytes of decoded records a view keeps for its panes, counted as ``record_cost`` (750 records
of the benchmark's long run, about 1.2 MB in memory; 1 MB of them took 4.7 MB). A record the
panes show again is read back from the store in a millisecond or so. The record read last is
kept whatever its size."""
CONVERSATION_VOICES = 40
"""Voices the conversation as of a record shows besides the first (the user's input): the newest."""
CONVERSATION_BYTES = 256_000
"""Stored bytes of the newest voices the conversation reads back; at least the newest is read."""

_MODEL, _TOOL_RESULT, _APPROVAL = StepKind.MODEL, StepKind.TOOL_RESULT, StepKind.APPROVAL
_KINDS: dict[str, str] = {kind.value: kind for kind in StepKind}
"""A known kind as one shared object: each decoded record holds its own copy of the string."""


def tool_names(records: Iterable[Record]) -> dict[str, str]:
    """Each call id to its tool name, from the first model message that made the call."""
    names: dict[str, str] = {}
    _index_calls(records, names)
    return names


def _index_calls(records: Iterable[Record], names: dict[str, str]) -> None:
    for record in records:
        if record.kind == _MODEL and record.message:
            for call in record.message.tool_uses:
                # Interned: a long run names the same few tools tens of thousands of times.
                names.setdefault(call.id, sys.intern(call.name))


@dataclass(slots=True)  # not frozen: a frozen one takes three times as long to make, 0.1 s a 50,000-record run
class RecordRow:
    """One record as a list shows it: all a view keeps of a record once it has been read. Never
    changed once made."""

    name: str
    kind: str
    icon: str
    """``kind_icon`` of the record."""
    summary: str
    """What the record holds, in one line cut to ``SUMMARY_LIMIT`` characters (unescaped:
    pass it through ``printable``). A tool result names its tool as the calls read so far do."""
    failed: bool = False
    """Drawn as a failure: unreadable, a tool result that is an error, a denied approval."""
    unreadable: str = ""
    """Why the record's stored bytes do not decode ("" when they do)."""
    size: int = 0
    """The record's stored bytes."""


class RecordRows(Sequence[RecordRow]):
    """A run's rows, packed: names and summaries as UTF-8 in two buffers, the rest in arrays; a
    ``RecordRow`` is made again when one is asked for (a list draws the few on screen).

    As an object and two strings a row, a 50,000-record run's rows took 15 MB; packed, about a
    third. Strings go in with ``surrogatepass``: a step name or summary may be any string.
    """

    def __init__(self) -> None:
        self._names, self._name_ends = bytearray(), array("q")
        self._summaries, self._summary_ends = bytearray(), array("q")
        self._kinds, self._icons = array("B"), array("B")
        """Indices into ``_words``: the few kinds and icons rows have, each kept once."""
        self._words: list[str] = ["?"]
        self._word_index: dict[str, int] = {"?": 0}
        self._failed = array("b")
        self._sizes = array("q")
        self._unreadable: dict[int, str] = {}
        """Why a row's record does not decode, for the few that do not."""

    def __len__(self) -> int:
        return len(self._sizes)

    @overload
    def __getitem__(self, index: int) -> RecordRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[RecordRow]: ...

    def __getitem__(self, index: int | slice) -> RecordRow | list[RecordRow]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        size = self._sizes[index]  # raises IndexError past the end, as a list does
        words = self._words
        return RecordRow(
            _text(self._names, self._name_ends, index), words[self._kinds[index]], words[self._icons[index]],
            _text(self._summaries, self._summary_ends, index), bool(self._failed[index]),
            self._unreadable.get(index, ""), size,
        )  # fmt: skip

    def __iter__(self) -> Iterator[RecordRow]:
        return (self[index] for index in range(len(self)))

    def name(self, index: int) -> str:
        """The step name of row ``index``, without making the row."""
        return _text(self._names, self._name_ends, index)

    def summary(self, index: int) -> str:
        """The summary of row ``index``, without making the row."""
        return _text(self._summaries, self._summary_ends, index)

    def size(self, index: int) -> int:
        """The stored bytes of row ``index``'s record, without making the row."""
        return self._sizes[index]

    def append(self, row: RecordRow) -> None:
        self._append(row.name, row.kind, row.icon, row.summary, row.failed, row.unreadable, row.size)

    def append_record(self, record: Record, names: Mapping[str, str]) -> None:
        """Append the row of ``record`` (``record_row``), without making it: 50,000 rows a long
        run, each made only to be taken apart, took a tenth of its rows' time."""
        self._append(*_row_fields(record, names))

    def _append(self, name: str, kind: str, icon: str, summary: str, failed: bool, unreadable: str, size: int) -> None:
        names, summaries, index = self._names, self._summaries, self._word_index
        names += name.encode("utf-8", "surrogatepass")
        self._name_ends.append(len(names))
        summaries += summary.encode("utf-8", "surrogatepass")
        self._summary_ends.append(len(summaries))
        kind_word, icon_word = index.get(kind), index.get(icon)
        self._kinds.append(self._word(kind) if kind_word is None else kind_word)
        self._icons.append(self._word(icon) if icon_word is None else icon_word)
        self._failed.append(failed)
        if unreadable:
            self._unreadable[len(self._sizes)] = unreadable
        self._sizes.append(size)

    def extend(self, rows: Iterable[RecordRow]) -> None:
        for row in rows:
            self.append(row)

    def clear(self) -> None:
        for buffer in (self._names, self._summaries):
            del buffer[:]
        for column in (self._name_ends, self._summary_ends, self._kinds, self._icons, self._failed, self._sizes):
            del column[:]
        self._unreadable.clear()

    def _word(self, word: str) -> int:
        index = self._word_index.get(word)
        if index is None:
            if len(self._words) == 256:  # an array("B") index: past that, kinds nobody wrote
                return 0
            index = self._word_index[word] = len(self._words)
            self._words.append(word)
        return index


def _text(buffer: bytearray, ends: array[int], index: int) -> str:
    start = ends[index - 1] if index else 0
    return buffer[start : ends[index]].decode("utf-8", "surrogatepass")


def record_row(record: Record, names: Mapping[str, str]) -> RecordRow:
    """The row of ``record``; ``names`` gives the tool names of the calls made so far."""
    return RecordRow(*_row_fields(record, names))


def _row_fields(record: Record, names: Mapping[str, str]) -> tuple[str, str, str, str, bool, str, int]:
    failed = bool(record.unreadable) or record.is_error or (record.kind == _APPROVAL and not record.approved)
    return (
        record.name, _KINDS.get(record.kind, record.kind), kind_icon(record), summary(record, names)[:SUMMARY_LIMIT],
        failed, record.unreadable, len(record.raw),
    )  # fmt: skip


def speaks(record: Record) -> bool:
    """Whether the record is a voice of the run's conversation (``utterance`` gives it)."""
    return (
        record.name == RUN_START
        or (record.kind == _MODEL and record.message is not None)
        or record.kind == _TOOL_RESULT
        or record.kind == _APPROVAL
        or record.name.startswith("interrupt:")
    )


@dataclass(frozen=True, slots=True)
class Voices:
    """The records the conversation as of a record is told from: the first voice and the newest
    ones, in order, and how many voices between them are left out."""

    indices: list[int]
    left_out: int = 0


class RunView:
    """One run as a viewer holds it while its records arrive: a compact row per record, in commit
    order, with the seq of the newest, each call id's tool name, the model turns so far and which
    records are voices of the conversation, all kept up in one pass over each new record (a live
    view never reads a record twice).

    The records themselves are not kept: the panes that show one in full (the inspector, the
    conversation) get it from ``cached`` or ``read``, which reads it back from the store. Decoded
    records are kept up to a budget (``DECODED_BUDGET``), the ones used last.
    """

    def __init__(self, run_id: str, *, decoded_budget: int = DECODED_BUDGET) -> None:
        self.run_id = run_id
        self.rows = RecordRows()
        """One a record, in commit order; a record's index in the run is its row's."""
        self.tool_names: dict[str, str] = {}
        """Call id → tool name; the same dict for the view's lifetime, so a widget may hold it."""
        self.last_seq = -1
        """The seq of the newest record read from the store (-1: none yet); read on from it."""
        self.model_turns = 0
        self.decoded = DecodedRecords(decoded_budget)
        """The decoded records the view keeps for its panes."""
        self._voices = array("q")  # the index of each record that speaks, ascending

    def __len__(self) -> int:
        return len(self.rows)

    # -- records arriving --------------------------------------------------------------------

    def add_entries(self, entries: Sequence[tuple[int, Record]]) -> list[Record]:
        """Add the records read from the store, each with its seq, and return those that are
        new: reads that overlap (a tail racing a load) add each record once."""
        newest = seq_order(self.last_seq)
        fresh = [record for seq, record in entries if seq_order(seq) > newest]
        if entries:
            self.last_seq = max(self.last_seq, entries[-1][0], key=seq_order)
        self.add(fresh)
        return fresh

    def add(self, records: Sequence[Record]) -> None:
        """Add records that follow the ones held (a replay's, which have no seq). While the view's
        budget has room, the decoded records are kept too: a short run is never read twice."""
        names, rows, voices, decoded = self.tool_names, self.rows, self._voices, self.decoded
        _index_calls(records, names)
        for index, record in enumerate(records, len(rows)):
            rows.append_record(record, names)
            if speaks(record):
                voices.append(index)
            self.model_turns += record.kind == _MODEL
            decoded.offer(index, record)

    def clear(self) -> None:
        """Forget every record (a replay that went back starts its journal again)."""
        self.rows.clear()
        self.tool_names.clear()
        self.last_seq = -1
        self.model_turns = 0
        del self._voices[:]
        self.decoded.clear()

    # -- records read back -------------------------------------------------------------------

    def cached(self, indices: Iterable[int]) -> list[Record] | None:
        """The decoded records at ``indices`` if the view holds every one, else None (``read``)."""
        records = []
        for index in indices:
            record = self.decoded.get(index)
            if record is None:
                return None
            records.append(record)
        return records

    async def read(
        self, store: Store, indices: Sequence[int], *, progress: Callable[[int, int], None] | None = None
    ) -> list[Record]:
        """The decoded records at ``indices``: the ones the view holds, the others read back from
        ``store`` (by step name, unique in a run). A record its row found unreadable stays so,
        for the same reason; one the store no longer holds comes back as an unreadable stand-in.
        ``progress(done, total)`` hears of each record read back: how many of ``indices`` are in hand."""
        records: list[Record] = []
        for index in indices:
            record = self.decoded.get(index)
            if record is None:
                record = await self._read_back(store, self.rows[index])
                self.decoded.put(index, record)
                if progress is not None:
                    progress(len(records) + 1, len(indices))
            records.append(record)
        return records

    async def _read_back(self, store: Store, row: RecordRow) -> Record:
        entry = await store.get(self.run_id, row.name)
        if entry is None:
            return Record(row.name, "", unreadable="the store no longer holds this record")
        if row.unreadable:  # the load may have known more than the row alone (a damaged run id)
            return Record(row.name, "", unreadable=row.unreadable, raw=entry.data)
        return decode_entry(entry)

    # -- the conversation --------------------------------------------------------------------

    def voices(self, index: int) -> Voices:
        """The records the conversation as of record ``index`` is told from: the first voice (the
        user's input) and the newest up to ``index``, at most ``CONVERSATION_VOICES`` of them and
        ``CONVERSATION_BYTES`` of stored bytes (the newest always)."""
        said = bisect_right(self._voices, index)
        if said == 0:
            return Voices([])
        newest: list[int] = []
        size = 0
        for at in reversed(range(1, said)):
            voice = self._voices[at]
            size += self.rows.size(voice)
            if newest and (len(newest) == CONVERSATION_VOICES or size > CONVERSATION_BYTES):
                break
            newest.append(voice)
        shown = [self._voices[0], *reversed(newest)]
        return Voices(shown, said - len(shown))


def record_cost(record: Record) -> int:
    """What keeping a decoded record costs, for a budget: its stored bytes (decoded, a record of
    the 50,000-record benchmark run takes about 4.5 times its stored bytes in memory), and at
    least 256, so that records held without their bytes (a replay's) still fill a budget."""
    return max(len(record.raw), 256)


class DecodedRecords:
    """Decoded records by index, the ones used last, up to a budget of their ``record_cost``."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0
        """The cost of the records held."""
        self._records: OrderedDict[int, Record] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def get(self, index: int) -> Record | None:
        record = self._records.get(index)
        if record is not None:
            self._records.move_to_end(index)
        return record

    def offer(self, index: int, record: Record) -> None:
        """Keep ``record`` if it fits the budget as it stands (nothing is dropped for it)."""
        if self.size + record_cost(record) <= self.budget:
            self._keep(index, record)

    def put(self, index: int, record: Record) -> None:
        """Keep ``record``, dropping the ones used longest ago while over budget (never this one)."""
        self._keep(index, record)
        while self.size > self.budget and len(self._records) > 1:
            _, dropped = self._records.popitem(last=False)
            self.size -= record_cost(dropped)

    def _keep(self, index: int, record: Record) -> None:
        if (held := self._records.pop(index, None)) is not None:
            self.size -= record_cost(held)
        self._records[index] = record
        self.size += record_cost(record)

    def clear(self) -> None:
        self._records.clear()
        self.size = 0


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


def utterance(record: Record, at: int, names: Mapping[str, str]) -> Utterance | None:
    """What record ``at`` says in the conversation, or None for a record that says nothing
    (``speaks`` tells which without building it)."""
    if record.name == RUN_START:
        start = RunStart.decode(record.result)
        return Utterance("user", at, start.input.text or raw_json_text(record.result))
    if record.kind == _MODEL and record.message is not None:
        return Utterance("assistant", at, message=record.message)
    if record.kind == _TOOL_RESULT:
        name = names.get(record.tool_use_id, record.tool_use_id)
        return Utterance(f"tool {name}", at, raw_json_text(record.result, indent=2), is_error=record.is_error)
    if record.kind == _APPROVAL:
        return Utterance("human", at, f"{'approved' if record.approved else 'denied'} {record.tool_use_id}")
    if record.name.startswith("interrupt:"):
        return Utterance("human", at, raw_json_text(record.result))
    return None


def conversation_at(records: Sequence[Record], index: int, names: Mapping[str, str] | None = None) -> list[Utterance]:
    """The conversation as it stood after record ``index``: the user's input, every assistant
    message, tool result and human decision up to it, in order."""
    upto = records[: index + 1]
    names = names if names is not None else tool_names(upto)
    return [said for at, record in enumerate(upto) if (said := utterance(record, at, names)) is not None]
