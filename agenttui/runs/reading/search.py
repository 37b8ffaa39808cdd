"""Finding text in a run: which records' names, summaries and content hold a query, any case.

Names and summaries are matched on the rows a viewer already holds (``row_hits``, at once);
content is read back from the store page by page (``search_content``), so a run far larger than
memory is searched holding one page of records at a time. The TUI's ``/`` and any script call
the same functions.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass

from agenttui.journal.describe import raw_json_text
from agenttui.journal.journal import decode_entry
from agenttui.journal.record import ReasoningPart, Record, TextPart, ToolResultPart, ToolUsePart, UnknownPart
from agenttui.runs.reading.view import RecordRow
from agenttui.stores.base import LOAD_PAGE_SIZE, Entry, Store, seq_order


class Needle:
    """A query as it is matched: a case-insensitive substring (``str.lower`` on both sides)."""

    def __init__(self, query: str) -> None:
        self.query = query
        self.text = query.lower()
        # Most stored records are ASCII JSON without escapes: then every text the content shows
        # is a verbatim slice of the stored bytes, so bytes that lack the query need no decoding.
        # On the benchmark's 4,000-record run this skips all but the records that hold it.
        self._bytes = self.text.encode("utf-8") if self.text.isascii() else None

    def __bool__(self) -> bool:
        return bool(self.text)

    def in_row(self, row: RecordRow) -> bool:
        """Whether the record's step name or its summary (what its list line shows) holds the query."""
        return self.text in row.name.lower() or self.text in row.summary.lower()

    @property
    def ascii_bytes(self) -> bytes | None:
        """The query as lowered ASCII bytes (None when it is not ASCII: no ASCII record holds it)."""
        return self._bytes

    def may_hold(self, data: bytes) -> bool:
        """Whether a record stored as ``data`` may hold the query: False only where its bytes,
        ASCII JSON without escapes, lack it (then every text its content shows lacks it too)."""
        lacks = data.isascii() and b"\\" not in data and (self._bytes is None or self._bytes not in data.lower())
        return not lacks

    def in_entry(self, entry: Entry) -> bool:
        """Whether the content of the entry's record holds the query: its message's text, tool
        calls and their arguments, its result and evidence, or, unreadable, its stored bytes."""
        if not self.may_hold(entry.data):
            return False
        return any(self.text in text.lower() for text in content_texts(decode_entry(entry)))


def content_texts(record: Record) -> Iterator[str]:
    """The texts of a record a person reads in the inspector, unescaped (raw JSON values verbatim,
    or re-encoded without escapes where the stored ones use any)."""
    if record.unreadable:
        yield record.raw.decode("utf-8", "replace")
        return
    if record.message is not None:
        for part in record.message.parts:
            match part:
                case TextPart(text=text) | ReasoningPart(text=text):
                    yield text
                case ToolUsePart(name=name, args=args):
                    yield name
                    yield _json_text(args)
                case ToolResultPart(result=result):
                    yield _json_text(result)
                case UnknownPart(raw=raw):
                    yield _json_text(raw)
    yield _json_text(record.result)
    yield _json_text(record.evidence)
    yield record.approver


def _json_text(raw: bytes | None) -> str:
    if raw is None:
        return ""
    return raw_json_text(raw, indent=0 if b"\\" in raw else None)


def row_hits(rows: Sequence[RecordRow], needle: Needle, start: int = 0) -> list[int]:
    """The indices, from ``start`` on, of the rows whose name or summary hold the query."""
    return [index for index in range(start, len(rows)) if needle.in_row(rows[index])]


@dataclass(frozen=True, slots=True)
class SearchPage:
    """What one page of a content search found."""

    hits: list[int]
    """The indices (positions in the run, as ``RunView`` counts them) of the records whose
    content holds the query, ascending."""
    searched: int
    """Records searched so far, this page's included."""


async def search_content(
    store: Store, run_id: str, needle: Needle, *, upto_seq: int | None = None, page: int = LOAD_PAGE_SIZE
) -> AsyncIterator[SearchPage]:
    """Search the content of the run's records in commit order, one page of ``page`` records at a
    time (one ``SearchPage`` each, the last possibly empty), holding no more than a page of them.
    ``upto_seq``: stop after the record at that seq (the newest a viewer holds)."""
    hits: list[int] = []
    index = 0
    upto = None if upto_seq is None else seq_order(upto_seq)
    async for entry in store.load(run_id):
        if upto is not None and seq_order(entry.seq) > upto:
            break
        if needle.in_entry(entry):
            hits.append(index)
        index += 1
        if index % page == 0:
            yield SearchPage(hits, index)
            hits = []
    yield SearchPage(hits, index)


class Hits:
    """The records a search has found so far, ascending, and how far it has read: what ``n``,
    ``N`` and the count ("hit 3 of 17") walk. Hits arrive in any order (names at once, content
    page by page) and each is counted once."""

    def __init__(self, needle: Needle, total: int) -> None:
        self.needle = needle
        self.total = total
        """Records the search covers (those held when it began)."""
        self.searched = 0
        """Records whose content has been searched."""
        self.done = False
        self.indices: list[int] = []
        self._found: set[int] = set()

    def __len__(self) -> int:
        return len(self.indices)

    def __contains__(self, index: object) -> bool:
        return index in self._found

    def add(self, indices: Iterable[int]) -> bool:
        """Count the hits at ``indices``; whether any was new."""
        fresh = [index for index in indices if index not in self._found]
        for index in fresh:
            self._found.add(index)
            insort(self.indices, index)
        return bool(fresh)

    def after(self, index: int) -> int | None:
        """The first hit past ``index``, wrapping to the first (None: no hit yet)."""
        at = bisect_right(self.indices, index)
        return self.indices[at] if at < len(self.indices) else self.indices[0] if self.indices else None

    def before(self, index: int) -> int | None:
        """The last hit before ``index``, wrapping to the last (None: no hit yet)."""
        at = bisect_left(self.indices, index)
        return self.indices[at - 1] if at > 0 else self.indices[-1] if self.indices else None

    def count(self, cursor: int) -> str:
        """What the search found, as seen from the record at ``cursor``: "hit 3 of 17", with how far
        a search still under way has read."""
        found = len(self.indices)
        if cursor in self._found:
            text = f"hit {bisect_left(self.indices, cursor) + 1:,} of {found:,}"
        else:
            text = f"{found:,} hit{'s' if found != 1 else ''}" if found else "no hits"
        if not self.done:
            text += f" · searching {self.searched:,} of {self.total:,}"
        return text
