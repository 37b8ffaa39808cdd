"""Runtime benchmarks: headless replay speed, and many concurrent runs on SQLite and PostgreSQL.

    python benchmarks/runtime.py [--turns 1000] [--runs 1000] [--latency 0.02] [--no-postgres] [--smoke]

(a) Replay: one run of ``--turns`` model turns (each a read-only lookup, then the answer) is
    recorded once into a SQLite file with the ScriptedModel; then ``replay()`` reads it back and
    the same agent is re-driven against the replay model into a fresh MemStore. Reported: turns/s
    of replay + re-drive (target: at least 2,000 turns/s).
(b) Concurrency: ``--runs`` runs of 3 model turns each (lookup, lookup, answer), started at once on
    one event loop, with a scripted model that waits ``--latency`` per turn; on a SQLite file and
    on PostgreSQL. Reported: wall time, records/s, and the runtime's overhead over the model's own
    latency (wall time minus 3 x latency), for the whole batch and per run.

PostgreSQL: the server ``AGENTTUI_BENCH_PG_DSN`` names (a fresh schema in it, dropped afterwards),
or else the test suite's throwaway cluster (``tests/pg.py``; needs ``initdb`` and ``pg_ctl`` on
PATH), switched to fsync on so that its commits cost what SQLite's do.

``--smoke``: (a) on a 20-turn run, (b) with 20 runs, PostgreSQL included unless ``--no-postgres``
(seconds), to check that the benchmark still runs; its figures are not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenttui.agent import Agent, Call, Turn  # noqa: E402
from agenttui.demo.desk import demo_model, desk_agent  # noqa: E402
from agenttui.journal.record import Usage  # noqa: E402
from agenttui.replay import replay  # noqa: E402
from agenttui.stores.base import Store  # noqa: E402
from agenttui.stores.memory import MemStore  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402
from benchmarks._postgres import bench_schema, throwaway_postgres  # noqa: E402

ORDER_IDS = ["A-1001", "A-1002", "A-1003", "A-1004", "A-1005"]
REPLAY_TARGET = 2000.0
"""Turns per second the headless replay should reach."""


def audit_script(turns: int) -> list[Turn]:
    """``turns`` model turns: one order lookup each, then the answer."""
    script = [Turn(f"Auditing order {ORDER_IDS[n % 5]} (pass {n // 5 + 1}).", [Call("lookup_order", {"order_id": ORDER_IDS[n % 5]})],
                   usage=Usage(300 + n, 20)) for n in range(turns - 1)]  # fmt: skip
    return [*script, Turn(f"Audit done: {turns - 1} lookups, no anomalies.", usage=Usage(300 + turns, 60))]


SHORT_SCRIPT = [
    Turn("Looking up A-1001.", [Call("lookup_order", {"order_id": "A-1001"})], usage=Usage(300, 20)),
    Turn("And A-1002.", [Call("lookup_order", {"order_id": "A-1002"})], usage=Usage(340, 20)),
    Turn("Both orders are delivered; nothing to refund.", usage=Usage(380, 30)),
]
RECORDS_PER_SHORT_RUN = 8
"""``@journal``, ``run:start``, three ``@llm/<n>``, two ``tool:<c>``, ``run:complete``."""


# -- (a) headless replay ---------------------------------------------------------------------------


@dataclass
class ReplayFigures:
    turns: int
    record_s: float
    read_s: float
    """``replay()``: reading the run's journal back and collecting its model turns."""
    redrive_s: list[float]
    """Re-driving the agent against the replay model into a fresh MemStore, one per repeat."""
    cpu_s: list[float]
    """This process's CPU time for ``replay()`` + re-drive, one per repeat (steadier on a busy machine)."""

    @property
    def best(self) -> float:
        return min(self.redrive_s)

    @property
    def turns_per_s(self) -> float:
        return self.turns / (self.read_s + self.best)

    @property
    def turns_per_cpu_s(self) -> float:
        return self.turns / min(self.cpu_s)


