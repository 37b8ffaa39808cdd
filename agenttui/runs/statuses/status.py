"""Run status, derived from the journal and the lease table alone (format section 6).

The engine journals no pause, so a paused run is told from a crashed one by what the journal
shows is open, and live from dead by the lease. Where the two readings cannot be told apart,
the rule picks the one that is safer to act on, and says so below.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import dataclasses
import functools
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any, NamedTuple, TypedDict, Unpack

from agenttui.agent.pauses import interrupt_name, tally_approved
from agenttui.agent.runstart import RunStart
from agenttui.errors import StoreConnectionError, StoreError, StoreLockedError
from agenttui.journal import keys
from agenttui.journal.codec import decode_json, decode_outline
from agenttui.journal.inert import inert_json
from agenttui.journal.journal import Journal, decode_entry, journal_format
from agenttui.journal.keys import root_run_id
from agenttui.journal.record import SUPPORTED_FORMATS, Record, StepKind
from agenttui.journal.timefmt import parse_go_time
from agenttui.runs.statuses.columns import PENDING, STATE_INDEX, STATES, StatusColumns
from agenttui.runs.statuses.forks import fork_mark
from agenttui.runs.statuses.index import (
    IndexedPage,
    KeptLines,
    Verdict,
    holds_runs,
    indexed_lines,
    indexed_page,
    keep_page,
    keep_verdicts,
    spot_checks_done,
)
from agenttui.runs.statuses.shared import in_use, shared_lines, shared_verdicts
from agenttui.runs.statuses.state import RunState as RunState  # where every reader of a status has found it
from agenttui.stores.base import INT64_MAX, INT64_MIN, Entry, LeaseInfo, Store, pages_of
from agenttui.stores.summary import RunSummary, SummedJournal, record_head


class RunStatus(NamedTuple):
    """A run's state and what it waits on.

    ``detail`` names the pending item: the call awaiting approval or whose outcome is unknown,
    the wake time, the reason a run ended or is unreadable. ``tool_use_id`` is the open call;
    ``interrupt_name`` the name ``answer`` records under, for a run awaiting input.

    A named tuple, not a frozen dataclass: a look at 100,000 runs makes 100,000 of them, and a
    tuple is made at once where a frozen dataclass sets each of its 17 members in turn (three
    times the time: a fifth of a reopen's).
    """

    run_id: str
    state: RunState
    detail: str = ""
    tool_use_id: str = ""
    tool_name: str = ""
    interrupt_name: str = ""
    wake_at: datetime | None = None
    lease_holder: str = ""
    lease_lapsed: bool = False
    """The run holds a lease row that has lapsed (its driver died or stalled)."""
    lease: LeaseInfo | None = None
    """The lease row as read with the status, live or lapsed (holder and expiry)."""
    lease_unknown: bool = False
    """The lease table could not be read (missing or broken): no lease is assumed."""
    legacy: bool = False
    """A headerless journal of an SDK before v0.9: shown and replayed, never written to."""
    fork_of: str = ""
    """The run a saved what-if fork forks (its state is ``fork``)."""
    steps: int = 0
    turns: int = 0
    tokens: int = 0
    times: RunTimes | None = None
    """The times an unfinished run's records carry (None: none does, or the run is finished)."""


def status_json(status: RunStatus) -> dict[str, Any]:
    """A run's status for scripts and agents: the CLI's ``runs --json``, the MCP server's run list."""
    return {
        "run_id": status.run_id,
        "status": status.state.value,
        "steps": status.steps,
        "turns": status.turns,
        "tokens": status.tokens,
        "detail": status.detail,
        "pending_call": status.tool_use_id or None,
        "pending_tool": status.tool_name or None,
        "interrupt_name": status.interrupt_name or None,
        "wake_at": status.wake_at.isoformat() if status.wake_at else None,
        "lease_holder": status.lease_holder or None,
        "lease_lapsed": status.lease_lapsed,
        "lease_unknown": status.lease_unknown,
        "legacy": status.legacy,
        "fork_of": status.fork_of or None,
    }


@dataclass(frozen=True, slots=True)
class RunTimes:
    """What a run's records say of when they were written (docs/decisions.md, "Times of a run").

    The format stores no time per record: only attempt markers carry one (``attempted_at``, Unix
    ms). Records are committed in time order, so a record after the one carrying ``latest_ms``
    was written later, and the first record earlier than the one carrying ``earliest_ms``.
    """

    earliest_ms: int
    latest_ms: int
    first_is_earliest: bool
    """The run's first record (after the header) carries ``earliest_ms``: its age is exact."""
    last_is_latest: bool
    """The run's last record (commit order) carries ``latest_ms``: its idle time is exact."""


def _times_of(records: Sequence[Record], legacy: bool) -> RunTimes | None:
    """The times attempt markers carry among ``records`` (a marker without ``attempted_at``, as
    the oldest SDKs wrote them, carries none)."""
    carried = [r.attempted_at for r in records if r.attempted_at > 0 and r.kind == StepKind.ATTEMPT]
    if not carried:
        return None
    earliest, latest = min(carried), max(carried)
    first = records[0] if legacy else records[1] if len(records) > 1 else None
    last = records[-1]
    return RunTimes(
        earliest,
        latest,
        first is not None and first.kind == StepKind.ATTEMPT and first.attempted_at == earliest,
        last.kind == StepKind.ATTEMPT and last.attempted_at == latest,
    )


#: What each end marker makes a run.
_END_STATES = {
    keys.RUN_COMPLETE: RunState.COMPLETE,
    keys.RUN_ABORTED: RunState.ABORTED,
    keys.RUN_CANCELLED: RunState.CANCELLED,
}


def _lease_fields(lease: LeaseInfo | None) -> _LeaseFields:
    """What a status says of its run's lease row (``UNKNOWN_LEASE``: it could not be read)."""
    unknown = lease is UNKNOWN_LEASE
    row = None if unknown else lease
    return {
        "lease_holder": row.holder if row is not None and row.live else "",
        "lease_lapsed": row is not None and not row.live,
        "lease": row,
        "lease_unknown": unknown,
    }


def status_of(
    run_id: str,
    records: Sequence[Record],
    lease: LeaseInfo | None = None,
    *,
    now: datetime | None = None,
    forks: bool = True,
) -> RunStatus:
    """The status of a run whose records (header first) and lease row are given. Pure.

    The rules, first match wins (where the SDK's ``Status`` decides, they agree with it; the
    rest are agenttui's finer reading of what the SDK calls ``started``):

    1. No records, a format agenttui does not read, or an unreadable record: ``unreadable``.
       A headerless journal (before v0.9) is read as ``legacy``. A session's own journal
       (``<id>>@session``) is ``not-started``, as the SDK says. A saved what-if fork
       (``runs.forks``) is ``fork``, whatever its journal holds: it is never driven or written
       to. ``forks=False`` reads a fork's journal as any run's (a replay of it: where it stops).
    2. The first end marker: ``complete``, ``aborted`` or ``cancelled``.
    3. A live lease: ``in-flight``. It outranks every rule below: a live driver may be about to
       record ``run:start``, or the very result a pause waits for, so acting on it would race it.
    4. No ``run:start`` (a run holding only a signal): ``not-started``. Journals from before
       v0.8 never had one; theirs is read from their model turns.
    5. ``run:cancel-requested``: ``cancelling`` (a saga rolling back; only its driver ends it).
    6. For the calls the last model turn made that have no result yet, in call order:
       an attempt marker not voided by ``not_started`` → ``halted`` (outcome unknown; safer than
       re-firing); a gated tool (by ``run:start``'s tool policy, or a decision on record) →
       ``awaiting-approval`` without a decision, ``ready`` with one; a durable sleep journaled
       after that turn → ``sleeping`` while its wake time is ahead, ``ready`` after; a tool that
       asks people → ``awaiting-input`` until answered, ``ready`` after.
    7. Otherwise ``stalled``: unfinished, nobody driving, nothing pending: safe to re-drive.
    """
    return _status(run_id, records, _counts_of(records), lease, now, forks=forks)


class _Counts(NamedTuple):
    """What a status counts of a run's records: its model turns, and the tokens of every usage."""

    turns: int = 0
    tokens: int = 0

    def plus(self, other: _Counts) -> _Counts:
        return _Counts(self.turns + other.turns, self.tokens + other.tokens)


def _counts_of(records: Sequence[Record]) -> _Counts:
    """The turns and tokens of records as decoded (a stand-in counts by its kind and usage)."""
    return _Counts(sum(r.kind == StepKind.MODEL for r in records), sum(r.usage.total for r in records if r.usage))


def _status(
    run_id: str,
    records: Sequence[Record],
    counts: _Counts,
    lease: LeaseInfo | None,
    now: datetime | None,
    *,
    forks: bool = True,
) -> RunStatus:
    """``status_of``, with the records' turns and tokens counted already (a summary's counts
    where its records stand in without their usage)."""
    now = now or datetime.now(UTC)
    steps = len(records)
    turns, tokens = counts
    model_records = [r for r in records if r.kind == StepKind.MODEL]
    legacy = bool(records) and not records[0].is_header and not records[0].unreadable
    leased = _lease_fields(lease)
    lease = leased["lease"]

    def status(state: RunState, detail: str = "", **extra: Unpack[_Pending]) -> RunStatus:
        # A finished run carries no times: a summary decides most of them, and it has none; one
        # rule for every way of reading a run.
        times = None if state.finished else _times_of(records, legacy)
        return RunStatus(
            run_id,
            state,
            detail,
            legacy=legacy,
            steps=steps,
            turns=turns,
            tokens=tokens,
            times=times,
            **leased,
            **extra,
        )

    if not records:
        return status(RunState.UNREADABLE, "no records")
    if bad := next((r for r in records if r.unreadable), None):
        return status(RunState.UNREADABLE, f"{bad.name}: {bad.unreadable}")
    if not legacy and (found := journal_format(records[0])) not in SUPPORTED_FORMATS:
        return status(RunState.UNREADABLE, f"journal format {found!r}")

    by_name = {r.name: r for r in records}
    started = keys.RUN_START in by_name and by_name[keys.RUN_START].kind == StepKind.VALUE
    if keys.is_session_journal(run_id):
        return status(RunState.NOT_STARTED, "a session's journal: its turns are runs of their own")
    if forks and (mark := fork_mark(by_name)) is not None:
        return status(RunState.FORK, mark.describe(), fork_of=mark.of)
    end = keys.first_end_marker(r.name for r in records)
    if end is not None:
        state = _END_STATES.get(end, RunState.CANCELLED)
        return status(state, end_reason(by_name[end]))
    if lease is not None and lease.live:
        return status(RunState.IN_FLIGHT, f"leased by {lease.holder}")
    if not started and not (legacy and model_records):
        return status(RunState.NOT_STARTED, "never started: no run:start record")
    if keys.RUN_CANCEL_REQUESTED in by_name:
        reason = end_reason(by_name[keys.RUN_CANCEL_REQUESTED])
        return status(RunState.CANCELLING, "rollback requested" + (f": {reason}" if reason else ""))
    if not model_records:
        return status(RunState.STALLED, "no model turn recorded")

    start = RunStart.decode(by_name[keys.RUN_START].result) if started else None
    last_turn = model_records[-1]
    # Found by identity from the end: list.index compares every record before it field by field.
    after_last_turn = records[next(i for i in range(len(records) - 1, -1, -1) if records[i] is last_turn) + 1 :]
    for call in last_turn.message.tool_uses if last_turn.message else ():
        if keys.tool_key(call.id) in by_name or (legacy and call.id in by_name):
            continue
        info: _Call = {"tool_use_id": call.id, "tool_name": call.name}
        what = f"{call.name} ({call.id})"
        if _open_attempt(call.id, by_name) or (legacy and f"attempt:{call.id}" in by_name):
            return status(RunState.HALTED, f"{what}: outcome unknown", **info)
        policy = start.policy(call.name) if start else None
        decision = by_name.get(keys.approval_key(call.id)) or by_name.get(keys.approval_tally_key(call.id))
        if decision is not None:
            verb = "approved" if _decided_yes(decision) else "denied"
            return status(RunState.READY, f"{what} {verb}: re-drive to go on", **info)
        votes = sum(r.kind == StepKind.APPROVAL and r.tool_use_id == call.id for r in after_last_turn)
        if votes:  # m-of-n decisions, and no terminal tally yet
            return status(RunState.AWAITING_APPROVAL, f"{what} awaits approvals ({votes} decided so far)", **info)
        if policy and policy.needs_approval:
            return status(RunState.AWAITING_APPROVAL, f"{what} awaits approval", **info)
        timers = [r for r in after_last_turn if r.name.startswith("timer:") and r.kind == StepKind.VALUE]
        if timers and (wake_at := _wake_time(timers[-1])) is not None:
            return status(*_by_the_clock(what, wake_at, now), wake_at=wake_at, **info)
        # An answer or a signal that came after the turn (a Go tool declares no policy, but an
        # answer in the journal says a person answered what it asked).
        if answer := next((r for r in after_last_turn if r.name.startswith(("interrupt:", "signal:"))), None):
            return status(RunState.READY, f"{what}: {answer.name} arrived: re-drive to go on",
                          interrupt_name=answer.name.partition(":")[2] if answer.name.startswith("interrupt:") else "", **info)  # fmt: skip
        if policy and policy.interrupts:
            name = interrupt_name(call.id)
            return status(RunState.AWAITING_INPUT, f"{what} awaits an answer to {name}", interrupt_name=name, **info)
    return status(RunState.STALLED)


class _Call(TypedDict):
    """The open call a status names."""

    tool_use_id: str
    tool_name: str


class _LeaseFields(TypedDict):
    """``RunStatus``'s members about the lease row."""

    lease_holder: str
    lease_lapsed: bool
    lease: LeaseInfo | None
    lease_unknown: bool


class _Unleased(TypedDict):
    """``RunStatus``'s members that a lease row never changes (``fork_of`` is only a fork's,
    which a lease never makes in flight)."""

    legacy: bool
    fork_of: str
    steps: int
    turns: int
    tokens: int
    times: RunTimes | None


class _Pending(TypedDict, total=False):
    """What a status names of the item its run waits on, or of the run a fork forks
    (``RunStatus``'s members of that name)."""

    tool_use_id: str
    tool_name: str
    interrupt_name: str
    wake_at: datetime | None
    fork_of: str


def _decided_yes(decision: Record) -> bool:
    return decision.approved if decision.kind == StepKind.APPROVAL else tally_approved(decision)


def _open_attempt(call_id: str, by_name: dict[str, Record]) -> bool:
    """Whether the call's newest attempt marker stands un-voided (section 6, rule 2)."""
    marker = None
    generation = 0
    while True:
        name = keys.attempt_key(call_id) if generation == 0 else keys.retry_attempt_key(generation, call_id)
        if name not in by_name:
            break
        marker = by_name[name]
        generation += 1
    return marker is not None and keys.not_started_key(marker.claim, marker.name) not in by_name


def _by_the_clock(what: str, wake_at: datetime, now: datetime) -> tuple[RunState, str]:
    """The state and detail of a run whose open call ``what`` waits on a timer that wakes at
    ``wake_at`` (``_state_by_the_clock``)."""
    at = wake_at.isoformat(timespec="seconds")
    if _state_by_the_clock(wake_at, now) is RunState.SLEEPING:
        return RunState.SLEEPING, f"until {at}"
    return RunState.READY, f"{what} woke at {at}: re-drive to go on"


def _state_by_the_clock(wake_at: datetime, now: datetime) -> RunState:
    """The state of a run that waits on a timer that wakes at ``wake_at``: sleeping until then,
    ready after."""
    return RunState.SLEEPING if wake_at > now else RunState.READY


def _wake_time(timer: Record) -> datetime | None:
    """The timer's wake time, or None when its result is not one (any host may have written it;
    the result is always aware, so comparing it with ``now`` cannot raise)."""
    try:
        return parse_go_time(decode_json(timer.result))
    except ValueError:
        return None


def end_reason(marker: Record) -> str:
    """An end marker's reason (``run:cancelled``, ``run:aborted``, ``run:cancel-requested``): its
    ``reason`` member, or its value itself ("" when it has none)."""
    if not marker.result:
        return ""
    try:
        return _reason_of(decode_json(marker.result))
    except ValueError:
        return ""


def _reason_of(result: object) -> str:
    """An end marker's reason, from its result's value: its ``reason`` member, or the value itself."""
    return str(result.get("reason", "")) if isinstance(result, dict) else str(result)


#: How often a run whose read fails is read again before it is shown as unreadable.
READ_ATTEMPTS = 3


async def run_status(store: Store, run_id: str) -> RunStatus:
    """Read a run's journal and lease row, and derive its status.

    A read that fails for this run alone (a damaged page, a row of the wrong type) is tried
    again, then the run reads as ``unreadable`` saying why: one bad run never hides the others.
    A lost connection (``StoreConnectionError``) is no status of any run, and propagates.
    """
    return await _resilient(run_id, lambda: _read_status(store, run_id))


async def _read_status(store: Store, run_id: str) -> RunStatus:
    records = (await Journal(store).read(run_id)).records
    return status_of(run_id, records, await lease_row(store, run_id))


async def _read_kept(store: Store, run_id: str) -> RunStatus:
    """``run_status``, keeping what it read in the status index: a long unfinished run, read
    whole, is not read again by the next look (a viewer's ``StatusTracker`` keeps it alike)."""

    async def read() -> RunStatus:
        run = await Journal(store).read(run_id)
        return await _read_whole(store, run_id, run.records, _counts_of(run.records), run.last_seq)

    return await _resilient(run_id, read)


async def _read_whole(
    store: Store, run_id: str, records: Sequence[Record], counts: _Counts, last_seq: int
) -> RunStatus:
    """The status of a run read whole, up to ``last_seq``: what the rules make of it without a
    lease row is kept in the status index with the validator of what was read (a long run is
    read whole once, not on every look), and its lease row is read now."""
    unleased = _status(run_id, records, counts, None, None)
    if records:
        await keep_verdicts(store, [(run_id, (len(records), last_seq), _verdict(unleased))])
    return _with_lease(unleased, await lease_row(store, run_id))


async def lease_row(store: Store, run_id: str) -> LeaseInfo | None:
    """The run's lease row; a lease table that is missing or broken reads as ``UNKNOWN_LEASE``
    (the journal alone still says most of a status; the status says the lease is unknown)."""
    if not store.IMPLEMENTS_LEASES:
        return None
    try:
        return await store.get_lease(root_run_id(run_id))
    except StoreConnectionError:
        raise
    except StoreError:
        return UNKNOWN_LEASE


#: A lease row that could not be read: ``status_of`` reads on as if there were none, and says so.
UNKNOWN_LEASE = LeaseInfo("", "", 0.0)


async def _resilient(run_id: str, read: Callable[[], Awaitable[RunStatus]]) -> RunStatus:
    for attempt in range(READ_ATTEMPTS):
        try:
            return await read()
        except (StoreConnectionError, StoreLockedError):  # the store's state, not this run's
            raise
        except StoreError as exc:
            if attempt + 1 == READ_ATTEMPTS:
                return RunStatus(
                    run_id, RunState.UNREADABLE, f"could not be read ({READ_ATTEMPTS} tries): {exc.message}"
                )
            await asyncio.sleep(0.05 * 4**attempt)
    raise AssertionError("unreachable")


async def is_complete(store: Store, run_id: str) -> bool:
    """The first end marker in journal order is ``run:complete``."""
    names = [e.name async for e in store.load(run_id)]
    return keys.first_end_marker(names) == keys.RUN_COMPLETE


#: How many runs one summary query sums up (``statuses``).
SUMMARY_PAGE = 500
#: How many pages ``list_statuses`` has in the store's hands at once: two keep the database busy
#: while Python decides a page.
PAGES_AHEAD = 2


def status_from_summary(summary: RunSummary, lease: LeaseInfo | None) -> RunStatus | None:
    """A finished run's status from its summary alone, as ``status_of`` would say it; None when
    only the exact rules can say: the run is unfinished, an entry is suspect, its header is not
    one agenttui reads (or it has none), it is a session's journal, or it may be a saved fork."""
    if summary.suspect or summary.end is None or summary.forked or keys.is_session_journal(summary.run_id):
        return None
    header, end = _plain_record(summary.first), _plain_record(summary.end)
    if header is None or end is None:
        return None
    if summary.first.name != keys.HEADER or header.get("kind") != StepKind.HEADER:
        return None
    if header.get("format") not in SUPPORTED_FORMATS:
        return None
    return RunStatus(
        summary.run_id,
        _END_STATES.get(summary.end.name, RunState.CANCELLED),
        _reason_of(end["result"]) if "result" in end else "",
        steps=summary.steps,
        turns=summary.turns,
        tokens=summary.tokens,
        **_lease_fields(lease),
    )


#: The members of a header or an end marker the journal's codec reads; each but ``result`` is text.
_PLAIN_MEMBERS = frozenset({"name", "kind", "format", "salt", "result"})
_JSON = json.JSONDecoder()


def _plain_record(entry: Entry) -> dict[str, Any] | None:
    """A header's or an end marker's members, or None unless the codec would read the entry
    just so: UTF-8 JSON, an object of known members of the right types, under its own name, its
    salt base64. Anything else goes to the exact rules, which decode it and say what is wrong.

    Bytes as the codec writes such a record with no result (``_WRITTEN``: every header, most end
    markers) are matched, not parsed; the rest are parsed by the C JSON parser (a fifth of the
    codec's time). At 100,000 runs either counts."""
    if entry.damage:
        return None
    if (written := _WRITTEN.fullmatch(entry.data)) is not None:
        name, kind, format_ = written.groups()
        if name.decode() != entry.name:
            return None
        return (
            {"name": entry.name, "kind": kind.decode(), "format": format_.decode()}
            if format_
            else {"name": entry.name, "kind": kind.decode()}
        )
    try:  # raw_decode: json.loads spends more on checking the ends than on parsing
        text = entry.data.decode()
        value, end = _JSON.raw_decode(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError included
        return None
    if (
        end != len(text)
        or type(value) is not dict
        or value.get("name") != entry.name
        or not value.keys() <= _PLAIN_MEMBERS
    ):
        return None
    kind, format_, salt = value.get("kind", ""), value.get("format", ""), value.get("salt", "")
    if type(kind) is not str or type(format_) is not str or type(salt) is not str:
        return None
    try:
        base64.b64decode(salt, validate=True)
    except ValueError:
        return None
    return value


#: A JSON string's text with nothing escaped: printable ASCII but the quote and the backslash.
_PLAIN_TEXT = rb"[ !#-\[\]-~]*"
#: Base64 that ``b64decode(validate=True)`` reads: whole quads, the last one maybe padded.
_BASE64 = rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
#: A header or an end marker without a result, as the codec writes it: its plain members in order.
_WRITTEN = re.compile(
    rb'\{"name":"(' + _PLAIN_TEXT + rb')","kind":"(' + _PLAIN_TEXT + rb')"(?:,"format":"(' + _PLAIN_TEXT + rb')")?'
    rb'(?:,"salt":"' + _BASE64 + rb'")?\}'
)


#: An unfinished run of at most this many entries is read with the rest of its page, in one
#: round trip; a longer one is read on its own, page by page (it may be very long).
BATCH_STEPS = 1000


async def statuses(
    store: Store, run_ids: Sequence[str], exact: Callable[[str], Awaitable[RunStatus]] | None = None
) -> list[RunStatus]:
    """The statuses of ``run_ids``, in order. On a store that sums runs up: finished runs from
    their summaries, and the page's short unfinished runs read whole in one round trip (their
    leases in one more); every other run read whole by ``exact`` (``run_status`` by default).
    Given ``exact``, every run the summaries do not decide goes to it (a live view keeps its
    own incremental reads)."""
    read = exact or (lambda run_id: run_status(store, run_id))
    decided = await _page_statuses(store, run_ids, batch=exact is None) if store.IMPLEMENTS_SUMMARIES else {}
    return [decided[run_id] if run_id in decided else await read(run_id) for run_id in run_ids]


async def _page_statuses(
    store: Store,
    run_ids: Sequence[str],
    *,
    batch: bool,
    read: Callable[[str, _Kept], None] | None = None,
    summed: SummedJournal | None = None,
) -> dict[str, RunStatus]:
    """The statuses a page's summaries (``summed``'s, if given), or the status index's verdicts,
    decide and, with ``batch``, those of the page's other short runs, read whole at once
    (``read`` is told what was read of each); a run missing from the answer is left to the caller."""
    sums_up = store.IMPLEMENTS_SUMMARIES
    page = await _indexed_page(store, run_ids, summed) if sums_up else IndexedPage([], {}, None)
    # A store that sums nothing up has each run read whole (``batch``), as one that does has the
    # runs its summaries leave undecided.
    undecided: dict[str, RunSummary | None] = {} if sums_up or not batch else dict.fromkeys(run_ids)
    leases = await lease_rows(
        store,
        {root_run_id(s.run_id) for s in page.summaries if batch or s.end is not None}
        | {root_run_id(run_id) for run_id in [*page.verdicts, *undecided]},
    )
    decided = {}
    verdicts = []
    now = datetime.now(UTC)
    for run_id, verdict in page.verdicts.items():
        if (kept := _from_verdict(run_id, verdict, lease_in(leases, run_id), now)) is not None:
            decided[run_id] = kept
        elif batch:
            undecided[run_id] = None
    for summary in page.summaries:
        status = status_from_summary(summary, lease_in(leases, summary.run_id))
        if status is not None:
            decided[summary.run_id] = status
            if page.marks is not None and summary.run_id in page.marks:
                verdicts.append((summary.run_id, page.marks[summary.run_id], _verdict(status)))
        elif batch and summary.steps <= BATCH_STEPS:
            undecided[summary.run_id] = summary
    for run_id, (entries, records, counts) in (await _read_runs(store, undecided)).items():
        unleased = _status(run_id, records, counts, None, None)
        decided[run_id] = _with_lease(unleased, lease_in(leases, run_id))
        mark = (len(entries), entries[-1].seq)
        if page.marks is not None and page.marks.get(run_id) == mark:
            verdicts.append((run_id, mark, _verdict(unleased)))
        if read is not None:
            read(run_id, _Kept(entries[-1].seq, records, counts, sum(len(entry.data) for entry in entries)))
    await keep_page(store, page, verdicts)
    return decided


class UnleasedVerdicts(NamedTuple):
    """What ``unleased_verdicts`` made of some runs."""

    rows: list[tuple[str, tuple[int, int], Verdict | None]]
    """Each run read, the validator of its entries, and the verdict the rules make of them
    without a lease row (None where a count is past 64 bits: a reader then reads the run)."""
    vanished: list[str]
    """The runs with no entries."""
    again: list[str]
    """The runs that could not be read now (a damaged page, a failing read)."""


async def unleased_verdicts(store: Store, run_ids: Sequence[str]) -> UnleasedVerdicts:
    """What the status rules make of each run without a lease row, by the page's path (the
    shared run index's indexer: ``runs.statuses.indexer``): finished runs from their summaries,
    a page's short unfinished runs read whole in one round trip, every other run read whole on
    its own. What a reader makes of it with the lease row and the clock at its look is what
    ``run_status`` says (``_from_verdict``)."""
    summaries: dict[str, RunSummary] = {}
    ahead = asyncio.Semaphore(PAGES_AHEAD)  # the database sums pages up side by side, as a look's

    async def sum_up(page: Sequence[str]) -> None:
        async with ahead:
            try:
                summaries.update((s.run_id, s) for s in await store.summaries(page, keys.END_MARKERS))
            except (StoreConnectionError, StoreLockedError):
                raise
            except StoreError:  # a damaged page: its runs are read one by one
                pass

    await asyncio.gather(*(sum_up(run_ids[at : at + SUMMARY_PAGE]) for at in range(0, len(run_ids), SUMMARY_PAGE)))
    rows: list[tuple[str, tuple[int, int], Verdict | None]] = []
    short: dict[str, RunSummary | None] = {}
    alone: list[str] = []
    for run_id in run_ids:
        summary = summaries.get(run_id)
        status = None if summary is None else status_from_summary(summary, None)
        if summary is not None and status is not None and summary.last_seq is not None:
            rows.append((run_id, (summary.steps, summary.last_seq), _kept_verdict(status)))
        elif summary is not None and summary.steps <= BATCH_STEPS:
            short[run_id] = summary
        else:
            alone.append(run_id)
    read = await _read_runs(store, short)
    for run_id, (entries, records, counts) in read.items():
        unleased = _status(run_id, records, counts, None, None)
        rows.append((run_id, (len(entries), entries[-1].seq), _kept_verdict(unleased)))
    vanished, again = [], []
    for run_id in [*(run_id for run_id in short if run_id not in read), *alone]:
        try:
            run = await Journal(store).read(run_id)
        except (StoreConnectionError, StoreLockedError):
            raise
        except StoreError:
            again.append(run_id)
            continue
        if not run.records:
            vanished.append(run_id)
            continue
        unleased = _status(run_id, run.records, _counts_of(run.records), None, None)
        rows.append((run_id, (len(run.records), run.last_seq), _kept_verdict(unleased)))
    return UnleasedVerdicts(rows, vanished, again)


def _kept_verdict(status: RunStatus) -> Verdict | None:
    """``_verdict``, unless a count is past what a 64-bit column holds."""
    return _verdict(status) if INT64_MIN <= status.tokens <= INT64_MAX else None


async def states_of_leased_verdicts(
    store: Store, rows: Sequence[tuple[str, str, str | None, LeaseInfo | None]], now: datetime
) -> list[RunState]:
    """The state of each run of ``rows`` (run id, its verdict's state and wake time, its lease
    row as read with them) at ``now`` (``state_of_verdict``); a run whose verdict makes no state
    is read from the store."""
    made = []
    for run_id, state, wake_at, lease in rows:
        kept = state_of_verdict(run_id, state, wake_at, lease, now)
        made.append(kept if kept is not None else (await run_status(store, run_id)).state)
    return made


async def statuses_of_verdicts(store: Store, rows: Sequence[tuple[str, Verdict]], now: datetime) -> list[RunStatus]:
    """The statuses of runs from their verdicts (the shared run index's, say), each with its
    lease row read now (one query) and the clock at ``now``; a run whose verdict makes no
    status is read from the store."""
    leases = await lease_rows(store, {root_run_id(run_id) for run_id, _ in rows})
    made = []
    for run_id, verdict in rows:
        status = _from_verdict(run_id, verdict, lease_in(leases, run_id), now)
        made.append(status if status is not None else await run_status(store, run_id))
    return made


class KeptStatuses(NamedTuple):
    """What ``kept_statuses`` found."""

    run_ids: list[str]
    """Every run listed after ``after``."""
    columns: StatusColumns
    """Their statuses the status index vouches for, in their order (the others pending)."""
    earlier: list[RunStatus]
    """The statuses it vouches for of the runs up to ``after`` (listed before)."""


async def kept_statuses(store: Store, listing: Callable[[], Awaitable[list[str]]], *, after: str = "") -> KeptStatuses:
    """Every run after ``after`` that ``listing()`` lists, with the statuses the status index
    vouches for as columns in their order (a run it does not vouch for left pending, to be read
    as any other), and those of the runs before. A reopen fills a list of 100,000 runs from it
    at once: no pages, and no object a run but for the statuses that say more than a line does
    (``StatusColumns``).

    The index is read while the store lists, each in its own thread, and its statuses laid out
    while the store checks its validators (as if no run changed: those that did are cleared
    after); the index's spot checks begin once the listing is done (they held up its pages by
    half a second). Where checking the index reads every run's validator (no global seq:
    PostgreSQL), those runs are the listing, and ``listing`` is called only if the index could
    not be read (its 200 pages took 2 s on 100,000 runs, the validators' one pass 0.4 s)."""
    listed = asyncio.ensure_future(listing()) if store.INDEX_GLOBAL_SEQ else None
    try:
        kept = (
            (await shared_lines(store) or await indexed_lines(store, keys.END_MARKERS))
            if store.IMPLEMENTS_SUMMARIES
            else KeptLines()
        )
        roots = await asyncio.to_thread(lambda: list(map(root_run_id, kept.run_ids)))
        look = _KeptLook(kept, roots, await lease_rows(store, set(roots)), datetime.now(UTC))
        laid = await asyncio.to_thread(look.columns)  # 100,000 runs: a viewer's keys stay quick
        changes = await kept.changes
        if changes.every_run is not None:
            run_ids = [run_id for run_id in changes.every_run if run_id > after]
        else:
            run_ids = await (listed or listing())
    finally:
        if listed is not None:
            listed.cancel()
    changes.check()
    columns = await asyncio.to_thread(laid.fitted, run_ids, changes.changed)
    return KeptStatuses(run_ids, columns, laid.up_to(after, changes.changed))


class _KeptLook:
    """Every status the status index holds (``indexed_lines``), with each run's lease row and
    the clock as read with them; ``columns`` lays them out (``_LaidOut``, fitted to a listing)."""

    def __init__(self, kept: KeptLines, roots: list[str], leases: dict[str, LeaseInfo] | None, now: datetime) -> None:
        self._kept = kept
        self._roots = roots
        """Each run's root run (its lease's), in the index's order."""
        self._leases = leases
        self._now = now

    def columns(self) -> _LaidOut:
        """The runs the index holds, in byte order (a listing's), and their statuses in that
        order. The lines of finished runs, most runs', are laid in the columns as the index holds
        them, each column at once, without a status made; a run with a lease row or a verdict
        that says more is made by ``_from_verdict``, as a look a page at a time makes it."""
        run_ids, laid = self._kept.run_ids, self._laid()
        if run_ids == sorted(run_ids):  # as the index keeps them
            return _LaidOut(run_ids, laid)
        order = sorted(range(len(run_ids)), key=run_ids.__getitem__)
        return _LaidOut([run_ids[at] for at in order], laid.taken(order))

    def _laid(self) -> StatusColumns:
        kept, leases = self._kept, self._leases
        made = [at for at, plain in enumerate(kept.plain) if not plain]
        if leases is None:  # the lease table could not be read: every status says so
            made = list(range(len(kept.run_ids)))
        elif leases:
            made = sorted({*made, *(at for at, root in enumerate(self._roots) if root in leases)})
        try:
            columns = StatusColumns.of_lines(*kept.line_columns())
        except (TypeError, OverflowError):  # an index file not as written: its runs are read
            return StatusColumns(len(kept.run_ids))
        for at in made:
            columns.clear(at)
            status = _from_verdict(kept.run_ids[at], kept.verdict(at), lease_in(leases, kept.run_ids[at]), self._now)
            if status is not None:
                with contextlib.suppress(TypeError, OverflowError):  # as above: the run is read
                    columns.put(at, status)
        return columns


class _LaidOut(NamedTuple):
    """The statuses of the runs an index holds (``_KeptLook.columns``), in byte order."""

    run_ids: list[str]
    columns: StatusColumns

    def up_to(self, after: str, changed: set[str]) -> list[RunStatus]:
        """The statuses of the runs up to ``after`` (but the ``changed``)."""
        run_ids, columns = self
        return [
            status
            for at, run_id in enumerate(run_ids[: bisect.bisect_right(run_ids, after)])
            if run_id not in changed and (status := columns.status(at, run_id)) is not None
        ]

    def fitted(self, run_ids: Sequence[str], changed: set[str]) -> StatusColumns:
        """The statuses at the places of ``run_ids`` (a run the index does not hold pending),
        the ``changed`` runs cleared: to be read as any other."""
        kept_ids, kept = self
        offset = len(kept_ids) - len(run_ids)
        if offset >= 0 and kept_ids[offset:] == run_ids:  # the index holds just these runs, in this order
            columns = kept.sliced(offset)
        else:
            place = {run_id: at for at, run_id in enumerate(kept_ids)}
            columns = kept.taken([place.get(run_id, PENDING) for run_id in run_ids])
        if changed:
            for at, run_id in enumerate(run_ids):
                if run_id in changed:
                    columns.clear(at)
        return columns


#: The states the rules decide before they look at the lease (rules 1 and 2 of ``status_of``).
_BEFORE_THE_LEASE = frozenset({RunState.UNREADABLE, RunState.FORK, *_END_STATES.values()})


def _with_lease(unleased: RunStatus, lease: LeaseInfo | None) -> RunStatus:
    """The status the rules give a run whose status without a lease row is ``unleased``, given
    its lease row ``lease``: a live lease outranks every rule after the end markers (rule 3)."""
    s = unleased
    return _leased(s.run_id, s.state, s.detail, s.tool_use_id, s.tool_name, s.interrupt_name, s.wake_at, lease,
                   legacy=s.legacy, fork_of=s.fork_of, steps=s.steps, turns=s.turns, tokens=s.tokens, times=s.times)  # fmt: skip


def _leased(
    run_id: str,
    state: RunState,
    detail: str,
    tool_use_id: str,
    tool_name: str,
    interrupt_name: str,
    wake_at: datetime | None,
    lease: LeaseInfo | None,
    **rest: Unpack[_Unleased],
) -> RunStatus:
    """The status the rules made without a lease row, with ``lease``: rule 3 of ``status_of``,
    in one place. Made at once (``dataclasses.replace`` of every status read through the index
    was a fifth of a reopen's time)."""
    if lease is None:  # most runs: no lease row, every lease member at its default
        return RunStatus(run_id, state, detail, tool_use_id, tool_name, interrupt_name, wake_at, **rest)
    leased = _lease_fields(lease)
    if _lease_in_flight(run_id, state, lease):
        return RunStatus(run_id, RunState.IN_FLIGHT, f"leased by {lease.holder}", **rest, **leased)
    return RunStatus(run_id, state, detail, tool_use_id, tool_name, interrupt_name, wake_at, **rest, **leased)


def _lease_in_flight(run_id: str, state: RunState, lease: LeaseInfo | None) -> bool:
    """Rule 3 of ``status_of``: whether a live lease row makes a run in flight that the rules
    made ``state`` without one (they decided some before they looked at the lease; a lease row
    that could not be read makes nothing)."""
    return lease is not None and lease is not UNKNOWN_LEASE and lease.live and _lease_decides(run_id, state)


def _lease_decides(run_id: str, unleased: RunState) -> bool:
    """Whether a live lease makes the run in flight: the rules did not decide it before the lease."""
    return unleased not in _BEFORE_THE_LEASE and not keys.is_session_journal(run_id)


def _verdict(status: RunStatus) -> Verdict:
    """What the status index keeps of a status: all but its lease row (a finished run's state
    does not hang on it; an unfinished run's is kept without one) and, of a state decided by a
    timer, the wake time only (``_from_verdict`` decides it by the clock then)."""
    times = status.times
    return Verdict(
        status.state.value, status.detail, status.tool_use_id, status.tool_name, status.interrupt_name,
        status.legacy, status.fork_of, status.steps, status.turns, status.tokens,
        earliest_ms=None if times is None else times.earliest_ms,
        latest_ms=None if times is None else times.latest_ms,
        first_is_earliest=None if times is None else times.first_is_earliest,
        last_is_latest=None if times is None else times.last_is_latest,
        wake_at=None if status.wake_at is None else status.wake_at.isoformat(),
    )  # fmt: skip


#: Each state by its value (a dict lookup, a fifth of ``RunState(value)``'s time).
_STATE_OF = {state.value: state for state in RunState}


def state_of_verdict(
    run_id: str, state: str, wake_at: str | None, lease: LeaseInfo | None, now: datetime
) -> RunState | None:
    """The state alone of the status ``_from_verdict`` makes of a verdict of ``state`` and
    ``wake_at``, with the run's lease row and the clock at ``now``: what counting needs, made by
    the same rules without the rest of a status (None where ``_from_verdict`` makes none)."""
    kept = _STATE_OF.get(state)
    if kept is None:
        return None
    if wake_at is not None:
        try:
            kept = _state_by_the_clock(datetime.fromisoformat(wake_at), now)
        except (ValueError, TypeError):
            return None
    return RunState.IN_FLIGHT if _lease_in_flight(run_id, kept, lease) else kept


def _from_verdict(run_id: str, verdict: Verdict, lease: LeaseInfo | None, now: datetime) -> RunStatus | None:
    """The status ``_verdict`` kept, with the run's lease row now (``_with_lease``) and, for a
    timer's, the clock now; None when the columns do not make one (the run is then read)."""
    (state, detail, call, tool, interrupt, legacy, fork_of, steps, turns, tokens,
     earliest, latest, first_is_earliest, last_is_latest, woken) = verdict  # fmt: skip
    try:
        kept = _STATE_OF[state]
        at = (
            None
            if earliest is None or latest is None
            else RunTimes(earliest, latest, bool(first_is_earliest), bool(last_is_latest))
        )
        wake_at = None if woken is None else datetime.fromisoformat(woken)
        if wake_at is not None:
            kept, detail = _by_the_clock(f"{tool} ({call})", wake_at, now)
    except (KeyError, ValueError, TypeError):
        return None
    return _leased(run_id, kept, detail, call, tool, interrupt, wake_at, lease,
                   legacy=bool(legacy), fork_of=fork_of, steps=steps, turns=turns, tokens=tokens, times=at)  # fmt: skip


async def _indexed_page(store: Store, run_ids: Sequence[str], summed: SummedJournal | None) -> IndexedPage:
    """``indexed_page`` of the run ids; a page the store cannot sum up (a damaged page) is empty:
    its runs are then read one by one, and each says why it fails."""
    try:
        if (shared := await shared_verdicts(store, run_ids)) is not None:
            asked = [run_id for run_id in run_ids if run_id not in shared]
            summaries = (
                (await store.summaries(asked, keys.END_MARKERS) if summed is None else await summed.summaries(asked))
                if asked
                else []
            )
            return IndexedPage(summaries, shared, None)
        return await indexed_page(store, run_ids, keys.END_MARKERS, summed)
    except (StoreConnectionError, StoreLockedError):
        raise
    except StoreError:
        return IndexedPage([], {}, None)


def _vouched(summary: RunSummary | None, entries: int) -> int:
    """How many of a run's ``entries`` (the first ones) its summary vouches for: all it summed
    up, unless one is suspect or the run now has fewer (then its counts are not the records')."""
    if summary is None or summary.suspect or entries < summary.steps:
        return 0
    return summary.steps


async def _read_runs(
    store: Store, summaries: Mapping[str, RunSummary | None]
) -> dict[str, tuple[list[Entry], list[Record], _Counts]]:
    """Runs read whole at once, by ``store.load_runs``: each run's entries, the records the
    exact rules read of them and their counts (``_status_records``, given the run's summary,
    if any). A run the store could not read is missing from the answer."""
    loaded = await _load_runs(store, list(summaries))
    return {run_id: (entries, *await _status_records(entries, summaries[run_id])) for run_id, entries in loaded.items()}


async def _load_runs(store: Store, run_ids: Sequence[str]) -> dict[str, list[Entry]]:
    """``store.load_runs``; nothing when the store cannot read them at once (each is then read
    alone, and says why it fails)."""
    if not run_ids:
        return {}
    try:
        return await store.load_runs(run_ids)
    except (StoreConnectionError, StoreLockedError):
        raise
    except StoreError:
        return {}


async def _status_records(entries: Sequence[Entry], summary: RunSummary | None = None) -> tuple[list[Record], _Counts]:
    """What the exact rules read of a run's entries, and their turns and tokens: each entry
    decoded, a long run's in slices (letting the event loop breathe between them), but the tool
    results and the model turns before the last among the entries the summary vouches for.

    The rules read only the name and kind of those (a tool result is looked up by name, an
    earlier model turn only counts), and take the turns and tokens of the vouched entries from
    the summary, adding those of entries committed after it was taken. So a record the codec
    wrote stands in by the name and kind its first bytes say (``_stand_in``), never parsed nor
    scanned: a tool result's payload can be a megabyte. Where the stand-ins' turns are not the
    summary's (a second ``kind`` further on, which the codec never writes), or the last turn or
    another vouched entry does not decode, the vouched entries stand in by their outline
    (``decode_outline``) and the counts are the records', as the exact rules count them. What
    a summary does not check is found when the run is opened, as for a finished run's records
    (docs/decisions.md, "Run summaries")."""
    vouched = _vouched(summary, len(entries))
    if vouched and summary is not None:
        records = await _read_entries(entries, vouched, _stand_in)
        if not any(r.unreadable for r in records[:vouched]) and _counts_of(records[:vouched]).turns == summary.turns:
            counts = _Counts(summary.turns, summary.tokens).plus(_counts_of(records[vouched:]))
            return records, counts
    records = await _read_entries(entries, vouched, _outline)
    return records, _counts_of(records)


async def _read_entries(
    entries: Sequence[Entry], vouched: int, stand_in: Callable[[Entry], Record | None]
) -> list[Record]:
    """The entries decoded, but the first ``vouched`` ones that ``stand_in`` reads (a model
    turn's or a tool result's), the last model turn among those decoded whole after all."""
    records: list[Record] = []
    last_stand_in_turn = -1
    for start in range(0, len(entries), BATCH_STEPS):
        for index in range(start, min(start + BATCH_STEPS, len(entries))):
            entry = entries[index]
            record = stand_in(entry) if index < vouched else None
            if record is None:
                records.append(decode_entry(entry))
                continue
            if record.kind == StepKind.MODEL:
                last_stand_in_turn = index
            records.append(record)
        await asyncio.sleep(0)
    # The last model turn's message says what the run waits on: read it whole.
    if last_stand_in_turn >= 0 and not any(r.kind == StepKind.MODEL for r in records[last_stand_in_turn + 1 :]):
        records[last_stand_in_turn] = decode_entry(entries[last_stand_in_turn])
    return records


def _stand_in(entry: Entry) -> Record | None:
    """A tool result's or a model turn's name and kind, read from the first bytes where the
    codec wrote them (``{"name":<name>,"kind":"model"`` or ``"tool_result"``); elsewhere its
    outline (``_outline``)."""
    if not entry.name.startswith(_OUTLINED_PREFIXES) or entry.damage:
        return None
    head = record_head(entry.name)
    if head is not None and entry.data.startswith(head):
        if entry.data.startswith(b'model"', len(head)):
            return _StandIn(entry.name, StepKind.MODEL)
        if entry.data.startswith(b'tool_result"', len(head)):
            return _StandIn(entry.name, StepKind.TOOL_RESULT)
    return _outline(entry)


class _StandIn(Record):
    """A record of a name and a kind, every other member at its default, made in an eighth of
    the time a ``Record`` takes (a frozen dataclass sets each of its 33 slots one by one; this
    sets two, and the defaults are class attributes, found before the slots they shadow). It
    never equals a ``Record``, and ``dataclasses.replace`` cannot make one: it stays in the rules."""

    __slots__ = ()

    def __init__(self, name: str, kind: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "kind", kind)


for _member in dataclasses.fields(Record):
    if _member.name not in ("name", "kind"):
        setattr(_StandIn, _member.name, _member.default)


def _outline(entry: Entry) -> Record | None:
    """A tool result's or a model turn's outline (by its name, ``decode_outline`` tells its kind), or None."""
    if not entry.name.startswith(_OUTLINED_PREFIXES) or entry.damage:
        return None
    outline = decode_outline(entry.data, entry.name)
    return outline if outline is not None and outline.kind in _OUTLINED_KINDS else None


#: The names of the records the rules read only the name and kind of (a model turn's
#: ``@llm/<n>``, a tool result's ``tool:<id>``); a record of another kind under such a name is decoded.
_OUTLINED_PREFIXES = ("@llm/", keys.TOOL_PREFIX)
_OUTLINED_KINDS = frozenset({StepKind.MODEL, StepKind.TOOL_RESULT})


def lease_in(leases: dict[str, LeaseInfo] | None, run_id: str) -> LeaseInfo | None:
    """A run's lease among those ``lease_rows`` read (its root run's; ``UNKNOWN_LEASE`` when they could not be)."""
    return UNKNOWN_LEASE if leases is None else leases.get(root_run_id(run_id))


async def lease_rows(store: Store, run_ids: set[str]) -> dict[str, LeaseInfo] | None:
    """The lease rows of ``run_ids``; None when the lease table cannot be read (``lease_row``)."""
    if not store.IMPLEMENTS_LEASES or not run_ids:
        return {}
    try:
        return await store.get_leases(run_ids)
    except StoreConnectionError:
        raise
    except StoreError:
        return None


async def statuses_kept(store: Store) -> bool:
    """Whether the status index holds the statuses of ``store``'s runs from an earlier look (a
    reopen): they come then at the index's pace, a few microseconds a run, in any order."""
    return store.IMPLEMENTS_SUMMARIES and (await in_use(store) or await holds_runs(store, keys.END_MARKERS))


async def list_statuses(store: Store) -> AsyncIterator[RunStatus]:
    """Every run's status, in run id order (sub-runs right after their parent), a page at a time.

    Pages are read ahead: the store sums the next pages up in the database's thread while this
    one's statuses are made and handed on, so the database's work and Python's overlap. On a
    reopen (the status index holds runs) the statuses it vouches for come from it at once, as
    the runs screen fills its list (``kept_statuses``), and only the others are read by pages."""
    if (kept := await _kept_on_reopen(store)) is not None:
        run_ids, columns = kept.run_ids, kept.columns
        async for start, stop in _kept_then_read(store, kept):
            for at in range(start, stop):
                status = columns.status(at, run_ids[at])
                assert status is not None  # _kept_then_read read every pending one
                yield status
        return
    async for status in _by_pages(store):
        yield status


async def list_status_json(store: Store) -> AsyncIterator[str]:
    """``list_statuses``'s statuses as ``runs --json`` writes them, each run's
    ``safe_json(status_json(status), indent=None)``, a page of runs at a time: their texts joined
    by ``"\\n,"`` (the elements of a JSON array after its first, one a line).

    On a reopen, a status the index vouches for that says no more than its line (most runs') is
    written from its columns with one format, without a status or its dict made (they were a
    fifth of a reopen's CPU): ``_line_formats``."""
    kept = await _kept_on_reopen(store)
    encode = _JSON_ENCODER.encode
    if kept is None:
        texts: list[str] = []
        async for status in _by_pages(store):
            texts.append(encode(status_json(status)))
            if len(texts) == SUMMARY_PAGE:
                yield inert_json("\n,".join(texts))
                texts = []
        if texts:
            yield inert_json("\n,".join(texts))
        return
    run_ids, columns = kept.run_ids, kept.columns
    formats, text_of = _line_formats(), encode_basestring
    states, details, steps, turns, tokens = (columns.states, columns.details, columns.steps, columns.turns,
                                             columns.tokens)  # fmt: skip
    whole = columns.whole.get
    async for start, stop in _kept_then_read(store, kept):
        lines = zip(range(start, stop), run_ids[start:stop], states[start:stop], details[start:stop],
                    steps[start:stop], turns[start:stop], tokens[start:stop], strict=True)  # fmt: skip
        texts = [
            encode(status_json(kept_whole))
            if (kept_whole := whole(at)) is not None
            else formats[state] % (text_of(run_id), run_steps, run_turns, run_tokens, text_of(detail))
            for at, run_id, state, detail, run_steps, run_turns, run_tokens in lines
        ]
        yield inert_json("\n,".join(texts))


#: ``safe_json``'s encoder without its escapes (``inert_json`` writes them, a page at a time).
_JSON_ENCODER = json.JSONEncoder(ensure_ascii=False)

#: Stand-ins for a status line's members, each found once in the JSON text of a status made of them.
_RUN_MARK, _DETAIL_MARK = "\ue000run\ue000", "\ue000detail\ue000"
_COUNT_MARKS = (9_000_000_000_000_000_001, 9_000_000_000_000_000_002, 9_000_000_000_000_000_003)


@functools.cache
def _line_formats() -> tuple[str, ...]:
    """For each state (by its number in ``STATES``), the text ``_JSON_ENCODER`` writes of
    ``status_json`` of a status that says no more than its line, as a format to fill (``%``) with
    its run id's and detail's JSON strings (``encode_basestring``) and its steps, turns and tokens.
    Made from ``status_json`` itself, so the two cannot drift apart."""
    formats = []
    for state in STATES:
        steps, turns, tokens = _COUNT_MARKS
        text = _JSON_ENCODER.encode(
            status_json(RunStatus(_RUN_MARK, state, _DETAIL_MARK, steps=steps, turns=turns, tokens=tokens))
        ).replace("%", "%%")
        marks = [(encode_basestring(_RUN_MARK), "%s"), *((str(mark), "%d") for mark in _COUNT_MARKS)]
        marks.append((encode_basestring(_DETAIL_MARK), "%s"))
        places = [text.find(mark) for mark, _ in marks]
        if any(text.count(mark) != 1 for mark, _ in marks) or places != sorted(places):
            raise AssertionError("status_json's line is not run id, counts, detail, each once, in that order")
        for mark, field in marks:
            text = text.replace(mark, field)
        formats.append(text)
    return tuple(formats)


async def _by_pages(store: Store) -> AsyncIterator[RunStatus]:
    """``list_statuses`` where the status index holds no runs: every run's status read by pages,
    summed up by one pass over the journal first where the store makes one (``_summed``)."""
    summed = await _summed(store)
    pages = pages_of(store.runs(), SUMMARY_PAGE)
    ahead: deque[tuple[list[str], asyncio.Future[dict[str, RunStatus]]]] = deque()
    try:
        while True:
            while len(ahead) < PAGES_AHEAD and (page := await anext(pages, None)) is not None:
                ahead.append((page, asyncio.ensure_future(_page_statuses(store, page, batch=True, summed=summed))))
            if not ahead:
                await spot_checks_done(store)  # the spot checks this look began end with it
                return
            page, reading = ahead.popleft()
            decided = await reading
            for run_id in page:
                yield decided[run_id] if run_id in decided else await _read_kept(store, run_id)
    finally:
        for _, reading in ahead:
            reading.cancel()


async def _summed(store: Store) -> SummedJournal | None:
    """Every run summed up by one pass over the journal (``Store.sum_up_journal``), where the
    store makes one and the status index, if any, holds no runs; None where it cannot (each page
    is then summed up by itself, and says what it cannot read). The index is opened first: a
    pass must end past the seq it settles at, so that every summary kept sums every entry up to
    it (``indexed_page``)."""
    if not store.IMPLEMENTS_JOURNAL_PASS:
        return None
    try:
        return None if await statuses_kept(store) else await store.sum_up_journal(keys.END_MARKERS)
    except (StoreConnectionError, StoreLockedError):
        raise
    except StoreError:
        return None


async def _kept_on_reopen(store: Store) -> KeptStatuses | None:
    """What the status index vouches for of every run (``kept_statuses``), where it holds runs
    (a reopen); None on a first look, or where the store fails the index's checks (a damaged
    page: every run is then read by pages, and each page says what it cannot read)."""

    async def listing() -> list[str]:
        return [run_id async for run_id in store.runs()]

    try:
        return await kept_statuses(store, listing) if await statuses_kept(store) else None
    except (StoreConnectionError, StoreLockedError):
        raise
    except StoreError:
        return None


async def _kept_then_read(store: Store, kept: KeptStatuses) -> AsyncIterator[tuple[int, int]]:
    """``list_statuses`` on a reopen: the places of ``kept``'s runs a page at a time (``start``,
    ``stop``), each page's statuses then in the columns. Every status the status index vouches
    for is laid out from it in one pass (a page at a time, its 200 reads of the index and of the
    leases, and a status made of each verdict, took twice the CPU of that pass on 100,000 runs);
    the runs it does not vouch for (changed since, or new) are read by pages of their own, read
    ahead, and kept whole in the columns as their page is handed on."""
    run_ids, columns = kept.run_ids, kept.columns
    pending = columns.places([None])
    pages = ([run_ids[at] for at in pending[start : start + SUMMARY_PAGE]]
             for start in range(0, len(pending), SUMMARY_PAGE))  # fmt: skip
    ahead: deque[asyncio.Future[dict[str, RunStatus]]] = deque()
    decided: dict[str, RunStatus] = {}
    read = 0
    """How many pages of pending runs were read (their statuses in ``decided``)."""
    done = 0
    """How many pending runs were kept whole in the columns."""

    def read_ahead() -> None:
        while len(ahead) < PAGES_AHEAD and (page := next(pages, None)) is not None:
            ahead.append(asyncio.ensure_future(_page_statuses(store, page, batch=True)))

    try:
        read_ahead()
        for start in range(0, len(run_ids), SUMMARY_PAGE):
            stop = min(start + SUMMARY_PAGE, len(run_ids))
            while done < len(pending) and (at := pending[done]) < stop:
                while read <= done // SUMMARY_PAGE:
                    decided.update(await ahead.popleft())
                    read += 1
                    read_ahead()
                run_id = run_ids[at]
                status = decided.pop(run_id, None) or await _read_kept(store, run_id)
                columns.states[at], columns.whole[at] = STATE_INDEX[status.state], status
                done += 1
            yield start, stop
        await spot_checks_done(store)  # the spot checks this look began end with it
    finally:
        for reading in ahead:
            reading.cancel()


#: What a ``StatusTracker`` keeps of the runs it read, in stored bytes: decoded, a record takes
#: about three times its bytes, so the default keeps memory near 100 MB however long runs are.
TRACKER_BUDGET_BYTES = 32 * 1024 * 1024


class StatusTracker:
    """Statuses of runs that keep changing, each read incrementally: only entries committed since
    the last read are fetched and decoded. Keeps the records of the runs read most recently (a
    live view re-reads the same few runs many times), at most ``capacity`` runs and
    ``budget_bytes`` of stored bytes; the run read longest ago is dropped first."""

    def __init__(self, store: Store, *, capacity: int = 1024, budget_bytes: int = TRACKER_BUDGET_BYTES) -> None:
        self.store = store
        self.capacity = capacity
        self.budget_bytes = budget_bytes
        self._runs: dict[str, _Kept] = {}
        self._bytes = 0
        """The stored bytes of every record kept."""

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    async def status(self, run_id: str) -> RunStatus:
        """The run's status now (read again after a failure, as ``run_status`` does)."""
        return await _resilient(run_id, lambda: self._read(run_id))

    async def statuses(self, run_ids: Sequence[str]) -> list[RunStatus]:
        """The statuses of ``run_ids`` now, in order. Runs read before are read on, one by one;
        the others at once, as a viewer's first look at thousands of unfinished runs is, by the
        page's rules (``_page_statuses``): what the status index kept of runs that did not
        change, finished runs from their summaries, and the short rest read whole in one round
        trip (their leases in another) and kept to read on from."""
        first = [run_id for run_id in run_ids if run_id not in self._runs]
        decided = await _page_statuses(self.store, first, batch=True, read=self._keep) if len(first) > 1 else {}
        return [decided[run_id] if run_id in decided else await self.status(run_id) for run_id in run_ids]

    async def _read(self, run_id: str) -> RunStatus:
        kept = self._runs.pop(run_id, None) or _Kept(-1, [], _Counts(), 0)
        self._bytes -= kept.size
        records, size, last_seq = kept.records, kept.size, kept.last_seq
        new = len(records)
        async for entry in self.store.load(run_id, last_seq):
            records.append(decode_entry(entry))
            size += len(entry.data)
            last_seq = entry.seq
        # The kept records' counts, not theirs: those that stood in for a summary's have no usage.
        counts = kept.counts.plus(_counts_of(records[new:]))
        self._keep(run_id, _Kept(last_seq, records, counts, size))
        return await _read_whole(self.store, run_id, records, counts, last_seq)

    def _keep(self, run_id: str, kept: _Kept) -> None:
        """Keep a run's records to read on from (the newest read kept longest), within budget."""
        # A read that overlapped this one (a scheduler's page read ahead) may have kept it first.
        if overlapped := self._runs.pop(run_id, None):
            self._bytes -= overlapped.size
        if kept.size <= self.budget_bytes:  # a run larger than the whole budget is not kept
            self._runs[run_id] = kept
            self._bytes += kept.size
        while self._runs and (len(self._runs) > self.capacity or self._bytes > self.budget_bytes):
            self._bytes -= self._runs.pop(next(iter(self._runs))).size


class _Kept(NamedTuple):
    """What a ``StatusTracker`` keeps of a run: the last entry read, the records the rules read
    of the entries, their turns and tokens (a summary's, where records stand in without their
    usage), and the entries' stored bytes."""

    last_seq: int
    records: list[Record]
    counts: _Counts
    size: int
