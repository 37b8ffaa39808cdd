"""Bulk actions at incident scale: a ``--where`` preview over 100,000 runs, and a cancel of 10,000.

    python benchmarks/bulk.py [--part preview,apply] [--runs 100000] [--apply-runs 10000]
                              [--sample 50] [--repeats 3] [--cache DIR] [--no-postgres]

**preview**: ``agenttui cancel STORE --where 'status=halted and tool=refund_payment'`` (a preview:
nothing written) against ``agenttui runs STORE --json`` on the same production-shaped store of
``--runs`` runs (``benchmarks/shapes.py``; ``--shape uniform``: the TUI benchmark's 100,000
copies of one 10-record run, 1% stalled, 1% in flight, filtered on ``status=stalled``), each a whole process from its start to its exit,
``--repeats`` rounds interleaved; the medians, their ratio (target ≤ 1.2x: selecting runs costs
little more than listing them) and each one's peak RSS. SQLite only.

**apply**: ``agenttui cancel STORE --where 'status=halted,awaiting-approval' --yes`` on a store of
``--apply-runs`` Go-shaped runs (``tests.gocorpus``: two in three halted on ``charge``, one in
three awaiting its approval), every one of them cancelled, against what a person would do without
``--where``: a shell loop of ``agenttui cancel STORE RUN``, one process per run, timed on
``--sample`` runs and extrapolated (mean per run × ``--apply-runs``). Target: the bulk apply ≥ 50x
faster. Each apply gets a fresh copy of the store (a new schema on PostgreSQL). On SQLite, then on
PostgreSQL (``AGENTTUI_BENCH_PG_DSN``'s server, or a throwaway cluster with fsync on).

**First run builds stores** under ``--cache`` (default ``/tmp/agenttui-bench-cache``) and reuses
them after: the production-shaped store of 100,000 runs (``benchmarks/shapes.py``: about 10-20
minutes and 2 GB on an idle 2-core machine; at load 5 on 2026-12-02 its batches of 2,000 runs
took 2-5 minutes each, so about 1.5 hours) for the preview, and the Go-shaped store of 10,000
runs (about 10 s) for the apply; ``--shape uniform``'s store takes about a minute.

Every figure is printed with the load average at the start and end of its measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from statuses import copy_to_postgres, timed  # noqa: E402

AGENTTUI = [sys.executable, "-m", "agenttui"]
APPLY_WHERE = "status=halted,awaiting-approval"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} {five:.1f} {fifteen:.1f}"


#: The preview's filter on each shape of store: the uniform store holds no halted run.
PREVIEW_WHERE = {"production": "status=halted and tool=refund_payment", "uniform": "status=stalled"}


def preview(cache: Path, runs: int, repeats: int, shape: str) -> None:
    if shape == "production":
        from shapes import describe, production_store, shape_of

        store = production_store(cache, runs)
        print(f"The production-shaped store: {describe(shape_of(store))}\n")
    else:
        from tui import runs_store

        store = runs_store(cache, runs)
    where = PREVIEW_WHERE[shape]
    commands = {
        f"cancel --where {where!r}": [*AGENTTUI, "cancel", str(store), "--where", where],
        "runs --json": [*AGENTTUI, "runs", str(store), "--json"],
    }
    figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    started = load()
    for _ in range(repeats):  # interleaved: a drift in the machine's speed hits both alike
        for name, argv in commands.items():
            figures[name].append(timed(argv, str(ROOT)))
    print(f"Preview over {runs:,} runs ({shape}, SQLite), {repeats} rounds, load average {started} -> {load()}")
    print(f"  {'':52} {'median':>8} {'min':>8} {'max':>8} {'CPU':>8} {'peak RSS':>9}")
    medians = {}
    for name, each in figures.items():
        walls = [wall for wall, _, _ in each]
        medians[name] = statistics.median(walls)
        cpu = statistics.median(c for _, c, _ in each)
        rss = max(r for _, _, r in each)
        print(f"  {name:52} {medians[name]:7.2f}s {min(walls):7.2f}s {max(walls):7.2f}s {cpu:7.2f}s {rss:6.0f} MB")
    bulk, listing = medians.values()
    print(f"  preview / runs --json: {bulk / listing:.2f}x (target ≤ 1.2x)\n")


async def go_store(cache: Path, runs: int) -> Path:
    """The Go-shaped store of ``runs`` runs, built once."""
    from agenttui.stores.sqlite import SQLiteStore
    from tests.runs.test_bulk_races import fill

    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"bulk-go-{runs}.db"
    if path.exists():
        return path
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")

    async def build() -> None:
        store = await SQLiteStore.open(partial)
        try:
            await fill(store, runs)
        finally:
            await store.close()

    await build()
    for suffix in ("-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    partial.rename(path)
    return path


class Copies:
    """A fresh copy of the Go-shaped store for each apply: a file, or a PostgreSQL schema."""

    def __init__(self, template: Path, folder: Path, dsn: str | None) -> None:
        self.template, self.folder, self.dsn, self.made = template, folder, dsn, 0

    async def fresh(self) -> str:
        self.made += 1
        if self.dsn is None:
            copy = self.folder / f"copy-{self.made}.db"
            shutil.copyfile(self.template, copy)
            return str(copy)
        schema = f"bulk_bench_{os.getpid()}_{self.made}"
        await copy_to_postgres(self.dsn, schema, self.template)
        return self.dsn + ("&" if "?" in self.dsn else "?") + f"schema={schema}"

    async def drop(self) -> None:
        if self.dsn is None:
            return
        import asyncpg

        conn = await asyncpg.connect(self.dsn)
        try:
            for n in range(1, self.made + 1):
                await conn.execute(f'DROP SCHEMA IF EXISTS "bulk_bench_{os.getpid()}_{n}" CASCADE')
        finally:
            await conn.close()


async def apply(kind: str, copies: Copies, runs: int, sample: int) -> None:
    started = load()
    url = await copies.fresh()
    bulk_wall, bulk_cpu, bulk_rss = await asyncio.to_thread(
        timed, [*AGENTTUI, "cancel", url, "--where", APPLY_WHERE, "--reason", "bench", "--yes"], str(ROOT)
    )
    url = await copies.fresh()
    singles = [
        await asyncio.to_thread(timed, [*AGENTTUI, "cancel", url, f"run-{n:04}", "--reason", "bench"], str(ROOT))
        for n in range(0, runs, runs // sample)[:sample]
    ]
    per_run = statistics.mean(wall for wall, _, _ in singles)
    loop_wall = per_run * runs
    print(f"Cancel {runs:,} runs ({kind}), load average {started} -> {load()}")
    print(
        f"  bulk: cancel --where {APPLY_WHERE!r} --yes   {bulk_wall:8.2f} s  (CPU {bulk_cpu:.2f} s, "
        f"{bulk_wall / runs * 1000:.1f} ms a run, peak RSS {bulk_rss:.0f} MB)"
    )
    print(
        f"  loop: cancel STORE RUN, {len(singles)} runs   mean {per_run * 1000:6.0f} ms, median "
        f"{statistics.median(w for w, _, _ in singles) * 1000:.0f} ms (peak RSS {max(r for _, _, r in singles):.0f} MB)"
        f" -> {loop_wall:,.0f} s for {runs:,}"
    )
    print(f"  loop / bulk: {loop_wall / bulk_wall:.0f}x (target ≥ 50x)\n")


async def applies(cache: Path, runs: int, sample: int, postgres: bool) -> None:
    template = await go_store(cache, runs)
    with tempfile.TemporaryDirectory() as folder:
        await apply("SQLite", Copies(template, Path(folder), None), runs, sample)
    if postgres:
        from _postgres import throwaway_postgres

        async with throwaway_postgres() as dsn:
            copies = Copies(template, Path("."), dsn)
            try:
                await apply("PostgreSQL", copies, runs, sample)
            finally:
                await copies.drop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--part", default="preview,apply", help="preview, apply, or both (default)")
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the preview's store")
    parser.add_argument("--shape", choices=["production", "uniform"], default="production", help="the preview's store")
    parser.add_argument("--apply-runs", type=int, default=10_000, help="runs the apply cancels")
    parser.add_argument("--sample", type=int, default=50, help="single-run cancels timed for the loop")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    parts = set(args.part.split(","))
    if "preview" in parts:
        preview(Path(args.cache), args.runs, args.repeats, args.shape)
    if "apply" in parts:
        asyncio.run(applies(Path(args.cache), args.apply_runs, args.sample, not args.no_postgres))


if __name__ == "__main__":
    main()
