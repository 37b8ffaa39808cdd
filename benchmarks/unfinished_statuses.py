"""The CPU time of the unfinished runs' part of every status, alone: no query, no I/O.

    python benchmarks/unfinished_statuses.py STORE [--cache FILE] [--checkout DIR] [--repeats 3]
    python benchmarks/unfinished_statuses.py --smoke

Reads STORE's pages of 500 runs as ``list_statuses`` does, keeps the runs their summaries do not
decide (unfinished, or with a suspect entry) with their summaries and entries, and pickles them
to ``--cache`` (default: beside this script's temporary directory) the first time. Then times,
with ``time.process_time``, what ``_page_statuses`` does with those pages once the store has
answered: each run's entries turned into the records the rules read, and its status. The store
it is handed is a stand-in that answers from the pickle, so the figure is Python's work alone.

``--checkout`` runs another checkout's code (default: this one), for an A/B over the same pages:
the pickle holds only store types (``RunSummary``, ``Entry``). ``--out FILE`` writes every status,
to compare two checkouts' answers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


async def read_pages(url: str) -> list[tuple[list[str], list[Any], dict[str, Any]]]:
    """Each page's undecided runs: their ids, their summaries, their entries."""
    from agenttui.journal import keys
    from agenttui.runs.statuses import status
    from agenttui.stores import open_store

    store = await open_store(url, read_only=True)
    try:
        run_ids = [run_id async for run_id in store.runs()]
        pages = []
        for start in range(0, len(run_ids), status.SUMMARY_PAGE):
            summaries = await store.summaries(run_ids[start : start + status.SUMMARY_PAGE], keys.END_MARKERS)
            undecided = [
                s for s in summaries if status.status_from_summary(s, None) is None and s.steps <= status.BATCH_STEPS
            ]
            loaded = await store.load_runs([s.run_id for s in undecided])
            pages.append(([s.run_id for s in undecided], undecided, loaded))
        return pages
    finally:
        await store.close()


class AnsweringStore:
    """What ``_page_statuses`` asks of a store, answered from a page read before."""

    IMPLEMENTS_SUMMARIES = True
    IMPLEMENTS_LEASES = False

    def __init__(self, summaries: list[Any], loaded: dict[str, Any]) -> None:
        self._summaries = summaries
        self._loaded = loaded

    async def summaries(self, run_ids: Any, end_markers: Any) -> list[Any]:
        return self._summaries

    async def load_runs(self, run_ids: Any) -> dict[str, Any]:
        return {run_id: self._loaded[run_id] for run_id in run_ids if run_id in self._loaded}


async def time_pages(pages: list[tuple[list[str], list[Any], dict[str, Any]]]) -> tuple[float, dict[str, Any]]:
    from agenttui.runs.statuses import status

    # No status index (agenttui.runs.statuses.index.CACHE_ENV, named here for checkouts older than
    # it): the stand-in has no journal to name, and the index's verdicts would skip the work timed.
    os.environ["AGENTTUI_CACHE"] = "off"

    decided: dict[str, Any] = {}
    began = time.process_time()
    for run_ids, summaries, loaded in pages:
        store: Any = AnsweringStore(summaries, loaded)
        decided.update(await status._page_statuses(store, run_ids, batch=True))
    return time.process_time() - began, decided


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """Builds no store: it reads STORE (the production-shaped one: benchmarks/shapes.py builds it, 20-50
minutes). The first run reads every page of STORE once and pickles its unfinished runs to --cache,
a minute or two; later runs read the pickle. --smoke builds a production-shaped store of a few
hundred runs (benchmarks/shapes.py) and its pickle in a fresh temporary directory instead: seconds."""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, epilog=FIRST_RUN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("store", nargs="?", help="the store to read (not with --smoke)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "agenttui-unfinished-pages.pkl")
    parser.add_argument("--checkout", type=Path, default=ROOT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="a store of a few hundred runs, built with its pickle in a temporary directory",
    )
    args = parser.parse_args()
    if (args.store is None) != args.smoke:
        parser.error("give STORE, or --smoke")
    sys.path.insert(0, str(args.checkout.resolve()))
    if not args.smoke:
        measure(args.store, args.cache, args.checkout, args.repeats, args.out)
        return
    with tempfile.TemporaryDirectory(prefix="agenttui-unfinished-smoke-") as temporary:
        sys.path.insert(1, str(ROOT))
        from benchmarks.shapes import SMOKE_LONGEST, SMOKE_RUNS, production_store

        store = production_store(Path(temporary), SMOKE_RUNS, longest=SMOKE_LONGEST)
        measure(str(store), Path(temporary) / "pages.pkl", args.checkout, 1, args.out)


def measure(store: str, cache: Path, checkout: Path, repeats: int, out: Path | None) -> None:
    if not cache.exists():
        pages = asyncio.run(read_pages(store))
        with open(cache, "wb") as file:
            pickle.dump(pages, file, protocol=5)
    with open(cache, "rb") as file:
        pages = pickle.load(file)
    runs = sum(len(run_ids) for run_ids, _, _ in pages)
    entries = sum(len(e) for _, _, loaded in pages for e in loaded.values())
    print(f"{checkout}: {runs:,} runs, {entries:,} entries, load average {os.getloadavg()[0]:.1f}")
    for _ in range(repeats):
        cpu, decided = asyncio.run(time_pages(pages))
        print(f"  {cpu:.2f} s CPU")
    if out:
        out.write_text("".join(f"{decided[run_id]!r}\n" for run_id in sorted(decided)))


if __name__ == "__main__":
    main()
