"""TUI benchmarks: the real app, headless (Pilot), over large stores built for it.

    python benchmarks/tui.py [--parts abcdefg] [--shape production|uniform] [--runs 100000]
                             [--no-postgres] [--cache DIR] [--profile] [--rounds 3] [--smoke]

(a) Runs screen on a store of ``--runs`` runs: from the StoreOpened message to the first rows
    painted (target 0.3 s), until every run is listed, until every status is computed
    (``model.pending == 0``), key response while statuses compute, and the process's peak
    resident memory (target 200 MB). Twice, in a fresh process each: a first open, whose status
    index is made in an empty cache of this benchmark's (``XDG_CACHE_HOME``), then a reopen
    with that index, where every status must be shown within 1 s of the first rows (issue 29);
    then both again on a copy of the store in a throwaway PostgreSQL cluster (unless
    ``--no-postgres``; the copy takes about 30 s).
(b) Run screen of one run of 50,000 records, in a fresh process (``benchmarks/_long_run.py``):
    the app opened on the run (``--run``), End pressed as its first records are painted (target
    0.5 s from StoreOpened), until the last record is inspected, then the conversation, events and
    flowchart panes shown in turn. The process's CPU time from its start to the last pane shown,
    against the floor's: ``Journal.history()`` of the run in a fresh process, start to end (target
    2x), the median of ``--rounds`` TUI processes against the median of the floors timed before
    and after each; the process's peak RSS (target 150 MB), the floor's beside it. Both read agenttui's bytecode from its cache, written first. A few page-ups are
    timed after the figures are taken.

``--shape`` picks the stores of (a) and (b): ``production`` (the default) is the production-shaped
store of ``benchmarks/shapes.py``, every run driven by the runtime (every status, most runs 5-50
records, sub-runs, tool results of 100 kB-1 MB), and (b) opens its 50,000-record run;
``uniform`` is ``--runs`` copies of one 10-record run for (a), and a store holding only a
50,002-record run for (b).
(c) Live tail: another process commits 200 records at 20/s, each carrying its commit time; the
    latency is the time until the open RunScreen has painted the record (the frame after its
    handler; p50/p95, target p95 0.25 s), on SQLite and PostgreSQL. The change-feed mechanism in effect is reported.
(d) Replay stepping on a 1,000-turn run: key ``n`` to the step painted (target 50 ms a step) and
    to its diff shown, at the start and around turn 500; then ``e`` (run to the end).
(e) ``diff_journals`` of two 10,000-record journals that differ in one step (target 0.5 s).
(f) RecoverAll over 1,000 stalled runs with the demo's agent (desk tools, refund script) on
    PostgreSQL: runs/s.
(g) Replay to the end against the CLI, on the demo's 2,000-turn run (``audit-bulk``, the demo store
    built as ``agenttui demo`` builds it): in the TUI, key ``e`` to the verdict painted (target
    1.5x the CLI), and a key pressed on the way (``2``, the diff pane) to its pane shown; the CLI,
    ``agenttui replay STORE audit-bulk`` from the process's start to its exit. Rounds alternate,
    a fresh process each (``--rounds``); medians, each side's peak RSS, the load average.

Every part runs in a fresh child process (``--child``), so peak memory is that part's own. The
uniform stores are built from canonical records (``encode_record``/``encode_header`` of records the runtime
wrote once) with ``sqlite3.executemany``, and cached under ``--cache`` between runs.

PostgreSQL: the server ``AGENTTUI_BENCH_PG_DSN`` names (fresh schemas, dropped afterwards), or the
test suite's throwaway cluster (``tests/pg.py``) switched to ``fsync = on``.

``--profile`` runs each child under cProfile and prints its top functions on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import io
import json
import os
import pstats
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenttui.agent.factory import AgentSetup  # noqa: E402
from agenttui.demo.build import SCRIPTS, CrashingModel, SimulatedCrash, bulk_script  # noqa: E402
from agenttui.demo.build import factory as demo_factory  # noqa: E402
from agenttui.demo.desk import demo_model, desk_agent  # noqa: E402
from agenttui.journal import Journal, Message, Record, StepKind, TextPart, ToolUsePart, Usage  # noqa: E402
from agenttui.journal.codec import decode_record, encode_header, encode_record  # noqa: E402
from agenttui.stores.memory import MemStore  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402
from benchmarks._postgres import bench_schema, throwaway_postgres  # noqa: E402
from benchmarks._report import machine  # noqa: E402
from benchmarks.shapes import LONGEST_RECORDS, LONGEST_RUN, SMOKE_LONGEST, production_store  # noqa: E402

SIZE = (120, 40)
ORDERS = ["A-1001", "A-1002", "A-1003", "A-1004", "A-1005"]
LONG_RUN_RECORDS = 50_000
REPLAY_TURNS = 1000
DIFF_RECORDS = 10_000
DEMO_TURNS = 2000
SIZES = {"longest": LONGEST_RECORDS, "long_run_records": LONG_RUN_RECORDS, "replay_turns": REPLAY_TURNS,
         "diff_records": DIFF_RECORDS, "demo_turns": DEMO_TURNS}  # fmt: skip
"""The stores' sizes (``args``' attributes, no options): the production store's longest run, (b)'s
uniform run, (d)'s replay, (e)'s journals, (g)'s demo ``audit-bulk``."""
SMOKE = {"runs": 300, "longest": SMOKE_LONGEST, "long_run_records": 600, "replay_turns": 100, "diff_records": 400,
         "demo_turns": 100, "rounds": 1, "count": 20, "rate": 40.0, "recover_runs": 20, "a_timeout": 120.0, "cache": None}  # fmt: skip
"""``--smoke``'s sizes and defaults (an option given still wins; no ``--cache``: a temporary directory)."""
CACHE_VERSION = 1
"""Bumped when the stores' contents change, so a stale cache is rebuilt."""

TARGETS = {
    "first_rows": 0.3,
    "rss_mb": 200.0,
    "run_first_paint": 0.5,
    "tail_p95": 0.25,
    "replay_step": 0.05,
    "diff": 0.5,
    "reopen_statuses": 1.0,
}

# -- building stores -------------------------------------------------------------------------


def template_records() -> list[Record]:
    """A finished 4-turn audit run (10 records) recorded by the runtime itself, decoded."""

    async def record() -> list[Record]:
        store = MemStore()
        await desk_agent(demo_model(bulk_script(4)), store, max_turns=5).run("template", "Audit every open order.")
        return [decode_record(e.data, e.name) async for e in store.load("template")]

    return asyncio.run(record())


