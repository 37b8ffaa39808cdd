"""ASCII flowchart benchmark: records to the first window, the index and one window, against drawing the whole chain.

    python benchmarks/flowchart.py [--sizes 1000,10000,100000] [--memory-sizes 50000,100000]
                                   [--width 100] [--repeat 5] [--cpu] [--smoke]

For each size, a run journal of about that many flowchart nodes is built (model turns calling one
tool, one turn in five calling three in parallel, one call in twenty failing, and runs of the
same tool repeated so that loops fold). Measured, in the same process and run:

- ``flow_steps``: records to nodes (the rules ``render_mermaid`` shares);
- index build: ``Flowchart(steps)``, block heights and the row index, nothing drawn
  (target: 100,000 nodes in at most 0.5 s);
- one 50-row window in the middle of the chart, cold (fresh chart, empty cache) and cached
  (the same window again) (target: at most 5 ms);
- the baseline: the whole chain drawn to one string, as a renderer without an index must;
- the first window from records: ``flow_steps``, the index build and the chart's first 50 rows
  (where the run screen opens: its cursor on the first record), from the decoded records
  (target: 100,000 nodes in at most 0.3 s), with the peak of memory it allocates (tracemalloc)
  and the peak RSS of a fresh process that builds the journal and then its first window; beside
  it the same with the cyclic garbage collector off (its passes over the heap, the journal
  included, are a large share), and the baseline from records: ``flow_steps`` and the whole
  chain drawn.

Then, for ``--memory-sizes``, the bytes per node a chart holds (tracemalloc): its flow steps
(``flow_steps``' list), and the chart built over them (blocks and the index).

Each figure is the best of ``--repeat`` runs (the whole drawing at 100,000 nodes: of fewer), so
that other load on the machine inflates it as little as possible. On a machine busy with other
work, ``--cpu`` times with this process's CPU clock instead of the wall clock.

``--smoke``: sizes of 200 and 1,000 nodes, each figure once (a few seconds), to check that the
benchmark still runs; its figures are not judged (it exits 0 whatever they are).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenttui.journal import Message, Record, TextPart, ToolUsePart  # noqa: E402
from agenttui.render import Flowchart, FlowStep, flow_steps  # noqa: E402

INDEX_TARGET = 0.5
"""Seconds to index a chart of 100,000 nodes."""
WINDOW_TARGET = 0.005
"""Seconds to draw one 50-row window."""
FIRST_WINDOW_TARGET = 0.3
"""Seconds from the decoded records of a run of 100,000 nodes to its flowchart's first window."""
WINDOW = 50
TOOLS = ["search_orders", "fetch_invoice", "charge_card", "refund", "lookup_customer"]


def journal(nodes: int, seed: int = 4) -> list[Record]:
    """A run history whose flowchart has about ``nodes`` nodes."""
    rnd = random.Random(seed)
    records = [Record("@journal", "header", format="bide.journal.v1-dev"), Record("run:start", "value", result=b"{}")]
    drawn = 3  # start, run:start, done
    turn = 0
    tool = TOOLS[0]
    while drawn < nodes:
        if rnd.random() < 0.3:  # else the agent repeats its last tool: loops that fold
            tool = rnd.choice(TOOLS)
        calls = [f"c{turn}-{k}" for k in range(3 if rnd.random() < 0.2 else 1)]
        uses = [ToolUsePart(call, tool if len(calls) == 1 else TOOLS[k], args=b"{}") for k, call in enumerate(calls)]
        records.append(Record(f"@llm/{turn}", "model", message=Message.assistant(TextPart("..."), *uses)))
        for call in calls:
            records.append(Record(f"tool:{call}", "tool_result", tool_use_id=call, result=b'"ok"',
                                  is_error=rnd.random() < 0.05))  # fmt: skip
        drawn += 1 + len(calls)
        turn += 1
    return [*records, Record("run:complete", "value", result=b"{}")]


