"""A run's times (docs/decisions.md, "Times of a run"), read from journals as the Go SDK writes
them: attempt markers at known ``attempted_at``, and ``idle``/``age`` exact or bounded by them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agenttui.replay.verdict import VerdictKind
from agenttui.runs.selection.where import Truth, parse_where
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunTimes, StatusTracker, list_statuses, run_status, statuses
from agenttui.stores.base import Store
from tests.conftest import StoreFactory
from tests.gocorpus import CASES, CLAIM_A, CLAIM_B, GoRun, attempt, charge_turn, start

MARKED = 1767225600123
"""The corpus's first attempt marker's ``attempted_at`` (2026-01-01T00:00:00.123Z)."""
RETRIED = 1767225700456


def at(ms: int, later: timedelta = timedelta()) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC) + later


SIGNAL_AFTER = GoRun(
    "go-halted-signalled",
    [
        start('"Charge order 30"', ',"kind":"agent"'),
        charge_turn("toolu_30"),
        attempt("toolu_30", CLAIM_A, at=MARKED),
        '{"name":"signal:nudge","kind":"signal","result":{"by":"ops"}}',
    ],
    RunState.HALTED,
    VerdictKind.MATCHES_SO_FAR,
    [],
    "halted, then a signal came: the run's last record carries no time",
)
FIRST_MARKED = GoRun(
    "go-first-marked",
    [attempt("step-1", CLAIM_B, at=MARKED)],
    RunState.NOT_STARTED,
    VerdictKind.MATCHES_SO_FAR,
    [],
    "an attempt marker first (a run that never started): its age is exact",
)


async def corpus(make_store: StoreFactory) -> Store:
    store = await make_store()
    for case in [*CASES, SIGNAL_AFTER, FIRST_MARKED]:
        for name, data in case.entries():
            assert (await store.insert(case.run_id, name, data)).won
    return await make_store(read_only=True)


async def test_the_times_attempt_markers_carry(make_store: StoreFactory) -> None:
    store = await corpus(make_store)
    halted = await run_status(store, "go-halted")
    assert halted.state == RunState.HALTED
    assert halted.times == RunTimes(MARKED, MARKED, first_is_earliest=False, last_is_latest=True)
    voided = await run_status(store, "go-voided-halted")  # two markers: the retry's is the last record
    assert voided.times == RunTimes(MARKED, RETRIED, first_is_earliest=False, last_is_latest=True)
    signalled = await run_status(store, "go-halted-signalled")
    assert signalled.times == RunTimes(MARKED, MARKED, first_is_earliest=False, last_is_latest=False)
    first = await run_status(store, "go-first-marked")
    assert first.times == RunTimes(MARKED, MARKED, first_is_earliest=True, last_is_latest=True)
    # No marker, or a finished run (whose summary carries no time): no times.
    assert (await run_status(store, "go-weather")).times is None
    assert (await run_status(store, "go-voided-retried")).times is None
    # Every way of reading many statuses says the same.
    run_ids = [case.run_id for case in [*CASES, SIGNAL_AFTER, FIRST_MARKED]]
    exact = {run_id: (await run_status(store, run_id)).times for run_id in run_ids}
    assert {s.run_id: s.times for s in await statuses(store, run_ids)} == exact
    assert {s.run_id: s.times async for s in list_statuses(store)} == exact
    assert {s.run_id: s.times for s in await StatusTracker(store).statuses(run_ids)} == exact


async def test_idle_is_exact_when_the_last_record_carries_the_time(make_store: StoreFactory) -> None:
    store = await corpus(make_store)
    halted = await run_status(store, "go-halted")
    now = at(MARKED, timedelta(minutes=90))
    assert parse_where("idle>=90m").verdict(halted, now) is Truth.TRUE
    assert parse_where("idle>90m").verdict(halted, now) is Truth.FALSE
    assert parse_where("idle<2h").verdict(halted, now) is Truth.TRUE
    # The retry's marker is the newest: idle since it, 100.333 s after the first.
    voided = await run_status(store, "go-voided-halted")
    assert parse_where("idle<=89m59s").verdict(voided, now) is Truth.TRUE
    # Age is at least since the first marker (run:start came before it), no more is known.
    assert parse_where("age>=90m").verdict(halted, now) is Truth.TRUE
    assert parse_where("age<2h").verdict(halted, now) is Truth.UNKNOWN
    first = await run_status(store, "go-first-marked")
    assert parse_where("age<2h").verdict(first, now) is Truth.TRUE


async def test_idle_is_only_bounded_when_records_came_after(make_store: StoreFactory) -> None:
    store = await corpus(make_store)
    signalled = await run_status(store, "go-halted-signalled")
    now = at(MARKED, timedelta(minutes=90))
    # The signal came after the marker: idle at most 90 minutes, maybe much less.
    assert parse_where("idle<2h").verdict(signalled, now) is Truth.TRUE
    assert parse_where("idle<=90m").verdict(signalled, now) is Truth.TRUE
    assert parse_where("idle>1h").verdict(signalled, now) is Truth.UNKNOWN
    assert parse_where("idle>2h").verdict(signalled, now) is Truth.FALSE
    assert not parse_where("not idle<1h").matches(signalled, now)
    # A run with no marker: nothing is known of its times.
    weather = await run_status(store, "go-weather")
    assert parse_where("idle>0s").verdict(weather, now) is Truth.UNKNOWN
    assert parse_where("age>0s or idle<1w").verdict(weather, now) is Truth.UNKNOWN