async def create_schema(path: Path) -> None:
    """The SDK's tables, made by the store itself (then filled with plain sqlite3)."""
    store = await SQLiteStore.open(path)
    await store.close()


def bulk_insert(path: Path, rows: Any, leases: list[tuple[str, str, float]] = ()) -> None:
    """Insert (run_id, name, data) rows in commit order in one transaction, fast and unsafe."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", rows)
        if leases:
            conn.executemany("INSERT INTO bide_leases (run_id, holder, expiry) VALUES (?, ?, ?)", leases)
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def cached(cache: Path, name: str, build: Callable[[Path], None]) -> Path:
    """``cache/name``, built once (into a temporary name, renamed when complete)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"v{CACHE_VERSION}-{name}"
    if path.exists():
        return path
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        stale.unlink(missing_ok=True)
    asyncio.run(create_schema(partial))
    started = time.perf_counter()
    build(partial)
    step(f"built {path.name} in {time.perf_counter() - started:.1f} s")
    for suffix in ("-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    partial.rename(path)
    return path


def runs_store(cache: Path, runs: int) -> Path:
    """``runs`` runs of the template: 98% complete (10 records), 1% stalled and 1% in flight
    (9 records: no run:complete; the in-flight ones hold a live lease)."""

    def build(path: Path) -> None:
        template = template_records()
        bodies = [(r.name, encode_record(r)) for r in template[1:]]
        unfinished = bodies[:-1]

        def rows() -> Any:
            for n in range(runs):
                run_id = f"bench-{n:07d}"
                yield run_id, "@journal", encode_header(n.to_bytes(8, "big") * 4)
                for name, data in unfinished if n % 50 in (7, 8) else bodies:
                    yield run_id, name, data

        # A lease far in the future: those runs read as in flight however long the benchmark takes.
        leases = [
            (f"bench-{n:07d}", "bench-driver", time.time() + 10 * 365 * 86400) for n in range(runs) if n % 50 == 8
        ]
        bulk_insert(path, rows(), leases)

    return cached(cache, f"runs-{runs}.db", build)


def audit_records(turns: int, template: list[Record]) -> list[tuple[str, bytes]]:
    """A ``turns``-turn audit run (one lookup a turn, then the answer) as canonical records."""
    by_name = {r.name: r for r in template}
    llm, tool = by_name["@llm/0"], by_name["tool:call_0_0"]
    out = [("@journal", encode_header(os.urandom(32))), ("run:start", encode_record(by_name["run:start"]))]
    for n in range(turns - 1):
        order, call = ORDERS[n % 5], f"call_{n}_0"
        args = json.dumps({"order_id": order}, separators=(",", ":")).encode()
        message = Message(
            "assistant",
            (TextPart(f"Auditing order {order} (pass {n // 5 + 1})."), ToolUsePart(call, "lookup_order", args)),
        )
        out.append(
            (
                f"@llm/{n}",
                encode_record(dataclasses.replace(llm, name=f"@llm/{n}", message=message, usage=Usage(300 + n, 20))),
            )
        )
        result = by_name[f"tool:call_{n % 3}_0"].result
        out.append(
            (
                f"tool:{call}",
                encode_record(dataclasses.replace(tool, name=f"tool:{call}", tool_use_id=call, result=result)),
            )
        )
    final = dataclasses.replace(by_name["@llm/3"], name=f"@llm/{turns - 1}")
    return [*out, (final.name, encode_record(final)), ("run:complete", encode_record(by_name["run:complete"]))]


def long_run_store(cache: Path, records: int) -> Path:
    def build(path: Path) -> None:
        body = audit_records(records // 2, template_records())
        bulk_insert(path, (("long-run", name, data) for name, data in body))

    return cached(cache, f"long-run-{records}.db", build)


def runs_screen_store(args: argparse.Namespace) -> Path:
    """(a)'s store: of ``--runs`` runs, of ``--shape``."""
    if args.shape == "production":
        return production_store(Path(args.cache), args.runs, longest=args.longest)
    return runs_store(Path(args.cache), args.runs)


@dataclasses.dataclass(frozen=True)
class LongRun:
    """(b)'s store and the long run it opens."""

    path: Path
    run_id: str
    records: int


def long_run(args: argparse.Namespace) -> LongRun:
    if args.shape == "production":
        path, run_id = production_store(Path(args.cache), args.runs, longest=args.longest), LONGEST_RUN
    else:
        path, run_id = long_run_store(Path(args.cache), args.long_run_records), "long-run"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        records = conn.execute("SELECT count(*) FROM bide_steps WHERE run_id = ?", (run_id,)).fetchone()[0]
    return LongRun(path, run_id, records)


def replay_store(cache: Path, turns: int) -> Path:
    """A ``turns``-turn audit recorded by the runtime itself (replay re-drives it, so its
    run:start must allow that many turns)."""

    def build(path: Path) -> None:
        async def record() -> None:
            store = await SQLiteStore.open(path)
            try:
                await desk_agent(demo_model(bulk_script(turns)), store, max_turns=turns + 1).run(
                    "audit-bulk", "Audit every open order, one lookup per turn."
                )
            finally:
                await store.close()

        asyncio.run(record())

    return cached(cache, f"replay-{turns}.db", build)


def demo_store(cache: Path, bulk_turns: int = 2000) -> Path:
    """The demo store, built as ``agenttui demo`` builds it (its ``audit-bulk`` has ``bulk_turns`` turns)."""
    from agenttui.demo.build import build_demo

    def build(path: Path) -> None:
        async def record() -> None:
            store = await SQLiteStore.open(path)
            try:
                await build_demo(store, bulk_turns=bulk_turns)
            finally:
                await store.close()

        asyncio.run(record())

    return cached(cache, f"demo-{bulk_turns}.db", build)


# -- measuring the app -------------------------------------------------------------------------


class Paints:
    """Times at which a list widget painted a row holding an item (patched ``render_line``)."""

    def __init__(self, widget_class: type) -> None:
        self.first: float | None = None
        self.cursor_painted: list[tuple[float, int]] = []
        original = widget_class.render_line

        def render_line(widget: Any, y: int) -> Any:
            strip = original(widget, y)
            index = round(widget.scroll_offset.y) + y
            if index < len(widget.items):
                now = time.perf_counter()
                if self.first is None:
                    self.first = now
                if index == widget.cursor:
                    self.cursor_painted.append((now, index))
            return strip

        widget_class.render_line = render_line  # type: ignore[method-assign]  # the timing hook: patched on the class

    def painted_since(self, since: float, index: int) -> float | None:
        return next((t for t, i in self.cursor_painted if t >= since and i == index), None)


async def until(test: Callable[[], object], timeout: float, every: float = 0.002, what: str = "") -> float:
    """Poll ``test`` on the app's loop until true; returns the time it first was."""
    deadline = time.perf_counter() + timeout
    while not test():
        if time.perf_counter() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what or test}")
        await asyncio.sleep(every)
    return time.perf_counter()


def peak_rss_mb() -> float:
    """This process's peak RSS. On Linux from ``VmHWM``: a child's ``ru_maxrss`` starts at its
    parent's peak (the benchmark's own process, which builds stores)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


async def part_a(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    from agenttui.runs.statuses.state import RunState
    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.messages import StoreOpened
    from agenttui.tui.screens.runs import RunsScreen
    from agenttui.tui.widgets.runs_table import RunsTable

    with sqlite3.connect(path) as conn:
        records = conn.execute("SELECT count(*) FROM bide_steps").fetchone()[0]
        store_runs = conn.execute("SELECT count(DISTINCT run_id) FROM bide_steps").fetchone()[0]
        unfinished = [row[0] for row in conn.execute(
            "SELECT run_id FROM bide_steps GROUP BY run_id"
            " HAVING sum(name IN ('run:complete', 'run:aborted', 'run:cancelled')) = 0")]  # fmt: skip
    paints = Paints(RunsTable)
    marks: dict[str, float] = {}

    waiting = set(unfinished)

    def hook(message: Any) -> None:
        # Marked as the messages go by: the benchmark's own polling is held up by the key presses.
        if isinstance(message, StoreOpened):
            marks.setdefault("opened", time.perf_counter())
        elif isinstance(message, RunsScreen.RunsListed | RunsScreen.StatusesComputed):
            if isinstance(message, RunsScreen.RunsListed) and message.done:
                marks.setdefault("listed", time.perf_counter())
            if isinstance(message, RunsScreen.StatusesComputed):
                waiting.difference_update(s.run_id for s in message.statuses)
            elif message.statuses is not None:  # a reopen: what the status index vouched for
                read = set(message.statuses.places(list(RunState)))
                waiting.difference_update(run_id for at, run_id in enumerate(message.run_ids) if at in read)
            if waiting == set() and "unfinished" not in marks:
                marks["unfinished"] = time.perf_counter()

    def when_every_status_is_in(handler: Callable[[RunsScreen, Any], None]) -> Callable[[RunsScreen, Any], None]:
        """``handler``, marking the moment a message's handling leaves every run listed with its
        status: the key presses below wait for the app to be idle, and a poll after them would
        be late by as long."""

        def handled(screen: RunsScreen, message: Any) -> None:
            handler(screen, message)
            if screen._listed and screen.model.pending == 0:
                marks.setdefault("statuses", time.perf_counter())

        return handled

    for name in ("on_runs_screen_runs_listed", "on_runs_screen_statuses_computed"):
        setattr(RunsScreen, name, when_every_status_is_in(getattr(RunsScreen, name)))

    rss_before = peak_rss_mb()
    started = time.perf_counter()
    app = AgentTuiApp(args.store_url or str(path), tail=False)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await until(lambda: isinstance(app.screen, RunsScreen) and "opened" in marks, 30, what="the store to open")
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        marks["items"] = await until(lambda: len(screen.table.items) > 0, 60, what="the first rows")
        marks["painted"] = await until(lambda: paints.first is not None, 60, what="the first rows painted")
        marks["painted"] = paints.first  # type: ignore[assignment]  # not None: until() above waited for it
        # Keys while the statuses are still being computed: does the screen answer?
        keys = []
        for _ in range(5):
            before = time.perf_counter()
            cursor = screen.table.cursor
            await pilot.press("j")
            await until(lambda: paints.painted_since(before, cursor + 1) is not None, 30, what="the cursor row painted")
            keys.append(paints.painted_since(before, cursor + 1) - before)  # type: ignore[operator]  # not None: until() above waited for it
        pending_at_keys = screen.model.pending
        # Then every run listed and every status computed, sampled as it goes (bounded).
        # Sampled every 0.25 s (the moment itself is marked by the handlers above), so the poll
        # stays off the app's loop.
        progress: list[tuple[float, int, int]] = []
        deadline = time.perf_counter() + args.a_timeout
        last_pending = 0.0
        while time.perf_counter() < deadline:
            now = time.perf_counter()
            if now - last_pending >= 0.25:
                last_pending = now
                pending, known = screen.model.pending, len(screen.model.statuses)
                if screen._listed and pending == 0:
                    marks.setdefault("statuses", now)
                    break
                if not progress or now - marks["opened"] - progress[-1][0] >= 10:
                    progress.append((now - marks["opened"], known, known - pending))
            await asyncio.sleep(0.01)
        runs_shown = len(screen.model.statuses)
        computed = runs_shown - screen.model.pending
        counts = {state.value: n for state, n in screen.model.counts().items()}
    opened = marks["opened"]
    return {
        "runs": store_runs, "records": records, "store": str(path),
        "open_s": opened - started,
        "first_items_s": marks["items"] - opened, "first_paint_s": marks["painted"] - opened,
        "first_paint_from_start_s": marks["painted"] - started,
        "listed_s": marks["listed"] - opened if "listed" in marks else None,
        "statuses_s": marks["statuses"] - opened if "statuses" in marks else None,
        "unfinished_runs": len(unfinished),
        "unfinished_s": marks["unfinished"] - opened if "unfinished" in marks else None,
        "listed_runs": runs_shown, "computed": computed, "progress": progress, "timeout_s": args.a_timeout,
        "key_s": keys, "pending_at_keys": pending_at_keys, "counts": counts,
        "peak_rss_mb": peak_rss_mb(), "rss_before_app_mb": rss_before,
    }  # fmt: skip


def part_b(args: argparse.Namespace) -> dict[str, Any]:
    """(b): the long run in the TUI and its floor, each a fresh process timed from its start
    (``benchmarks/_long_run.py``): the floor, the TUI, the floor again."""
    target = long_run(args)
    cache_bytecode()
    sides = [long_run_side("floor", target)]
    for _ in range(args.rounds):  # each TUI between two floors: the machine's drift falls on both
        sides += [long_run_side("tui", target), long_run_side("floor", target)]
    if error := next((side["error"] for side in sides if "error" in side), None):
        return {"error": error}
    tuis = sides[1::2]
    median_tui = sorted(tuis, key=lambda side: side["cpu_s"])[len(tuis) // 2]
    return {"tui": median_tui, "tuis": tuis, "floors": sides[0::2], "records": target.records, "load": os.getloadavg()}


def cache_bytecode() -> None:
    """Both sides of (b) read agenttui's bytecode from its cache, as an installed package does
    (``benchmarks/bulk.py`` does the same): the cache is written here (``compileall``), and the
    variable that keeps Python from writing it is taken out of the sides' environment. Without
    it each side compiled every agenttui module it imports, the TUI's many more than the floor's."""
    import compileall

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(ROOT / "agenttui", quiet=1)


def long_run_side(side: str, target: LongRun) -> dict[str, Any]:
    """One side of (b) in a process of its own; its figures, and its time from spawn to the
    figures taken (the process's own clock, against the time here just before the spawn)."""
    step(f"(b) {'the TUI' if side == 'tui' else 'the floor, Journal.history()'}")
    argv = [sys.executable, str(ROOT / "benchmarks" / "_long_run.py"), side, str(target.path), target.run_id,
            str(target.records)]  # fmt: skip
    spawned = time.time()
    done = subprocess.run(argv, check=False, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    if done.returncode != 0:
        return {"error": f"{side}: exit {done.returncode}"}
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures | {"from_spawn_s": figures["at"] - spawned}


async def part_c(args: argparse.Namespace, _: None) -> dict[str, Any]:
    """Live tail latency on one store (``--store-url``; SQLite when empty)."""
    from agenttui.stores import open_store
    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.run import RunScreen

    workdir = Path(tempfile.mkdtemp(prefix="agenttui-tail-"))
    url = args.store_url or str(workdir / "tail.db")
    run_id = f"tail-{uuid.uuid4().hex[:8]}"
    store = await open_store(url)
    try:
        await Journal(store).append(run_id, Record("tick/setup", StepKind.VALUE, result=b'{"t":0}'))
    finally:
        await store.close()
    latencies: list[float] = []
    batches: list[int] = []
    original = RunScreen.on_run_screen_records_loaded

    def on_records_loaded(screen: RunScreen, message: Any) -> None:
        original(screen, message)
        if message.tail:
            ticks = [r for _, r in message.entries if r.name.startswith("tick/") and r.name != "tick/setup"]
            batches.append(len(ticks))

            def painted() -> None:  # the records are on screen: the frame after the handler
                now = time.time()
                latencies.extend(now - json.loads(r.result)["t"] for r in ticks)

            screen.call_after_refresh(painted)

    RunScreen.on_run_screen_records_loaded = on_records_loaded  # type: ignore[method-assign]  # the timing hook, restored below
    app = AgentTuiApp(url)
    try:
        async with app.run_test(size=SIZE):
            await until(lambda: app.store is not None and app.tail_state not in ("off",), 30, what="the change feed")
            app.open_run(run_id)
            await until(
                lambda: isinstance(app.screen, RunScreen) and len(app.screen.rows) == 2, 30, what="the run screen"
            )
            mechanism = app.tail_state
            writer = subprocess.Popen(
                [sys.executable, __file__, "--writer", url, run_id, "--count", str(args.count), "--rate", str(args.rate)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )  # fmt: skip
            try:
                await until(lambda: len(latencies) >= args.count or writer.poll() not in (None, 0), args.count / args.rate + 60, every=0.01,
                            what="every record to reach the screen")  # fmt: skip
            finally:
                writer_out, writer_err = writer.communicate(timeout=60)
            if writer.returncode != 0:
                raise RuntimeError(f"the writer failed: {writer_err}")
            mechanism_after = app.tail_state
    finally:
        RunScreen.on_run_screen_records_loaded = original  # type: ignore[method-assign]  # the handler restored
        shutil.rmtree(workdir, ignore_errors=True)
    latencies.sort()
    return {
        "store": "PostgreSQL" if url.startswith("postgres") else "SQLite", "mechanism": mechanism, "mechanism_after": mechanism_after,
        "count": len(latencies), "p50_s": statistics.median(latencies), "p95_s": latencies[int(0.95 * (len(latencies) - 1))],
        "max_s": latencies[-1], "mean_batch": statistics.fmean(batches) if batches else 0, "writer": writer_out.strip(),
    }  # fmt: skip


async def writer_main(url: str, run_id: str, count: int, rate: float) -> None:
    """The other process of (c): ``count`` records at ``rate`` a second, each with its commit time."""
    from agenttui.stores import open_store

    store = await open_store(url)
    journal = Journal(store)
    try:
        start = time.perf_counter()
        for n in range(count):
            await asyncio.sleep(max(0.0, start + n / rate - time.perf_counter()))
            # The time is taken just before the insert commits: the latency includes the commit.
            await journal.append(
                run_id, Record(f"tick/{n}", StepKind.VALUE, result=json.dumps({"t": time.time()}).encode())
            )
        print(f"{count} records in {time.perf_counter() - start:.1f} s")
    finally:
        await store.close()


async def part_d(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.replay import ReplayScreen
    from agenttui.tui.screens.run import RunScreen

    turns, jump = args.replay_turns, args.replay_turns // 2
    handled: list[float] = []
    painted: list[float] = []
    diffed: list[float] = []
    original = ReplayScreen.on_replay_screen_advanced
    original_diffed = ReplayScreen.on_replay_screen_diffed

    def on_replay_advanced(screen: ReplayScreen, message: Any) -> None:
        original(screen, message)
        handled.append(time.perf_counter())
        screen.call_after_refresh(lambda: painted.append(time.perf_counter()))

    def on_replay_diffed(screen: ReplayScreen, message: Any) -> None:
        original_diffed(screen, message)
        diffed.append(time.perf_counter())

    ReplayScreen.on_replay_screen_advanced = on_replay_advanced  # type: ignore[method-assign]  # the timing hook, restored below
    ReplayScreen.on_replay_screen_diffed = on_replay_diffed  # type: ignore[method-assign]  # the timing hook, restored below
    app = AgentTuiApp(str(path), tail=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.store is not None, 30)
            app.open_run("audit-bulk")
            await until(lambda: isinstance(app.screen, RunScreen) and not any(w.group == "run-load" and not w.is_finished for w in app.screen.workers)
                        and len(app.screen.rows) > 2 * turns, 120, what="the run screen")  # fmt: skip
            opened = time.perf_counter()
            await pilot.press("R")
            await until(lambda: len(handled) == 1, 120, what="the replay to open")
            open_s = handled[-1] - opened
            screen = app.screen
            assert isinstance(screen, ReplayScreen)

            async def steps(count: int) -> list[tuple[float, float]]:
                """(key -> the step painted, key -> its diff shown) for ``count`` presses of n."""
                out = []
                for _ in range(count):
                    seen, seen_diffs = len(painted), len(diffed)
                    before = time.perf_counter()
                    await pilot.press("n")
                    await until(
                        lambda: len(painted) > seen and len(diffed) > seen_diffs, 60, what="the step and its diff"
                    )
                    out.append((painted[seen] - before, diffed[seen_diffs] - before))
                return out

            early = await steps(20)
            seen = len(handled)
            await pilot.press("t", *str(jump), "enter")
            await until(lambda: len(handled) > seen, 300, what=f"the jump to turn {jump}")
            jump_s = handled[seen] - handled[seen - 1]
            middle = await steps(20)
            seen = len(handled)
            before = time.perf_counter()
            await pilot.press("e")
            await until(lambda: screen.finished and not any(not w.is_finished for w in screen.workers), 1800, every=0.01,
                        what="the replay to end and its diff")  # fmt: skip
            end_s = time.perf_counter() - before
            end_turns = turns - jump - 40
            final = screen.session.progress  # type: ignore[union-attr]  # open: the replay ran to its end above
            matches = screen.diff is not None and screen.diff.first_divergence is None
    finally:
        ReplayScreen.on_replay_screen_advanced = original  # type: ignore[method-assign]  # the handler restored
        ReplayScreen.on_replay_screen_diffed = original_diffed  # type: ignore[method-assign]  # the handler restored
    return {
        "turns": turns, "jump": jump, "open_s": open_s, "early_s": early, "middle_s": middle, "jump_s": jump_s,
        "end_s": end_s, "end_turns": end_turns, "end_messages": len(handled) - seen, "state": str(final.state),
        "final_turn": final.turn, "matches": matches, "peak_rss_mb": peak_rss_mb(),
    }  # fmt: skip


async def part_g(args: argparse.Namespace, path: Path) -> dict[str, Any]:
    """One round of (g) in the TUI: ``R`` on audit-bulk, then ``e``; the verdict painted."""
    from textual import events
    from textual.widgets import TabbedContent

    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.replay import ReplayScreen
    from agenttui.tui.screens.run import RunScreen

    painted: list[float] = []
    original = ReplayScreen.on_replay_screen_diffed

    def on_replay_diffed(screen: ReplayScreen, message: Any) -> None:
        original(screen, message)
        if message.verdict is not None:
            screen.call_after_refresh(lambda: painted.append(time.perf_counter()))

    ReplayScreen.on_replay_screen_diffed = on_replay_diffed  # type: ignore[method-assign]  # the timing hook, restored below
    app = AgentTuiApp(str(path), tail=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(lambda: app.store is not None, 30)
            app.open_run("audit-bulk")
            await until(lambda: isinstance(app.screen, RunScreen) and not any(not w.is_finished for w in app.screen.workers),
                        120, what="the run screen")  # fmt: skip
            await pilot.press("R")
            await until(lambda: isinstance(app.screen, ReplayScreen) and app.screen.session is not None
                        and not any(not w.is_finished for w in app.screen.workers), 120, what="the replay to open")  # fmt: skip
            screen = app.screen
            assert isinstance(screen, ReplayScreen) and screen.session is not None
            tabs = screen.query_one(TabbedContent)
            before = time.perf_counter()
            await pilot.press("e")
            await asyncio.sleep(0.5)
            turn_at_key = screen.session.progress.turn
            key_at = time.perf_counter()
            # Posted as a terminal delivers it: ``pilot.press`` waits for the app to be idle,
            # which a replay under way never is.
            app.post_message(events.Key("2", "2"))
            key_s = await until(lambda: tabs.active == "diff", 600, every=0.001, what="the diff pane") - key_at
            app.post_message(events.Key("1", "1"))
            await until(lambda: bool(painted), 1800, every=0.005, what="the verdict painted")
            end_s = painted[0] - before
            verdict = screen.verdict
            assert verdict is not None
    finally:
        ReplayScreen.on_replay_screen_diffed = original  # type: ignore[method-assign]  # the handler restored
    return {
        "end_s": end_s, "key_s": key_s, "key_during": turn_at_key < screen.session.progress.recorded_turns,
        "turns": screen.session.progress.turn, "verdict": verdict.summary(), "peak_rss_mb": peak_rss_mb(),
    }  # fmt: skip


def cli_replay(path: Path) -> dict[str, Any]:
    """One round of (g) on the command line: ``agenttui replay STORE audit-bulk``, start to exit."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "agenttui", "replay", str(path), "audit-bulk"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    out = process.stdout.read().decode() if process.stdout else ""
    return {"s": elapsed, "exit": os.waitstatus_to_exitcode(status), "verdict": out.strip().splitlines()[-1:],
            "peak_rss_mb": usage.ru_maxrss / 1024}  # fmt: skip


def part_g_rounds(args: argparse.Namespace) -> dict[str, Any]:
    """(g): rounds alternating the CLI and the TUI, each in a fresh process, on the same store."""
    path = demo_store(Path(args.cache), args.demo_turns)
    cli_rounds, tui_rounds = [], []
    for round_ in range(args.rounds):
        step(f"(g) round {round_ + 1} of {args.rounds}: the CLI, then the TUI")
        cli_rounds.append(cli_replay(path))
        tui_rounds.append(run_child("g", args))
        if "error" in tui_rounds[-1]:
            return tui_rounds[-1]
    return {"cli": cli_rounds, "tui": tui_rounds, "load": os.getloadavg()}


async def part_e(args: argparse.Namespace, body: list[tuple[str, bytes]]) -> dict[str, Any]:
    from agenttui.render.diff import diff_journals

    left = [decode_record(data, name) for name, data in body]
    right = list(left)
    middle = len(right) // 2
    changed = next(i for i in range(middle, len(right)) if right[i].kind == StepKind.TOOL_RESULT)
    right[changed] = dataclasses.replace(right[changed], result=b'{"order_id":"A-1003","status":"refunded"}')
    times = []
    for _ in range(5):
        before = time.perf_counter()
        diff = diff_journals(left, right)
        times.append(time.perf_counter() - before)
    first = diff.first_divergence
    partial = []
    for _ in range(5):
        before = time.perf_counter()
        diff_journals(left, right[:middle], right_partial=True)
        partial.append(time.perf_counter() - before)
    return {"records": len(left), "best_s": min(times), "median_s": statistics.median(times), "partial_best_s": min(partial),
            "first_divergence": first.name if first else None, "rows": len(diff.rows)}  # fmt: skip


def stalled_factory(run_id: str) -> AgentSetup:
    """The demo's agent for every benchmark run: desk tools and the stalled refund's script."""
    return demo_factory("refund-a1001-stalled")


async def part_f(args: argparse.Namespace, _: None) -> dict[str, Any]:
    from agenttui.runs.recovery.operations import RecoverAll
    from agenttui.runs.statuses.status import RunState, run_status
    from agenttui.stores.postgres import PostgresStore

    # One stalled run recorded by the runtime (it dies asking for turn 1), copied to every run id.
    template = MemStore()
    model = CrashingModel(demo_model(SCRIPTS["refund-a1001-stalled"]), 1)
    try:
        await desk_agent(model, template).run("template", "Refund the lamp, order A-1001.")
    except SimulatedCrash:
        pass
    entries = [(e.name, e.data) async for e in template.load("template")]
    async with bench_schema(args.store_url, "bench_recover_") as schema:
        store = await PostgresStore.open(args.store_url, schema=schema)
        try:
            limit = asyncio.Semaphore(16)

            async def copy(n: int) -> None:
                async with limit:
                    for name, data in entries:
                        await store.insert(f"stalled-{n:05d}", name, data)

            await asyncio.gather(*(copy(n) for n in range(args.recover_runs)))
            sample = await run_status(store, "stalled-00000")
            assert sample.state == RunState.STALLED, sample
            done: list[int] = []
            operation = RecoverAll(
                "benchmarks.tui:stalled_factory", stalled_factory, on_progress=lambda n, _: done.append(n)
            )
            before_cpu, before = time.process_time(), time.perf_counter()
            report = await operation.run(store)
            wall, cpu = time.perf_counter() - before, time.process_time() - before_cpu
            after = await run_status(store, "stalled-00000")
        finally:
            await store.close()
    return {
        "runs": args.recover_runs, "records_each": len(entries), "wall_s": wall, "cpu_s": cpu,
        "re_driven": len(report.re_driven), "paused": len(report.paused), "skipped": len(report.skipped),
        "errors": len(report.errors), "first_error": repr(next(iter(report.errors.values()), None)),
        "state_after": after.state.value, "progress_calls": len(done),
    }  # fmt: skip


#: Each part: what it needs built first (synchronously, outside the app's event loop), and the measurement.
PARTS: dict[str, tuple[Callable[[argparse.Namespace], Any], Callable[[argparse.Namespace, Any], Any]]] = {
    "a": (runs_screen_store, part_a),
    "c": (lambda args: None, part_c),
    "d": (lambda args: replay_store(Path(args.cache), args.replay_turns), part_d),
    "e": (lambda args: audit_records(args.diff_records // 2, template_records())[: args.diff_records], part_e),
    "f": (lambda args: None, part_f),
    "g": (lambda args: demo_store(Path(args.cache), args.demo_turns), part_g),
}

# -- the parent: PostgreSQL, children, the report ----------------------------------------------


def run_child(part: str, args: argparse.Namespace, store_url: str = "", cache_home: str = "") -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", part, "--cache", args.cache, "--shape", args.shape, "--runs", str(args.runs), "--a-timeout", str(args.a_timeout),
            "--count", str(args.count), "--rate", str(args.rate), "--recover-runs", str(args.recover_runs)]  # fmt: skip
    if store_url:
        argv += ["--store-url", store_url]
    if args.profile:
        argv.append("--profile")
    if args.smoke:
        argv.append("--smoke")
    step(f"({part})" + (" on PostgreSQL" if store_url.startswith("postgres") else ""))
    env = {**os.environ, "XDG_CACHE_HOME": cache_home} if cache_home else None
    done = subprocess.run(argv, check=False, stdout=subprocess.PIPE, text=True, env=env)
    if done.returncode != 0:
        return {"error": f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else "MISSED"


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| "
        + " | ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False)))
        + " |"
        for r in rows
    ]
    return "\n".join([line, rule, *body])


def report_runs_screen(a: dict[str, Any], part: str, add: Callable[..., None]) -> None:
    """Part (a)'s rows: a first open (an empty status index) or a reopen (the index the first made)."""
    if "error" in a:
        add(part, "runs screen", a["error"])
        return
    add(part, f"store opened ({a['runs']:,} runs, {a['records']:,} records)", ms(a["open_s"]))
    add(part, "StoreOpened -> first rows painted", ms(a["first_paint_s"]), "≤ 300 ms",
        verdict(a["first_paint_s"], TARGETS["first_rows"]))  # fmt: skip
    unfinished = f"not in {a['timeout_s']:,.0f} s: {a['listed_runs']:,} listed, {a['computed']:,} statuses"
    add(part, "StoreOpened -> every run listed", ms(a["listed_s"]) if a["listed_s"] is not None else unfinished)
    add(part, f"StoreOpened -> every unfinished run's status ({a['unfinished_runs']:,} runs)",
        ms(a["unfinished_s"]) if a["unfinished_s"] is not None else unfinished)  # fmt: skip
    add(
        part, "StoreOpened -> every status computed", ms(a["statuses_s"]) if a["statuses_s"] is not None else unfinished
    )
    if a["statuses_s"] is not None and part.endswith("reopen"):
        after_rows = a["statuses_s"] - a["first_paint_s"]
        add(part, "first rows painted -> every status computed", ms(after_rows), "≤ 1 s",
            verdict(after_rows, TARGETS["reopen_statuses"]))  # fmt: skip
    add(part, f"key j -> cursor row painted, while statuses compute (median of {len(a['key_s'])})",
        ms(statistics.median(a["key_s"])))  # fmt: skip
    add(
        part,
        "peak resident memory",
        f"{a['peak_rss_mb']:,.0f} MB",
        "≤ 200 MB",
        verdict(a["peak_rss_mb"], TARGETS["rss_mb"]),
    )


def report_long_run(b: dict[str, Any], add: Callable[..., None]) -> None:
    """Part (b)'s rows: the TUI's process beside the floor's, each from its start."""
    if "error" in b:
        add("(b)", "run screen", b["error"])
        return
    tui, floors = b["tui"], b["floors"]
    floor_cpu = statistics.median(f["cpu_s"] for f in floors)
    floor_rss = max(f["peak_rss_mb"] for f in floors)
    add("(b)", f"the {b['records']:,}-record run opened (--run): StoreOpened -> first records painted",
        ms(tui["first_paint_s"]), "≤ 500 ms", verdict(tui["first_paint_s"], TARGETS["run_first_paint"]))  # fmt: skip
    add("(b)", "End at once -> every record loaded; the last one inspected (from StoreOpened)",
        f"{ms(tui['loaded_s'])}; {ms(tui['last_shown_s'])}")  # fmt: skip
    add("(b)", "then the conversation, events, flowchart panes shown (key -> pane)",
        "; ".join(ms(tui["panes_s"][pane]) for pane in ("conversation", "events", "flow")))  # fmt: skip
    tuis = b.get("tuis", [tui])
    add("(b)", f"TUI process, start to every pane shown (bytecode cached, both sides): wall (CPU), each of {len(tuis)}",
        "; ".join(f"{ms(t['from_spawn_s'])} ({ms(t['cpu_s'])})" for t in tuis))  # fmt: skip
    add("(b)", f"floor: Journal.history() in a fresh process, start to end: wall (CPU; history() alone), each of {len(floors)}",
        "; ".join(f"{ms(f['from_spawn_s'])} ({ms(f['cpu_s'])}; {ms(f['history_cpu_s'])})" for f in floors))  # fmt: skip
    ratio = tui["cpu_s"] / floor_cpu
    add("(b)", "TUI CPU / floor CPU (medians: the TUI's above, its other rows from that run)", f"{ratio:.2f}x", "≤ 2x",
        verdict(ratio, 2.0))  # fmt: skip
    add("(b)", "peak resident memory: TUI (floor)", f"{tui['peak_rss_mb']:,.0f} MB ({floor_rss:,.0f} MB)", "≤ 150 MB",
        verdict(tui["peak_rss_mb"], 150))  # fmt: skip
    pages = sorted(tui["page_s"])
    add("(b)", f"after: page up from the end -> the record inspected ({len(pages)} pages; median, max)",
        f"{ms(statistics.median(pages))}, {ms(pages[-1])}")  # fmt: skip
    add("(b)", "runs the runs list read behind the run (read once it shows)", f"{tui['runs_listed_underneath']:,}")
    add("(b)", "load average (1, 5, 15 min) at the end", ", ".join(f"{x:.1f}" for x in b["load"]))


def report(results: dict[str, Any]) -> str:
    rows: list[list[str]] = []

    def add(part: str, what: str, value: str, target: str = "", met: str = "") -> None:
        rows.append([part, what, value, target, met])

    for key, label in (("a", "(a)"), ("a-reopen", "(a) reopen"), ("a-postgres", "(a) PostgreSQL"),
                       ("a-postgres-reopen", "(a) PostgreSQL reopen")):  # fmt: skip
        if a := results.get(key):
            report_runs_screen(a, label, add)
    if b := results.get("b"):
        report_long_run(b, add)
    for key in ("c-sqlite", "c-postgres"):
        if c := results.get(key):
            if "error" in c:
                add("(c)", f"live tail {key[2:]}", c["error"])
            else:
                add("(c)", f"live tail, {c['store']} ({c['mechanism']}): commit -> painted, p50", ms(c["p50_s"]))
                add("(c)", f"live tail, {c['store']} ({c['mechanism']}): p95 (max)", f"{ms(c['p95_s'])} ({ms(c['max_s'])})", "≤ 250 ms",
                    verdict(c["p95_s"], TARGETS["tail_p95"]))  # fmt: skip
    if d := results.get("d"):
        if "error" in d:
            add("(d)", "replay", d["error"])
        else:
            add("(d)", f"open replay of a {d['turns']:,}-turn run", ms(d["open_s"]))
            middle = f"turns {d.get('jump', 500) + 1}-{d.get('jump', 500) + 20}"
            for key, turns_label in (("early_s", "turns 1-20"), ("middle_s", middle)):
                paints, diffs = [p for p, _ in d[key]], [q for _, q in d[key]]
                add(
                    "(d)",
                    f"key n -> the step painted, {turns_label} (median; max)",
                    f"{ms(statistics.median(paints))}; {ms(max(paints))}",
                    "≤ 50 ms",
                    verdict(statistics.median(paints), TARGETS["replay_step"]),
                )
                add(
                    "(d)",
                    f"key n -> its diff shown, {turns_label} (median; max)",
                    f"{ms(statistics.median(diffs))}; {ms(max(diffs))}",
                    "",
                    "",
                )
            add("(d)", f"jump to turn {d.get('jump', 500)} (t)", ms(d["jump_s"]))
            add(
                "(d)",
                f"e: run to the end ({d['end_turns']} turns; per turn)",
                f"{ms(d['end_s'])}; {ms(d['end_s'] / max(d['end_turns'], 1))}",
            )
    if g := results.get("g"):
        if "error" in g:
            add("(g)", "replay to the end", g["error"])
        else:
            tui = statistics.median(r["end_s"] for r in g["tui"])
            cli = statistics.median(r["s"] for r in g["cli"])
            rounds = len(g["tui"])
            add("(g)", f"TUI: e -> the verdict painted, audit-bulk ({g['tui'][0]['turns']:,} turns; median of {rounds})",
                ms(tui))  # fmt: skip
            add("(g)", f"CLI: agenttui replay, start to exit (median of {rounds})", ms(cli))
            add("(g)", "TUI / CLI", f"{tui / cli:.2f}x", "≤ 1.5x", verdict(tui / cli, 1.5))
            keys = [r["key_s"] for r in g["tui"]]
            during = sum(r["key_during"] for r in g["tui"])
            add("(g)", f"key 2 during the run to the end -> the diff pane (median; max; {during} of {rounds} before the last turn)",
                f"{ms(statistics.median(keys))}; {ms(max(keys))}")  # fmt: skip
            add("(g)", "peak resident memory, TUI; CLI (max)",
                f"{max(r['peak_rss_mb'] for r in g['tui']):,.0f} MB; {max(r['peak_rss_mb'] for r in g['cli']):,.0f} MB")  # fmt: skip
            add("(g)", "verdicts (TUI; CLI)", f"{g['tui'][0]['verdict']}; {g['cli'][0]['verdict'][0]}")
            add("(g)", "load average (1, 5, 15 min) at the end", ", ".join(f"{x:.1f}" for x in g["load"]))
    if e := results.get("e"):
        if "error" in e:
            add("(e)", "diff", e["error"])
        else:
            add(
                "(e)",
                f"diff_journals, 2 x {e['records']:,} records, 1 step differs (best of 5)",
                ms(e["best_s"]),
                "≤ 500 ms",
                verdict(e["best_s"], TARGETS["diff"]),
            )
            add("(e)", "the same, right side half done (right_partial)", ms(e["partial_best_s"]))
    if f := results.get("f"):
        if "error" in f:
            add("(f)", "recover", f["error"])
        else:
            add(
                "(f)",
                f"RecoverAll, {f['runs']:,} stalled runs, PostgreSQL",
                f"{f['runs'] / f['wall_s']:,.0f} runs/s ({ms(f['wall_s'])})",
            )
    if results.get("smoke"):
        rows = [[*row[:4], "smoke: not judged" if row[4] else ""] for row in rows]
    return "\n".join(
        [
            f"agenttui TUI benchmarks, {date.today().isoformat()}, {results['shape']} stores for (a) and (b)",
            machine(),
            "",
            table(["part", "what", "measured", "target", ""], rows),
        ]
    )


def step(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """The first run builds its stores under --cache (default /tmp/agenttui-bench-cache) and reuses
them after: with --shape production (the default), parts (a) and (b) need the production-shaped
store of --runs runs (benchmarks/shapes.py, 1.4 GB: 19 minutes on this 2-core machine at
load 5.6, 48 minutes at load 4.7, as its .shape.json records; count 20-50 minutes); --shape uniform's
stores (100,000 copies of one run; a run of 50,002 records) take about a minute each; the
replay, diff and demo stores of (d), (e) and (g) seconds each."""


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=FIRST_RUN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", default="abcdefg", help="which parts to run (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (b) and (g), each side")
    parser.add_argument(
        "--shape", choices=["production", "uniform"], default="production", help="the stores of (a) and (b)"
    )
    parser.add_argument("--runs", type=int, default=100_000, help="runs in (a)'s store (and (b)'s, production-shaped)")
    parser.add_argument("--a-timeout", type=float, default=1800.0, help="how long (a) and (b) wait for every status")
    parser.add_argument("--count", type=int, default=200, help="records the live writer of (c) commits")
    parser.add_argument("--rate", type=float, default=20.0, help="records a second the live writer commits")
    parser.add_argument("--recover-runs", type=int, default=1000, help="stalled runs (f) recovers")
    parser.add_argument(
        "--cache", default=str(Path(tempfile.gettempdir()) / "agenttui-bench-cache"), help="where built stores are kept"
    )
    parser.add_argument("--no-postgres", action="store_true", help="skip the PostgreSQL parts")
    parser.add_argument("--profile", action="store_true", help="cProfile each part; top functions on stderr")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON after the table")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--store-url", default="", help=argparse.SUPPRESS)
    parser.add_argument("--writer", nargs=2, metavar=("URL", "RUN_ID"), help=argparse.SUPPRESS)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="every part at tiny sizes (hundreds of runs and records), its stores and the status index's cache in a "
        "fresh temporary directory: a minute or so, PostgreSQL's clusters included",
    )
    parser.set_defaults(**SIZES)
    if "--smoke" in (sys.argv[1:] if argv is None else argv):
        parser.set_defaults(**SMOKE)
    return parser.parse_args(argv)


def child(args: argparse.Namespace) -> None:
    profiler = cProfile.Profile() if args.profile else None
    prepare, measure = PARTS[args.child]
    prepared = prepare(args)
    if profiler:
        profiler.enable()
    figures = asyncio.run(measure(args, prepared))
    if profiler:
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(30)
        print(out.getvalue(), file=sys.stderr)
    print(json.dumps(figures))


async def parent(args: argparse.Namespace) -> None:
    results: dict[str, Any] = {"shape": args.shape, "smoke": args.smoke}
    for part in "abde":
        if part == "b" and part in args.parts:
            results["b"] = await asyncio.to_thread(part_b, args)  # may build its store with asyncio.run
        elif part == "a" and part in args.parts:
            # A first open builds the status index in a cache of this benchmark's; the reopen uses it.
            with tempfile.TemporaryDirectory(prefix="agenttui-bench-cache-home-") as cache_home:
                results["a"] = run_child("a", args, cache_home=cache_home)
                results["a-reopen"] = run_child("a", args, cache_home=cache_home)
            if not args.no_postgres:
                results |= await runs_screen_on_postgres(args)
        elif part in args.parts:
            results[part] = run_child(part, args)
    if "g" in args.parts:
        results["g"] = await asyncio.to_thread(part_g_rounds, args)  # builds its store with asyncio.run
    if "c" in args.parts:
        results["c-sqlite"] = run_child("c", args)
    if not args.no_postgres and ("c" in args.parts or "f" in args.parts):
        async with throwaway_postgres() as dsn:
            if "c" in args.parts:
                results["c-postgres"] = run_child("c", args, dsn)
            if "f" in args.parts:
                results["f"] = run_child("f", args, dsn)
    print(report(results))
    if args.json:
        print(json.dumps(results, indent=1))
    if failed := [key for key, value in results.items() if isinstance(value, dict) and "error" in value]:
        raise SystemExit(f"parts that did not run to their end: {', '.join(failed)} (their errors are above)")


async def runs_screen_on_postgres(args: argparse.Namespace) -> dict[str, Any]:
    """(a) again, first open and reopen, on a copy of its store in a throwaway PostgreSQL cluster."""
    from benchmarks.statuses import copy_to_postgres

    store = runs_screen_store(args)
    async with throwaway_postgres() as dsn, bench_schema(dsn) as schema:
        step("(a) copying its store into PostgreSQL")
        await copy_to_postgres(dsn, schema, store)
        url = dsn + ("&" if "?" in dsn else "?") + f"schema={schema}"
        with tempfile.TemporaryDirectory(prefix="agenttui-bench-cache-home-") as cache_home:
            first = await asyncio.to_thread(run_child, "a", args, url, cache_home)
            again = await asyncio.to_thread(run_child, "a", args, url, cache_home)
    return {"a-postgres": first, "a-postgres-reopen": again}


def main() -> None:
    args = parse()
    if args.writer:
        asyncio.run(writer_main(args.writer[0], args.writer[1], args.count, args.rate))
    elif args.child:
        child(args)
    elif args.smoke and args.cache is None:
        with tempfile.TemporaryDirectory(prefix="agenttui-tui-smoke-") as temporary:
            args.cache = str(Path(temporary) / "stores")
            os.environ["XDG_CACHE_HOME"] = str(Path(temporary) / "xdg-cache")  # the children's too
            asyncio.run(parent(args))
    else:
        asyncio.run(parent(args))


if __name__ == "__main__":
    main()
