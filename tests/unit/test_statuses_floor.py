"""The statuses benchmark's floor (``benchmarks/statuses.py``) reads everything a status needs: each
run's entries, model turns and all four token counts as agenttui counts them, the header's and the
first end marker's bytes, and every record of each unfinished run."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from agenttui.runs.statuses.status import RunState, list_statuses
from agenttui.stores.sqlite import SQLiteStore
from benchmarks.shapes import production_plan, write_production


def floor_script() -> str:
    """The floor's script, read from the benchmark without importing it as a module of the package
    (it imports its sibling scripts by their own names, as a script run from benchmarks/)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "statuses.py"
    spec = importlib.util.spec_from_file_location("statuses_benchmark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return str(module.FLOOR)


@pytest.mark.slow
async def test_the_floor_reads_what_every_status_needs(tmp_path: Path) -> None:
    path = tmp_path / "production.db"
    await write_production(path, production_plan(60, longest=120))
    store = await SQLiteStore.open(path, read_only=True)
    try:
        by_run = {status.run_id: status async for status in list_statuses(store)}
        entries = {run_id: [e async for e in store.load(run_id)] for run_id in by_run}
    finally:
        await store.close()
    floor = await asyncio.create_subprocess_exec(
        sys.executable, "-c", floor_script(), str(path), stdout=asyncio.subprocess.PIPE
    )
    printed, _ = await floor.communicate()
    assert floor.returncode == 0
    lines = printed.decode().splitlines()
    rows = {row[0]: row for row in map(ast.literal_eval, (line for line in lines if line.startswith("(")))}
    assert rows.keys() == by_run.keys()
    complete = [run_id for run_id, status in by_run.items() if status.state == RunState.COMPLETE]
    assert complete
    for run_id in complete:  # every entry a whole record: the floor's figures are the status's
        _, steps, turns, tokens, header, end, _, _ = rows[run_id]
        status = by_run[run_id]
        assert (steps, turns, tokens) == (status.steps, status.turns, status.tokens), run_id
        assert header == entries[run_id][0].data
        assert end == next(e.data for e in entries[run_id] if e.name == "run:complete")
    # Each unfinished run's records are read whole, once.
    unfinished = [run_id for run_id, row in rows.items() if row[5] is None]
    assert unfinished
    read = [line.split() for line in lines if line.endswith(" bytes")]
    assert sum(int(words[0]) for words in read) == sum(len(entries[run_id]) for run_id in unfinished)
    assert sum(int(words[2]) for words in read) == sum(len(e.data) for r in unfinished for e in entries[r])
