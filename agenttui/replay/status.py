"""Run status, derived from the journal and the lease table alone (format section 6).

The engine journals no pause, so a paused run is told from a crashed one by what the journal
shows is open, and live from dead by the lease. Where the two readings cannot be told apart,
the rule picks the one that is safer to act on, and says so below.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from agenttui.agent.runstart import RunStart
from agenttui.journal import keys
from agenttui.journal.keys import root_run_id
from agenttui.journal.codec import decode_json
from agenttui.journal.journal import Journal, decode_entry, journal_format
from agenttui.journal.record import SUPPORTED_FORMATS, Record, StepKind
from agenttui.journal.timefmt import parse_go_time
from agenttui.stores.base import LeaseInfo, Store


class RunState(enum.StrEnum):
    COMPLETE = "complete"
    ABORTED = "aborted"
    CANCELLED = "cancelled"
    HALTED = "halted"
    AWAITING_APPROVAL = "awaiting-approval"
    AWAITING_INPUT = "awaiting-input"
    SLEEPING = "sleeping"
    IN_FLIGHT = "in-flight"
    STALLED = "stalled"
    UNREADABLE = "unreadable"

    @property
    def finished(self) -> bool:
        return self in (RunState.COMPLETE, RunState.ABORTED, RunState.CANCELLED)

    @property
    def paused(self) -> bool:
        return self in (RunState.AWAITING_APPROVAL, RunState.AWAITING_INPUT, RunState.SLEEPING, RunState.HALTED)

    @property
    def icon(self) -> str:
        """A one-cell mark, so a status reads without colour."""
        return _ICONS[self]


_ICONS = {
    RunState.COMPLETE: "✓",
    RunState.ABORTED: "✗",
    RunState.CANCELLED: "⊘",
    RunState.HALTED: "‼",
    RunState.AWAITING_APPROVAL: "?",
    RunState.AWAITING_INPUT: "…",
    RunState.SLEEPING: "◷",
    RunState.IN_FLIGHT: "▶",
    RunState.STALLED: "■",
    RunState.UNREADABLE: "!",
}


@dataclass(frozen=True, slots=True)
class RunStatus:
    """A run's state and what it waits on.

    ``detail`` names the pending item: the call awaiting approval or whose outcome is unknown,
    the wake time, the reason a run ended or is unreadable. ``tool_use_id`` is the open call.
    """

    run_id: str
    state: RunState
    detail: str = ""
    tool_use_id: str = ""
    tool_name: str = ""
    wake_at: datetime | None = None
    lease_holder: str = ""
    lease_lapsed: bool = False
    """The run holds a lease row that has lapsed (its driver died or stalled)."""
    steps: int = 0
    turns: int = 0
    tokens: int = 0


def status_of(
    run_id: str, records: Sequence[Record], lease: LeaseInfo | None = None, *, now: datetime | None = None
) -> RunStatus:
    """The status of a run whose records (header first) and lease row are given. Pure.

    The rules, first match wins:

    1. No records, an unsupported format, or an unreadable record: ``unreadable``.
    2. The first end marker: ``complete``, ``aborted`` or ``cancelled``.
    3. A live lease: ``in-flight``. It outranks every pause below: a live driver may be about to
       record the very result a pause waits for, so acting on it would race the driver.
    4. For the calls the last model turn made that have no result yet, in call order:
       an attempt marker not voided by ``not_started`` → ``halted`` (outcome unknown; safer than
       re-firing); a gated tool (by ``run:start``'s tool policy) without a decision →
       ``awaiting-approval``; a durable sleep journaled after that turn → ``sleeping`` while its
       wake time is ahead; a tool that asks humans, with no answer → ``awaiting-input``.
    5. Otherwise ``stalled``: unfinished, nobody driving, nothing pending: safe to re-drive.
    """
    now = now or datetime.now(timezone.utc)
    steps = len(records)
    model_records = [r for r in records if r.kind == StepKind.MODEL]
    turns = len(model_records)
    tokens = sum(r.usage.total for r in records if r.usage)

    def status(state: RunState, detail: str = "", **extra: object) -> RunStatus:
        holder = lease.holder if lease is not None and lease.live else ""
        lapsed = lease is not None and not lease.live
        return RunStatus(run_id, state, detail, lease_holder=holder, lease_lapsed=lapsed, steps=steps, turns=turns, tokens=tokens, **extra)  # type: ignore[arg-type]

    if not records:
        return status(RunState.UNREADABLE, "no records")
    if (found := journal_format(records[0])) not in SUPPORTED_FORMATS:
        return status(RunState.UNREADABLE, f"journal format {found!r}" if found else "no @journal header (pre-v0.9 journal)")
    if bad := next((r for r in records if r.unreadable), None):
        return status(RunState.UNREADABLE, f"{bad.name}: {bad.unreadable}")

    by_name = {r.name: r for r in records}
    end = keys.first_end_marker(r.name for r in records)
    if end is not None:
        state = {keys.RUN_COMPLETE: RunState.COMPLETE, keys.RUN_ABORTED: RunState.ABORTED}.get(end, RunState.CANCELLED)
        return status(state, _reason(by_name[end]))
    if lease is not None and lease.live:
        return status(RunState.IN_FLIGHT, f"leased by {lease.holder}")
    if keys.RUN_START not in by_name:
        return status(RunState.STALLED, "not started: no run:start record (recover skips it)")
    if not model_records:
        return status(RunState.STALLED, "no model turn recorded")

    start = RunStart.decode(by_name[keys.RUN_START].result) if keys.RUN_START in by_name else None
    last_turn = model_records[-1]
    after_last_turn = records[records.index(last_turn) + 1 :]
    for call in last_turn.message.tool_uses if last_turn.message else ():
        if keys.tool_key(call.id) in by_name:
            continue
        info = {"tool_use_id": call.id, "tool_name": call.name}
        if _open_attempt(call.id, by_name):
            return status(RunState.HALTED, f"{call.name} ({call.id}): outcome unknown", **info)
        policy = start.policy(call.name) if start else None
        if policy and policy.needs_approval and keys.approval_key(call.id) not in by_name:
            return status(RunState.AWAITING_APPROVAL, f"{call.name} ({call.id}) awaits approval", **info)
        timers = [r for r in after_last_turn if r.name.startswith("timer:") and r.kind == StepKind.VALUE]
        if timers:
            wake_at = _wake_time(timers[-1])
            if wake_at is not None and wake_at > now:
                return status(RunState.SLEEPING, f"until {wake_at.isoformat(timespec='seconds')}", wake_at=wake_at, **info)
        if policy and policy.interrupts:
            return status(RunState.AWAITING_INPUT, f"{call.name} ({call.id}) awaits an answer", **info)
    return status(RunState.STALLED)


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


def _wake_time(timer: Record) -> datetime | None:
    """The timer's wake time, or None when its result is not one (any host may have written it;
    the result is always aware, so comparing it with ``now`` cannot raise)."""
    try:
        return parse_go_time(decode_json(timer.result))
    except ValueError:
        return None


def _reason(marker: Record) -> str:
    if not marker.result:
        return ""
    try:
        value = decode_json(marker.result)
    except ValueError:
        return ""
    return str(value.get("reason", "")) if isinstance(value, dict) else str(value)


async def run_status(store: Store, run_id: str) -> RunStatus:
    """Read a run's journal and lease row, and derive its status."""
    records = (await Journal(store).read(run_id)).records  # a store failure propagates: it is no status
    lease = await store.get_lease(root_run_id(run_id)) if store.IMPLEMENTS_LEASES else None
    return status_of(run_id, records, lease)


