"""An incident's store: runs halted on one tool, on another, awaiting approval and complete, each
written byte for byte as the Go SDK writes it (``tests/gocorpus.py``). Shared by the bulk
actions' core tests (``tests/runs/test_batch.py``) and the TUI's incident mode (``tests/tui``)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from agenttui.runs.statuses.state import RunState
from agenttui.stores.base import Store
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import CASES, CLAIM_A, GoRun, attempt, call, charge_turn, model, start

HALTED = next(case for case in CASES if case.run_id == "go-halted")
COMPLETE = next(case for case in CASES if case.run_id == "go-charge")
#: A run awaiting approval: its run:start records charge's gate, as agenttui's runtime does.
GATED = GoRun(
    "gated",
    [
        start(
            '"Refund order 7"',
            ',"kind":"agent","ext":{"agenttui":{"tools":[{"name":"charge","approval":{"single":true}}]}}',
        ),
        charge_turn("toolu_09"),
    ],
    RunState.AWAITING_APPROVAL,
    HALTED.verdict,
    [],
)
#: Halted on another tool.
HALTED_ELSEWHERE = GoRun(
    "elsewhere",
    [
        start('"Ship order 3"', ',"kind":"agent"'),
        model(0, call("toolu_07", "ship", '{"order":3}'), '"finish":"tool_use"'),
        attempt("toolu_07", CLAIM_A),
    ],
    RunState.HALTED,
    HALTED.verdict,
    [],
)


async def write_runs(store: Store, cases: dict[str, GoRun]) -> None:
    """Each case's records under the run id it is keyed by, as its Go service inserts them."""
    for run_id, case in cases.items():
        for name, data in dataclasses.replace(case, run_id=run_id).entries():
            assert (await store.insert(run_id, name, data)).won


def incident() -> dict[str, GoRun]:
    """Six runs halted on charge, two on ship, two awaiting approval, two complete."""
    runs = {f"refund-{n}": HALTED for n in range(6)}
    runs |= {f"ship-{n}": HALTED_ELSEWHERE for n in range(2)}
    runs |= {f"gated-{n}": GATED for n in range(2)}
    return runs | {f"done-{n}": COMPLETE for n in range(2)}


def make_store(path: Path, cases: dict[str, GoRun] | None = None) -> None:
    """A SQLite file at ``path`` holding ``cases`` (the incident's runs by default)."""

    async def build() -> None:
        opened = await SQLiteStore.open(path)
        try:
            await write_runs(opened, incident() if cases is None else cases)
        finally:
            await opened.close()

    asyncio.run(build())
