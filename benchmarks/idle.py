"""An idle TUI rests (issue 49): the runs list of a large store, its status index warm, from spawn
until it stops working, then left alone with nothing written.

    python benchmarks/idle.py [--runs 100000] [--pg-runs 5000] [--quiet 30] [--no-postgres] [--smoke]

Each case spawns ``agenttui STORE`` in a 160x48 pseudo-terminal (the cost column shows from 120
columns) and samples its CPU time every quarter second. It is idle once a ``WINDOW``-second window
costs under 1% of a core; the figure is its CPU from spawn to the start of that window, beside the
floor: ``agenttui runs STORE --json`` on the same warm index (a reopen: every status read and
written out), in the same run; each is run ``--repeats`` times, alternately, and the medians
judged. Then, with nothing written, the last TUI's share of a core over ``--quiet`` seconds, and on PostgreSQL (a copy of a production-shaped store in the throwaway cluster, a store
whose writers never notify, as a Go service's) the rows the server read and its CPU meanwhile, per
poll of the change feed (one every ``POLL_INTERVAL`` seconds).

Targets: CPU from spawn to idle ≤ 1.5x the floor's, peak RSS ≤ 150 MB (on the SQLite store of
100,000 runs; on PostgreSQL's smaller copy the ratio is reported: the app's fixed cost is most of
it); idle ≤ 1% of a core and O(1) rows read on the server a poll (judged: ≤ 10), on both.

**First run builds the store** under ``--cache`` (default ``/tmp/agenttui-bench-cache``): the
production-shaped store of 100,000 runs takes 20-50 minutes (``benchmarks/shapes.py``), reused after.
``--smoke``: a store of a few hundred runs in a temporary directory, seconds, not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _report import checkout, machine, met
from shapes import SMOKE_LONGEST, SMOKE_RUNS, production_store
from startup import cpu_seconds, environment, peak_rss_mb, quit_and_drain, spawn_in_terminal
from statuses import copy_to_postgres, postmaster_of, server_cpu_of

from agenttui.stores.changes import POLL_INTERVAL

ROOT = Path(__file__).resolve().parents[1]
ServerCounters = tuple[Callable[[], int], Callable[[], float]]
"""The server's rows read so far and its CPU seconds so far."""
SIZE = (160, 48)
SAMPLE = 0.25
#: Idle: a window this long costs under ``IDLE_SHARE`` of a core.
WINDOW = 2.0
IDLE_SHARE = 0.01
ROWS_A_POLL = 10


@dataclass
class Figures:
    name: str
    floor_cpus: list[float] = field(default_factory=list)
    floor_peaks_mb: list[float] = field(default_factory=list)
    to_idle_cpu: float = 0.0
    to_idle_wall: float = 0.0
    to_idle_cpus: list[float] = field(default_factory=list)
    """Each timed TUI's CPU from spawn to idle (the floors' ``repeats``: the median is judged)."""
    peak_mb: float = 0.0
    quiet_share: float = 0.0
    rows_a_poll: float | None = None
    server_cpu_a_poll: float | None = None


