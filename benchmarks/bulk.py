"""Bulk actions at incident scale: a ``--where`` preview over 100,000 runs, and a cancel of 10,000.

    python benchmarks/bulk.py [--part preview,apply,tui] [--runs 100000] [--apply-runs 10000]
                              [--sample 50] [--repeats 3] [--cache DIR] [--no-postgres] [--smoke]

**preview**: ``agenttui cancel STORE --where 'status=halted and tool=refund_payment'`` (a preview:
nothing written) against ``agenttui runs STORE --json`` on the same production-shaped store of
``--runs`` runs (``benchmarks/shapes.py``; ``--shape uniform``: the TUI benchmark's 100,000
copies of one 10-record run, 1% stalled, 1% in flight, filtered on ``status=stalled``), each a whole process from its start to its exit,
``--repeats`` rounds interleaved; the medians, their ratio (target ≤ 1.2x: selecting runs costs
little more than listing them) and each one's peak RSS. SQLite only.

**apply**: ``agenttui cancel STORE --where 'status=halted,awaiting-approval' --yes`` on a store of
``--apply-runs`` Go-shaped runs (``tests.gocorpus``: two in three halted on ``charge``, one in
three awaiting its approval), every one of them cancelled, a whole process from its start, its
time a run printed beside two floors on the same store, each a whole process too (issue 49):

- **the library's own cancel in one process, run after run** (``runs.operations.Cancel(run_id,
  reason).apply(store)``: the run's lease taken, the run read and checked open, ``run:cancelled``
  written, the lease let go), over the same run ids, given: target, the bulk cancel ≤ 1x its wall
  time (selecting the runs, reading each again under its lease and keeping eight in hand at once
  should cost no more than a script's plain loop);
- **one SQL transaction a run**: the minimal write a cancel does, in raw SQL (``sqlite3`` or
  ``asyncpg``), the ``run:cancelled`` record's bytes as the codec writes them (a fresh salt each)
  inserted unless the name is taken (on PostgreSQL with the SDK's ``next_seq_v1``); no lease, no
  read. Reported.

And against what a person would do without ``--where``: a shell loop of ``agenttui cancel STORE
RUN``, one process per run, timed on ``--sample`` runs and extrapolated (mean per run ×
``--apply-runs``). Target: the bulk apply ≥ 50x faster. Each process gets a fresh copy of the
store (a new schema on PostgreSQL). On SQLite, then on PostgreSQL (``AGENTTUI_BENCH_PG_DSN``'s
server, or a throwaway cluster with fsync on). Every process timed reads agenttui's bytecode from
its cache (written first; ``PYTHONDONTWRITEBYTECODE`` is taken out of their environment).

``--smoke`` runs every part at a tiny size (the preview over a production-shaped store of 300
runs, the apply of 60, the TUI's of 400), one round, every store built in a temporary directory,
``XDG_CACHE_HOME`` a temporary one; PostgreSQL's apply too unless ``--no-postgres``.

**First run builds stores** under ``--cache`` (default ``/tmp/agenttui-bench-cache``) and reuses
them after: the production-shaped store of 100,000 runs (``benchmarks/shapes.py``: about 10-20
minutes and 2 GB on an idle 2-core machine; at load 5 on 2026-12-02 its batches of 2,000 runs
took 2-5 minutes each, so about 1.5 hours) for the preview, and the Go-shaped store of 10,000
runs (about 10 s) for the apply; ``--shape uniform``'s store takes about a minute.

**tui**: the real app (headless, Pilot, 120x40, live tail on) over a copy of the apply's store of
``--tui-runs`` runs: every run marked (``M``), cancelled from the bulk menu and confirmed; once a
third are done, ``esc`` (stop after the current run), timed from the press to its hint painted;
beside it, ``j`` on the runs list with nothing running. ``--tui-rounds`` rounds, a fresh copy of
the store each. Target: a key painted within 50 ms while the action runs.

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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _report import process_figures  # noqa: E402
from shapes import SHAPE_VERSION  # noqa: E402
from statuses import Case, copy_to_postgres, timed  # noqa: E402

AGENTTUI = [sys.executable, "-m", "agenttui"]
APPLY_WHERE = "status=halted,awaiting-approval"


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} {five:.1f} {fifteen:.1f}"


#: The preview's filter on each shape of store: the uniform store holds no halted run.
PREVIEW_WHERE = {"production": "status=halted and tool=refund_payment", "uniform": "status=stalled"}


def preview(cache: Path, runs: int, repeats: int, shape: str, *, smoke: bool = False) -> None:
    if shape == "production":
        from shapes import describe, production_store, shape_of

        store = production_store(cache, runs)
        if Path(f"{store}.shape.json").exists():  # not --smoke's
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
            figures[name].append(timed(Case(argv)))
    print(f"Preview over {runs:,} runs ({shape}, SQLite), {repeats} rounds, load average {started} -> {load()}")
    medians = process_figures(figures, 52)
    bulk, listing = medians.values()
    verdict = "smoke: not judged" if smoke else "met" if bulk / listing <= 1.2 else "MISSED"
    print(f"  preview / runs --json: {bulk / listing:.2f}x (target ≤ 1.2x: {verdict})\n")


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
        self.schema = ""
        """The last copy's schema (PostgreSQL)."""

    async def fresh(self) -> str:
        self.made += 1
        if self.dsn is None:
            copy = self.folder / f"copy-{self.made}.db"
            shutil.copyfile(self.template, copy)
            return str(copy)
        schema = self.schema = f"bulk_bench_{os.getpid()}_{self.made}"
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


