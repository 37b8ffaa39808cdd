"""Every run's status at store scale: `agenttui runs` against the one-query floor, from process start.

    python benchmarks/statuses.py [--shape production|uniform] [--runs 100000] [--cache DIR]
                                  [--repeats 3] [--no-postgres | --no-sqlite] [--baseline CHECKOUT]

``--shape`` picks the store of ``--runs`` runs, cached under ``--cache``:

- ``production`` (the default; ``benchmarks/shapes.py``): runs driven by the runtime, of every
  status, 5-50 records long for the most part, a few of 500 and 5,000 and one of 50,000, with
  sub-runs and tool results of 100 kB-1 MB;
- ``uniform``: the TUI benchmark's (``benchmarks/tui.py``, part a), 100,000 copies of one
  10-record run, 98% complete, 1% stalled, 1% in flight under a live lease.

Each figure is a whole process, timed from its start to its exit, with its peak resident memory:

- ``agenttui runs STORE --json``, every status, as a user runs it;
- the floor: one Python process that opens the file and makes one SQL pass over every entry,
  pulling per run what a status needs (entries, model turns, tokens through SQLite's JSON
  functions, the first end marker, the header) joined to the lease table, and prints one line
  per run. It decides nothing, so no status is cheaper than it. It parses each entry once (one
  ``json_extract`` of three paths, materialized; on PostgreSQL one cast to ``jsonb``, kept by
  ``OFFSET 0``), and only entries that end in ``}``: a damaged record, cut short, would stop the
  pass (agenttui has to find those; the floor only skips them).

The ratio is the median of ``agenttui runs`` over the median of the floor, measured in the same run.
``--baseline CHECKOUT`` also times ``agenttui runs`` of another checkout (``PYTHONPATH=CHECKOUT``),
interleaved with the others, for an A/B in the same run.
Then the same on PostgreSQL (``AGENTTUI_BENCH_PG_DSN``'s server, or a throwaway cluster), with the
store's rows copied into a fresh schema; its floor is the same pass in ``jsonb``.

Until 2026-12-01 the floors parsed each entry three times (once per member): on PostgreSQL that
took 59 s instead of 23 s over the production-shaped store, and made agenttui's ratio look better
than it was.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

FLOOR = r"""
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = conn.execute('''
    WITH s AS MATERIALIZED (
        SELECT run_id, seq, name, CASE WHEN substr(data, -1) = X'7D' THEN json_extract(CAST(data AS TEXT),
                   '$.kind', '$.usage.input_tokens', '$.usage.output_tokens') END AS a
        FROM bide_steps)
    SELECT s.run_id, count(*), sum(s.a ->> 0 = 'model'), sum(coalesce(s.a ->> 1, 0) + coalesce(s.a ->> 2, 0)),
           min(CASE WHEN s.name IN ('run:complete', 'run:aborted', 'run:cancelled') THEN s.seq END),
           min(s.seq), l.holder, l.expiry
    FROM s LEFT JOIN bide_leases AS l ON l.run_id = s.run_id
    GROUP BY s.run_id ORDER BY s.run_id''')
out = sys.stdout
for row in rows:
    out.write(repr(row) + "\n")
"""


PG_FLOOR = r"""
import asyncio, sys
import asyncpg
async def main():
    conn = await asyncpg.connect(sys.argv[1])
    steps, leases = f'"{sys.argv[2]}".bide_steps', f'"{sys.argv[2]}".bide_leases'
    out = sys.stdout
    async with conn.transaction():
        async for row in conn.cursor(f'''
            SELECT s.run_id, count(*), count(*) FILTER (WHERE p.j->>'kind' = 'model'),
                   sum(COALESCE((p.j->'usage'->>'input_tokens')::int8, 0)
                       + COALESCE((p.j->'usage'->>'output_tokens')::int8, 0)),
                   min(s.seq) FILTER (WHERE s.name IN ('run:complete', 'run:aborted', 'run:cancelled')),
                   min(s.seq), max(l.holder), max(l.expiry)
            FROM {steps} AS s
            CROSS JOIN LATERAL (SELECT CASE WHEN get_byte(s.data, length(s.data) - 1) = 125
                                            THEN convert_from(s.data, 'UTF8')::jsonb END AS j OFFSET 0) AS p
            LEFT JOIN {leases} AS l ON l.run_id = s.run_id
            GROUP BY s.run_id ORDER BY s.run_id''', prefetch=5000):
            out.write(repr(tuple(row)) + "\n")
    await conn.close()
asyncio.run(main())
"""


#: Runs a command in this interpreter and, at its exit, writes its own peak resident memory (``VmHWM``)
#: to the file named by the first argument: a child's ``ru_maxrss`` can start at its parent's peak
#: (this benchmark's process, which copies the store to PostgreSQL), so it is not the child's own.
PEAK = r"""
import atexit, runpy, sys
def report(path=sys.argv[1]):
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(path, "w") as out:
        out.write(peak)
atexit.register(report)
if sys.argv[2] == "-m":
    sys.argv = [sys.argv[3], *sys.argv[4:]]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    script, sys.argv = sys.argv[3], ["-c", *sys.argv[4:]]
    exec(compile(script, "<floor>", "exec"), {"__name__": "__main__"})
