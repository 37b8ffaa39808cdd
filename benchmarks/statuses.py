"""Every run's status at store scale: `agenttui runs` against a fair floor, from process start, with and without the status index.

    python benchmarks/statuses.py [--shape production|uniform] [--runs 100000] [--cache DIR]
                                  [--repeats 3] [--no-postgres | --no-sqlite] [--no-index]
                                  [--changed 0.01] [--baseline CHECKOUT]

**The first run builds a large store** and caches it under ``--cache`` (default
``/tmp/agenttui-bench-cache``), reused after: ``--shape production`` (the default) builds
``v1-production-<runs>.db`` with ``benchmarks/shapes.py``, 1.4 GB, which took 19 minutes (548 s
CPU) on this 2-core machine at load 5.6 and 48 minutes (1,254 s CPU) at load 4.7 (its
``.shape.json`` records each build's time): count 20-50 minutes; ``--shape uniform`` builds
``v1-runs-<runs>.db`` (470 MB) in about a minute. Each run also copies the store (a few seconds
on SQLite; on PostgreSQL, into a fresh schema, several minutes at 100,000 runs).

``--shape`` picks the store of ``--runs`` runs:

- ``production`` (``benchmarks/shapes.py``): runs driven by the runtime, of every status, 5-50
  records long for the most part, a few of 500 and 5,000 and one of 50,000, with sub-runs and
  tool results of 100 kB-1 MB;
- ``uniform``: the TUI benchmark's (``benchmarks/tui.py``, part a), 100,000 copies of one
  10-record run, 98% complete, 1% stalled, 1% in flight under a live lease.

Each figure is a whole process, timed from its start to its exit, with its CPU time and its peak
resident memory:

- the floor: one Python process that reads what every status needs and decides nothing, so no
  status is cheaper than it. It is fair to what a status does: one SQL pass over every entry
  pulls per run its entries, model turns and tokens (all four counts of each usage: input,
  output, cache read, cache write) through the database's JSON functions, **the bytes of its
  header and of its first end marker** (not only where they are), joined to its lease; then
  **every record of each unfinished run** (one with no end marker) is read into the process, as
  a status must read them (the floor does not parse them). Each entry is parsed once (one
  ``json_extract`` of five paths, materialized; on PostgreSQL one cast to ``jsonb``, kept by
  ``OFFSET 0``), and only entries that end in ``}``: a damaged record would stop the pass
  (agenttui has to find those; the floor only skips them).
- ``agenttui runs STORE --json`` with ``AGENTTUI_CACHE=off``: every status read from the store,
  no status index;
- with the status index (unless ``--no-index``), ``XDG_CACHE_HOME`` a directory of this
  benchmark's: **first open**, the cache empty (a fresh directory each round), the index written
  as it goes; **reopen**, nothing changed; **reopen after ``--changed``** (1%) of the runs, spread
  over the store (every 100th run in id order, another start each round), got one more record
  each (a value record, encoded by agenttui's codec and inserted as the Go SDK inserts an entry),
  written between the two reopens. The records go to this benchmark's copy of the store (a temp
  file; a fresh schema on PostgreSQL), never to the cached store. The index's size on disk
  (everything under ``$XDG_CACHE_HOME/agenttui/``) is reported per 100,000 runs.

Each figure's ratio to the floor measured in the same run, by wall time and by CPU time: medians
over ``--repeats`` rounds, the cases interleaved in each. On PostgreSQL the CPU time counts the
server's too: every backend and background process of the local server (the postmaster's and its
children's CPU, read from ``/proc``) during the process; a server not on this machine gets no CPU
ratio. Targets (issue 29): first open ≤ 2.5x the floor by wall time and ≤ 3.5x by CPU; reopen
with nothing changed ≤ 0.3x; with 1% of the runs changed ≤ 0.5x; peak RSS ≤ 150 MB.
``--baseline CHECKOUT`` also times ``agenttui runs`` of another checkout (``PYTHONPATH=CHECKOUT``,
cache off), for an A/B in the same run.

Until 2026-12-02 the floor read the header's and the end marker's positions but not their bytes,
summed only input and output tokens and read no unfinished run's records: 14.68 s on the
production-shaped store where a fair floor takes more, so ratios measured against it (2.5x on
2026-12-01) look worse than agenttui is. Until 2026-12-01 the floors parsed each entry three times
(once per member): on PostgreSQL that took 59 s instead of 23 s over the production-shaped store.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

#: The end markers a status looks for (``keys.END_MARKERS``), in the floors' SQL.
END_MARKERS = "'run:complete', 'run:aborted', 'run:cancelled'"
#: How many unfinished runs the floors read in one query.
UNFINISHED_PAGE = 500

FLOOR = rf"""
import sqlite3, sys
conn = sqlite3.connect(f"file:{{sys.argv[1]}}?mode=ro", uri=True)
rows = conn.execute('''
    WITH s AS MATERIALIZED (
        SELECT run_id, seq, name, CASE WHEN substr(data, -1) = X'7D' THEN json_extract(CAST(data AS TEXT),
                   '$.kind', '$.usage.input_tokens', '$.usage.output_tokens', '$.usage.cache_read_tokens',
                   '$.usage.cache_write_tokens') END AS a
        FROM bide_steps),
    r AS (
        SELECT run_id, count(*) AS steps, sum(a ->> 0 = 'model') AS turns,
               sum(coalesce(a ->> 1, 0) + coalesce(a ->> 2, 0) + coalesce(a ->> 3, 0) + coalesce(a ->> 4, 0)) AS tokens,
               min(seq) AS first_seq, min(CASE WHEN name IN ({END_MARKERS}) THEN seq END) AS end_seq
        FROM s GROUP BY run_id)
    SELECT r.run_id, r.steps, r.turns, r.tokens, h.data, e.data, l.holder, l.expiry
    FROM r JOIN bide_steps AS h ON h.seq = r.first_seq LEFT JOIN bide_steps AS e ON e.seq = r.end_seq
    LEFT JOIN bide_leases AS l ON l.run_id = r.run_id
    ORDER BY r.run_id''')