def floor_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """``argv``'s CPU seconds and peak RSS (MB), from spawn to exit, its output thrown away."""
    with open(os.devnull, "wb") as devnull:
        process = subprocess.Popen(argv, stdout=devnull, stderr=subprocess.PIPE, env=env, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {process.stderr.read().decode()[-2000:] if process.stderr else ''}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def watch_tui(argv: list[str], env: dict[str, str], figures: Figures, quiet: float, timeout: float,
              server: ServerCounters | None = None) -> None:  # fmt: skip
    """Spawn the TUI, wait until it is idle, then measure it quiet for ``quiet`` seconds."""
    started = time.perf_counter()
    process, master = spawn_in_terminal(argv, SIZE, env, ROOT)
    samples: list[tuple[float, float]] = []  # (wall since spawn, CPU seconds)

    def drain(until: float) -> None:
        while (now := time.perf_counter()) < until:
            ready, _, _ = select.select([master], [], [], until - now)
            if ready:
                try:
                    os.read(master, 1 << 16)
                except OSError:
                    raise SystemExit(f"{figures.name}: the TUI exited") from None

    try:
        while True:
            drain(time.perf_counter() + SAMPLE)
            samples.append((time.perf_counter() - started, cpu_seconds(process.pid)))
            window = [s for s in samples if s[0] >= samples[-1][0] - WINDOW]
            if samples[-1][0] > WINDOW + 1 and window[-1][1] - window[0][1] < IDLE_SHARE * WINDOW:
                figures.to_idle_wall, figures.to_idle_cpu = window[0]
                break
            if samples[-1][0] > timeout:
                raise SystemExit(f"{figures.name}: still working after {timeout:.0f} s")
        rows_before = server[0]() if server else 0
        server_before = server[1]() if server else 0.0
        cpu_before = cpu_seconds(process.pid)
        drain(time.perf_counter() + quiet)
        figures.quiet_share = (cpu_seconds(process.pid) - cpu_before) / quiet if quiet else 0.0
        if server:
            polls = max(quiet, POLL_INTERVAL) / POLL_INTERVAL
            figures.rows_a_poll = (server[0]() - rows_before) / polls
            figures.server_cpu_a_poll = (server[1]() - server_before) / polls
        figures.peak_mb = peak_rss_mb(process.pid)
        os.write(master, b"q")
        quit_and_drain(process, master)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def rows_read(dsn: str, schema: str, settle: float) -> Callable[[], int]:
    """The rows the server read from the journal's tables so far (scans and index fetches),
    ``settle`` seconds after being asked: a backend idle since its last statement reports its
    statistics within 10 s (PostgreSQL's ``PGSTAT_IDLE_INTERVAL``)."""

    def read() -> int:
        async def ask() -> int:
            import asyncpg

            await asyncio.sleep(settle)
            conn = await asyncpg.connect(dsn)
            try:
                return int(
                    await conn.fetchval(
                        "SELECT coalesce(sum(coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)), 0)"
                        " FROM pg_stat_user_tables WHERE schemaname = $1",
                        schema,
                    )
                )
            finally:
                await conn.close()

        with ThreadPoolExecutor(1) as thread:  # called from the measuring loop's own coroutine
            return thread.submit(asyncio.run, ask()).result()

    return read


def measure(name: str, target: str, env: dict[str, str], args: argparse.Namespace,
            server: ServerCounters | None = None) -> Figures:  # fmt: skip
    figures = Figures(name)
    python = [sys.executable, "-m", "agenttui"]
    floor_run([*python, "runs", target, "--json"], env)  # the index built (a first open), not timed
    # Once, untimed, so that the measured one finds its modules compiled (as a user's Python
    # keeps them) and the store's pages in the OS's cache, as the floor does.
    watch_tui([*python, target], env, Figures(name), 0.0, args.timeout)
    # The TUI timed as often as the floor, each after one of its runs (the one spawn's figure
    # moved 1.2-1.6x from run to run); the last one is then left alone, quiet, and measured so.
    for repeat in range(args.repeats):
        cpu, peak = floor_run([*python, "runs", target, "--json"], env)
        figures.floor_cpus.append(cpu)
        figures.floor_peaks_mb.append(peak)
        last = repeat == args.repeats - 1
        spawned = figures if last else Figures(name)
        watch_tui([*python, target], env, spawned, args.quiet if last else 0.0, args.timeout, server if last else None)
        figures.to_idle_cpus.append(spawned.to_idle_cpu)
        figures.peak_mb = max(figures.peak_mb, spawned.peak_mb)
    return figures


def report(all_figures: list[Figures], args: argparse.Namespace) -> None:
    print(f"\n# An idle TUI ({checkout()}; {machine()})\n")
    judged = "smoke: not judged" if args.smoke else None
    print("| store | TUI CPU spawn → idle (median) | floor: `runs --json` reopen CPU (median) | ratio (≤ 1.5x) | peak RSS (≤ 150 MB) "
          "| idle share of a core (≤ 1%) | server rows / CPU a poll (≤ 10 rows) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for f in all_figures:
        floor, to_idle = statistics.median(f.floor_cpus), statistics.median(f.to_idle_cpus)
        ratio = to_idle / floor
        server = (
            "-" if f.rows_a_poll is None else f"{f.rows_a_poll:.1f} rows, {1000 * (f.server_cpu_a_poll or 0):.1f} ms"
        )
        verdicts = [
            judged or (met(ratio <= 1.5) if f.rows_a_poll is None else "reported"),
            judged or met(f.peak_mb <= 150),
            judged or met(f.quiet_share <= 0.01),
            judged or ("-" if f.rows_a_poll is None else met(f.rows_a_poll <= ROWS_A_POLL)),
        ]
        each = ", ".join(f"{cpu:.2f}" for cpu in f.to_idle_cpus)
        print(f"| {f.name} | {to_idle:.2f} s (each {each}; the last idle at {f.to_idle_wall:.1f} s wall) | {floor:.2f} s "
              f"(peak {statistics.median(f.floor_peaks_mb):.0f} MB) | {ratio:.2f}x {verdicts[0]} | {f.peak_mb:.0f} MB "
              f"{verdicts[1]} | {100 * f.quiet_share:.2f}% {verdicts[2]} | {server} {verdicts[3]} |")  # fmt: skip


async def on_postgres(store: Path, env: dict[str, str], args: argparse.Namespace) -> Figures:
    """The case on a copy of ``store`` in the throwaway cluster (its own schema, dropped after)."""
    from _postgres import bench_schema, throwaway_postgres

    async with throwaway_postgres() as dsn, bench_schema(dsn) as schema:
        await copy_to_postgres(dsn, schema, store)
        postmaster = await postmaster_of(dsn)
        server_cpu = server_cpu_of(postmaster) if postmaster is not None else (lambda: 0.0)
        name = f"PostgreSQL, {args.pg_runs:,} runs, no NOTIFY"
        return measure(
            name, f"{dsn}?schema={schema}", env, args, (rows_read(dsn, schema, 1.2 if args.smoke else 11), server_cpu)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000, help="runs of the SQLite store (default 100,000)")
    parser.add_argument("--pg-runs", type=int, default=5_000, help="runs copied to PostgreSQL (default 5,000)")
    parser.add_argument("--quiet", type=float, default=30.0, help="seconds measured idle (default 30)")
    parser.add_argument("--repeats", type=int, default=3, help="floor and TUI runs, the medians taken (default 3)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for idle (default 300)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agenttui-bench-cache"))
    parser.add_argument("--smoke", action="store_true", help="a few hundred runs in a temporary directory, not judged")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="agenttui-idle-") as scratch:
        longest = {}
        if args.smoke:
            args.runs = args.pg_runs = SMOKE_RUNS
            args.quiet, args.repeats, args.cache = 3.0, 1, Path(scratch) / "stores"
            longest = {"longest": SMOKE_LONGEST}
        env = environment(ROOT, Path(scratch) / "bytecode") | {"XDG_CACHE_HOME": str(Path(scratch) / "cache")}
        env |= {"COLUMNS": str(SIZE[0]), "LINES": str(SIZE[1])}
        store = production_store(args.cache, args.runs, **longest)
        figures = [measure(f"SQLite, {args.runs:,} runs", str(store), env, args)]
        if not args.no_postgres:
            pg_store = production_store(args.cache, args.pg_runs, **longest)
            figures.append(asyncio.run(on_postgres(pg_store, env, args)))
        report(figures, args)


if __name__ == "__main__":
    main()
