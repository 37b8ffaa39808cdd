"""Runs as OpenTelemetry traces (issue 52): ``agenttui export --otel FILE`` and ``--otlp URL``,
each figure beside a floor measured in the same run.

    python benchmarks/otel.py [--turns 2000] [--runs 1000] [--repeats 3] [--cache DIR] [--smoke]

Every process is timed from its start to its exit (wall time, CPU time, peak RSS), the cases
interleaved in each of ``--repeats`` rounds, medians taken. A floor reads exactly what the result
needs, no more and no less: a bare Python process reads the runs' records from the SQLite file in
one query and writes their bytes out, deciding and encoding nothing.

- **(a)** one run of ``--turns`` model turns, each calling a tool (the demo's ``audit-bulk``,
  built at that length into a scratch store: 2,000 turns are 4,002 records), to a file:
  ``agenttui export STORE audit-bulk --otel FILE``. Target ≤ 2 s.
- **(b)** the same run sent to a loopback receiver: ``--otlp URL``, to an OTLP/HTTP endpoint this
  benchmark serves on 127.0.0.1 that decodes every request (``ExportTraceServiceRequest``) and
  counts its spans. Target: 0 spans dropped (the spans (a)'s file holds, all received, each once).
- **(c)** ``--runs`` root runs of the production-shaped store (``benchmarks/shapes.py``, 100,000
  runs: the first in run id order, with every run below them) to a file, named on the command
  line. Target ≥ 200 runs a second.

**The first run builds the production-shaped store** under ``--cache`` (default
``/tmp/agenttui-bench-cache``) if it is missing: 20-50 minutes on a 2-core machine.

``--smoke``: 50 turns, and 100 runs of a production-shaped store of 300 built in a temporary
directory, one round (seconds): checks the benchmark runs; its figures are not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from _report import checkout, machine, say, table  # noqa: E402
from statuses import Case, timed  # noqa: E402

AGENTTUI = [sys.executable, "-m", "agenttui"]
SMOKE_TURNS, SMOKE_STORE_RUNS, SMOKE_RUNS, SMOKE_LONGEST = 50, 300, 100, 600
#: The floor: the runs' records read in one query (the ids from a file, a line each) and their bytes written out.
FLOOR = """
import sqlite3, sys
store, ids, out = sys.argv[1:4]
run_ids = open(ids).read().split("\\n")
with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn, open(out, "wb") as sink:
    conn.execute("CREATE TEMP TABLE chosen (run_id TEXT PRIMARY KEY)")
    conn.executemany("INSERT INTO chosen VALUES (?)", ((r,) for r in run_ids))
    for (data,) in conn.execute(
        "SELECT data FROM bide_steps WHERE run_id IN (SELECT run_id FROM chosen) ORDER BY run_id, seq"
    ):
        sink.write(data)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=2_000, help="(a) and (b): the run's model turns")
    parser.add_argument("--runs", type=int, default=1_000, help="(c): root runs of the production-shaped store")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/agenttui-bench-cache"))
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes, one round, seconds: checks the benchmark runs"
    )
    args = parser.parse_args()
    if not args.smoke:
        measure(args, store_runs=100_000, longest=None)
        return
    args.turns, args.runs, args.repeats = SMOKE_TURNS, SMOKE_RUNS, 1
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-smoke-") as scratch:
        args.cache = Path(scratch)
        measure(args, store_runs=SMOKE_STORE_RUNS, longest=SMOKE_LONGEST)


def measure(args: argparse.Namespace, *, store_runs: int, longest: int | None) -> None:
    from shapes import LONGEST_RECORDS, describe, production_store, shape_of

    production = production_store(args.cache, store_runs, longest=longest or LONGEST_RECORDS)
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-otel-") as scratch_dir, receiver() as otlp:
        scratch = Path(scratch_dir)
        long_run = scratch / "long.db"
        say(f"building a run of {args.turns:,} turns")
        asyncio.run(_build_long_run(long_run, args.turns))
        roots = _first_roots(production, args.runs)
        (scratch / "long.ids").write_text("audit-bulk")
        (scratch / "many.ids").write_text("\n".join(_with_sub_runs(production, roots)))
        cache = {"XDG_CACHE_HOME": str(scratch / "cache")}
        cases = {
            "(a) --otel": Case([*AGENTTUI, "export", str(long_run), "audit-bulk", "--otel", str(scratch / "a.jsonl"),
                                "--force"], env=cache),
            "(a) floor": Case([sys.executable, "-c", FLOOR, str(long_run), str(scratch / "long.ids"), str(scratch / "a.bin")]),
            "(b) --otlp": Case([*AGENTTUI, "export", str(long_run), "audit-bulk", "--otlp", otlp.url], env=cache),
            "(c) --otel": Case([*AGENTTUI, "export", str(production), *roots, "--otel", str(scratch / "c.jsonl"),
                                "--force"], env=cache),
            "(c) floor": Case([sys.executable, "-c", FLOOR, str(production), str(scratch / "many.ids"), str(scratch / "c.bin")]),
        }  # fmt: skip
        say("a first untimed run of each (modules compiled, the store in the page cache)")
        for case in cases.values():
            timed(case)
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
        received: list[int] = []
        machine_cpu: list[float] = []
        for round_ in range(args.repeats):
            for name, case in cases.items():
                say(f"round {round_ + 1} of {args.repeats}: {name}")
                before, busy = otlp.spans, _busy_seconds()
                figures[name].append(timed(case))
                if name.startswith("(b)"):
                    received.append(otlp.spans - before)
                if name == "(c) --otel":
                    machine_cpu.append(_busy_seconds() - busy)
        in_file = _spans_in(scratch / "a.jsonl")
        traces_c = sum(1 for _ in (scratch / "c.jsonl").open())
    report(args, figures, received, in_file, traces_c, describe(shape_of(production)))
    print(
        f"(c)'s CPU is its own process's; its worker processes' is not counted there (they are children of"
        f" multiprocessing's fork server). The machine's CPU while it ran, every process's: median"
        f" {statistics.median(machine_cpu):.2f} s"
    )


