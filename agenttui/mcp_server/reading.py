"""What the read tools read: runs' statuses a page at a time, and a run's records kept between
calls, so an agent asking about one run again and again reads it once.

Each function is the core's own (``runs.status``, ``journal``, ``replay``, ``render``) with its
answer as plain values; ``tools`` fits them to a budget and makes them inert.
"""

from __future__ import annotations

import base64
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

from agenttui.errors import AgentTuiError, RunNotFoundError
from agenttui.journal.inert import printable_id
from agenttui.journal.journal import Journal
from agenttui.runs.statuses.state import RunState

if TYPE_CHECKING:
    from agenttui.journal.record import Record
    from agenttui.render.flow import FlowStep
    from agenttui.replay.verdict import Verdict
    from agenttui.runs.reading.search import Needle
    from agenttui.runs.statuses.status import RunStatus
    from agenttui.stores.base import Store

#: Runs whose statuses one call to the run list reads at most: a filter that matches few runs
#: of a large store answers within seconds, with a cursor to read on from.
SCAN_AT_MOST = 10_000
#: Runs read a page at a time (the status index and the store's summaries work by pages).
PAGE = 500
#: How many runs' records are kept between calls, and their stored bytes at most.
KEPT_RUNS = 4
KEPT_BYTES = 256 * 1024 * 1024


class BadCursor(AgentTuiError):
    """A cursor this server did not give (nothing is read)."""

    title = "Bad cursor"


def cursor_of(run_id: str) -> str:
    """An opaque cursor after ``run_id``: exact whatever the id holds, and inert."""
    return base64.urlsafe_b64encode(run_id.encode("utf-8", "surrogatepass")).decode()


#: What starts a ``run_ref``: a run named by its id's bytes, for an id no answer shows as it is.
RUN_REF = "ref:"


def run_ref(run_id: str) -> str | None:
    """How a tool is given ``run_id`` when answers cannot show it as it is (it holds a control or
    bidi character, shown escaped, or starts like a ref itself): ``ref:`` and its bytes in
    base64; None for an id shown as it is."""
    if printable_id(run_id) == run_id and not run_id.startswith(RUN_REF):
        return None
    return RUN_REF + cursor_of(run_id)


def given_run_id(given: str) -> str:
    """The run id a tool was given: itself, or the one its ``run_ref`` names."""
    if not given.startswith(RUN_REF):
        return given
    try:
        return run_after(given[len(RUN_REF) :])
    except BadCursor:
        raise BadCursor(f"not a run_ref this server gave: {given[:40]!r}") from None


def run_after(cursor: str | None) -> str:
    if not cursor:
        return ""
    try:
        return base64.b64decode(cursor.encode(), altchars=b"-_", validate=True).decode("utf-8", "surrogatepass")
    except (ValueError, UnicodeError):
        raise BadCursor(f"not a cursor this server gave: {cursor[:40]!r}") from None


def status_line(status: RunStatus) -> dict[str, Any]:
    """A run as the run list shows it: its status, what it waits on, its size, when it last moved;
    a member the run has nothing for (null, false, "") is left out, as a page holds hundreds."""
    from agenttui.runs.statuses.status import status_json

    times = status.times
    latest = None if times is None else datetime.fromtimestamp(times.latest_ms / 1000, UTC).isoformat()
    line = status_json(status) | {
        "run_ref": run_ref(status.run_id),
        "waits_on": waits_on(status),
        "last_activity": latest,
    }
    return {key: value for key, value in line.items() if value is not None and value is not False and value != ""}


def waits_on(status: RunStatus) -> str | None:
    """What a paused run waits on, in words (None for a run that waits on nothing a person gives)."""
    match status.state:
        case RunState.AWAITING_APPROVAL:
            return f"an approval of call {status.tool_use_id} ({status.tool_name})"
        case RunState.AWAITING_INPUT:
            return f"an answer to {status.interrupt_name}"
        case RunState.HALTED:
            return f"a resolution of call {status.tool_use_id} ({status.tool_name}): did it fire?"
        case RunState.SLEEPING:
            return f"its wake time, {status.wake_at.isoformat() if status.wake_at else 'unknown'}"
        case RunState.READY | RunState.STALLED:
            return "a re-drive"
    return None


@dataclass
class RunPage:
    runs: list[dict[str, Any]]
    scanned: int
    next_cursor: str | None


