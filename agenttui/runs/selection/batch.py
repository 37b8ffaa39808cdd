"""Bulk actions, for incidents: one action on every run a filter selects, shown before it is done.

``select`` reads the runs' statuses and sorts those a filter matches (or those a person marked)
into the runs the action fits and those it does not, with why; nothing is written. A person reads
that (``preview_lines``), then ``apply_selection`` acts on the fitting runs one at a time, each
under the run's lease: the run is read again under it, and one whose status changed since it was
selected (someone approved it, a worker finished it) is skipped and said so, never acted on
blindly; the write itself is the journal's at-most-once insert. Stopped midway and run again, a
bulk action finishes the rest: the runs already done no longer fit, and nothing is written twice.

The CLI's ``--where`` and the TUI's marked runs both go through here; each single-run operation
is the one ``runs.operations`` describes and the TUI confirms.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from agenttui.agent.factory import AgentSetup
from agenttui.agent.pauses import AlreadyDecided
from agenttui.errors import AgentTuiError, ConfigError
from agenttui.journal import keys
from agenttui.journal.inert import shell_word
from agenttui.journal.journal import Journal
from agenttui.runs.recovery.choices import LEGACY_REFUSAL, why_not_drivable
from agenttui.runs.recovery.drive_plan import DrivePlan
from agenttui.runs.recovery.lease import DEFAULT_TTL, LeaseHeld, lease
from agenttui.runs.recovery.operations import (
    Answer,
    Cancel,
    Decide,
    LeasedOperation,
    Operation,
    Redrive,
    ReleaseLease,
    Resolve,
    read_drive_plan,
)
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus, list_statuses, status_of, statuses
from agenttui.stores.base import Store


class RunFilter(Protocol):
    """What selects runs: the filter language's ``Where`` (``runs.where``)."""

    @property
    def text(self) -> str: ...

    def matcher(self, now: datetime) -> Callable[[RunStatus], bool]: ...


class BulkAction(Protocol):
    """One action, as it is taken on many runs: which runs it fits, and what it does to each."""

    @property
    def verb(self) -> str:
        """The command that takes it: ``cancel``, ``approve``..."""

    def misfit(self, status: RunStatus) -> str | None:
        """Why the action does not fit a run in ``status`` (None: it fits)."""

    def operation(self, status: RunStatus) -> Operation:
        """What it does to that run: the single-run operation the TUI confirms one at a time."""

    def options(self) -> list[str]:
        """The command's words after its store and ``--where``, for the equivalent command."""


def _wants(status: RunStatus, state: RunState, what: str) -> str | None:
    """Why a run that is not in ``state`` does not fit an action that ``what`` (None: it is)."""
    if status.legacy:
        return LEGACY_REFUSAL
    return None if status.state == state else f"it is {status.state.value}: it {what}"


@dataclass(frozen=True)
class CancelRuns:
    reason: str = ""
    verb = "cancel"

    def misfit(self, status: RunStatus) -> str | None:
        return why_not_drivable(status)

    def operation(self, status: RunStatus) -> Operation:
        return Cancel(status.run_id, self.reason)

    def options(self) -> list[str]:
        return ["--reason", self.reason] if self.reason else []


@dataclass(frozen=True)
class DecideRuns:
    """Approve or deny the call each run awaits approval for."""

    approved: bool
    approver: str = ""

    @property
    def verb(self) -> str:
        return "approve" if self.approved else "deny"

    def misfit(self, status: RunStatus) -> str | None:
        return _wants(status, RunState.AWAITING_APPROVAL, "awaits no approval")

    def operation(self, status: RunStatus) -> Operation:
        return Decide(status.run_id, status.tool_use_id, self.approved, self.approver)

    def options(self) -> list[str]:
        return ["--approver", self.approver] if self.approver else []