#: The library's own cancel, in one process, one run after another (``runs.operations.Cancel``:
#: the run's lease taken, the run read and checked open, ``run:cancelled`` written, the lease let
#: go), over the run ids of the file its second argument names: what a script would do with
#: agenttui as a library instead of the bulk command.
LIBRARY_LOOP = """
import asyncio, sys
from agenttui.runs.recovery.operations import Cancel
from agenttui.stores import open_store
async def main():
    store = await open_store(sys.argv[1])
    try:
        for run_id in open(sys.argv[2]).read().split():
            await Cancel(run_id, "bench").apply(store)
    finally:
        await store.close()
asyncio.run(main())
"""

#: The minimal write a cancel does, in raw SQL on the same store: one transaction a run, the
#: ``run:cancelled`` record's bytes (as the codec writes them, a fresh salt each) inserted unless
#: the name is taken (on PostgreSQL its seq from the SDK's ``next_seq_v1``, as every writer takes
#: it); no lease, no read, no notification. ``@RECORD_HEAD@`` and ``@RECORD_TAIL@`` are the bytes
#: around the salt.
SQLITE_WRITES = """
import base64, os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA busy_timeout = 30000")
for run_id in open(sys.argv[2]).read().split():
    data = @RECORD_HEAD@ + base64.b64encode(os.urandom(32)) + @RECORD_TAIL@
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO bide_steps (run_id, name, data) VALUES (?, 'run:cancelled', ?)"
                 " ON CONFLICT (run_id, name) DO NOTHING", (run_id, data))
    conn.execute("COMMIT")
"""

PG_WRITES = """
import asyncio, base64, os, sys
import asyncpg
async def main():
    dsn, schema, ids = sys.argv[1:4]
    conn = await asyncpg.connect(dsn)
    insert = (f'INSERT INTO "{schema}".bide_steps (run_id, seq, name, data)'
              f' VALUES ($1, "{schema}".bide_next_seq_v1($1), $$run:cancelled$$, $2) ON CONFLICT (run_id, name) DO NOTHING')
    for run_id in open(ids).read().split():
        data = @RECORD_HEAD@ + base64.b64encode(os.urandom(32)) + @RECORD_TAIL@
        await conn.execute(insert, run_id, data)
    await conn.close()
asyncio.run(main())
"""


