"""The side-by-side of two 1,000-turn runs: from ``push_screen`` to its first paint (target 0.3 s).

    python benchmarks/compare.py [--turns 1000] [--at 500] [--repeat 5] [--cache DIR] [--size 160x48] [--smoke]

The original is a run the runtime writes (the demo's bulk audit script: each turn looks an order
up, so a run of ``--turns`` turns holds about ``2 * turns`` records) into a SQLite file, cached
under ``--cache``. The fork is what a what-if fork leaves when it finishes: a copy of the original
in a scratch store (a ``MemStore``) with one record changed, the model turn ``--at`` (its text and
its tokens). In a fresh child process (so its peak memory is its own), the real app, headless
(Pilot), pushes ``CompareScreen`` on the two and times, ``--repeat`` times:

- first paint: from ``push_screen`` until the compare view has painted a row of the comparison
  (its first turns: the runs are aligned turn by turn as they are read);
- difference: until the cursor's row, moved onto the first difference (turn ``--at`` + 1), is painted;
- all aligned: until the last turn is aligned;
- the comparison alone: ``compare_sides`` (both runs read and decoded, aligned by turn), outside
  the app;

for three pairs of sides: the records in hand (what a fork has when it finishes: the recording it
read and the records it wrote), the original read from SQLite and the fork from its scratch
store, and both read from the SQLite file (two recorded runs, compared from the runs list).
It prints the median and best of each, CPU seconds beside wall seconds, the child's peak RSS and
the load average.

``--smoke``: two runs of 20 turns, once each, in a temporary directory (a few seconds), to check
that the benchmark still runs; its figures are not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenttui.demo.build import bulk_script  # noqa: E402
from agenttui.demo.desk import demo_model, desk_agent  # noqa: E402
from agenttui.journal import Journal, TextPart, Usage  # noqa: E402
from agenttui.journal.codec import encode_record  # noqa: E402
from agenttui.journal.journal import decode_entry  # noqa: E402
from agenttui.replay.compare import Side, compare_sides  # noqa: E402
from agenttui.stores.base import Store  # noqa: E402
from agenttui.stores.memory import MemStore  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402
from benchmarks.tui import Paints, peak_rss_mb, until  # noqa: E402

ORIGINAL, FORK = "audit-original", "audit-fork"


async def build_original(path: Path, turns: int) -> None:
    store = await SQLiteStore.open(path)
    try:
        agent = desk_agent(demo_model(bulk_script(turns)), store, max_turns=turns + 1)
        await agent.run(ORIGINAL, "Audit the last orders.")
    finally:
        await store.close()


async def copy_with_one_change(source: Store, into: Store, at: int) -> None:
    """The original's entries into ``into`` as ``FORK``, the model turn ``at`` said otherwise."""
    async for entry in source.load(ORIGINAL):
        data = entry.data
        if entry.name == f"@llm/{at}":
            record = decode_entry(entry)
            assert record.message is not None
            message = dataclasses.replace(record.message, parts=(TextPart("What if this order were flagged?"),
                                                                 *record.message.parts[1:]))  # fmt: skip
            data = encode_record(dataclasses.replace(record, message=message, usage=Usage(900, 55)))
        await into.insert(FORK, entry.name, data)