out = sys.stdout
unfinished = []
def read_unfinished():
    marks = ", ".join("?" * len(unfinished))
    records = conn.execute(f"SELECT run_id, seq, name, data FROM bide_steps WHERE run_id IN ({{marks}}) ORDER BY run_id, seq",
                           unfinished).fetchall()
    out.write(f"{{len(records)}} records, {{sum(len(r[3]) for r in records)}} bytes\n")
    unfinished.clear()
for row in rows:
    out.write(repr(row) + "\n")
    if row[5] is None:
        unfinished.append(row[0])
        if len(unfinished) == {UNFINISHED_PAGE}:
            read_unfinished()
if unfinished:
    read_unfinished()
"""


PG_FLOOR = rf"""
import asyncio, sys
import asyncpg
async def main():
    conn = await asyncpg.connect(sys.argv[1])
    steps, leases = f'"{{sys.argv[2]}}".bide_steps', f'"{{sys.argv[2]}}".bide_leases'
    out = sys.stdout
    unfinished = []
    async with conn.transaction():
        async for row in conn.cursor(f'''
            WITH r AS (
                SELECT s.run_id, count(*) AS steps, count(*) FILTER (WHERE p.j->>'kind' = 'model') AS turns,
                       sum(COALESCE((p.j->'usage'->>'input_tokens')::int8, 0)
                           + COALESCE((p.j->'usage'->>'output_tokens')::int8, 0)
                           + COALESCE((p.j->'usage'->>'cache_read_tokens')::int8, 0)
                           + COALESCE((p.j->'usage'->>'cache_write_tokens')::int8, 0)) AS tokens,
                       min(s.seq) AS first_seq,
                       min(s.seq) FILTER (WHERE s.name IN ({END_MARKERS})) AS end_seq
                FROM {{steps}} AS s
                CROSS JOIN LATERAL (SELECT CASE WHEN get_byte(s.data, length(s.data) - 1) = 125
                                                THEN convert_from(s.data, 'UTF8')::jsonb END AS j OFFSET 0) AS p
                GROUP BY s.run_id)
            SELECT r.run_id, r.steps, r.turns, r.tokens, h.data, e.data, l.holder, l.expiry
            FROM r JOIN {{steps}} AS h ON h.run_id = r.run_id AND h.seq = r.first_seq
            LEFT JOIN {{steps}} AS e ON e.run_id = r.run_id AND e.seq = r.end_seq
            LEFT JOIN {{leases}} AS l ON l.run_id = r.run_id
            ORDER BY r.run_id''', prefetch=5000):
            out.write(repr(tuple(row)) + "\n")
            if row[5] is None:
                unfinished.append(row[0])
    for start in range(0, len(unfinished), {UNFINISHED_PAGE}):
        records = await conn.fetch(
            f"SELECT run_id, seq, name, data FROM {{steps}} WHERE run_id = ANY($1) ORDER BY run_id, seq",
            unfinished[start:start + {UNFINISHED_PAGE}])
        out.write(f"{{len(records)}} records, {{sum(len(r[3]) for r in records)}} bytes\n")
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