async def bench_replay(workdir: Path, turns: int, repeats: int) -> ReplayFigures:
    run_id, prompt = "audit-replay", "Audit every open order, one lookup per turn."
    store = await SQLiteStore.open(workdir / "replay.db")
    try:
        started = time.perf_counter()
        original = await desk_agent(demo_model(audit_script(turns)), store, max_turns=turns + 1).run(run_id, prompt)
        record_s = time.perf_counter() - started
        read_s, redrives, cpu = float("inf"), [], []
        for _ in range(repeats):
            cpu_started, started = time.process_time(), time.perf_counter()
            model = await replay(store, run_id)
            read_s = min(read_s, time.perf_counter() - started)
            started = time.perf_counter()
            replayed = await desk_agent(model, MemStore(), max_turns=turns + 1).run(run_id, prompt)
            redrives.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
            assert replayed == original, "the replay diverged from the recording"
    finally:
        await store.close()
    return ReplayFigures(turns, record_s, read_s, redrives, cpu)


# -- (b) concurrent runs ---------------------------------------------------------------------------


@dataclass
class ConcurrencyFigures:
    store: str
    runs: int
    latency: float
    wall_s: float
    cpu_s: float
    """This process's CPU time for the batch (the store server's, for PostgreSQL, is not in it)."""
    run_s: list[float]
    records: int

    @property
    def model_s(self) -> float:
        return len(SHORT_SCRIPT) * self.latency

    @property
    def overhead_s(self) -> float:
        return self.wall_s - self.model_s

    def per_run_overhead(self, quantile: float) -> float:
        ordered = sorted(self.run_s)
        return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))] - self.model_s


async def bench_concurrent(name: str, store: Store, runs: int, latency: float) -> ConcurrencyFigures:
    agent: Agent = desk_agent(demo_model(SHORT_SCRIPT, latency=latency), store)
    durations: list[float] = []

    async def one(n: int) -> None:
        started = time.perf_counter()
        await agent.run(f"short-{n:05d}", "Check orders A-1001 and A-1002.")
        durations.append(time.perf_counter() - started)

    cpu_started, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(n) for n in range(runs)))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    listed = [r async for r in store.runs(prefix="short-")]
    assert len(listed) == runs, f"{name}: {len(listed)} runs stored, {runs} expected"
    return ConcurrencyFigures(name, runs, latency, wall, cpu, durations, runs * RECORDS_PER_SHORT_RUN)


async def bench_postgres(dsn: str, runs: int, latency: float) -> ConcurrencyFigures:
    from agenttui.stores.postgres import PostgresStore

    async with bench_schema(dsn) as schema:
        store = await PostgresStore.open(dsn, schema=schema)
        try:
            return await bench_concurrent("PostgreSQL", store, runs, latency)
        finally:
            await store.close()


async def bench_sqlite(workdir: Path, runs: int, latency: float) -> ConcurrencyFigures:
    store = await SQLiteStore.open(workdir / "concurrent.db")
    try:
        return await bench_concurrent("SQLite", store, runs, latency)
    finally:
        await store.close()


# -- report ----------------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| "
        + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False)))
        + " |"
        for r in rows
    ]
    return "\n".join([line, rule, *body])


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()} {platform.release()}{load}"