"""


#: What to time: the command, and the ``PYTHONPATH`` to run it with (None: this checkout's).
Command = tuple[list[str], str | None]


def timed(argv: list[str], pythonpath: str | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one process, from its start to its exit;
    ``argv`` is ``[python, "-m", module, *args]`` or ``[python, "-c", script, *args]``. CPU time
    (user and system, every thread) says more than wall time on a shared machine."""
    with tempfile.NamedTemporaryFile("r") as peak:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        env = None if pythonpath is None else {**os.environ, "PYTHONPATH": pythonpath}
        process = subprocess.Popen(
            [argv[0], "-c", PEAK, peak.name, *argv[1:]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        _, errors = process.communicate()
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if process.returncode != 0:
            raise SystemExit(f"{argv[:4]} failed: {errors.decode()}")
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return wall, cpu, int(peak.read()) / 1024


def measure(commands: dict[str, Command], repeats: int) -> None:
    """Times each command ``repeats`` times, interleaved; the first is agenttui, the second the floor."""
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    started = os.getloadavg()
    for _ in range(repeats):  # interleaved, so drift in the machine's speed hits both alike
        for name, (argv, pythonpath) in commands.items():
            results[name].append(timed(argv, pythonpath))
    load = os.getloadavg()
    print(
        f"{repeats} runs each, load average {started[0]:.1f} at the start,"
        f" {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end"
    )
    print(f"{'':24} {'median':>9} {'min':>9} {'max':>9} {'CPU':>9} {'peak RSS':>10}")
    medians, cpus = {}, {}
    for name, figures in results.items():
        walls = [wall for wall, _, _ in figures]
        medians[name] = statistics.median(walls)
        cpus[name] = statistics.median(cpu for _, cpu, _ in figures)
        print(
            f"{name:24} {medians[name]:8.2f}s {min(walls):8.2f}s {max(walls):8.2f}s {cpus[name]:8.2f}s"
            f" {max(rss for _, _, rss in figures):8.0f} MB"
        )
    (ours, floor, *baseline), (our_cpu, floor_cpu, *baseline_cpu) = medians.values(), cpus.values()
    print(f"agenttui runs / floor: {ours / floor:.1f}x (target 2x); in CPU time {our_cpu / floor_cpu:.1f}x")
    if baseline:
        print(f"baseline / floor: {baseline[0] / floor:.1f}x; in CPU time {baseline_cpu[0] / floor_cpu:.1f}x")


async def copy_to_postgres(dsn: str, schema: str, store: Path) -> None:
    import sqlite3

    import asyncpg

    from agenttui.stores.postgres import PostgresStore

    await (await PostgresStore.open(dsn, schema=schema)).close()  # the schema and its tables
    source = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    conn = await asyncpg.connect(dsn)
    try:
        rows = source.execute(
            "SELECT run_id, row_number() OVER (PARTITION BY run_id ORDER BY seq), name, data FROM bide_steps"
        )
        await conn.copy_records_to_table(
            "bide_steps", schema_name=schema, columns=["run_id", "seq", "name", "data"], records=rows
        )
        leases = source.execute("SELECT run_id, holder, expiry FROM bide_leases").fetchall()
        await conn.executemany(f'INSERT INTO "{schema}".bide_leases VALUES ($1, $2, to_timestamp($3))', leases)
        await conn.execute(f'VACUUM ANALYZE "{schema}".bide_steps')
    finally:
        await conn.close()
        source.close()


def commands(target: str, floor: list[str], baseline: str | None) -> dict[str, Command]:
    """agenttui runs on ``target``, the floor, and the baseline checkout's agenttui runs if given."""
    runs = [sys.executable, "-m", "agenttui", "runs", target, "--json"]
    timed_here: dict[str, Command] = {"agenttui runs --json": (runs, str(ROOT)), "floor: one SQL pass": (floor, None)}
    if baseline is not None:
        timed_here["baseline: agenttui runs"] = (runs, baseline)
    return timed_here


async def on_postgres(store: Path, repeats: int, baseline: str | None) -> None:
    from _postgres import bench_schema, throwaway_postgres

    async with throwaway_postgres() as dsn, bench_schema(dsn) as schema:
        await copy_to_postgres(dsn, schema, store)
        url = dsn + ("&" if "?" in dsn else "?") + f"schema={schema}"
        timed_here = commands(url, [sys.executable, "-c", PG_FLOOR, dsn, schema], baseline)
        await asyncio.to_thread(measure, timed_here, repeats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=["production", "uniform"], default="production")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true", help="time PostgreSQL only")
    parser.add_argument("--baseline", help="another checkout whose agenttui runs is timed too (an A/B)")
    args = parser.parse_args()
    if args.shape == "production":
        from shapes import describe, production_store, shape_of

        store = production_store(Path(args.cache), args.runs)
        print(f"The production-shaped store: {describe(shape_of(store))}\n")
    else:
        from tui import runs_store

        store = runs_store(Path(args.cache), args.runs)
    if not args.no_sqlite:
        print(f"SQLite, {args.runs:,} runs ({args.shape}):")
        measure(commands(str(store), [sys.executable, "-c", FLOOR, str(store)], args.baseline), args.repeats)
    if not args.no_postgres:
        print(f"\nPostgreSQL, {args.runs:,} runs ({args.shape}):")
        asyncio.run(on_postgres(store, args.repeats, args.baseline))


if __name__ == "__main__":
    main()