#: Targets of issue 29, as a ratio to the floor (wall, CPU); None: no target of that kind.
TARGETS: dict[str, tuple[float, float | None]] = {
    "first open, empty cache": (2.5, 3.5),
    "reopen, nothing changed": (0.3, None),
    "reopen, 1% changed": (0.5, None),
}
FLOOR_NAME = "floor"
CACHE_OFF = "agenttui runs, cache off"


@dataclass
class Figures:
    """One case's measurements over the rounds."""

    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peaks_mb: list[float] = field(default_factory=list)


@dataclass
class Case:
    """A process to time: its argv (``[python, "-m", module, *args]`` or ``[python, "-c", script,
    *args]``), its ``PYTHONPATH`` (None: this checkout's) and more environment."""

    argv: list[str]
    pythonpath: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def timed(case: Case, server_cpu: Callable[[], float] | None = None) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one process, from its start to its exit.
    CPU time (user and system, every thread) says more than wall time on a shared machine; with
    ``server_cpu`` (the database server's CPU seconds so far), the server's share is added."""
    with tempfile.NamedTemporaryFile("r") as peak:
        env = {**os.environ, "PYTHONPATH": case.pythonpath or str(ROOT), **case.env}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_before = server_cpu() if server_cpu else 0.0
        started = time.perf_counter()
        process = subprocess.Popen(
            [case.argv[0], "-c", PEAK, peak.name, *case.argv[1:]],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        _, errors = process.communicate()
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        server = server_cpu() - server_before if server_cpu else 0.0
        if process.returncode != 0:
            raise SystemExit(f"{case.argv[:4]} failed: {errors.decode()}")
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime + server
        return wall, cpu, int(peak.read()) / 1024


def index_bytes(cache_home: Path) -> int:
    """What the status index keeps on disk: every file under ``$XDG_CACHE_HOME/agenttui``."""
    root = cache_home / "agenttui"
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file()) if root.exists() else 0


@dataclass
class Bench:
    """One store's measurement: the commands, and how to change 1% of its runs."""

    target: str
    """What ``agenttui runs`` opens: a file's path or a PostgreSQL URL."""
    floor: Case
    runs: int
    change: Callable[[int], None] | None
    """Appends a record to the share of runs ``--changed`` says (round number: where to start)."""
    server_cpu: Callable[[], float] | None = None
    baseline: str | None = None
    figures: dict[str, Figures] = field(default_factory=dict)
    index_sizes: list[int] = field(default_factory=list)

    def time(self, name: str, case: Case) -> None:
        wall, cpu, peak = timed(case, self.server_cpu)
        figures = self.figures.setdefault(name, Figures())
        figures.walls.append(wall)
        figures.cpus.append(cpu)
        figures.peaks_mb.append(peak)


def agenttui_runs(target: str, **env: str) -> Case:
    return Case([sys.executable, "-m", "agenttui", "runs", target, "--json"], env=env)


def measure(bench: Bench, repeats: int, changed: float) -> None:
    """Times every case ``repeats`` times, interleaved, then prints the figures."""
    started = os.getloadavg()
    for round_number in range(repeats):
        bench.time(FLOOR_NAME, bench.floor)
        bench.time(CACHE_OFF, agenttui_runs(bench.target, AGENTTUI_CACHE="off"))
        if bench.baseline is not None:
            baseline = agenttui_runs(bench.target, AGENTTUI_CACHE="off")
            baseline.pythonpath = bench.baseline
            bench.time("baseline: agenttui runs", baseline)
        if bench.change is None:
            continue
        with tempfile.TemporaryDirectory(prefix="agenttui-bench-xdg-") as cache_home:
            cached = agenttui_runs(bench.target, XDG_CACHE_HOME=cache_home)
            bench.time("first open, empty cache", cached)
            bench.index_sizes.append(index_bytes(Path(cache_home)))
            bench.time("reopen, nothing changed", cached)
            bench.change(round_number)
            bench.time(f"reopen, {changed:.0%} changed", cached)
    report(bench, repeats, started)


def report(bench: Bench, repeats: int, started: tuple[float, float, float]) -> None:
    load = os.getloadavg()
    print(
        f"{repeats} rounds, load average {started[0]:.1f} at the start,"
        f" {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end"
        + ("; CPU includes the server's" if bench.server_cpu else "")
    )
    floor = bench.figures[FLOOR_NAME]
    floor_wall, floor_cpu = statistics.median(floor.walls), statistics.median(floor.cpus)
    has_cpu = bench.server_cpu is not None or not bench.target.startswith("postgres")
    print(
        f"{'':28} {'median':>9} {'min':>9} {'max':>9} {'CPU':>9} {'peak RSS':>9}"
        f" {'wall/floor':>10} {'CPU/floor':>9}  target"
    )
    for name, figures in bench.figures.items():
        wall, cpu = statistics.median(figures.walls), statistics.median(figures.cpus)
        ratios = (
            f"{wall / floor_wall:9.2f}x {cpu / floor_cpu:8.2f}x" if has_cpu else f"{wall / floor_wall:9.2f}x {'-':>9}"
        )
        target = TARGETS.get("reopen, 1% changed" if name.endswith(" changed") and "nothing" not in name else name)
        verdict = ""
        if target is not None:
            met = wall / floor_wall <= target[0] and (target[1] is None or not has_cpu or cpu / floor_cpu <= target[1])
            bounds = f"≤ {target[0]}x" + (f", CPU ≤ {target[1]}x" if target[1] is not None else "")
            verdict = f"  {bounds}: {'met' if met else 'MISSED'}"
            if bench.index_sizes and not any(bench.index_sizes):
                verdict += " (no index written: the cache-off path)"
        print(
            f"{name:28} {wall:8.2f}s {min(figures.walls):8.2f}s {max(figures.walls):8.2f}s"
            f" {cpu if has_cpu else float('nan'):8.2f}s {max(figures.peaks_mb):6.0f} MB {ratios}{verdict}"
        )
    if bench.index_sizes:
        size = max(bench.index_sizes)
        per_100k = size * 100_000 / bench.runs
        print(
            f"status index on disk: {size / 1e6:.1f} MB for {bench.runs:,} runs ({per_100k / 1e6:.1f} MB per 100,000 runs)"
            if size
            else "status index on disk: none written (this checkout keeps no index)"
        )


def one_in(share: float) -> int:
    return max(1, round(1 / share))


def change_sqlite(path: Path, share: float) -> Callable[[int], None]:
    """Appends a value record to every ``1/share``-th run of the file, starting at the round's number."""

    def change(round_number: int) -> None:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            run_ids = [row[0] for row in conn.execute("SELECT DISTINCT run_id FROM bide_steps ORDER BY run_id")]
        asyncio.run(append_to(str(path), run_ids, share, round_number))

    return change


async def append_to(target: str, run_ids: list[str], share: float, round_number: int) -> None:
    """One value record more in every ``1/share``-th run of ``run_ids``, as the Go SDK inserts an entry."""
    from agenttui.journal import Record, StepKind
    from agenttui.journal.codec import encode_record
    from agenttui.stores import open_store

    store = await open_store(target)
    try:
        name = f"bench:changed/{round_number}"
        for run_id in run_ids[round_number % one_in(share) :: one_in(share)]:
            record = Record(name, StepKind.VALUE, result=b'"changed"', salt=os.urandom(32))
            await store.insert(run_id, name, encode_record(record))
    finally:
        await store.close()


async def copy_to_postgres(dsn: str, schema: str, store: Path) -> None:
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


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int, *, with_reaped_children: bool) -> float:
    """A process's CPU seconds so far (user + system), and its waited-for children's if asked."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0.0  # it exited: its parent has its CPU now
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if with_reaped_children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / CLOCK_TICKS


def children_of(pid: int) -> list[int]:
    return [
        int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit() and parent_of(int(entry.name)) == pid
    ]


async def postmaster_of(dsn: str) -> int | None:
    """The local server's postmaster (a backend's parent), or None when the server is elsewhere."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        backend = await conn.fetchval("SELECT pg_backend_pid()")
    finally:
        await conn.close()
    return parent_of(backend)