Clock = Callable[[], float]


def best(clock: Clock, repeat: int, run: Callable[[], object], setup: Callable[[], object] | None = None) -> float:
    """The fastest of ``repeat`` timed calls of ``run`` (``setup`` runs untimed before each)."""
    times = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = clock()
        run()
        times.append(clock() - start)
    return min(times)


def first_window(records: list[Record], width: int) -> list[object]:
    """What a front end does to show a run's flowchart: records to nodes, the index, the first rows."""
    return Flowchart(flow_steps(records)).rows(0, WINDOW, width)


def measure(nodes: int, width: int, repeat: int, clock: Clock) -> dict[str, float]:
    records = journal(nodes)
    steps: list[FlowStep] = flow_steps(records)
    chart = Flowchart(steps)
    middle = chart.row_count // 2
    fresh: list[Flowchart] = []

    def cold_chart() -> None:
        fresh[:] = [Flowchart(steps)]

    whole_repeat = max(1, repeat // 2 if nodes >= 100_000 else repeat)
    return {
        "nodes": len(steps),
        "rows": chart.row_count,
        "blocks": chart.block_count,
        "flow_steps": best(clock, repeat, lambda: flow_steps(records)),
        "index": best(clock, repeat, lambda: Flowchart(steps)),
        "cold": best(clock, repeat, lambda: fresh[0].rows(middle, middle + WINDOW, width), cold_chart),
        "cached": best(clock, repeat, lambda: chart.rows(middle, middle + WINDOW, width)),
        "whole": best(clock, whole_repeat, lambda: Flowchart(steps).text(width)),
        "first": best(clock, repeat, lambda: first_window(records, width)),
        "first_no_gc": best(clock, repeat, without_gc(lambda: first_window(records, width))),
        "first_peak": traced_peak(lambda: first_window(records, width)),
        "whole_from_records": best(clock, whole_repeat, lambda: Flowchart(flow_steps(records)).text(width)),
        "first_rss": fresh_process_rss(nodes, width),
    }


def without_gc(run: Callable[[], object]) -> Callable[[], object]:
    """``run`` with the cyclic garbage collector off: how much of a figure its passes over the heap take."""

    def paused() -> object:
        gc.disable()
        try:
            return run()
        finally:
            gc.enable()

    return paused


def traced_peak(run: Callable[[], object]) -> float:
    """The most memory ``run`` held at once, in bytes (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def fresh_process_rss(nodes: int, width: int) -> dict[str, float]:
    """Peak RSS of a fresh process after building the journal, and after its first window, in MiB."""
    child = [sys.executable, __file__, "--child-rss", str(nodes), "--width", str(width)]
    return json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout)


def peak_rss_mib() -> float:
    """This process's peak RSS. On Linux from ``VmHWM``: a child's ``ru_maxrss`` starts at its parent's
    peak, the journals this benchmark's own process holds included."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, bytes on macOS
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def child_rss(nodes: int, width: int) -> None:
    records = journal(nodes)
    before = peak_rss_mib()
    first_window(records, width)
    print(json.dumps({"records": before, "first": peak_rss_mib()}))


def bytes_per_node(nodes: int) -> dict[str, float]:
    """What a chart of ``nodes`` nodes holds, per node: its flow steps, then the chart over them."""
    records = journal(nodes)
    gc.collect()
    tracemalloc.start()
    try:
        steps = flow_steps(records)
        after_steps = tracemalloc.get_traced_memory()[0]
        chart = Flowchart(steps)
        after_chart = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del chart
    return {"nodes": len(steps), "steps": after_steps / len(steps), "chart": (after_chart - after_steps) / len(steps)}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def table(lines: list[tuple[str, ...]]) -> None:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """Builds its journals in memory each run (up to 100,000 nodes, a few seconds); no store, nothing
cached. A run takes one to three minutes."""
SMOKE = "tiny sizes (200 and 1,000 nodes, each figure once), seconds: checks the benchmark runs; figures not judged"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=FIRST_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="node counts, comma-separated")
    parser.add_argument("--memory-sizes", default="50000,100000", help="node counts for bytes per node ('' for none)")
    parser.add_argument("--width", type=int, default=100, help="pane width in cells")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept")
    parser.add_argument("--cpu", action="store_true", help="time with the process's CPU clock, not the wall clock")
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    parser.add_argument("--child-rss", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.smoke:
        args.sizes, args.memory_sizes, args.repeat = "200,1000", "1000", 1
    if args.child_rss:
        child_rss(args.child_rss, args.width)
        return 0
    clock = time.process_time if args.cpu else time.perf_counter

    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores{load}, "
          f"width {args.width}, {'CPU' if args.cpu else 'wall'} clock"
          + (" (smoke: tiny sizes, not judged)" if args.smoke else ""))  # fmt: skip
    results = [measure(int(size), args.width, args.repeat, clock) for size in args.sizes.split(",")]
    table([("nodes", "rows", "blocks", "flow_steps", "index build", "window cold", "window cached", "whole chain",
            "whole/cold")] + [
        (f"{r['nodes']:,}", f"{r['rows']:,}", f"{r['blocks']:,}", ms(r["flow_steps"]), ms(r["index"]), ms(r["cold"]),
         ms(r["cached"]), ms(r["whole"]), f"{r['whole'] / r['cold']:,.0f}x")
        for r in results
    ])  # fmt: skip
    print()
    print("From the decoded records (peak RSS: of a fresh process that builds the journal, then its first window):")
    table([("nodes", "first window", "(GC off)", "its own peak", "peak RSS", "(journal alone)",
            "whole chain from records", "whole/first")] + [
        (f"{r['nodes']:,}", ms(r["first"]), f"({ms(r['first_no_gc'])})", f"{r['first_peak'] / 2**20:,.1f} MiB",
         f"{r['first_rss']['first']:,.0f} MiB", f"({r['first_rss']['records']:,.0f} MiB)", ms(r["whole_from_records"]),
         f"{r['whole_from_records'] / r['first']:,.1f}x")
        for r in results
    ])  # fmt: skip
    memory = [bytes_per_node(int(size)) for size in args.memory_sizes.split(",") if size]
    if memory:
        print()
        print("Bytes per node held (tracemalloc):")
        table([("nodes", "flow steps", "chart over them", "both")] + [
            (f"{m['nodes']:,}", f"{m['steps']:,.0f}", f"{m['chart']:,.0f}", f"{m['steps'] + m['chart']:,.0f}")
            for m in memory
        ])  # fmt: skip
    print()

    largest = max(results, key=lambda r: r["nodes"])
    scale = largest["nodes"] / 100_000
    ok_index = largest["index"] <= INDEX_TARGET * scale
    ok_window = all(r["cold"] <= WINDOW_TARGET for r in results)
    ok_first = largest["first"] <= FIRST_WINDOW_TARGET * scale
    if args.smoke:
        print(f"smoke: {largest['nodes']:,} nodes at most, once each: the targets are not judged")
        return 0
    print(f"index of {largest['nodes']:,} nodes: {ms(largest['index'])} "
          f"(target {ms(INDEX_TARGET)} per 100,000): {'ok' if ok_index else 'MISSED'}")  # fmt: skip
    print(f"slowest cold window: {ms(max(r['cold'] for r in results))} (target {ms(WINDOW_TARGET)}): "
          f"{'ok' if ok_window else 'MISSED'}")  # fmt: skip
    print(f"first window from the records of {largest['nodes']:,} nodes: {ms(largest['first'])} "
          f"(target {ms(FIRST_WINDOW_TARGET)} per 100,000): {'ok' if ok_first else 'MISSED'}")  # fmt: skip
    return 0 if ok_index and ok_window and ok_first else 1


if __name__ == "__main__":
    raise SystemExit(main())