async def measure(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.compare import CompareScreen
    from agenttui.tui.widgets.compare_view import CompareView

    width, height = (int(n) for n in args.size.split("x"))
    paints = Paints(CompareView)
    scratch = MemStore()
    app = AgentTuiApp(str(path), tail=False)
    out: dict[str, Any] = {}
    async with app.run_test(size=(width, height)) as pilot:
        await until(lambda: app.store is not None, 30, what="the store opened")
        store = app.store
        assert store is not None
        await copy_with_one_change(store, scratch, args.at)
        # Two recorded runs in one file: the fork saved beside its original.
        file_store = await SQLiteStore.open(path)
        try:
            await copy_with_one_change(store, file_store, args.at)
        finally:
            await file_store.close()
        original = await Journal(store).history(ORIGINAL)
        fork = await Journal(scratch).history(FORK)
        out["records"] = len(original)
        sides = {
            # What a fork has in hand when it finishes: the recording it read, the records it wrote.
            "records in hand": (Side(store, ORIGINAL, "original", original), Side(scratch, FORK, "fork", fork)),
            "fork in memory": (Side(store, ORIGINAL, "original"), Side(scratch, FORK, "fork")),
            "both in SQLite": (Side(store, ORIGINAL, "original"), Side(store, FORK, "fork")),
        }
        await pilot.pause()
        for name, (left, right) in sides.items():
            firsts, differences, dones, cpus, difference_cpus, cores = [], [], [], [], [], []
            cursor_turn = None
            for _ in range(args.repeat):
                paints.first, paints.cursor_painted = None, []
                wall, cpu = time.perf_counter(), time.process_time()
                app.push_screen(CompareScreen(left, right))
                await until(lambda: paints.first is not None, 30, what="the first row painted")
                firsts.append(paints.first - wall)  # type: ignore[operator]  # not None: until() waited for it
                cpus.append(time.process_time() - cpu)
                screen = app.screen
                assert isinstance(screen, CompareScreen)
                view = screen.query_one(CompareView)

                def on_difference(index: int) -> bool:
                    line = view.items[index] if index < len(view.items) else None
                    return line is not None and line.differs

                await until(lambda: any(on_difference(i) for _, i in paints.cursor_painted), 30, what="the difference")
                differences.append(next(t for t, i in paints.cursor_painted if on_difference(i)) - wall)
                difference_cpus.append(time.process_time() - cpu)
                await until(lambda: screen.done, 30, what="every turn aligned")  # awaited in this pass
                dones.append(time.perf_counter() - wall)
                line = view.current
                cursor_turn = None if line is None else line.turn.number
                app.pop_screen()
                await pilot.pause()
                wall, cpu = time.perf_counter(), time.process_time()
                await compare_sides(left, right)
                cores.append((time.perf_counter() - wall, time.process_time() - cpu))
            out[name] = {
                "first_paint_s": statistics.median(firsts), "first_paint_best_s": min(firsts),
                "first_paint_cpu_s": statistics.median(cpus),
                "difference_painted_s": statistics.median(differences),
                "difference_cpu_s": statistics.median(difference_cpus),
                "all_aligned_s": statistics.median(dones),
                "compare_sides_s": statistics.median(c[0] for c in cores),
                "compare_sides_cpu_s": statistics.median(c[1] for c in cores),
                "cursor_on_turn": cursor_turn,
            }  # fmt: skip
    out["peak_rss_mb"] = peak_rss_mb()
    return out


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """The first run writes the original run with the runtime into compare-<turns>.db under --cache
(a few seconds at 1,000 turns) and reuses it after; no large store."""
SMOKE = "tiny sizes (two runs of 20 turns, once), in a temporary directory, seconds: checks the benchmark runs"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=FIRST_RUN,
    )
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--at", type=int, default=499, help="The model turn changed (@llm/N: turn N+1).")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "agenttui-bench-cache")
    parser.add_argument("--size", default="160x48")
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.at, args.repeat = 20, 9, 1
    if args.child is not None:
        print(json.dumps(asyncio.run(measure(args.child, args))))
        return
    if not args.smoke:
        run(args)
        return
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-smoke-") as scratch:
        args.cache = Path(scratch)
        os.environ["XDG_CACHE_HOME"] = str(Path(scratch) / "xdg")  # the child's, not the user's
        run(args)


def run(args: argparse.Namespace) -> None:
    args.cache.mkdir(parents=True, exist_ok=True)
    cached = args.cache / f"compare-{args.turns}.db"
    if not cached.exists():
        started = time.perf_counter()
        building = cached.with_suffix(".building")  # renamed once whole: a failed build is never cached
        building.unlink(missing_ok=True)
        asyncio.run(build_original(building, args.turns))
        building.rename(cached)
        print(f"built {cached} in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "compare.db"  # a copy: the child writes the fork beside the original
        path.write_bytes(cached.read_bytes())
        child = [sys.executable, __file__, "--child", str(path), *sys.argv[1:]]
        measured = subprocess.run(child, check=False, capture_output=True, text=True)
        if measured.returncode != 0:
            sys.exit(f"the measuring process failed (exit {measured.returncode}):\n{measured.stderr[-4000:]}")
        result = json.loads(measured.stdout)
    load = os.getloadavg()
    print(f"two runs of {args.turns:,} turns ({result['records']:,} records each), the fork's model turn "
          f"@llm/{args.at} changed; {args.size}, best and median of {args.repeat}; load {load[0]:.2f} {load[1]:.2f}"
          + (" (smoke: tiny sizes)" if args.smoke else ""))  # fmt: skip
    print(f"{'':16}  {'first paint':>11} {'(best)':>8} {'(CPU)':>8}  {'difference':>10} {'(CPU)':>8}  {'all aligned':>11}  "
          f"{'compare_sides':>13} {'(CPU)':>8}  cursor on")  # fmt: skip
    for name in ("records in hand", "fork in memory", "both in SQLite"):
        row = result[name]
        ms = {key: value * 1000 for key, value in row.items() if key.endswith("_s")}
        print(
            f"{name:16}  {ms['first_paint_s']:>8.1f} ms {ms['first_paint_best_s']:>5.1f} ms {ms['first_paint_cpu_s']:>5.1f} ms"
            f"  {ms['difference_painted_s']:>7.1f} ms {ms['difference_cpu_s']:>5.1f} ms  {ms['all_aligned_s']:>8.1f} ms"
            f"  {ms['compare_sides_s']:>10.1f} ms {ms['compare_sides_cpu_s']:>5.1f} ms  turn {row['cursor_on_turn']}"
        )
    print(f"peak RSS of the measuring process: {result['peak_rss_mb']:.0f} MiB")


if __name__ == "__main__":
    main()
