"""StatusScheduler: the order statuses are read in, and the batches they are handed on in.

(A store locked by another process is driven end to end, through the TUI, in tests/hardening/test_outages.py.)"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from agenttui.journal import Journal, Record, StepKind, keys
from agenttui.runs.statuses import scheduler as scheduler_module
from agenttui.runs.statuses.scheduler import URGENT_AT_ONCE, StatusScheduler, clock_change_at
from agenttui.runs.statuses.status import RunState, RunStatus, StatusTracker
from agenttui.stores.base import LeaseInfo, Store
from tests.conftest import StoreFactory


async def write_runs(store: Store, finished: list[str], unfinished: list[str]) -> None:
    journal = Journal(store)
    for run_id in finished + unfinished:
        await journal.append(run_id, Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}'))
    for run_id in finished:
        await journal.append(run_id, Record(keys.RUN_COMPLETE, StepKind.VALUE, result=b'"done"'))


async def read_all(
    scheduler: StatusScheduler, store: Store, seen: dict[str, RunStatus], **kwargs: float
) -> list[list[str]]:
    async def locked() -> None:
        raise AssertionError("no lock is held")

    batches = []
    async for batch in scheduler.read(store, locked=locked, **kwargs):
        seen.update((status.run_id, status) for status in batch)
        batches.append([status.run_id for status in batch])
    return batches


async def test_first_reads_of_unfinished_runs_and_changed_runs_go_first(make_store: StoreFactory) -> None:
    store = await make_store()
    await write_runs(store, finished=["a", "b", "d"], unfinished=["c", "e"])
    seen: dict[str, RunStatus] = {}
    scheduler = StatusScheduler(seen.__contains__)
    scheduler.ask(["a", "b", "c", "d", "e"])
    scheduler.unfinished_listed({"c", "e"})
    scheduler.ask(["d"], urgent=True)  # the change feed named it
    scheduler.ask(["e", "a"])  # asked twice: read once, where it stands
    assert scheduler.pending == 5
    batches = await read_all(scheduler, store, seen, batch_seconds=3600)
    assert batches == [["d", "c", "e", "a", "b"]]  # one batch: nothing was left to wait for
    assert scheduler.pending == 0
    assert seen["c"].state != RunState.COMPLETE and seen["a"].state == RunState.COMPLETE


async def test_a_changed_run_is_read_within_a_batch_while_first_reads_wait(make_store: StoreFactory) -> None:
    """Changed runs and first reads of unfinished runs take turns, a batch each: neither waits
    for the other's whole queue."""
    store = await make_store()
    unfinished = [f"run-{n:03}" for n in range(3 * URGENT_AT_ONCE)]
    await write_runs(store, finished=["changed-1", "changed-2"], unfinished=unfinished)
    seen: dict[str, RunStatus] = {}
    scheduler = StatusScheduler(seen.__contains__)
    scheduler.unfinished_listed(set(unfinished))
    scheduler.ask(unfinished)
    reads: list[str] = []

    async def locked() -> None:
        raise AssertionError("no lock is held")

    async for batch in scheduler.read(store, locked=locked, batch_seconds=0):
        reads += [status.run_id for status in batch]
        if len(reads) == URGENT_AT_ONCE:  # the change feed names two runs after the first batch
            scheduler.ask(["changed-1", "changed-2"], urgent=True)
    assert reads[:URGENT_AT_ONCE] == unfinished[:URGENT_AT_ONCE]
    assert reads[URGENT_AT_ONCE : URGENT_AT_ONCE + 2] == ["changed-1", "changed-2"]  # not after every first read
    assert reads[URGENT_AT_ONCE + 2 :] == unfinished[URGENT_AT_ONCE:]


async def test_a_run_read_before_waits_its_turn_even_when_unfinished(make_store: StoreFactory) -> None:
    store = await make_store()
    await write_runs(store, finished=["a"], unfinished=["z"])
    seen: dict[str, RunStatus] = {}
    scheduler = StatusScheduler(seen.__contains__)
    scheduler.unfinished_listed({"z"})
    scheduler.ask(["z"])
    await read_all(scheduler, store, seen)
    scheduler.ask(["z", "a"])  # a clock refresh of z: no longer urgent
    scheduler.ask(["a"], urgent=True)
    assert await read_all(scheduler, store, seen, batch_seconds=3600) == [["a", "z"]]