def report(
    args: argparse.Namespace, figures: dict[str, list[tuple[float, float, float]]], received: list[int],
    in_file: int, traces_c: int, store: str,
) -> None:  # fmt: skip
    def median(name: str, at: int) -> float:
        return statistics.median(each[at] for each in figures[name])

    def cells(name: str) -> list[str]:
        return [f"{median(name, 0):.2f} s", f"{median(name, 1):.2f} s", f"{max(e[2] for e in figures[name]):.0f} MB"]

    verdict = "smoke: not judged" if args.smoke else None
    a, a_floor = median("(a) --otel", 0), median("(a) floor", 0)
    c, c_floor = median("(c) --otel", 0), median("(c) floor", 0)
    dropped = [in_file - got for got in received]
    rows = [
        [f"(a) a run of {args.turns:,} turns to a file", *cells("(a) --otel"), *cells("(a) floor"),
         f"{a / a_floor:.2f}x", "≤ 2 s", verdict or ("met" if a <= 2 else "MISSED")],
        ["(b) the same to a loopback receiver", *cells("(b) --otlp"), "", "", "",
         f"{in_file:,} spans sent a round, {'/'.join(map(str, dropped))} dropped", "0 dropped",
         verdict or ("met" if not any(dropped) else "MISSED")],
        [f"(c) {args.runs:,} production-shaped runs to a file", *cells("(c) --otel"), *cells("(c) floor"),
         f"{args.runs / c:.0f} runs/s ({c / c_floor:.2f}x the floor)", "≥ 200 runs/s",
         verdict or ("met" if args.runs / c >= 200 else "MISSED")],
    ]  # fmt: skip
    print(f"agenttui trace export benchmark, checkout {checkout()}" + (" (smoke: tiny sizes)" if args.smoke else ""))
    print(machine())
    print(f"production-shaped store: {store}")
    print(
        f"(c): {traces_c:,} traces written (the runs named, each with the runs below it); medians of {args.repeats}\n"
    )
    headers = [
        "figure",
        "agenttui",
        "its CPU",
        "peak RSS",
        "floor",
        "floor CPU",
        "floor RSS",
        "result",
        "target",
        "met?",
    ]
    print(table(headers, rows))
    print(f"\nload average at the end: {machine().rpartition('load average ')[2]}")


async def _build_long_run(path: Path, turns: int) -> None:
    """The demo store with its ``audit-bulk`` run ``turns`` turns long."""
    from agenttui.demo.build import build_demo
    from agenttui.stores import open_store

    store = await open_store(str(path), create=True)
    try:
        await build_demo(store, bulk_turns=turns)
    finally:
        await store.close()


def _first_roots(store: Path, count: int) -> list[str]:
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        listed = conn.execute("SELECT DISTINCT run_id FROM bide_steps WHERE instr(run_id, '>') = 0 ORDER BY run_id")
        return [run_id for (run_id,), _ in zip(listed, range(count), strict=False)]


def _with_sub_runs(store: Path, roots: list[str]) -> list[str]:
    chosen = set(roots)
    with closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as conn:
        every = [run_id for (run_id,) in conn.execute("SELECT DISTINCT run_id FROM bide_steps")]
    return [run_id for run_id in every if run_id.partition(">")[0] in chosen]


def _busy_seconds() -> float:
    """Every core's busy time so far (``/proc/stat``: all but idle and iowait), in seconds."""
    fields = [int(n) for n in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _spans_in(path: Path) -> int:
    return sum(len(s["spans"]) for line in path.open() for rs in json.loads(line)["resourceSpans"]
               for s in rs["scopeSpans"])  # fmt: skip


class _Receiver:
    """An OTLP/HTTP endpoint on loopback that decodes each request and counts its spans."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.spans = 0


@contextmanager
def receiver() -> Iterator[_Receiver]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = ExportTraceServiceRequest.FromString(self.rfile.read(int(self.headers["Content-Length"])))
            with lock:
                got.spans += sum(len(s.spans) for rs in request.resource_spans for s in rs.scope_spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    got = _Receiver(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    main()