async def list_runs(
    store: Store, *, where: str | None, states: Sequence[str], cursor: str | None, limit: int
) -> RunPage:
    """Runs the filter selects, in run id order from ``cursor``, at most ``limit``, having read
    at most ``SCAN_AT_MOST`` statuses (the cursor then says where to read on)."""
    from agenttui.runs.selection.indexed import candidate_statuses
    from agenttui.runs.selection.where import parse_where
    from agenttui.runs.statuses.shared import in_use
    from agenttui.runs.statuses.status import statuses

    wanted = {RunState(state) for state in states}
    selects = parse_where(where) if where else None
    now = datetime.now(UTC)
    found: list[dict[str, Any]] = []
    scanned, last = 0, None
    page: list[str] = []
    if (where or states) and await in_use(store):  # the filter narrows on the database
        chosen = [f"({where})"] if where else []
        chosen += [f"status={','.join(sorted(wanted))}"] if wanted else []
        selection = parse_where(" and ".join(chosen))
        async for status in candidate_statuses(store, selection, now, after=run_after(cursor)):
            scanned, last = scanned + 1, status.run_id
            if selection.matches(status, now):
                found.append(status_line(status))
            if len(found) >= limit or scanned >= SCAN_AT_MOST:
                return RunPage(found, scanned, cursor_of(last))
        return RunPage(found, scanned, None)

    async def take(page: list[str]) -> bool:
        """Read a page's statuses; whether the list is full."""
        nonlocal scanned, last
        for status in await statuses(store, page):
            scanned += 1
            last = status.run_id
            if (not wanted or status.state in wanted) and (selects is None or selects.matches(status, now)):
                found.append(status_line(status))
                if len(found) >= limit:
                    return True
        return False

    size = min(limit, PAGE)  # the first page no larger than the answer: without a filter, it is the answer
    async for run_id in store.runs(after=run_after(cursor)):
        page.append(run_id)
        if len(page) >= size:
            if await take(page) or scanned >= SCAN_AT_MOST:
                return RunPage(found, scanned, cursor_of(last) if last is not None else None)
            page, size = [], PAGE
    if page and await take(page):
        return RunPage(found, scanned, cursor_of(last) if last is not None else None)
    return RunPage(found, scanned, None)


@dataclass
class KeptRun:
    """A run's records as read, the mark they were read at (entry count, highest seq), and what
    was made of them since: each a pure function of the records, made once."""

    mark: tuple[int, int] | None
    records: list[Record]
    size: int
    verdict: tuple[Any, Verdict] | None = None
    """The replay's session and verdict."""
    drawings: dict[tuple[int, FlowStep], tuple[object, str]] = field(default_factory=dict)
    """ASCII flowcharts by width and end node, each with the sub-runs' steps it was drawn with."""

    @cached_property
    def tool_names(self) -> dict[str, str]:
        from agenttui.runs.reading.view import tool_names

        return tool_names(self.records)

    @cached_property
    def voices(self) -> list[int]:
        """The records that are voices of the conversation, by index."""
        from agenttui.runs.reading.view import speaks

        return [at for at, record in enumerate(self.records) if speaks(record)]

    @cached_property
    def _lowered(self) -> tuple[bytes, array[int], list[int]]:
        """Every record's stored bytes lowered, end to end, where each record's end is, and the
        records whose bytes may not show their text as it is (not ASCII, or escaped)."""
        ends = array("q")
        unclear = []
        for at, record in enumerate(self.records):
            ends.append((ends[-1] if ends else 0) + len(record.raw))
            if not record.raw.isascii() or b"\\" in record.raw:
                unclear.append(at)
        return b"".join(record.raw for record in self.records).lower(), ends, unclear

    def may_hold(self, needle: Needle, start: int, stop: int) -> set[int]:
        """The records from ``start`` to ``stop`` whose content may hold ``needle``
        (``Needle.may_hold`` of each, found by one scan of their bytes, not a look at each)."""
        lowered, ends, unclear = self._lowered
        found = set(unclear[bisect_left(unclear, start) : bisect_left(unclear, stop)])
        if (query := needle.ascii_bytes) is not None and start < stop:
            at, end = lowered.find(query, ends[start - 1] if start else 0, ends[stop - 1]), ends[stop - 1]
            while at >= 0:
                index = bisect_right(ends, at)
                found.add(index)
                at = lowered.find(query, ends[index], end)  # on from the next record
        return found

    @cached_property
    def mermaid(self) -> str:
        from agenttui.render.flow import flow_steps
        from agenttui.render.mermaid import mermaid_text

        return mermaid_text(flow_steps(self.records))


class RunRecords:
    """The records of the last few runs asked about, read again only when the run moved (its
    entry count or highest seq differs: one index-only query), so each call after the first
    about a run of 50,000 records costs what it answers, not a read of the run."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._kept: OrderedDict[str, KeptRun] = OrderedDict()

    async def run(self, run_id: str) -> KeptRun:
        marks = await self.store.run_marks([run_id])
        mark = marks.get(run_id)
        kept = self._kept.get(run_id)
        if kept is not None and mark is not None and kept.mark == mark:
            self._kept.move_to_end(run_id)
            return kept
        records = (await Journal(self.store).read(run_id)).records
        if not records:
            raise RunNotFoundError(run_id)
        kept = KeptRun(mark, records, sum(len(record.raw) for record in records))
        self._kept[run_id] = kept
        while len(self._kept) > KEPT_RUNS or sum(k.size for k in self._kept.values()) > KEPT_BYTES:
            if len(self._kept) == 1:
                break
            self._kept.popitem(last=False)
        return kept

    def forget(self, run_id: str) -> None:
        """Read the run again next time (this server wrote to it)."""
        self._kept.pop(run_id, None)

    async def records(self, run_id: str) -> list[Record]:
        return (await self.run(run_id)).records

    async def verdict(self, run_id: str) -> tuple[Any, Verdict]:
        """The run replayed offline with its recorded tools and judged (kept with its records)."""
        from agenttui.replay.session import replay_verdict

        kept = await self.run(run_id)
        if kept.verdict is None:
            kept.verdict = await replay_verdict(self.store, run_id)
        return kept.verdict