def parent_of(pid: int) -> int | None:
    """A local process's parent, or None when there is no such process here."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None


def server_cpu_of(postmaster: int) -> Callable[[], float]:
    """The server's CPU seconds so far: the postmaster's own and its exited backends' (which it
    waited for), and each running child's."""

    def server_cpu() -> float:
        return process_cpu(postmaster, with_reaped_children=True) + sum(
            process_cpu(child, with_reaped_children=True) for child in children_of(postmaster)
        )

    return server_cpu


async def on_postgres(store: Path, args: argparse.Namespace) -> None:
    from _postgres import bench_schema, throwaway_postgres

    async with throwaway_postgres() as dsn, bench_schema(dsn) as schema:
        copy_started = time.perf_counter()
        await copy_to_postgres(dsn, schema, store)
        print(f"(copied into a fresh schema in {time.perf_counter() - copy_started:.0f} s)")
        url = dsn + ("&" if "?" in dsn else "?") + f"schema={schema}"
        postmaster = await postmaster_of(dsn)
        change = None
        if not args.no_index:
            import asyncpg

            conn = await asyncpg.connect(dsn)
            try:
                run_ids = [
                    r[0] for r in await conn.fetch(f'SELECT DISTINCT run_id FROM "{schema}".bide_steps ORDER BY 1')
                ]
            finally:
                await conn.close()

            def change(round_number: int) -> None:
                asyncio.run(append_to(url, run_ids, args.changed, round_number))

        bench = Bench(
            url,
            Case([sys.executable, "-c", PG_FLOOR, dsn, schema]),
            args.runs,
            change,
            server_cpu=server_cpu_of(postmaster) if postmaster is not None else None,
            baseline=args.baseline,
        )
        await asyncio.to_thread(measure, bench, args.repeats, args.changed)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n")[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--shape", choices=["production", "uniform"], default="production")
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache", help="where the large stores are cached")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true", help="time SQLite only")
    parser.add_argument("--no-sqlite", action="store_true", help="time PostgreSQL only")
    parser.add_argument("--no-index", action="store_true", help="only the floor and agenttui with the cache off")
    parser.add_argument("--changed", type=float, default=0.01, help="share of runs changed before the last reopen")
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
        with tempfile.TemporaryDirectory(prefix="agenttui-bench-statuses-") as work:
            copy = Path(work) / store.name  # the index's changes go to a copy, never the cached store
            shutil.copyfile(store, copy)
            print(f"SQLite, {args.runs:,} runs ({args.shape}):")
            bench = Bench(
                str(copy),
                Case([sys.executable, "-c", FLOOR, str(copy)]),
                args.runs,
                None if args.no_index else change_sqlite(copy, args.changed),
                baseline=args.baseline,
            )
            measure(bench, args.repeats, args.changed)
    if not args.no_postgres:
        print(f"\nPostgreSQL, {args.runs:,} runs ({args.shape}):")
        asyncio.run(on_postgres(store, args))


if __name__ == "__main__":
    main()
