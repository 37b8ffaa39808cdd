"""The cost lens over a whole store: ``agenttui cost STORE --by model`` against ``agenttui runs STORE --json``.

    python benchmarks/cost.py [--runs 100000] [--repeats 3] [--cache DIR]

Both commands run on the production-shaped store of ``--runs`` runs (``benchmarks/shapes.py``),
each a whole process from its start to its exit, ``--repeats`` rounds interleaved (a drift in
the machine's speed hits both alike), after one untimed ``runs --json`` that leaves the status
index in place (the listing then reads statuses as a person's second look does). The cost
command prices every turn: the store's turns name the scripted model, given a price by a TOML
file the benchmark writes (``--prices``), so each turn is reckoned, none skipped as unknown.
Printed: each command's median, min and max wall time, its CPU time and peak RSS, and the ratio
of the medians (target: ``cost`` at most 1.5x ``runs --json``).

**First run builds the store** under ``--cache`` (default ``/tmp/agenttui-bench-cache``) and
reuses it after: 100,000 runs take 10-50 minutes on a 2-core machine (``benchmarks/shapes.py``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _report import checkout, machine, process_figures, say  # noqa: E402
from statuses import Case, timed  # noqa: E402

AGENTTUI = [sys.executable, "-m", "agenttui"]
#: A price for the scripted model the production-shaped store's turns name, in dollars a million tokens.
PRICES = '["scripted/scripted-1"]\ninput = 3\noutput = 15\ncache_read = 0.3\ncache_write = 3.75\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agenttui-bench-cache"))
    args = parser.parse_args()

    from shapes import describe, production_store, shape_of

    store = production_store(args.cache, args.runs)
    with tempfile.TemporaryDirectory() as scratch:
        prices = Path(scratch) / "prices.toml"
        prices.write_text(PRICES)
        commands = {
            "cost --by model --json": [
                *AGENTTUI,
                "cost",
                str(store),
                "--by",
                "model",
                "--json",
                "--prices",
                str(prices),
            ],
            "runs --json": [*AGENTTUI, "runs", str(store), "--json"],
        }
        say("runs --json once, untimed: the status index in place")
        timed(Case(commands["runs --json"]))
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for round_ in range(args.repeats):
            for name, argv in commands.items():
                say(f"round {round_ + 1} of {args.repeats}: {name}")
                figures[name].append(timed(Case(argv)))
    print(f"agenttui cost lens benchmark, checkout {checkout()}")
    print(machine())
    print(f"store: {describe(shape_of(store))}\n")
    medians = process_figures(figures, 28)
    cost, listing = medians.values()
    verdict = "met" if cost <= 1.5 * listing else "MISSED"
    print(f"  cost / runs --json: {cost / listing:.2f}x (target ≤ 1.5x): {verdict}")
    print(f"load average at the end: {machine().rpartition('load average ')[2]}")


if __name__ == "__main__":
    main()
