"""Recorded runs replayed as a regression suite: ``agenttui replay STORE --all`` and the pytest plugin.

    python benchmarks/replays.py [--runs 1000] [--rounds 3] [--jobs 4,8] [--parts replay,cli,pytest]
                                 [--profile | --no-profile] [--cache DIR] [--json]

The store: ``--runs`` recorded runs (1,000 by default) of 5-50 records each, every one complete,
driven by agenttui's own runtime as the demo's refund desk (``desk_tools()``, named
``refund_desk``, its system prompt), so ``--agent agenttui.demo.build:factory`` replays each to its
end: answered after 1-20 order lookups, refunded after a person's approval, denied, a failed
lookup, asked the customer and answered, slept until a card settled, asked the refunds
specialist (a sub-agent: its sub-run is a run of the store too). Lengths are log-uniform in
5-50 records, the padding order lookups; the plan comes from a seeded generator and every
clock is fixed. Before anything is timed, ``agenttui replay STORE --all --agent
agenttui.demo.build:factory --json`` must exit 0 with every run judged ``matches``.

The targets (the regression-suite issue):

(1) Replay speed: every run of the store replayed against the agent, one at a time, in this
    process (``replay_one`` a run, the store opened once): at least 500 runs per second of CPU
    (``time.process_time``). Beside it, wall time and runs/s of ``replay_suite`` with the
    parallel option (``at_once``, the CLI's ``--jobs``: 1 and each of ``--jobs``), and the CLI end
    to end, from process start to exit (``python -m agenttui replay STORE --all --agent ...``):
    wall, CPU and peak RSS of that process alone (``os.wait4``). Medians of ``--rounds``.
(2) Collection: ``python -m pytest --collect-only -q --agenttui-runs STORE --agenttui-agent
    agenttui.demo.build:factory -p no:cacheprovider``, from process start, collects every run
    (1,000 items) in at most 2 s. It runs in a temporary folder holding an empty ``pytest.ini``,
    an empty ``conftest.py`` and an empty test file, so the project's own pytest settings (its
    ``-n auto``) do not apply. Beside it, the baseline: the same command without
    ``--agenttui-runs`` (the empty test file collected), so the plugin's own share shows. The
    plugin is registered through the package's ``pytest11`` entry point; when ``pytest --help``
    does not list ``--agenttui-runs`` (an install older than the entry point), both commands add
    ``-p agenttui.pytest_plugin``, and the table says so. Each command is run once first, untimed
    (bytecode written), then ``--rounds`` times; median and max.

Subprocesses run this checkout's agenttui (``PYTHONPATH`` is this checkout). Peak RSS beside each
figure: this process's ``VmHWM``, reset before each in-process case (``/proc/self/clear_refs``,
where the kernel allows it, else the process's peak so far, said so), a child's own
``ru_maxrss``. The load average is read before and after each case: the 2-core machine is shared.

When the replay speed misses its target (or with ``--profile``), one run's replay is profiled
(``cProfile``, the run replayed 20 times) and the top 10 functions by cumulative time, and by
their own time, are printed after the table. ``--json`` prints the raw figures after it all.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import math
import os
import platform
import pstats
import random
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agenttui.agent.loop import Agent  # noqa: E402
from agenttui.agent.pauses import Interrupted, PendingApproval, RunPaused  # noqa: E402
from agenttui.agent.scripted import Call, ScriptedModel, Turn  # noqa: E402
from agenttui.agent.tools import Tool  # noqa: E402
from agenttui.demo.desk import ORDERS, SPECIALIST_TURNS, SYSTEM_PROMPT, desk_tools, refund_story, turns  # noqa: E402
from agenttui.journal.record import Usage  # noqa: E402
from agenttui.runs.actions import answer, approve, deny  # noqa: E402
from agenttui.stores.memory import MemStore  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402

#: Bumped when what the store holds changes, so a stale cache is rebuilt.
STORE_VERSION = 1
SEED = 2026
AGENT = "agenttui.demo.build:factory"
#: The issue's targets.
RUNS_PER_CPU_S_TARGET = 500.0
COLLECT_S_TARGET = 2.0
MIN_RECORDS, MAX_RECORDS = 5, 50
BASE_CLOCK = datetime(2025, 10, 1, tzinfo=UTC)
#: Runs profiled: one run replayed this many times under cProfile.
PROFILE_REPEATS = 20
DEFAULT_CACHE = "/tmp/agenttui-bench-cache"

#: What ``--help`` says of the store this benchmark builds, where it keeps it and how long that takes.
FIRST_RUN = f"""The first run builds one store under --cache (default {DEFAULT_CACHE}) and reuses it after:
v{STORE_VERSION}-replay-suite-<runs>.db, the --runs recorded runs (1,000 by default: about 10 MB, about
10 s on this 2-core machine, most of it the runtime driving the runs), with .shape.json beside it
(its runs per story, records per run, how long it took). The store is only ever read after that.
A whole run of the benchmark with the defaults takes a few minutes (three rounds of each case)."""


# -- the store: complete runs of the refund desk, driven by the runtime -----------------------------


ORDER_IDS = sorted(ORDERS)
PROMPTS = [
    "Check my open orders and refund anything that arrived damaged.",
    "Where is my refund? Order A-1002.",
    "Audit today's orders for anomalies.",
    "I returned the keyboard last week, can I get my money back?",
]


@dataclass(frozen=True)
class RunPlan:
    run_id: str
    story: str
    records: int
    """The length aimed at (the story's own records, then order lookups to this length)."""
    clock: datetime


class RunDriver:
    """Drives one planned run into a store as the demo's refund desk (what the demo's factory
    builds, so a replay against it runs the same tools under the same name and prompt)."""

    def __init__(self, store: MemStore, tools: Sequence[Tool], plan: RunPlan) -> None:
        self.store, self.tools, self.plan = store, tools, plan
        self.padding = padding_turns(plan)

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    async def drive(self, tail: Sequence[Turn], *, later: timedelta = timedelta()) -> RunPaused | None:
        """Drive (or re-drive) the run: the padding, then ``tail``; the pause it stopped at, if any."""
        script = [*self.padding, *tail]
        model = ScriptedModel(script, agents={"refunds_specialist": SPECIALIST_TURNS})
        clock = self.plan.clock + later
        agent = Agent(model, self.store, *self.tools, name="refund_desk", system_prompt=SYSTEM_PROMPT,
                      max_turns=len(script) + 1, clock=lambda: clock)  # fmt: skip
        try:
            await agent.run(self.run_id, PROMPTS[len(self.run_id) % len(PROMPTS)])
        except RunPaused as pause:
            return pause
        return None


def padding_turns(plan: RunPlan) -> list[Turn]:
    """Order lookups that bring the run to its planned length: 2 records a turn (3 with two calls;
    one short of it, a turn more: a run is never shorter than planned)."""
    missing = max(0, plan.records - STORIES[plan.story].own_records)
    calls = [[Call("lookup_order", {"order_id": ORDER_IDS[n % 5]})] for n in range(max(missing // 2, missing % 2))]
    if missing % 2 and missing > 1:
        calls[-1].append(Call("lookup_order", {"order_id": ORDER_IDS[(missing + 1) % 5]}))
    return [Turn(f"Checking {' and '.join(c.args['order_id'] for c in turn)} ({n + 1}).", turn,
                 usage=Usage(420 + 40 * n, 25 + n % 40, 380 if n else 0)) for n, turn in enumerate(calls)]  # fmt: skip


ANSWER = [Turn("Everything checks out: nothing needs a refund.", usage=Usage(900, 40))]
QUESTION = turns(
    ("Let me look that order up.", [Call("lookup_order", {"order_id": "A-1001"})]),
    ("Before I refund: card or store credit?", [Call("ask_customer", {"question": "Refund to your card, or as store credit?"})]),
    ("Noted: store credit of $42.50 issued for order A-1001.", []),
)  # fmt: skip
DELEGATE = turns(
    ("Let me ask the refunds specialist.", [Call("refunds_specialist", {"task": "Is order A-1004 eligible for a full refund?"})]),
    ("Good news: order A-1004 is eligible for a full refund.", []),
)  # fmt: skip
FAILED_LOOKUP = turns(
    ("Let me find order Z-0042.", [Call("lookup_order", {"order_id": "Z-0042"})]),
    ("I could not find order Z-0042. Could you check the number on your receipt?", []),
)
SETTLEMENT = turns(
    ("Refund submitted; waiting for the card network to settle it.",
     [Call("wait_for_settlement", {"order_id": "A-1002", "hours": 36})]),
    ("Settled: the money is back on your card.", []),
)  # fmt: skip
REFUND = refund_story("A-1002", 129.0)
DECLINED = [
    *refund_story("A-1003", 18.75, email=False)[:2],
    Turn("The refund was declined; I've opened a lost-parcel claim instead."),
]


async def answered(run: RunDriver) -> None:
    await run.drive(ANSWER)


async def refunded(run: RunDriver) -> None:
    pause = await run.drive(REFUND)
    assert isinstance(pause, PendingApproval), pause
    await approve(run.store, run.run_id, pause.tool_use_id, approver="ops@example.com")
    await run.drive(REFUND, later=timedelta(minutes=20))


async def denied(run: RunDriver) -> None:
    pause = await run.drive(DECLINED)
    assert isinstance(pause, PendingApproval), pause
    await deny(run.store, run.run_id, pause.tool_use_id, approver="ops@example.com")
    await run.drive(DECLINED, later=timedelta(minutes=20))


async def failed_lookup(run: RunDriver) -> None:
    await run.drive(FAILED_LOOKUP)


async def delegated(run: RunDriver) -> None:
    await run.drive(DELEGATE)


async def asked_answered(run: RunDriver) -> None:
    pause = await run.drive(QUESTION)
    assert isinstance(pause, Interrupted), pause
    await answer(run.store, run.run_id, pause.name, "store credit, please")
    await run.drive(QUESTION, later=timedelta(hours=2))


async def settled(run: RunDriver) -> None:
    await run.drive(SETTLEMENT)
    await run.drive(SETTLEMENT, later=timedelta(hours=40))


@dataclass(frozen=True)
class Story:
    weight: float
    """Percent of root runs."""
    drive: Callable[[RunDriver], Awaitable[None]]
    own_records: int
    """Records the story writes with no padding (lookups fill the rest of ``RunPlan.records``)."""
    sub_runs: int = 0
    """Sub-runs it starts (each a run of the store)."""


#: The complete stories of ``benchmarks/shapes.py``, in its proportions.
STORIES: dict[str, Story] = {
    "answered": Story(40.0, answered, 4),
    "refunded": Story(15.0, refunded, 12),
    "denied": Story(5.0, denied, 9),
    "failed-lookup": Story(6.0, failed_lookup, 6),
    "delegated": Story(8.0, delegated, 6, sub_runs=1),
    "asked-answered": Story(6.0, asked_answered, 9),
    "settled": Story(6.0, settled, 7),
}


def suite_plan(runs: int, seed: int = SEED) -> list[RunPlan]:
    """Root runs whose runs, sub-runs included, number ``runs``: every story at least once, then
    drawn by weight; each 5-50 records long (log-uniform), a fresh id of one of the styles
    services name their runs with, and a fixed clock 30 s after the previous run's."""
    rng = random.Random(seed)
    names, weights = list(STORIES), [s.weight for s in STORIES.values()]
    plans: list[RunPlan] = []
    total, used = 0, set[str]()
    while total < runs:
        story = names[len(plans)] if len(plans) < len(names) else rng.choices(names, weights)[0]
        if total + 1 + STORIES[story].sub_runs > runs:
            story = "answered"
        records = round(math.exp(rng.uniform(math.log(MIN_RECORDS), math.log(MAX_RECORDS))))
        clock = BASE_CLOCK + timedelta(seconds=30 * len(plans) + rng.randint(0, 29))
        plans.append(RunPlan(fresh_run_id(rng, used), story, records, clock))
        total += 1 + STORIES[story].sub_runs
    return plans


def fresh_run_id(rng: random.Random, used: set[str]) -> str:
    while True:
        style = rng.random()
        if style < 0.55:
            hex_id = f"{rng.getrandbits(128):032x}"
            run_id = f"{hex_id[:8]}-{hex_id[8:12]}-4{hex_id[13:16]}-{hex_id[16:20]}-{hex_id[20:]}"
        elif style < 0.85:
            run_id = f"refund-{ORDER_IDS[rng.randrange(5)].lower()}-{rng.getrandbits(24):06x}"
        else:
            run_id = f"desk-{rng.randrange(1, 9)}-{rng.getrandbits(40):010x}"
        if run_id not in used:
            used.add(run_id)
            return run_id


async def write_suite(path: Path, plans: Sequence[RunPlan]) -> None:
    """Drive every planned run into memory, then copy the entries to the SQLite file ``path`` in
    commit order (the store's own tables, made by the store)."""
    await (await SQLiteStore.open(path)).close()
    store, tools = MemStore(), desk_tools()
    for start in range(0, len(plans), 250):
        batch = plans[start : start + 250]
        await asyncio.gather(*(STORIES[plan.story].drive(RunDriver(store, tools, plan)) for plan in batch))
    run_ids = [run_id async for run_id in store.runs()]
    rows = [(entry.seq, run_id, entry.name, entry.data) for run_id in run_ids async for entry in store.load(run_id)]
    rows.sort(key=lambda row: row[0])
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", (row[1:] for row in rows))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def records_per_run(path: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT run_id, count(*) FROM bide_steps GROUP BY run_id ORDER BY run_id"))


def suite_store(cache: Path, runs: int) -> Path:
    """The store of ``runs`` runs, built once under ``cache`` (into a temporary name, renamed when
    complete, with its shape beside it in ``.shape.json``)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"v{STORE_VERSION}-replay-suite-{runs}.db"
    if path.exists():
        return path
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        stale.unlink(missing_ok=True)
    plans = suite_plan(runs)
    say(f"building {path.name}: {len(plans):,} root runs driven by the runtime")
    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(write_suite(partial, plans))
    counts = records_per_run(partial)
    shape = {
        "runs": len(counts),
        "root_runs": len(plans),
        "stories": dict(Counter(plan.story for plan in plans).most_common()),
        "records": sum(counts.values()),
        "records_min": min(counts.values()),
        "records_max": max(counts.values()),
        "bytes": partial.stat().st_size,
        "build_s": time.perf_counter() - started,
        "build_cpu_s": time.process_time() - cpu,
        "load": os.getloadavg(),
    }
    Path(f"{path}.shape.json").write_text(json.dumps(shape, indent=1))
    for suffix in ("-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    partial.rename(path)
    say(f"built {path.name} in {shape['build_s']:.1f} s")
    return path


def shape_of(path: Path) -> dict[str, Any]:
    shape: dict[str, Any] = json.loads(Path(f"{path}.shape.json").read_text())
    return shape


def say(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=FIRST_RUN
    )
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cache", default=DEFAULT_CACHE)
    args = parser.parse_args()
    store = suite_store(Path(args.cache), args.runs)
    print(store, shape_of(store))


if __name__ == "__main__":
    main()