@dataclass(frozen=True)
class AnswerRuns:
    """Answer the question each run waits on with one value (only ``name``'s, when given)."""

    value: Any
    name: str = ""
    verb = "answer"

    def misfit(self, status: RunStatus) -> str | None:
        if why := _wants(status, RunState.AWAITING_INPUT, "waits on no question"):
            return why
        if self.name and status.interrupt_name != self.name:
            return f"it waits on {status.interrupt_name!r}, not {self.name!r}"
        return None

    def operation(self, status: RunStatus) -> Operation:
        return Answer(status.run_id, status.interrupt_name, self.value)

    def options(self) -> list[str]:
        return [*([self.name] if self.name else []), json.dumps(self.value, ensure_ascii=False)]


@dataclass(frozen=True)
class ResolveRuns:
    """Resolve the halted call of each run: it did not fire, or it fired with one result."""

    fired: bool
    result: Any = None
    verb = "resolve"

    def misfit(self, status: RunStatus) -> str | None:
        return _wants(status, RunState.HALTED, "has no call whose outcome is unknown")

    def operation(self, status: RunStatus) -> Operation:
        return Resolve(status.run_id, status.tool_use_id, self.fired, self.result)

    def options(self) -> list[str]:
        if not self.fired:
            return ["--not-fired"]
        return ["--fired", "--result", json.dumps(self.result, ensure_ascii=False)]


@dataclass(frozen=True)
class RedriveRuns:
    """Drive each run forward with the user's agent; as ``recover``, root runs only (a sub-run
    is its parent's to drive). A preview names what each drive runs first (``planned_selection``)."""

    factory_spec: str
    factory: Callable[[str], AgentSetup]
    verb: str = "redrive"
    plans: Mapping[str, DrivePlan] = field(default_factory=dict)
    """What the drive of each run previewed does first, by run id."""

    def misfit(self, status: RunStatus) -> str | None:
        if self.verb == "recover" and keys.root_run_id(status.run_id) != status.run_id:
            return "a sub-run: its parent drives it"
        return why_not_drivable(status)

    def operation(self, status: RunStatus) -> Operation:
        return Redrive(status.run_id, self.factory_spec, self.factory, self.plans.get(status.run_id))

    def options(self) -> list[str]:
        return ["--agent", self.factory_spec]


@dataclass(frozen=True)
class ReleaseRuns:
    """Drop each run's lapsed lease; ``force``d, break a live one (its driver is gone)."""

    force: bool = False
    verb = "release"

    def misfit(self, status: RunStatus) -> str | None:
        if status.lease_lapsed:
            return None
        if self.force and status.lease is not None:
            return None
        return "it holds a live lease: --force breaks it" if status.lease is not None else "it holds no lease"

    def operation(self, status: RunStatus) -> Operation:
        if status.lease_lapsed:
            return ReleaseLease(status.run_id)
        return ReleaseLease(status.run_id, force=True, current=status.lease)

    def options(self) -> list[str]:
        return ["--force"] if self.force else []


@dataclass(slots=True)
class Selection:
    """The runs a bulk action would touch, read before anything is written."""

    action: BulkAction
    where: RunFilter | None
    """The filter that chose them (None: a person marked them)."""
    read: int = 0
    """Runs whose status was read."""
    fitting: list[RunStatus] = field(default_factory=list)
    """The runs the action fits, each with its status as read: ``apply_selection`` acts on these."""
    unfit: list[tuple[RunStatus, str]] = field(default_factory=list)
    """The runs matched that the action does not fit, each with why."""

    @property
    def matched(self) -> int:
        return len(self.fitting) + len(self.unfit)

    def by_state(self) -> Counter[RunState]:
        """The fitting runs counted by status."""
        return Counter(status.state for status in self.fitting)

    def command(self, store_url: str) -> str:
        """The command that applies it (``--yes``), or previews it without."""
        if self.where is None:
            ids = [status.run_id for status in self.fitting]
            return " ".join(["agenttui", self.action.verb, shell_word(store_url), *map(shell_word, ids[:1])]) + (
                f"  (and {len(ids) - 1:,} more runs, one command each)" if len(ids) > 1 else ""
            )
        return where_command(self.action, store_url, self.where.text)


def where_command(action: BulkAction, store_url: str, where_text: str) -> str:
    """The command that applies ``action`` to the runs ``where_text`` selects (``--yes``)."""
    words = [action.verb, store_url, "--where", where_text, *action.options(), "--yes"]
    return "agenttui " + " ".join(shell_word(word) for word in words)


