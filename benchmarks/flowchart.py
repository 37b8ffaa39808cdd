"""ASCII flowchart benchmark: index build and one window, against drawing the whole chain.

    python benchmarks/flowchart.py [--sizes 1000,10000,100000] [--width 100] [--repeat 5]

For each size, a run journal of about that many flowchart nodes is built (model turns calling one
tool, one turn in five calling three in parallel, one call in twenty failing, and runs of the
same tool repeated so that loops fold). Measured, in the same process and run:

- ``flow_steps``: records to nodes (the rules ``render_mermaid`` shares);
- index build: ``Flowchart(steps)``, block heights and the row index, nothing drawn
  (target: 100,000 nodes in at most 0.5 s);
- one 50-row window in the middle of the chart, cold (fresh chart, empty cache) and cached
  (the same window again) (target: at most 5 ms);
- the baseline: the whole chain drawn to one string, as a renderer without an index must.

Each figure is the best of ``--repeat`` runs (the whole drawing at 100,000 nodes: of fewer), so
that other load on the machine inflates it as little as possible. On a machine busy with other
work, ``--cpu`` times with this process's CPU clock instead of the wall clock.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
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


def measure(nodes: int, width: int, repeat: int, clock: Clock) -> dict[str, float]:
    records = journal(nodes)
    steps: list[FlowStep] = flow_steps(records)
    chart = Flowchart(steps)
    middle = chart.row_count // 2
    fresh: list[Flowchart] = []

    def cold_chart() -> None:
        fresh[:] = [Flowchart(steps)]

    return {
        "nodes": len(steps),
        "rows": chart.row_count,
        "blocks": chart.block_count,
        "flow_steps": best(clock, repeat, lambda: flow_steps(records)),
        "index": best(clock, repeat, lambda: Flowchart(steps)),
        "cold": best(clock, repeat, lambda: fresh[0].rows(middle, middle + WINDOW, width), cold_chart),
        "cached": best(clock, repeat, lambda: chart.rows(middle, middle + WINDOW, width)),
        "whole": best(clock, max(1, repeat // 2 if nodes >= 100_000 else repeat), lambda: Flowchart(steps).text(width)),
    }


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms" if seconds < 1 else f"{seconds:,.2f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="node counts, comma-separated")
    parser.add_argument("--width", type=int, default=100, help="pane width in cells")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept")
    parser.add_argument("--cpu", action="store_true", help="time with the process's CPU clock, not the wall clock")
    args = parser.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter

    load = f", load {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores{load}, "
          f"width {args.width}, {'CPU' if args.cpu else 'wall'} clock")  # fmt: skip
    header = ("nodes", "rows", "blocks", "flow_steps", "index build", "window cold", "window cached",
              "whole chain", "whole/cold")  # fmt: skip
    lines = [header]
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        r = measure(size, args.width, args.repeat, clock)
        results.append(r)
        lines.append((f"{r['nodes']:,}", f"{r['rows']:,}", f"{r['blocks']:,}", ms(r["flow_steps"]), ms(r["index"]),
                      ms(r["cold"]), ms(r["cached"]), ms(r["whole"]), f"{r['whole'] / r['cold']:,.0f}x"))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)))

    largest = max(results, key=lambda r: r["nodes"])
    ok_index = largest["index"] <= INDEX_TARGET * largest["nodes"] / 100_000
    ok_window = all(r["cold"] <= WINDOW_TARGET for r in results)
    print(f"index of {largest['nodes']:,} nodes: {ms(largest['index'])} "
          f"(target {ms(INDEX_TARGET)} per 100,000): {'ok' if ok_index else 'MISSED'}")  # fmt: skip
    print(f"slowest cold window: {ms(max(r['cold'] for r in results))} (target {ms(WINDOW_TARGET)}): "
          f"{'ok' if ok_window else 'MISSED'}")  # fmt: skip
    return 0 if ok_index and ok_window else 1


if __name__ == "__main__":
    raise SystemExit(main())