async def test_statuses_come_in_batches_while_many_wait(make_store: StoreFactory) -> None:
    store = await make_store()
    run_ids = [f"run-{n:03}" for n in range(3 * URGENT_AT_ONCE)]
    await write_runs(store, finished=run_ids, unfinished=[])
    seen: dict[str, RunStatus] = {}
    scheduler = StatusScheduler(seen.__contains__)
    scheduler.ask(run_ids, urgent=True)  # read a few at a time, as the change feed's runs are
    batches = await read_all(scheduler, store, seen, batch_seconds=0)
    assert len(batches) > 1 and [run_id for batch in batches for run_id in batch] == run_ids


async def test_urgent_reads_grow_while_quick_and_shrink_when_slow(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of urgent reads that took less than half of ``URGENT_SECONDS`` makes the next
    twice as large (a look through a status index takes hundreds at once); one that took longer
    halves it, never below ``URGENT_AT_ONCE``."""
    store = await make_store()
    unfinished = [f"run-{n:04}" for n in range(1200)]
    await write_runs(store, finished=[], unfinished=unfinished)
    sizes: list[int] = []
    statuses = StatusTracker.statuses

    async def noted(tracker: StatusTracker, run_ids: Sequence[str]) -> list[RunStatus]:
        sizes.append(len(run_ids))
        return await statuses(tracker, run_ids)

    monkeypatch.setattr(StatusTracker, "statuses", noted)
    monkeypatch.setattr(scheduler_module, "URGENT_SECONDS", 3600.0)  # every batch is quick
    seen: dict[str, RunStatus] = {}
    scheduler = StatusScheduler(seen.__contains__)
    scheduler.ask(unfinished, urgent=True)
    await read_all(scheduler, store, seen)
    assert sizes == [50, 100, 200, 400, 450] and set(seen) == set(unfinished)
    sizes.clear()
    monkeypatch.setattr(scheduler_module, "URGENT_SECONDS", 0.0)  # every batch is slow
    scheduler.ask(unfinished[:200], urgent=True)
    await read_all(scheduler, store, seen)
    assert sizes == [50, 50, 50, 50]


def test_only_in_flight_and_sleeping_runs_move_with_the_clock_when_their_lease_lapses_or_sleep_ends() -> None:
    moving = {state for state in RunState if clock_change_at(RunStatus("r", state), 100.0) is not None}
    assert moving == {RunState.IN_FLIGHT, RunState.SLEEPING}
    leased = RunStatus("r", RunState.IN_FLIGHT, lease=LeaseInfo("r", "w", 30.0))
    wake = datetime(2100, 1, 1, tzinfo=UTC)
    assert clock_change_at(leased, 100.0) == 130.0
    assert clock_change_at(RunStatus("r", RunState.SLEEPING, wake_at=wake), 100.0) == wake.timestamp()


async def test_the_tracker_keeps_records_within_its_byte_budget(make_store: StoreFactory) -> None:
    from agenttui.runs.statuses.status import StatusTracker, run_status

    store = await make_store()
    big = b'{"name":"note","kind":"value","result":"' + b"x" * 10_000 + b'"}'
    for n in range(5):
        await write_runs(store, finished=[], unfinished=[f"run-{n}"])
        await store.insert(f"run-{n}", "note", big)
    tracker = StatusTracker(store, budget_bytes=25_000)
    for n in range(5):
        assert await tracker.status(f"run-{n}") == await run_status(store, f"run-{n}")
        assert tracker.kept_bytes <= 25_000
    assert tracker.kept_bytes > 20_000  # the two newest runs are kept
    small = StatusTracker(store, budget_bytes=5_000)
    await small.status("run-0")  # larger than the whole budget: read, not kept
    assert small.kept_bytes == 0
