"""Bundles of a long run: ``agenttui export`` and ``agenttui import`` of the 50,000-record run.

    python benchmarks/bundles.py [--cache DIR] [--repeats 3] [--no-postgres] [--smoke]

Reads ``v1-long-run-50000.db`` from ``--cache`` (built by ``benchmarks/tui.py``; only read here,
never written) and times, each as a whole process from its start to its exit, with its peak
resident memory: the export of its one run to a bundle, the same with ``--redact customer`` (a
member in half the records' payloads, so half the records are walked and rewritten), and the
import of the bundle into a new SQLite file. Figures are the median of ``--repeats`` runs; the
CPU time is the child's own. Record the load average beside them: the wall clock is shared.

Then the import into PostgreSQL (``AGENTTUI_BENCH_PG_DSN``'s server, or a throwaway cluster with
fsync on), a fresh schema each time, once through ``insert_many`` (a transaction a batch) and
once one ``insert`` (one commit) a record, in this process: wall clock only.

``--smoke``: a run of 500 records built in a temporary directory (``benchmarks/tui.py``'s
``long_run_store``), each case once, PostgreSQL included unless ``--no-postgres`` (seconds), to
check that the benchmark still runs; its figures are not judged.
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
sys.path.insert(0, str(ROOT))


def timed(args: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (KiB) of ``python -m agenttui ARGS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "agenttui", *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, after.ru_maxrss


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """Builds no large store: it reads the 50,000-record run's store, v1-long-run-50000.db under --cache,
which benchmarks/tui.py builds on its first run (about a minute); without it, it stops and says so.
A run takes a minute or two."""
SMOKE = (
    "tiny sizes (a run of 500 records built in a temporary directory, each case once), seconds:"
    " checks the benchmark runs; figures not judged"
)
SMOKE_RECORDS = 500


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=FIRST_RUN,
    )
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache", help="where the long run's store is cached")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL import")
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    options = parser.parse_args()
    if not options.smoke:
        source = Path(options.cache) / "v1-long-run-50000.db"
        if not source.exists():
            sys.exit(f"{source} is missing: build it with benchmarks/tui.py")
        measure(source, options)
        return
    from benchmarks.tui import long_run_store

    options.repeats = 1
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-smoke-") as scratch:
        os.environ["XDG_CACHE_HOME"] = str(Path(scratch) / "xdg")  # the commands', never the user's
        print(f"smoke: a run of {SMOKE_RECORDS} records, each case once; not judged")
        measure(long_run_store(Path(scratch), SMOKE_RECORDS), options)


def measure(source: Path, options: argparse.Namespace) -> None:
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print(f"{'':28}{'wall':>9}{'cpu':>9}{'peak RSS':>11}")
    with tempfile.TemporaryDirectory() as scratch:
        bundle = Path(scratch) / "long.db"
        export = ["export", str(source), "long-run", "-o", str(bundle), "--force"]
        cases = {"export": export, "export --redact customer": [*export, "--redact", "customer"]}
        for label, args in cases.items():
            runs = [timed(args) for _ in range(options.repeats)]
            report(label, runs)
        subprocess.run(
            [sys.executable, "-m", "agenttui", *cases["export"]], check=True, cwd=ROOT, stdout=subprocess.DEVNULL
        )
        imports = []
        for n in range(options.repeats):
            imports.append(timed(["import", str(bundle), str(Path(scratch) / f"into-{n}.db"), "--create"]))
        report("import into a new SQLite", imports)
        if not options.no_postgres:
            asyncio.run(postgres_imports(bundle))
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


async def postgres_imports(bundle: Path) -> None:
    from agenttui.runs.bundles import import_runs
    from agenttui.stores.base import Store
    from agenttui.stores.postgres import PostgresStore
    from benchmarks._postgres import bench_schema, throwaway_postgres

    class OneAtATime(PostgresStore):
        """The store with the contract's default ``insert_many``: one ``insert`` a record."""

        insert_many = Store.insert_many

    async with throwaway_postgres() as dsn:
        for label, kind in (("import into PostgreSQL", PostgresStore), ("  one insert a record", OneAtATime)):
            async with bench_schema(dsn) as schema:
                store = await kind.open(dsn, schema=schema)
                try:
                    start = time.perf_counter()
                    await import_runs(bundle, store)
                    print(f"{label:28}{time.perf_counter() - start:>8.2f}s")
                finally:
                    await store.close()


def report(label: str, runs: list[tuple[float, float, int]]) -> None:
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    rss = max(r[2] for r in runs)
    print(f"{label:28}{wall:>8.2f}s{cpu:>8.2f}s{rss / 1024:>8.0f} MiB")


if __name__ == "__main__":
    main()
