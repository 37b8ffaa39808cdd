"""The cost lens over a whole store: ``agenttui cost STORE --by model`` against ``agenttui runs STORE --json``.

    python benchmarks/cost.py [--runs 100000] [--repeats 3] [--cache DIR] [--smoke]

Both commands run on the production-shaped store of ``--runs`` runs (``benchmarks/shapes.py``),
each a whole process from its start to its exit, with a status index of their own in a scratch
cache directory. First each one's first look, timed once: ``runs --json`` building the status
index, then ``cost`` keeping each run's tokens in it as it goes (every model turn read and
decoded). Then ``--repeats`` rounds of second looks, interleaved (a drift in the machine's speed
hits both alike): the listing reads statuses as a person's second look does, and ``cost`` the
kept tokens, priced as read. The cost command prices every turn: the store's turns name the
scripted model, given a price by a TOML file the benchmark writes (``--prices``), so each turn is
reckoned, none skipped as unknown. Printed: each command's median, min and max wall time, its
CPU time and peak RSS, and the ratio of the medians (target: ``cost`` at most 1.5x ``runs
--json``), the first looks' beside.

**First run builds the store** under ``--cache`` (default ``/tmp/agenttui-bench-cache``) and
reuses it after: 100,000 runs take 10-50 minutes on a 2-core machine (``benchmarks/shapes.py``).
A first look at it takes 1-3 minutes more.

``--smoke``: a production-shaped store of 300 runs (its longest run 600 records) built in a
temporary directory, one round (seconds), to check that the benchmark still runs; its figures
are not judged.
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
SMOKE = "tiny sizes (300 runs built in a temporary directory, one round), seconds: checks the benchmark runs"
#: ``--smoke``'s store: every story at least once, and its longest run (of 50,000 records at full size) short.
SMOKE_RUNS, SMOKE_LONGEST = 300, 600


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agenttui-bench-cache"))
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    args = parser.parse_args()
    if not args.smoke:
        measure(args)
        return
    args.runs, args.repeats = SMOKE_RUNS, 1
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-smoke-") as scratch:
        args.cache = Path(scratch)
        measure(args)


def measure(args: argparse.Namespace) -> None:
    from shapes import LONGEST_RECORDS, describe, production_store, shape_of

    store = production_store(args.cache, args.runs, longest=SMOKE_LONGEST if args.smoke else LONGEST_RECORDS)
    with tempfile.TemporaryDirectory() as scratch:
        prices = Path(scratch) / "prices.toml"
        prices.write_text(PRICES)
        cost_argv = [*AGENTTUI, "cost", str(store), "--by", "model", "--json", "--prices", str(prices)]
        commands = {"cost --by model --json": cost_argv, "runs --json": [*AGENTTUI, "runs", str(store), "--json"]}
        cache = {"XDG_CACHE_HOME": str(Path(scratch) / "cache")}
        first: dict[str, list[tuple[float, float, float]]] = {}
        for name in reversed(commands):  # the listing first: it builds the index the tokens are kept in
            say(f"first look: {name}")
            first[name] = [timed(Case(commands[name], env=cache))]
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
        for round_ in range(args.repeats):
            for name, argv in commands.items():
                say(f"round {round_ + 1} of {args.repeats}: {name}")
                figures[name].append(timed(Case(argv, env=cache)))
    print(f"agenttui cost lens benchmark, checkout {checkout()}" + (" (smoke: tiny sizes)" if args.smoke else ""))
    print(machine())
    print(f"store: {describe(shape_of(store))}\n")
    print("first looks (the index built, the tokens kept as read), once each:")
    process_figures(first, 28)
    print("second looks:")
    medians = process_figures(figures, 28)
    cost, listing = medians.values()
    verdict = "smoke: not judged" if args.smoke else "met" if cost <= 1.5 * listing else "MISSED"
    print(f"  cost / runs --json: {cost / listing:.2f}x (target ≤ 1.5x): {verdict}")
    (cost_first,), (listing_first,) = first["cost --by model --json"], first["runs --json"]
    print(f"  first looks, cost / runs --json: {cost_first[0] / listing_first[0]:.2f}x wall,"
          f" {cost_first[1] / listing_first[1]:.2f}x CPU (no target)")  # fmt: skip
    print(f"load average at the end: {machine().rpartition('load average ')[2]}")


if __name__ == "__main__":
    main()