def report(replayed: ReplayFigures | None, concurrent: list[ConcurrencyFigures], smoke: bool = False) -> str:
    title = f"agenttui runtime benchmarks, {date.today().isoformat()}" + (" (smoke: tiny sizes)" if smoke else "")
    out = [title, machine(), ""]
    if replayed is not None:
        verdict = "met" if replayed.turns_per_s >= REPLAY_TARGET else "MISSED"
        if smoke:
            verdict = "smoke: not judged"
        out += [
            f"(a) Headless replay of a {replayed.turns:,}-turn run from SQLite into a fresh MemStore",
            table(
                ["step", "time", "turns/s"],
                [
                    ["record once (ScriptedModel -> SQLite)", f"{replayed.record_s:.2f} s", f"{replayed.turns / replayed.record_s:,.0f}"],
                    ["replay(): read the journal back", f"{replayed.read_s * 1000:.0f} ms", ""],
                    [f"re-drive the agent (best of {len(replayed.redrive_s)})", f"{replayed.best:.2f} s",
                     f"{replayed.turns / replayed.best:,.0f}"],
                    ["replay() + re-drive", f"{replayed.read_s + replayed.best:.2f} s", f"{replayed.turns_per_s:,.0f}"],
                    ["replay() + re-drive, CPU time", f"{min(replayed.cpu_s):.2f} s", f"{replayed.turns_per_cpu_s:,.0f}"],
                ],
            ),
            f"target >= {REPLAY_TARGET:,.0f} turns/s: {verdict}",
            "",
        ]  # fmt: skip
    if concurrent:
        first = concurrent[0]
        out += [
            f"(b) {first.runs:,} concurrent runs of {len(SHORT_SCRIPT)} turns, model latency {first.latency * 1000:.0f} ms a turn "
            f"(model time {first.model_s * 1000:.0f} ms a run); {RECORDS_PER_SHORT_RUN} records a run",
            table(
                ["store", "wall", "CPU", "records/s", "overhead (wall - model)", "per run: mean", "p50", "p95", "max", "amortised"],
                [
                    [
                        f.store, f"{f.wall_s:.2f} s", f"{f.cpu_s:.2f} s", f"{f.records / f.wall_s:,.0f}", f"{f.overhead_s:.2f} s",
                        f"{statistics.fmean(f.run_s) - f.model_s:.2f} s", f"{f.per_run_overhead(0.5):.2f} s",
                        f"{f.per_run_overhead(0.95):.2f} s", f"{max(f.run_s) - f.model_s:.2f} s",
                        f"{f.overhead_s / f.runs * 1000:.1f} ms",
                    ]
                    for f in concurrent
                ],
            ),
            "per run: each run's own duration minus its model time (all start at once, so this includes queueing);",
            "amortised: the batch's overhead divided by the number of runs; CPU: this process's CPU time.",
        ]  # fmt: skip
    return "\n".join(out)


def step(what: str) -> None:
    """Progress on stderr, so that stdout holds only the report."""
    print(f"... {what}", file=sys.stderr, flush=True)


async def main(args: argparse.Namespace) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="agenttui-bench-"))
    try:
        replayed = None
        if not args.no_replay:
            step(f"replay: recording a {args.turns}-turn run into SQLite")
            replayed = await bench_replay(workdir, args.turns, args.repeats)
        concurrent: list[ConcurrencyFigures] = []
        if not args.no_concurrent:
            step(f"concurrency: {args.runs} runs on SQLite")
            concurrent.append(await bench_sqlite(workdir, args.runs, args.latency))
            if not args.no_postgres:
                async with throwaway_postgres() as dsn:
                    step(f"concurrency: {args.runs} runs on PostgreSQL")
                    concurrent.append(await bench_postgres(dsn, args.runs, args.latency))
        print(report(replayed, concurrent, args.smoke))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """Writes its runs into a temporary directory each run (seconds); no large store, nothing cached;
PostgreSQL's part uses a throwaway cluster (or AGENTTUI_BENCH_PG_DSN)."""
SMOKE = "tiny sizes (a 20-turn replay, 20 concurrent runs), seconds: checks the benchmark runs; figures not judged"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=FIRST_RUN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=1000, help="model turns of the replayed run (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="replays to take the best of (default 3)")
    parser.add_argument("--runs", type=int, default=1000, help="concurrent runs (default 1000)")
    parser.add_argument("--latency", type=float, default=0.02, help="model latency per turn in seconds (default 0.02)")
    parser.add_argument("--no-replay", action="store_true", help="skip (a)")
    parser.add_argument("--no-concurrent", action="store_true", help="skip (b)")
    parser.add_argument("--no-postgres", action="store_true", help="skip PostgreSQL in (b)")
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    args = parser.parse_args(argv)
    if args.smoke:
        args.turns, args.runs, args.repeats = 20, 20, 1
    return args


if __name__ == "__main__":
    asyncio.run(main(parse()))