#: What ends a bare value in the filter language, or must be quoted in one (``runs.where``).
_VALUE_ENDS = frozenset("(),'\"")
#: Glob characters, made literal in a bracket: an id holding ``*`` matches itself alone.
_GLOB_LITERAL = {"[": "[[]", "*": "[*]", "?": "[?]"}


def ids_where(run_ids: Sequence[str]) -> str | None:
    """A filter that selects exactly ``run_ids`` (``id=a or id=b ...``): each id's glob characters
    bracketed, quoted when it holds a space, a parenthesis, a comma or a quote. None when an id
    holds both quotes (the filter language escapes nothing) or none is given."""
    terms = []
    for run_id in run_ids:
        value = "".join(_GLOB_LITERAL.get(char, char) for char in run_id)
        if value and not any(c.isspace() or c in _VALUE_ENDS for c in value) and value[0] not in "=!<>":
            terms.append(f"id={value}")
        elif "'" not in value:
            terms.append(f"id='{value}'")
        elif '"' not in value:
            terms.append(f'id="{value}"')
        else:
            return None
    return " or ".join(terms) or None


async def select(
    store: Store,
    action: BulkAction,
    *,
    where: RunFilter | None = None,
    run_ids: Sequence[str] | None = None,
    now: datetime | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> Selection:
    """The runs ``where`` matches (every run in the store read), or the runs ``run_ids`` names,
    sorted into those ``action`` fits and those it does not. Nothing is written. ``now``: the
    moment times are measured from (one for the whole selection). ``on_progress(read)``: after
    each page of runs."""
    if run_ids is None and not store.IMPLEMENTS_LISTING:
        raise ConfigError(f"selecting runs needs a store that can list them; {store.display_url} cannot")
    now = now or datetime.now(UTC)
    matches = where.matcher(now) if where is not None else None
    selection = Selection(action, where)
    async for status in _statuses(store, run_ids, where, now):
        selection.read += 1
        if on_progress is not None and selection.read % 500 == 0:
            on_progress(selection.read)
        candidates = [status]
        if (
            status.state == RunState.IN_FLIGHT
            and status.lease is not None
            and status.lease.expires_in <= LEASE_PATIENCE
        ):
            # A lease that may lapse while the action waits for it: the run is judged by its journal.
            candidates.append(await _beneath_the_lease(store, status))
        matched = [candidate for candidate in candidates if matches is None or matches(candidate)]
        if not matched:
            continue
        judged = [(candidate, action.misfit(candidate)) for candidate in matched]
        fitting = next((candidate for candidate, why in judged if why is None), None)
        if fitting is not None:
            selection.fitting.append(fitting)
        else:
            selection.unfit.append((judged[0][0], judged[0][1] or ""))
    return selection


#: How many of a selection's runs a preview reads what their re-drive runs first for (a preview
#: names five; a JSON preview lists more).
PLANNED_RUNS = 50


async def planned_selection(store: Store, selection: Selection, *, runs: int = PLANNED_RUNS) -> Selection:
    """``selection``, a re-drive's naming for its first ``runs`` runs the calls each drive runs
    first (``runs.drive_plan``); any other action's as it is."""
    if isinstance(action := selection.action, RedriveRuns):
        plans = {s.run_id: await read_drive_plan(store, s.run_id, action.factory) for s in selection.fitting[:runs]}
        selection.action = replace(action, plans=plans)
    return selection


async def _beneath_the_lease(store: Store, leased: RunStatus) -> RunStatus:
    """What a run a live lease holds is by its journal alone, the lease row kept beside it.

    A lease outranks every other rule of a status (``status_of``): its driver may be about to
    write. But the holder may be a recover pass or another bulk action, done with the run in a
    moment, or a process killed midway whose lease lapses in at most a lease's life: a bulk action
    that left such runs out would lose them. So a run whose lease may lapse within
    ``LEASE_PATIENCE`` is selected by what its journal says; its lease is waited for, and the
    record written only if the journal still says the same (``_checked_write``). A lease set to
    live longer (a host's clock a year ahead) is no holder that lets go: the run stays in flight.
    """
    records = (await Journal(store).read(leased.run_id)).records
    beneath = status_of(leased.run_id, records)
    if beneath.state in (RunState.UNREADABLE, RunState.IN_FLIGHT):
        return leased
    return beneath._replace(lease_holder=leased.lease_holder, lease=leased.lease, lease_unknown=leased.lease_unknown)


async def _statuses(
    store: Store, run_ids: Sequence[str] | None, where: RunFilter | None, now: datetime
) -> AsyncIterator[RunStatus]:
    """The statuses to select from: of ``run_ids``, or of every run ``where`` may match (on a
    store with a shared run index, those its SQL selects), or of every run."""
    if run_ids is None:
        # Deferred: the filter language's module only where a filter is given (as the CLI's ``runs``).
        from agenttui.runs.selection.indexed import candidate_statuses
        from agenttui.runs.selection.where import Where

        listed = candidate_statuses(store, where, now) if isinstance(where, Where) else list_statuses(store)
        async for status in listed:
            yield status
        return
    for start in range(0, len(run_ids), 500):
        for status in await statuses(store, run_ids[start : start + 500]):
            yield status


Result = Literal["done", "skipped", "failed"]


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a bulk action did to one run: ``done`` (what it wrote), ``skipped`` (why it was left
    alone: its status changed, another driver holds it, the step was decided meanwhile) or
    ``failed`` (the error). Run ids and messages are the store's: show them inert."""

    run_id: str
    result: Result
    detail: str


class _Changed(AgentTuiError):
    """The run, read again under its lease, is not as it was selected: it is left alone."""


#: How long a bulk action keeps coming back to runs whose lease another holder has before it
#: leaves them, skipped: longer than a lease lives (``DEFAULT_TTL``), so that the lease of a
#: holder that died (a bulk action killed midway) lapses meanwhile and the run is done after all.
LEASE_PATIENCE = DEFAULT_TTL + 5
#: How many runs a bulk action has in hand at once: the store's round trips (a lease taken, the
#: run read, a record written, the lease let go) overlap, while each run is still written alone.
APPLY_AT_ONCE = 8


async def apply_selection(
    store: Store, selection: Selection, *, stopping: Callable[[], bool] = lambda: False, at_once: int = APPLY_AT_ONCE
) -> AsyncIterator[RunOutcome]:
    """Act on the fitting runs, each under its lease, ``at_once`` runs in hand at a time; an
    outcome per run as it is done. A run whose lease another holder has is come back to after
    the others, for ``LEASE_PATIENCE`` seconds, then skipped. ``stopping()`` is asked before
    each run is taken up: once True, the runs in hand are finished and no other is started."""
    action = selection.action
    pending = deque(selection.fitting)
    held: list[RunStatus] = []
    running: set[asyncio.Future[tuple[RunStatus, RunOutcome | LeaseHeld]]] = set()
    waited, pause = 0.0, 0.05
    try:
        while pending or running or held:
            while pending and len(running) < at_once and not stopping():
                running.add(asyncio.ensure_future(_attempt(store, action, pending.popleft())))
            if not running:
                if stopping() or not held:
                    return
                await asyncio.sleep(pause)
                waited, pause = waited + pause, min(pause * 2, 1.0)
                pending.extend(held)
                held.clear()
                continue
            finished, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                status, outcome = task.result()
                if not isinstance(outcome, LeaseHeld):
                    yield outcome
                elif waited >= LEASE_PATIENCE:
                    yield RunOutcome(status.run_id, "skipped", outcome.message)
                else:
                    held.append(status)
    finally:
        # Stopped from outside (ctrl+c, the consumer gone): the runs in hand are stopped too,
        # and their leases released on the way out, before this returns.
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


async def _attempt(store: Store, action: BulkAction, selected: RunStatus) -> tuple[RunStatus, RunOutcome | LeaseHeld]:
    try:
        return selected, await _apply(store, action, selected)
    except LeaseHeld as busy:
        return selected, busy


async def apply_one(store: Store, action: BulkAction, selected: RunStatus) -> RunOutcome:
    """Act on one selected run: under its lease, read it again, and write only if its status is
    the one it was selected in and the action still fits it."""
    try:
        return await _apply(store, action, selected)
    except LeaseHeld as busy:
        return RunOutcome(selected.run_id, "skipped", busy.message)


async def _apply(store: Store, action: BulkAction, selected: RunStatus) -> RunOutcome:
    """``apply_one``, but a lease held by another holder is raised (``LeaseHeld``), to come back to."""
    run_id = selected.run_id
    operation = action.operation(selected)
    try:
        if isinstance(operation, LeasedOperation):
            written = await lease(store, run_id, lambda: _checked_write(store, action, selected, operation))
        else:  # a lease release: it acts on the lease row itself, and checks the row it was shown
            written = await operation.apply(store)
    except LeaseHeld:
        raise
    except (_Changed, AlreadyDecided) as left:
        return RunOutcome(run_id, "skipped", left.message)
    except AgentTuiError as exc:
        return RunOutcome(run_id, "failed", f"{exc.title}: {exc.message}")
    except Exception as exc:  # one run's fault: the others still go on
        return RunOutcome(run_id, "failed", f"unexpected error ({type(exc).__name__}: {exc})")
    return RunOutcome(run_id, "done", written)


async def _checked_write(store: Store, action: BulkAction, selected: RunStatus, operation: LeasedOperation) -> str:
    read = await Journal(store).read(selected.run_id)
    current = status_of(selected.run_id, read.records)  # under our own lease: read as if none were held
    if (change := _change(selected, current)) is not None:
        raise _Changed(f"its status changed since it was selected: {change}")
    if (why := action.misfit(current)) is not None:
        raise _Changed(why)
    return await operation.write(store, read)  # checked by the write as read here, not read again


def _change(before: RunStatus, after: RunStatus) -> str | None:
    """How a run's status moved between its selection and now, in words (None: it did not)."""
    if before.state != after.state:
        return f"was {before.state.value}, now {after.state.value}"
    if (before.tool_use_id, before.interrupt_name) != (after.tool_use_id, after.interrupt_name):
        return f"was waiting on {before.tool_use_id or before.interrupt_name}, now on {after.tool_use_id or after.interrupt_name}"
    return None


@dataclass(slots=True)
class Tally:
    """A bulk action's outcomes counted as they come, and the runs not simply done."""

    done: int = 0
    skipped: list[RunOutcome] = field(default_factory=list)
    failed: list[RunOutcome] = field(default_factory=list)

    def add(self, outcome: RunOutcome) -> None:
        if outcome.result == "done":
            self.done += 1
        else:
            (self.skipped if outcome.result == "skipped" else self.failed).append(outcome)

    @property
    def count(self) -> int:
        return self.done + len(self.skipped) + len(self.failed)


#: How many runs a preview names one by one, with what each gets.
PREVIEW_RUNS = 5


def preview_lines(selection: Selection, store_url: str, *, runs: int = PREVIEW_RUNS) -> list[str]:
    """What a bulk action will do, before anything is written: how many runs, by status, the
    first runs with what each gets, the runs matched that the action does not fit (with why),
    and the command that applies it. Store text in it: show it inert."""
    lines = heading_lines(selection)
    if selection.fitting and runs:
        lines.append("the first runs, and what each gets:")
        column = max(len(s.run_id) for s in selection.fitting[:runs])
        for status in selection.fitting[:runs]:
            lines.append(f"  {status.run_id:<{column}}  {_first_line(selection.action.operation(status).will_write())}")
        if len(selection.fitting) > runs:
            lines.append(f"  ... and {len(selection.fitting) - runs:,} more")
    return lines + unfit_lines(selection, runs=runs)


def unfit_lines(selection: Selection, *, runs: int = PREVIEW_RUNS) -> list[str]:
    """The runs matched that the action does not fit, with why: the first ``runs`` named (those a
    live lease holds first), the rest counted by reason; and, for runs matched as in flight, how to
    select them so that the action waits for their leases."""
    # A run a live lease holds first: it may be done by running this again (the others will not).
    unfit = sorted(selection.unfit, key=lambda fit: fit[0].state != RunState.IN_FLIGHT)
    if not unfit:
        return []
    lines = [f"{_runs(len(unfit))} matched {'does' if len(unfit) == 1 else 'do'} not fit {selection.action.verb}:"]
    column = max(len(s.run_id) for s, _ in unfit[:runs]) if runs else 0
    lines += [f"  {status.run_id:<{column}}  {why}" for status, why in unfit[:runs]]
    if len(unfit) > runs:
        reasons = Counter(why for _, why in unfit[runs:])
        lines.append(f"  ... and {len(unfit) - runs:,} more ({_counted(reasons)})")
    if leased := sum(status.state == RunState.IN_FLIGHT for status, _ in unfit):
        lines.append(
            f"{_runs(leased)} matched as in flight: {selection.action.verb} waits for a lease that lapses within"
            f" {LEASE_PATIENCE:.0f} s, where the filter selects the run by what its journal holds (e.g. status=halted)"
        )
    return lines


def heading_lines(selection: Selection) -> list[str]:
    """How many runs a bulk action takes, and how many of each status."""
    chosen = f"matched by {selection.where.text!r}" if selection.where is not None else "marked"
    lines = [f"{selection.action.verb}: {_runs(len(selection.fitting))} {chosen} ({selection.read:,} read)"]
    return lines + [f"  {count:,} {state.value}" for state, count in selection.by_state().most_common()]


def _runs(count: int) -> str:
    return f"{count:,} run{'s' if count != 1 else ''}"


def _first_line(text: str) -> str:
    return text.partition("\n")[0]


def _counted(reasons: Counter[str], most: int = 2) -> str:
    shown = [f"{count:,}: {why}" for why, count in reasons.most_common(most)]
    rest = sum(reasons.values()) - sum(count for _, count in reasons.most_common(most))
    return "; ".join(shown + ([f"{rest:,} other"] if rest else []))


def outcome_line(outcome: RunOutcome) -> str:
    return f"{outcome.result:<7}  {outcome.run_id}  {outcome.detail}"


def summary_line(verb: str, tally: Tally, selection: Selection, *, stopped: bool = False) -> str:
    """The last line of a bulk action: what came of it, and how to finish it if it was stopped."""
    line = f"{verb}: {tally.done:,} done, {len(tally.skipped):,} skipped, {len(tally.failed):,} failed"
    line += f" of {_runs(len(selection.fitting))}"
    if stopped:
        line += f"; stopped with {len(selection.fitting) - tally.count:,} left: run it again to finish them"
    return line


def summary_json(tally: Tally, selection: Selection) -> dict[str, Any]:
    """The summary for a script: counts, and the runs matched but not fitting, by reason."""
    return {
        "action": selection.action.verb,
        "done": tally.done,
        "skipped": len(tally.skipped),
        "failed": len(tally.failed),
        "fitting": len(selection.fitting),
        "not_fitting": len(selection.unfit),
        "not_fitting_by_reason": dict(Counter(why for _, why in selection.unfit).most_common()),
    }


def outcome_json(outcome: RunOutcome) -> dict[str, str]:
    return {"run_id": outcome.run_id, "result": outcome.result, "detail": outcome.detail}


def selection_json(selection: Selection, store_url: str) -> dict[str, Any]:
    """The preview for a script: every run matched, what each gets or why it does not fit."""
    return {
        "action": selection.action.verb,
        "where": selection.where.text if selection.where is not None else None,
        "read": selection.read,
        "fitting": len(selection.fitting),
        "by_status": {state.value: count for state, count in selection.by_state().most_common()},
        "runs": [_run_json(selection.action, status) for status in selection.fitting],
        "unfit": [{"run_id": s.run_id, "status": s.state.value, "why": why} for s, why in selection.unfit],
        "command": selection.command(store_url) if selection.fitting else None,
    }


def _run_json(action: BulkAction, status: RunStatus) -> dict[str, str]:
    return {
        "run_id": status.run_id,
        "status": status.state.value,
        "writes": _first_line(action.operation(status).will_write()),
    }
