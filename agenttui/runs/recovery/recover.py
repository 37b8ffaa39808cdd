"""Recover: enumerate unfinished runs, skip finished ones, re-drive the rest under their lease."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agenttui.agent.pauses import RollbackRequested, RunNotStarted, RunPaused
from agenttui.errors import AgentTuiError, ConfigError
from agenttui.journal import keys
from agenttui.runs.recovery.lease import DEFAULT_TTL, LeaseHeld, lease
from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import Store

if TYPE_CHECKING:  # the status rules are imported by the pass that reads them, not with the runs list
    from agenttui.runs.statuses.status import RunStatus

Resume = Callable[[str], Awaitable[object]]


@dataclass(slots=True)
class RecoverReport:
    """What one pass of ``recover`` did, run by run."""

    re_driven: list[str] = field(default_factory=list)
    """Runs driven forward: to completion, or back into a pause (a pause is a success)."""
    paused: dict[str, RunPaused] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    """Runs left alone, with why: leased by a live driver, not started, ended meanwhile."""
    errors: dict[str, BaseException] = field(default_factory=dict)
    """Genuine faults: model, storage or tool errors."""


#: Unfinished runs a recover pass leaves alone: another driver holds it, it never started, its
#: saga driver is rolling it back, it is a saved what-if fork, never driven, or it cannot be read
#: whole, which a drive refuses (``_recover_one`` re-checks each under the run's lease).
LEFT_ALONE = frozenset(
    {RunState.IN_FLIGHT, RunState.NOT_STARTED, RunState.CANCELLING, RunState.FORK, RunState.UNREADABLE}
)
PLAN_PAGE = 500


@dataclass(slots=True)
class RecoverPlan:
    """What a recover pass would do, read before it starts: the unfinished root runs it would
    re-drive and those it would leave alone, each with its status as read."""

    to_drive: list[RunStatus] = field(default_factory=list)
    left_alone: list[RunStatus] = field(default_factory=list)

    @staticmethod
    def by_state(runs: Sequence[RunStatus]) -> dict[RunState, list[str]]:
        """The runs' ids by status, the most common status first."""
        counts = Counter(status.state for status in runs)
        return {state: [s.run_id for s in runs if s.state == state] for state, _ in counts.most_common()}


async def plan_recover(store: Store) -> RecoverPlan:
    """The runs ``recover_runs`` would touch now, and those it would leave alone; nothing written.

    Raises ``ConfigError`` for a store that cannot list its runs.
    """
    if not store.IMPLEMENTS_LISTING:
        raise ConfigError(f"recover needs a store that can list its runs; {store.display_url} cannot")
    from agenttui.runs.statuses.status import statuses

    plan = RecoverPlan()
    page: list[str] = []
    async for run_id in _unfinished_roots(store):
        page.append(run_id)
        if len(page) == PLAN_PAGE:
            _sort_into(plan, await statuses(store, page))
            page = []
    _sort_into(plan, await statuses(store, page) if page else [])
    return plan


def _sort_into(plan: RecoverPlan, read: Sequence[RunStatus]) -> None:
    for status in read:
        if status.state.finished:
            continue  # ended since it was listed
        (plan.left_alone if status.state in LEFT_ALONE or status.legacy else plan.to_drive).append(status)


async def _unfinished_roots(store: Store) -> AsyncIterator[str]:
    async for run_id in store.runs(exclude_holding=keys.END_MARKERS):
        if ">" not in run_id:  # a sub-run or a session's journal: its parent drives it
            yield run_id


async def recover(store: Store, resume: Resume, *, ttl: float = DEFAULT_TTL) -> tuple[int, list[BaseException]]:
    """The spec's ``Recover``: (runs re-driven, genuine errors); a run back in a pause is no error.

    ``recover_runs`` does the work and tells what happened to each run.
    """
    report = await recover_runs(store, resume, ttl=ttl)
    return len(report.re_driven), list(report.errors.values())


async def recover_runs(
    store: Store,
    resume: Resume,
    *,
    ttl: float = DEFAULT_TTL,
    on_progress: Callable[[int, str], None] | None = None,
    run_ids: Sequence[str] | None = None,
) -> RecoverReport:
    """Re-drive every unfinished run, each under its lease, and report on each.

    ``resume(run_id)`` is deployment policy: it knows the agent and input to re-drive with.
    Sub-runs and session runs are skipped (their parent drives them), and saved what-if forks
    (never driven). Each run is driven under its lease; a run leased by a live driver is skipped. Raises ``ConfigError`` for a store that
    cannot list its runs. ``on_progress(done, run_id)`` is called after each run. ``run_ids``:
    these runs only, instead of every unfinished one (the runs a ``RecoverPlan`` showed).
    """
    if run_ids is None and not store.IMPLEMENTS_LISTING:
        raise ConfigError(f"recover needs a store that can list its runs; {store.display_url} cannot")
    report = RecoverReport()
    done = 0
    async for run_id in _unfinished_roots(store) if run_ids is None else _each(run_ids):
        await _recover_one(store, run_id, resume, ttl, report)
        done += 1
        if on_progress is not None:
            on_progress(done, run_id)
    return report


async def _each(run_ids: Sequence[str]) -> AsyncIterator[str]:
    for run_id in run_ids:
        yield run_id


async def _recover_one(store: Store, run_id: str, resume: Resume, ttl: float, report: RecoverReport) -> None:
    from agenttui.runs.statuses.forks import (  # the codec and run:start: with the first run read
        ForkRefused,
        refuse_a_fork,
    )

    async def drive() -> None:
        # Re-checked under the lease: the run may have ended since it was listed.
        names = [e.name async for e in store.load(run_id)]
        if keys.first_end_marker(names) is not None:
            report.skipped[run_id] = "ended meanwhile"
            return
        if keys.RUN_START not in names:
            raise RunNotStarted(run_id)
        if keys.RUN_CANCEL_REQUESTED in names:
            raise RollbackRequested(run_id)
        await refuse_a_fork(store, run_id)
        await resume(run_id)
        report.re_driven.append(run_id)

    try:
        await lease(store, run_id, drive, ttl=ttl)
    except RunPaused as pause:
        report.re_driven.append(run_id)
        report.paused[run_id] = pause
    except LeaseHeld as held:
        report.skipped[run_id] = held.message
    except (RunNotStarted, RollbackRequested) as not_ours:
        report.skipped[run_id] = not_ours.message
    except ForkRefused as fork:
        report.skipped[run_id] = f"a what-if fork of {fork.mark.of} (at {fork.mark.at}): forks are never driven"
    except (AgentTuiError, Exception) as exc:  # a genuine fault of this run; the others still go on
        report.errors[run_id] = exc