async def is_complete(store: Store, run_id: str) -> bool:
    """The first end marker in journal order is ``run:complete``."""
    names = [e.name async for e in store.load(run_id)]
    return keys.first_end_marker(names) == keys.RUN_COMPLETE


async def list_statuses(store: Store) -> AsyncIterator[RunStatus]:
    """Every run's status, in run id order (sub-runs right after their parent)."""
    async for run_id in store.runs():
        yield await run_status(store, run_id)


class StatusTracker:
    """Statuses of runs that keep changing, each read incrementally: only entries committed since
    the last read are fetched and decoded. Keeps the records of the ``capacity`` runs read most
    recently (a live view re-reads the same few runs many times)."""

    def __init__(self, store: Store, *, capacity: int = 1024) -> None:
        self.store = store
        self.capacity = capacity
        self._runs: dict[str, tuple[int, list[Record]]] = {}

    async def status(self, run_id: str) -> RunStatus:
        last_seq, records = self._runs.pop(run_id, (-1, []))
        async for entry in self.store.load(run_id, last_seq):
            records.append(decode_entry(entry))
            last_seq = entry.seq
        self._runs[run_id] = (last_seq, records)  # re-inserted: the newest read is kept longest
        if len(self._runs) > self.capacity:
            del self._runs[next(iter(self._runs))]
        lease = await self.store.get_lease(root_run_id(run_id)) if self.store.IMPLEMENTS_LEASES else None
        return status_of(run_id, records, lease)