def record_around_salt() -> tuple[bytes, bytes]:
    """The bytes of the ``run:cancelled`` record a cancel writes, before and after its salt."""
    import base64
    import json

    from agenttui.journal import Record, StepKind
    from agenttui.journal.codec import encode_record
    from agenttui.journal.keys import RUN_CANCELLED

    salt = bytes(range(32))
    record = Record(RUN_CANCELLED, StepKind.VALUE, result=json.dumps({"reason": "bench"}).encode())
    head, found, tail = encode_record(record, salt).partition(base64.b64encode(salt))
    assert found, "the codec writes the salt in base64"
    return head, tail


def sql_writes(postgres: bool) -> str:
    head, tail = record_around_salt()
    script = PG_WRITES if postgres else SQLITE_WRITES
    return script.replace("@RECORD_HEAD@", repr(head)).replace("@RECORD_TAIL@", repr(tail))


async def run_ids_of(url: str) -> list[str]:
    from agenttui.stores import open_store

    store = await open_store(url)
    try:
        return [run_id async for run_id in store.runs()]
    finally:
        await store.close()


async def apply(kind: str, copies: Copies, runs: int, sample: int, *, smoke: bool = False) -> None:
    started = load()
    url = await copies.fresh()
    run_ids = await run_ids_of(url)
    ids = copies.folder / f"run-ids-{kind}.txt"
    ids.write_text("\n".join(run_ids))
    bulk_wall, bulk_cpu, bulk_rss = await asyncio.to_thread(
        timed, Case([*AGENTTUI, "cancel", url, "--where", APPLY_WHERE, "--reason", "bench", "--yes"])
    )
    loops = {}
    for name, script in (("library", LIBRARY_LOOP), ("sql", sql_writes(copies.dsn is not None))):
        url = await copies.fresh()
        where = [url] if name == "library" or copies.dsn is None else [copies.dsn, copies.schema]
        loops[name] = await asyncio.to_thread(timed, Case([sys.executable, "-c", script, *where, str(ids)]))
    url = await copies.fresh()
    singles = [
        await asyncio.to_thread(timed, Case([*AGENTTUI, "cancel", url, run_id, "--reason", "bench"]))
        for run_id in run_ids[:: max(1, len(run_ids) // sample)][:sample]
    ]
    per_run = statistics.mean(wall for wall, _, _ in singles)
    loop_wall = per_run * runs
    library, sql = loops["library"], loops["sql"]

    def ms(seconds: float) -> str:
        return f"{seconds / runs * 1000:6.2f} ms a run"

    print(f"Cancel {runs:,} runs ({kind}), load average {started} -> {load()}; bytecode cached")
    print(f"  {'':52} {'wall':>9} {'a run':>16} {'CPU':>9} {'peak RSS':>9}")
    for name, (wall, cpu, rss) in (
        (f"bulk: cancel --where {APPLY_WHERE!r} --yes", (bulk_wall, bulk_cpu, bulk_rss)),
        ("floor: the library's Cancel, run after run, in-process", library),
        ("floor: one SQL transaction a run (the record only)", sql),
    ):
        print(f"  {name:52} {wall:8.2f}s {ms(wall)} {cpu:8.2f}s {rss:6.0f} MB")
    verdict = "smoke: not judged" if smoke else "met" if bulk_wall <= library[0] else "MISSED"
    print(
        f"  bulk / library loop: {bulk_wall / library[0]:.2f}x wall, {bulk_cpu / library[1]:.2f}x CPU"
        f" (target ≤ 1x wall: {verdict}); bulk / SQL floor: {bulk_wall / sql[0]:.2f}x wall, {bulk_cpu / sql[1]:.2f}x CPU"
    )
    print(
        f"  loop of processes: cancel STORE RUN, {len(singles)} runs: mean {per_run * 1000:.0f} ms, median "
        f"{statistics.median(w for w, _, _ in singles) * 1000:.0f} ms (peak RSS {max(r for _, _, r in singles):.0f} MB)"
        f" -> {loop_wall:,.0f} s for {runs:,}"
    )
    verdict = "smoke: not judged" if smoke else "met" if loop_wall / bulk_wall >= 50 else "MISSED"
    print(f"  loop of processes / bulk: {loop_wall / bulk_wall:.0f}x (target ≥ 50x: {verdict})\n")


async def applies(cache: Path, runs: int, sample: int, postgres: bool, *, smoke: bool = False) -> None:
    template = await go_store(cache, runs)
    with tempfile.TemporaryDirectory() as folder:
        await apply("SQLite", Copies(template, Path(folder), None), runs, sample, smoke=smoke)
        if postgres:
            from _postgres import throwaway_postgres

            async with throwaway_postgres() as dsn:
                copies = Copies(template, Path(folder), dsn)
                try:
                    await apply("PostgreSQL", copies, runs, sample, smoke=smoke)
                finally:
                    await copies.drop()


async def tui_keys(cache: Path, runs: int, rounds: int, *, smoke: bool = False) -> None:
    """``esc`` pressed while a bulk cancel runs in the TUI, timed to the "stopping" hint painted,
    against ``j`` on the runs list when nothing runs; ``rounds`` rounds, a fresh store each."""
    import time

    from textual.app import App

    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.bulk import BulkConfirm, BulkMenu, BulkProgress
    from agenttui.tui.screens.dialogs import ChoiceList
    from agenttui.tui.screens.runs import RunsScreen

    painted: list[tuple[float, str]] = []
    watched: dict[str, Any] = {}
    display = App._display

    def displayed(app: Any, screen: Any, renderable: Any) -> None:
        # A frame sent to the terminal (the headless driver drops it): what it showed, and when.
        if renderable is not None:
            progress, table = watched.get("progress"), watched.get("table")
            shown = "stopping" if progress is not None and progress.stopping else ""
            painted.append((time.perf_counter(), shown or f"cursor {table.cursor if table else ''}"))
        display(app, screen, renderable)

    App._display = displayed  # type: ignore[method-assign]  # the timing hook

    async def until(test: Any, timeout: float = 120) -> float:
        deadline = time.perf_counter() + timeout
        while not test():
            if time.perf_counter() > deadline:
                raise TimeoutError("the app did not get there")
            await asyncio.sleep(0.002)
        return time.perf_counter()

    def first_paint(since: float, what: str) -> float | None:
        return next((t for t, name in painted if t >= since and name == what), None)

    async def painted_after(pressed: float, what: str) -> float:
        """From a key's press to the first frame showing ``what`` (``Pilot.press`` returns only
        once the app is idle again, long after that frame while an action runs)."""
        await until(lambda: first_paint(pressed, what) is not None)
        return first_paint(pressed, what) - pressed  # type: ignore[operator]  # not None: awaited above

    template = await go_store(cache, runs)
    busy: list[float] = []
    idle: list[float] = []
    rates: list[float] = []
    started = load()
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "tui.db"
            shutil.copyfile(template, path)
            app = AgentTuiApp(
                str(path), tail=os.environ.get("BENCH_TAIL", "1") == "1"
            )  # live tail on: every write is seen, as in an incident
            async with app.run_test(size=(120, 40)) as pilot:
                await until(lambda: isinstance(app.screen, RunsScreen) and len(app.screen.table.items) == runs)
                screen = app.screen
                assert isinstance(screen, RunsScreen)
                await until(lambda: screen.model.pending == 0)
                watched.update(table=screen.table, progress=None)
                for _ in range(3):  # idle: the runs list's cursor, moved and painted
                    at, cursor = time.perf_counter(), screen.table.cursor
                    await pilot.press("j")
                    idle.append(await painted_after(at, f"cursor {cursor + 1}"))
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
                watched["progress"] = progress
                began = time.perf_counter()
                await until(lambda: progress.tally.count >= runs // 3)
                rates.append(progress.tally.count / (time.perf_counter() - began))
                at = time.perf_counter()
                await pilot.press("escape")
                # A small apply (--smoke) can end before the key is taken: esc then closes the dialog.
                await until(lambda: first_paint(at, "stopping") is not None or progress.finished)
                if first_paint(at, "stopping") is not None or not progress.finished:
                    busy.append(await painted_after(at, "stopping"))
                    await until(lambda: progress.finished)
    print(
        f"TUI keys while a bulk cancel of {runs:,} runs runs (SQLite, live tail on), {rounds} rounds, "
        f"load average {started} -> {load()}"
    )
    print(
        f"  esc while applying, to its hint painted: median {statistics.median(busy) * 1000:.0f} ms, "
        f"max {max(busy) * 1000:.0f} ms over {len(busy)} of {rounds} rounds"
        f" (target ≤ 50 ms{': smoke, not judged' if smoke else ''}); {statistics.median(rates):.0f} runs/s meanwhile"
        if busy
        else f"  esc while applying: the apply ended before the key was taken in every round ({runs:,} runs too few)"
    )
    print(
        f"  j on the runs list, nothing running: median {statistics.median(idle) * 1000:.0f} ms, "
        f"max {max(idle) * 1000:.0f} ms\n"
    )


#: ``--smoke``'s sizes: the preview's production-shaped store (built in a temporary directory),
#: the apply's runs and sample, the TUI's runs.
SMOKE_RUNS, SMOKE_APPLY_RUNS, SMOKE_SAMPLE, SMOKE_TUI_RUNS = 300, 60, 3, 400


def cache_bytecode() -> None:
    """Every process this benchmark times reads agenttui's bytecode from its cache, as an
    installed package does: the cache is written once (``compileall``), and the variable that
    keeps Python from writing it is taken out of the children's environment."""
    import compileall

    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        print("(PYTHONDONTWRITEBYTECODE taken out of the timed processes' environment)")
    compileall.compile_dir(ROOT / "agenttui", quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--part", default="preview,apply,tui", help="preview, apply, tui, or several (default: all)")
    parser.add_argument("--tui-runs", type=int, default=2_000, help="runs the TUI's bulk cancel takes")
    parser.add_argument("--tui-rounds", type=int, default=5, help="rounds of the TUI's part, a fresh store each")
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the preview's store")
    parser.add_argument("--shape", choices=["production", "uniform"], default="production", help="the preview's store")
    parser.add_argument("--apply-runs", type=int, default=10_000, help="runs the apply cancels")
    parser.add_argument("--sample", type=int, default=50, help="single-run cancels timed for the loop")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"every part at a tiny size, in seconds: the preview over a production-shaped store of {SMOKE_RUNS}"
        f" runs, the apply of {SMOKE_APPLY_RUNS} runs (PostgreSQL too, unless --no-postgres), the TUI's of"
        f" {SMOKE_TUI_RUNS}, one round each, every store built in a temporary directory and XDG_CACHE_HOME"
        " one too; not judged",
    )
    args = parser.parse_args()
    parts = set(args.part.split(","))
    cache_bytecode()
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-bulk-") as work:
        cache = Path(args.cache)
        # The status indexes of the store copies it makes go to a folder of its own, never the user's cache.
        os.environ["XDG_CACHE_HOME"] = str(Path(work) / "xdg")
        if args.smoke:
            from statuses import smoke_store

            cache = Path(work)
            args.runs, args.apply_runs, args.sample = SMOKE_RUNS, SMOKE_APPLY_RUNS, SMOKE_SAMPLE
            args.tui_runs, args.tui_rounds, args.repeats, args.shape = SMOKE_TUI_RUNS, 1, 1, "production"
            smoke_store(cache).rename(cache / f"v{SHAPE_VERSION}-production-{SMOKE_RUNS}.db")
        if "preview" in parts:
            preview(cache, args.runs, args.repeats, args.shape, smoke=args.smoke)
        if "apply" in parts:
            asyncio.run(applies(cache, args.apply_runs, args.sample, not args.no_postgres, smoke=args.smoke))
        if "tui" in parts:
            asyncio.run(tui_keys(cache, args.tui_runs, args.tui_rounds, smoke=args.smoke))


if __name__ == "__main__":
    main()
