"""Every run's status at store scale: `agenttui runs` against the one-query floor, from process start.

    python benchmarks/statuses.py [--runs 100000] [--cache DIR] [--repeats 3]

The store is the TUI benchmark's (``benchmarks/tui.py``, part a): ``--runs`` runs, 98% complete,
1% stalled, 1% in flight under a live lease, cached under ``--cache``. Each figure is a whole
process, timed from its start to its exit, with its peak resident memory:

- ``agenttui runs STORE --json``, every status, as a user runs it;
- the floor: one Python process that opens the file and makes one SQL pass over every entry,
  pulling per run what a status needs (entries, model turns, tokens through SQLite's JSON
  functions, the first end marker, the header) joined to the lease table, and prints one line
  per run. It decides nothing, so no status is cheaper than it.

The ratio is the median of ``agenttui runs`` over the median of the floor, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

FLOOR = r"""
import sqlite3, sys
conn = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = conn.execute('''
    SELECT s.run_id, count(*),
           sum(json_extract(CAST(s.data AS TEXT), '$.kind') = 'model'),
           sum(coalesce(json_extract(CAST(s.data AS TEXT), '$.usage.input_tokens'), 0)
               + coalesce(json_extract(CAST(s.data AS TEXT), '$.usage.output_tokens'), 0)),
           min(CASE WHEN s.name IN ('run:complete', 'run:aborted', 'run:cancelled') THEN s.seq END),
           min(s.seq), l.holder, l.expiry
    FROM bide_steps AS s LEFT JOIN bide_leases AS l ON l.run_id = s.run_id
    GROUP BY s.run_id ORDER BY s.run_id''')
out = sys.stdout
for row in rows:
    out.write(repr(row) + "\n")
"""


def timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one process, from its start to its exit."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:4]} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from tui import runs_store

    store = runs_store(Path(args.cache), args.runs)
    commands = {
        "agenttui runs --json": [sys.executable, "-m", "agenttui", "runs", str(store), "--json"],
        "floor: one SQL pass": [sys.executable, "-c", FLOOR, str(store)],
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.repeats):  # interleaved, so drift in the machine's speed hits both alike
        for name, argv in commands.items():
            results[name].append(timed(argv))
    load = os.getloadavg()
    print(f"{args.runs:,} runs, {args.repeats} runs each, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"{'':24} {'median':>9} {'min':>9} {'max':>9} {'peak RSS':>10}")
    medians = {}
    for name, figures in results.items():
        walls = [wall for wall, _ in figures]
        medians[name] = statistics.median(walls)
        print(
            f"{name:24} {medians[name]:8.2f}s {min(walls):8.2f}s {max(walls):8.2f}s {max(r for _, r in figures):8.0f} MB"
        )
    ratio = medians["agenttui runs --json"] / medians["floor: one SQL pass"]
    print(f"agenttui runs / floor: {ratio:.1f}x (target 2x)")


if __name__ == "__main__":
    main()
