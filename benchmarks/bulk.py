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

**tui**: the real app (headless, Pilot, 120x40, live tail on) over a copy of the apply's store:
every run marked (``M``), cancelled from the bulk menu and confirmed; while the action runs, keys
that scroll its log (``up``/``down``, focused), each timed from the press to the log painted at its
new place, and the same keys once the action has finished (idle). Target: a key painted within
50 ms while the action runs (p95); its runs a second beside the CLI's.

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


async def tui_keys(cache: Path, runs: int, presses: int) -> None:
    """Keys pressed while a bulk cancel runs in the TUI, against the same keys once it is done."""
    import time

    from textual.widgets import Log

    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.bulk import BulkConfirm, BulkMenu, BulkProgress
    from agenttui.tui.screens.dialogs import ChoiceList
    from agenttui.tui.screens.runs import RunsScreen

    painted: list[tuple[float, int]] = []
    original = Log.render_line

    def render_line(widget: Log, y: int) -> object:
        painted.append((time.perf_counter(), round(widget.scroll_offset.y)))
        return original(widget, y)

    Log.render_line = render_line  # type: ignore[method-assign]  # the timing hook

    async def until(test: object, timeout: float = 120) -> None:
        deadline = time.perf_counter() + timeout
        while not test():  # type: ignore[operator]
            if time.perf_counter() > deadline:
                raise TimeoutError("the app did not get there")
            await asyncio.sleep(0.005)

    async def keys(pilot: object, log: Log, count: int) -> list[float]:
        taken = []
        for n in range(count):
            at, before = time.perf_counter(), round(log.scroll_offset.y)
            await pilot.press("up" if n % 2 == 0 else "down")  # type: ignore[attr-defined]
            await until(lambda: any(t >= at and y != before for t, y in painted), 10)
            taken.append(next(t for t, y in painted if t >= at and y != before) - at)
            await asyncio.sleep(0.05)
        return taken

    template = await go_store(cache, runs)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tui.db"
        shutil.copyfile(template, path)
        started = load()
        app = AgentTuiApp(str(path), tail=os.environ.get("BENCH_TAIL", "1") == "1")
        async with app.run_test(size=(120, 40)) as pilot:
            await until(lambda: isinstance(app.screen, RunsScreen) and len(app.screen.table.items) == runs)
            screen = app.screen
            assert isinstance(screen, RunsScreen)
            await until(lambda: screen.model.pending == 0)
            await pilot.press("M", "o")
            await until(lambda: isinstance(app.screen, BulkMenu))
            menu = app.screen
            assert isinstance(menu, BulkMenu)
            menu.query_one(ChoiceList).highlighted = next(
                i for i, fit in enumerate(menu.fitted) if fit.choice.label.startswith("Cancel")
            )
            await pilot.press("enter")
            await until(lambda: isinstance(app.screen, BulkConfirm))
            await pilot.press("w")
            await until(lambda: isinstance(app.screen, BulkProgress))
            progress = app.screen
            assert isinstance(progress, BulkProgress)
            log = progress.query_one("#bulk-log", Log)
            await until(lambda: log.line_count > 40)
            log.focus()
            applying = started_at = time.perf_counter()
            busy = await keys(pilot, log, presses)
            done_at_keys = progress.tally.count
            await until(lambda: progress.finished, 600)
            applying = time.perf_counter() - started_at
            idle = await keys(pilot, log, presses)
            done = progress.tally.count
    quantiles = lambda xs: (statistics.median(xs), sorted(xs)[int(len(xs) * 0.95) - 1], max(xs))  # noqa: E731
    print(f"TUI keys while a bulk cancel of {runs:,} runs runs (SQLite), load average {started} -> {load()}")
    print(
        f"  while applying ({done_at_keys:,} of {done:,} runs done by the last key): "
        "p50 {:.0f} ms, p95 {:.0f} ms, max {:.0f} ms (target p95 ≤ 50 ms)".format(*(q * 1000 for q in quantiles(busy)))
    )
    print("  idle, after it: p50 {:.0f} ms, p95 {:.0f} ms, max {:.0f} ms".format(*(q * 1000 for q in quantiles(idle))))
    print(
        f"  the rest of the action after the keys: {applying:.1f} s; {done / max(applying, 1e-9):.0f} runs/s overall-ish\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--part", default="preview,apply,tui", help="preview, apply, tui, or several (default: all)")
    parser.add_argument("--tui-runs", type=int, default=2_000, help="runs the TUI's bulk cancel takes")
    parser.add_argument("--presses", type=int, default=30, help="keys timed while it runs, and after")
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
    if "tui" in parts:
        asyncio.run(tui_keys(Path(args.cache), args.tui_runs, args.presses))


if __name__ == "__main__":
    main()
