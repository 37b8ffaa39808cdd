"""The benchmarks' production-shaped store (``benchmarks/shapes.py``) holds what it says it holds: a
run in every status, each as planned, read alike by the summary path and the exact rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttui.runs.statuses.status import RunState, run_status, statuses
from agenttui.stores.sqlite import SQLiteStore
from benchmarks.shapes import expected_statuses, measure_shape, production_plan, write_production
from tests.runs.test_summary_statuses import comparable


@pytest.mark.slow
async def test_a_small_production_store_holds_every_status_as_planned(tmp_path: Path) -> None:
    plans = production_plan(200, longest=600)
    path = tmp_path / "production.db"
    await write_production(path, plans)
    expected = expected_statuses(plans)
    store = await SQLiteStore.open(path, read_only=True)
    try:
        run_ids = [run_id async for run_id in store.runs()]
        exact = [await run_status(store, run_id) for run_id in run_ids]
        summed = await statuses(store, run_ids)
    finally:
        await store.close()
    assert {status.run_id: status.state for status in exact} == expected
    assert {status.state for status in exact} == set(RunState) - {RunState.FORK}  # forks are saved by people
    assert [comparable(status) for status in summed] == [comparable(status) for status in exact]
    shape = measure_shape(path, plans)
    assert shape["runs"] == 200 and shape["sub_runs"] > 0
    assert shape["longest"] == 600 and shape["largest_record_bytes"] >= 100_000
    assert shape["lengths"]["5-50"] > shape["runs"] // 2
