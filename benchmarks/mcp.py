"""The MCP server at store scale: the run list through the stdio client against the library, and every single-run tool on a 50,000-record run.

    python benchmarks/mcp.py [--parts a,b] [--runs 100000] [--records 50000] [--shape uniform|production]
                             [--rounds 5] [--calls 20] [--timeout 120] [--budget 32000] [--cache DIR] [--json]
                             [--smoke]

Both parts talk to ``agenttui mcp STORE`` as a coding agent does: the MCP SDK's own client
(``mcp.Client``) spawns it over stdio and calls its tools; a call is timed from ``call_tool``
to its result in hand (the request written, the server's work, the answer read back and
validated by the client), the server already started and initialized. Each part spawns one
server, with ``XDG_CACHE_HOME`` a fresh directory of this benchmark's (where agenttui keeps its
status index), and reads its peak resident memory (``VmHWM`` of the server's process, from
``/proc``) just before the client closes it.

(a) The first page of the run list (``list_runs``, limit 50) on the production-shaped store of
    ``--runs`` runs (``benchmarks/shapes.py``), against the same page through the library in
    this process: ``reading.list_runs`` of a store opened read-only, the store open already.
    Target (the MCP issue): the client's time at most 1.5x the library's. Before either side
    reads, ``agenttui runs STORE --json`` reads every status once with the same
    ``XDG_CACHE_HOME``, so both sides read through the same warm status index. Both sides' first
    call is timed apart (for the client, from spawning the server to the first answer), then
    ``--rounds`` rounds, the two sides interleaved in each; medians, and CPU a call (the
    client's: this process's and the server's, from ``/proc``). A second row does the same with
    a filter, ``status: ["halted"]``, under the same target: it reads statuses until the page
    is full or ``SCAN_AT_MOST`` runs are read. The two sides' pages are compared run by run.
(b) Every single-run tool on one long run, through one server: each tool called once (the
    first call, timed apart; the first of all reads the run, and the first replay replays it),
    then ``--calls`` times more (fewer once a tool's calls have taken ``--timeout``); per tool its
    first call, p50, p95 (nearest rank) and max, and its largest answer (the text an agent reads,
    in UTF-8 bytes) against the budget (``--budget``, the server's default). Target (the MCP
    issue): every answer within the budget, p95 at most 200 ms after the first call; the
    server's peak RSS reported. ``--shape`` picks the run: ``uniform`` (the default) is
    ``benchmarks/tui.py``'s ``long_run_store``, a run of ``--records`` records (an audit of one
    lookup a turn, recorded with a limit of 5 turns: its replay diverges at the sixth);
    ``production`` is the production-shaped store's longest run (50,000 records, an audit the
    runtime drove: its replay goes to the end). A call with no answer within ``--timeout`` ends
    that server: the next tool starts a fresh one (and reads the run again), said in the table.

The machine (cores, load average at the start and end of each part) and the date are printed
with the figures; ``--json`` prints the raw figures (every call's time) after the tables.

``--smoke``: both parts at tiny sizes, their stores built in a temporary directory (a
production-shaped store of 300 runs, its longest run 600 records; a run of 500 records), 2
rounds and 2 calls a tool (seconds), to check that the benchmark still runs; its figures are
not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "benchmarks"
# This file is named mcp.py: with its own folder on sys.path (``python benchmarks/mcp.py`` puts it
# first), ``import mcp`` would import this file instead of the MCP SDK. So the folder comes off the
# path, and the other benchmarks are imported as ``benchmarks.*`` (as ``tui.py`` imports ``shapes``).
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != HERE]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp_types import CallToolResult, TextContent  # noqa: E402
from mcp_types.jsonrpc import REQUEST_TIMEOUT  # noqa: E402

from agenttui.mcp_server.answers import DEFAULT_BUDGET  # noqa: E402
from agenttui.mcp_server.reading import SCAN_AT_MOST, RunPage, list_runs  # noqa: E402
from agenttui.stores import open_store  # noqa: E402
from benchmarks._report import checkout, machine, met, say, table  # noqa: E402

#: The MCP issue's targets: the run list through the client at most this many times the library's
#: time, and a single-run tool's p95 after its first call at most this many seconds.
LIST_RATIO_TARGET = 1.5
TOOL_P95_TARGET_S = 0.200
#: The run list's page, as an agent asks for it (the tool's default).
PAGE_LIMIT = 50
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """The first run builds its stores under --cache (default /tmp/agenttui-bench-cache) and reuses
them after: part (a) needs the production-shaped store of --runs runs (benchmarks/shapes.py,
v1-production-<runs>.db, 1.4 GB at 100,000 runs: 19 minutes on this 2-core machine at load 5.6,
48 minutes at load 4.7, as its .shape.json records; count 20-50 minutes); part (b) the store of one
run of --records records (benchmarks/tui.py's v1-long-run-<records>.db: seconds at 50,000),
or with --shape production that same production-shaped store.
Each run of part (a) also reads every status of the store once into a fresh status index
(agenttui runs --json: 40-90 s at 100,000 runs, with the load); the stores themselves are only ever read."""
SMOKE = (
    "tiny sizes (300 runs, a run of 500 records, 2 rounds, 2 calls a tool), stores in a temporary directory,"
    " seconds: checks the benchmark runs; figures not judged"
)
#: ``--smoke``'s production-shaped store: every story at least once, its longest run short.
SMOKE_RUNS, SMOKE_LONGEST = 300, 600


# -- the server's process ------------------------------------------------------------------------


def parent_of(stat: str) -> int:
    """A process's parent, from its ``/proc/<pid>/stat`` line (the name may hold spaces and parentheses)."""
    return int(stat.rsplit(")", 1)[1].split()[1])


def server_pid(store: Path) -> int:
    """The server this process spawned: a child whose command line is ``... agenttui mcp STORE``.
    (The SDK's client does not hand out its process; psutil is not a dependency, so ``/proc``.)"""
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue  # gone meanwhile
        if parent_of(stat) == me and "agenttui" in argv and "mcp" in argv and str(store) in argv:
            return int(entry.name)
    raise SystemExit(f"the MCP server's process for {store} is not among this process's children")


def peak_rss_mb(pid: int | str = "self") -> float:
    """A process's peak resident memory (``VmHWM``): a child's ``ru_maxrss`` can start at its
    parent's peak, so it is not the child's own."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def cpu_seconds(pid: int) -> float:
    """A process's CPU seconds so far, user and system (to the kernel's tick: 10 ms)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Spawned:
    """A server started through the SDK's client: the client, the server's pid, and how long
    from spawning it to the client initialized."""

    client: Client
    pid: int
    initialized_s: float
    started: float
    """``perf_counter`` when it was spawned."""


@asynccontextmanager
async def mcp_server(store: Path, cache_home: str, budget: int) -> AsyncIterator[Spawned]:
    """``agenttui mcp STORE`` over stdio, as a coding agent starts it, this checkout's agenttui."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agenttui", "mcp", str(store), "--budget", str(budget)],
        # The SDK passes only a few safe variables on (PATH, HOME, ...): these are added to them.
        env={"XDG_CACHE_HOME": cache_home, "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )
    started = time.perf_counter()
    # cache=None: every call reaches the server (the SDK caches only list and read methods, but a
    # benchmark should not depend on that).
    async with Client(params, cache=None) as client:
        yield Spawned(client, server_pid(store), time.perf_counter() - started, started)


@dataclass
class Answer:
    """One tool call: how long it took, the text an agent reads (and its UTF-8 size), an error's text."""

    seconds: float
    text: str
    error: str | None
    timed_out: bool = False
    """No answer within the timeout: the server may be busy with it still."""

    @property
    def size(self) -> int:
        return len(self.text.encode())


async def call(client: Client, tool: str, arguments: dict[str, Any], timeout: float | None = None) -> Answer:
    started = time.perf_counter()
    try:
        result: CallToolResult = await client.call_tool(tool, arguments, read_timeout_seconds=timeout)
    except MCPError as exc:  # a protocol error (bad arguments, no answer in time): reported, not raised
        seconds = time.perf_counter() - started
        if exc.code == REQUEST_TIMEOUT:
            return Answer(seconds, "", f"no answer within {timeout:g} s", timed_out=True)
        return Answer(seconds, "", f"{type(exc).__name__} {exc.code}: {exc}")
    seconds = time.perf_counter() - started
    text = "".join(part.text for part in result.content if isinstance(part, TextContent))
    return Answer(seconds, text, text[:300] if result.is_error else None)


# -- (a) the run list ----------------------------------------------------------------------------


@dataclass
class Side:
    """One side of the run list's comparison: its first call, the timed rounds, CPU over them."""

    first_s: float = 0.0
    first_call_s: float = 0.0
    """The first call alone (the client's ``first_s`` counts from spawning the server)."""
    seconds: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    """CPU over every timed round (this process's; and the server's, for the client)."""
    server_cpu_s: float = 0.0
    """The server's share of ``cpu_s`` (the client's side only)."""
    runs: list[str] = field(default_factory=list)
    """The run ids of the page."""
    error: str | None = None

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds)

    @property
    def cpu_per_call_s(self) -> float:
        return self.cpu_s / len(self.seconds)


@dataclass
class ListQuery:
    """A page of the run list, and how each side answered it."""

    label: str
    status: list[str]
    library: Side = field(default_factory=Side)
    client: Side = field(default_factory=Side)
    scanned: int = 0
    """How many runs' statuses the library read for the page."""

    def arguments(self) -> dict[str, Any]:
        return {"limit": PAGE_LIMIT} | ({"status": self.status} if self.status else {})


@dataclass
class ListFigures:
    store: str
    runs: int
    warm_s: float = 0.0
    index_mb: float = 0.0
    open_s: float = 0.0
    initialized_s: float = 0.0
    queries: list[ListQuery] = field(default_factory=list)
    library_rss_mb: float = 0.0
    server_rss_mb: float = 0.0
    load: list[list[float]] = field(default_factory=list)
    """The load average at the start and at the end."""


def warm_index(store: Path, cache_home: str) -> float:
    """Every status read once into the index (``agenttui runs --json``), as a user's first look does."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "agenttui", "runs", str(store), "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "XDG_CACHE_HOME": cache_home, "PYTHONPATH": str(ROOT)},
    )
    return time.perf_counter() - started


def run_ids_of(answer: Answer) -> list[str]:
    """The run ids of a ``list_runs`` answer (a cut answer holds none)."""
    try:
        return [run["run_id"] for run in json.loads(answer.text)["runs"]]
    except (ValueError, KeyError, TypeError):
        return []


async def library_page(store: Any, query: ListQuery) -> tuple[float, float, RunPage]:
    """(wall seconds, CPU seconds, the page) of one ``list_runs`` through the library."""
    started, cpu = time.perf_counter(), time.process_time()
    page = await list_runs(store, where=None, states=query.status, cursor=None, limit=PAGE_LIMIT)
    return time.perf_counter() - started, time.process_time() - cpu, page


async def client_page(spawned: Spawned, query: ListQuery) -> tuple[Answer, float, float]:
    """One ``list_runs`` through the client, and CPU seconds: this process's (the client's), the server's."""
    cpu, server_cpu = time.process_time(), cpu_seconds(spawned.pid)
    answer = await call(spawned.client, "list_runs", query.arguments())
    return answer, time.process_time() - cpu, cpu_seconds(spawned.pid) - server_cpu


async def part_a(args: argparse.Namespace, store: Path) -> ListFigures:
    from benchmarks.shapes import describe, shape_of

    say(f"(a) the production-shaped store {store}:\n{describe(shape_of(store))}")
    figures = ListFigures(str(store), shape_of(store)["runs"], load=[list(os.getloadavg())])
    figures.queries = [ListQuery("no filter", []), ListQuery('status ["halted"]', ["halted"])]
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-mcp-xdg-") as cache_home:
        say("(a) reading every status once into a fresh status index (agenttui runs --json)")
        figures.warm_s = warm_index(store, cache_home)
        figures.index_mb = sum(p.stat().st_size for p in Path(cache_home).rglob("*") if p.is_file()) / 1e6
        os.environ["XDG_CACHE_HOME"] = cache_home  # the library, in this process, reads the same index
        say("(a) spawning the server; opening the store in this process")
        async with mcp_server(store, cache_home, args.budget) as spawned:
            figures.initialized_s = spawned.initialized_s
            started = time.perf_counter()
            library = await open_store(str(store), read_only=True, create=False)
            figures.open_s = time.perf_counter() - started
            try:
                for query in figures.queries:  # the first calls, each side's
                    answer = await call(spawned.client, "list_runs", query.arguments())
                    # The client's first answer: from spawning the server, for the first query.
                    query.client.first_s = (
                        time.perf_counter() - spawned.started if query is figures.queries[0] else answer.seconds
                    )
                    query.client.first_call_s = answer.seconds
                    query.client.error, query.client.runs = answer.error, run_ids_of(answer)
                    query.library.first_s, _, page = await library_page(library, query)
                    query.library.first_call_s = query.library.first_s
                    query.library.runs, query.scanned = [run["run_id"] for run in page.runs], page.scanned
                say(f"(a) {args.rounds} rounds, the two sides interleaved")
                for _ in range(args.rounds):
                    for query in figures.queries:
                        seconds, cpu, _ = await library_page(library, query)
                        query.library.seconds.append(seconds)
                        query.library.cpu_s += cpu
                        answer, cpu, server_cpu = await client_page(spawned, query)
                        query.client.seconds.append(answer.seconds)
                        query.client.cpu_s += cpu + server_cpu
                        query.client.server_cpu_s += server_cpu
                        query.client.error = query.client.error or answer.error
            finally:
                await library.close()
            figures.server_rss_mb = peak_rss_mb(spawned.pid)
        figures.library_rss_mb = peak_rss_mb()
        del os.environ["XDG_CACHE_HOME"]
    figures.load.append(list(os.getloadavg()))
    return figures


def report_a(figures: ListFigures, rounds: int) -> str:
    rows: list[list[str]] = []

    def add(what: str, value: str, rss: str = "", target: str = "", met: str = "") -> None:
        rows.append([what, value, rss, target, met])

    start, end = figures.load
    add(f"store: {Path(figures.store).name}, {figures.runs:,} runs", "")
    add("status index warmed: agenttui runs STORE --json, every status (its size)",
        f"{seconds_text(figures.warm_s)} ({figures.index_mb:,.1f} MB)")  # fmt: skip
    add("library: open_store(read_only=True), in this process", ms_text(figures.open_s))
    add("client: spawn the server -> initialized", ms_text(figures.initialized_s))
    for query in figures.queries:
        library, client = query.library, query.client
        what = f"list_runs, limit {PAGE_LIMIT}, {query.label}"
        if client.error:
            add(f"client: {what}", f"ERROR: {client.error}", "", f"≤ {LIST_RATIO_TARGET}x", "MISSED")
            continue
        first = "spawn -> first answer" if query is figures.queries[0] else "first call"
        add(f"library: {what}: first call ({len(library.runs)} runs; {query.scanned:,} statuses read, at most {SCAN_AT_MOST:,})",
            ms_text(library.first_s))  # fmt: skip
        add(f"client: {what}: {first} ({len(client.runs)} runs)", ms_text(client.first_s))
        if query is figures.queries[0]:
            add(f"client: {what}: first call, the server initialized", ms_text(client.first_call_s))
        first_ratio = client.first_call_s / library.first_call_s
        add(f"client / library, {query.label}: the first page (each side's first call)", f"{first_ratio:.2f}x", "",
            f"≤ {LIST_RATIO_TARGET}x", met(first_ratio <= LIST_RATIO_TARGET))  # fmt: skip
        add(f"library: {what}: median of {rounds} (min-max; CPU a call)", spread(library),
            f"{figures.library_rss_mb:,.0f} MB")  # fmt: skip
        add(f"client: {what}: median of {rounds} (min-max; CPU a call: client + server)", spread(client),
            f"{figures.server_rss_mb:,.0f} MB")  # fmt: skip
        ratio, cpu_ratio = client.median_s / library.median_s, client.cpu_per_call_s / max(library.cpu_per_call_s, 1e-9)
        add(f"client / library, {query.label}: the same page again, median (CPU)", f"{ratio:.2f}x ({cpu_ratio:.2f}x)",
            "", f"≤ {LIST_RATIO_TARGET}x", met(ratio <= LIST_RATIO_TARGET))  # fmt: skip
        same = library.runs[: len(client.runs)] == client.runs and bool(client.runs)
        add(f"the same runs on both sides, {query.label}",
            "yes" if same and len(client.runs) == len(library.runs)
            else f"the client's {len(client.runs)} are the library's first" if same else "NO: the pages differ")  # fmt: skip
    title = (
        f"(a) the run list, {figures.runs:,} runs: the stdio client against the library in the same process"
        f" (load average {start[0]:.1f} at the start, {' '.join(f'{x:.1f}' for x in end)} at the end;"
        " peak RSS: this process's beside the library, the server's beside the client)"
    )
    return title + "\n" + table(["what", "measured", "peak RSS", "target", ""], rows)


def spread(side: Side) -> str:
    cpu = ms_text(side.cpu_per_call_s)
    if side.server_cpu_s:
        server = side.server_cpu_s / len(side.seconds)
        cpu += f": {ms_text(side.cpu_per_call_s - server)} + {ms_text(server)}"
    return f"{ms_text(side.median_s)} ({ms_text(min(side.seconds))}-{ms_text(max(side.seconds))}; {cpu})"


# -- (b) the single-run tools --------------------------------------------------------------------


@dataclass
class ToolFigures:
    """One tool with its arguments: its first call, the calls after, its largest answer."""

    label: str
    tool: str
    arguments: dict[str, Any]
    server: int = 1
    """Which server answered it (a call that times out has the next tool start a fresh one)."""
    first_s: float = 0.0
    first_call_s: float = 0.0
    """The first call alone (the client's ``first_s`` counts from spawning the server)."""
    seconds: list[float] = field(default_factory=list)
    largest_bytes: int = 0
    server_cpu_s: float = 0.0
    """The server's CPU over the calls after the first."""
    server_rss_mb: float = 0.0
    """The server's peak RSS once this tool's calls were done (the tools run in the table's order)."""
    error: str | None = None

    def p95(self) -> float:
        ranked = sorted(self.seconds)
        return ranked[math.ceil(0.95 * len(ranked)) - 1]  # nearest rank: the 19th of 20


@dataclass
class ToolsFigures:
    store: str
    run_id: str
    records: int
    budget: int
    servers: list[dict[str, float]] = field(default_factory=list)
    """Each server spawned: how long until initialized, and its peak RSS when it was closed."""
    search_word: str = ""
    tools: list[ToolFigures] = field(default_factory=list)
    load: list[list[float]] = field(default_factory=list)


def single_run_tools(run_id: str, records: int) -> list[ToolFigures]:
    """Every single-run tool, in the order called. run_overview without a replay comes first, so
    the first call of all is the one that reads the run; the replay's first call, the one that
    replays it (its verdict is kept for the run: ``replay`` after it reads it from there)."""
    middle, last = records // 2, records - 1
    return [
        ToolFigures("run_overview replay=false", "run_overview", {"run_id": run_id, "replay": False}),
        ToolFigures("run_overview (replays)", "run_overview", {"run_id": run_id}),
        ToolFigures("replay", "replay", {"run_id": run_id}),
        ToolFigures(f"run_records cursor={middle}", "run_records", {"run_id": run_id, "cursor": middle}),
        ToolFigures(f"read_record {middle}", "read_record", {"run_id": run_id, "record": str(middle)}),
        ToolFigures(f"conversation at={last} (the last)", "conversation", {"run_id": run_id, "at": str(last)}),
        ToolFigures("flowchart mermaid", "flowchart", {"run_id": run_id, "format": "mermaid"}),
        ToolFigures("flowchart ascii", "flowchart", {"run_id": run_id, "format": "ascii"}),
        ToolFigures("search", "search", {"run_id": run_id}),  # its text: a word of run_records' answer
    ]


def word_of(outline_answer: Answer) -> str:
    """A word the run's records hold: the longest in the first summary of a run_records answer."""
    try:
        summary = json.loads(outline_answer.text)["outline"][0]["summary"]
    except (ValueError, KeyError, IndexError, TypeError):
        return "order"
    return max(re.findall(r"[A-Za-z]{4,}", summary), key=len, default="order")


@dataclass
class LongRun:
    """(b)'s store, its run, and how many records the run holds."""

    path: Path
    run_id: str
    records: int = 0

    def __post_init__(self) -> None:
        import sqlite3

        with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True) as conn:
            query = "SELECT count(*) FROM bide_steps WHERE run_id = ?"
            self.records = conn.execute(query, (self.run_id,)).fetchone()[0]


async def part_b(args: argparse.Namespace, run: LongRun) -> ToolsFigures:
    store = run.path
    figures = ToolsFigures(str(store), run.run_id, run.records, args.budget, load=[list(os.getloadavg())])
    figures.tools = single_run_tools(run.run_id, run.records)
    say(f"(b) {run.records:,} records of {run.run_id} in {store}: each tool once, then {args.calls} times")
    pending = list(figures.tools)
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-mcp-xdg-") as cache_home:
        while pending:  # one server, unless a call had no answer in time: the next tool then starts another
            async with mcp_server(store, cache_home, args.budget) as spawned:
                server = {"initialized_s": spawned.initialized_s, "peak_rss_mb": 0.0}
                figures.servers.append(server)
                try:
                    while pending:
                        tool = pending.pop(0)
                        tool.server = len(figures.servers)
                        if not await tool_calls(spawned, tool, figures, args):
                            break
                finally:
                    server["peak_rss_mb"] = peak_rss_mb(spawned.pid)
    figures.load.append(list(os.getloadavg()))
    return figures


async def tool_calls(spawned: Spawned, tool: ToolFigures, figures: ToolsFigures, args: argparse.Namespace) -> bool:
    """A tool's first call, then ``--calls`` more (fewer once they have taken ``--timeout`` in
    all); whether the server can go on (it answered every call in time)."""
    if tool.tool == "search":
        tool.arguments["text"] = figures.search_word
        tool.label = f"search text={figures.search_word!r}"
    say(f"(b) {tool.label}")
    first = await call(spawned.client, tool.tool, tool.arguments, args.timeout)
    tool.first_s, tool.largest_bytes, tool.error = first.seconds, first.size, first.error
    if tool.tool == "run_records":
        figures.search_word = word_of(first)
    cpu, spent, timed_out = cpu_seconds(spawned.pid), 0.0, first.timed_out
    while not tool.error and len(tool.seconds) < args.calls and spent < args.timeout:
        answer = await call(spawned.client, tool.tool, tool.arguments, args.timeout)
        timed_out = answer.timed_out
        tool.seconds.append(answer.seconds)
        tool.largest_bytes = max(tool.largest_bytes, answer.size)
        tool.error, spent = answer.error, spent + answer.seconds
    tool.server_cpu_s = cpu_seconds(spawned.pid) - cpu
    tool.server_rss_mb = peak_rss_mb(spawned.pid)
    if tool.error:
        say(f"(b) {tool.label}: {tool.error}")
    return not timed_out


def report_b(figures: ToolsFigures, calls: int) -> str:
    rows: list[list[str]] = []
    for tool in figures.tools:
        label = tool.label + (f" [server {tool.server}]" if len(figures.servers) > 1 else "")
        within = tool.largest_bytes <= figures.budget
        if not tool.seconds:
            rows.append([label, ms_text(tool.first_s), "0", "-", "-", "-", f"{tool.largest_bytes:,} B", "-",
                         f"{tool.server_rss_mb:,.0f} MB", "MISSED (error)"])  # fmt: skip
            continue
        p95 = tool.p95()
        rows.append([
            label, ms_text(tool.first_s), f"{len(tool.seconds)}", ms_text(statistics.median(tool.seconds)),
            ms_text(p95), ms_text(max(tool.seconds)), f"{tool.largest_bytes:,} B" + ("" if within else " OVER"),
            ms_text(tool.server_cpu_s / len(tool.seconds)), f"{tool.server_rss_mb:,.0f} MB",
            met(p95 <= TOOL_P95_TARGET_S and within and not tool.error) + (" (error)" if tool.error else ""),
        ])  # fmt: skip
    start, end = figures.load
    title = (
        f"(b) every single-run tool on {figures.run_id}, {figures.records:,} records: the first call, then up to"
        f" {calls} more (target: p95 ≤ {TOOL_P95_TARGET_S * 1000:.0f} ms, every answer ≤ the budget of"
        f" {figures.budget:,} B; load average {start[0]:.1f} at the start, {' '.join(f'{x:.1f}' for x in end)}"
        " at the end)"
    )
    headers = ["tool", "first call", "calls", "p50", "p95", "max", "largest answer", "server CPU a call",
               "server peak RSS", ""]  # fmt: skip
    notes = [
        f"server {n}: spawn -> initialized {ms_text(server['initialized_s'])}, peak RSS {server['peak_rss_mb']:,.0f} MB"
        + (" (a call had no answer in time: the next tool started a fresh server)" if n < len(figures.servers) else "")
        for n, server in enumerate(figures.servers, start=1)
    ]
    notes.append(
        f"the server's peak RSS: {max(server['peak_rss_mb'] for server in figures.servers):,.0f} MB (the column: its"
        " peak once that tool's calls were done, in the table's order); server CPU to the kernel's tick (10 ms)"
    )
    notes += [f"error, {tool.label}: {tool.error}" for tool in figures.tools if tool.error]
    return "\n".join([title, table(headers, rows), *notes])


# -- the report ----------------------------------------------------------------------------------


def ms_text(seconds: float) -> str:
    milliseconds = seconds * 1000
    if milliseconds < 10:
        return f"{milliseconds:.2f} ms"
    return f"{milliseconds:,.1f} ms" if milliseconds < 1000 else seconds_text(seconds)


def seconds_text(seconds: float) -> str:
    return f"{seconds:,.2f} s"


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=FIRST_RUN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", default="a,b", help="which parts to run: a, b or a,b (default)")
    parser.add_argument("--runs", type=int, default=100_000, help="runs in (a)'s production-shaped store")
    parser.add_argument("--records", type=int, default=50_000, help="records of (b)'s run (it holds 2 more)")
    parser.add_argument("--shape", choices=["uniform", "production"], default="uniform",
                        help="(b)'s run: tui.py's long run of --records records (the default), or the production-shaped"
                             " store's longest (50,000 records, replayable to its end)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=5, help="(a): timed rounds of each side, after the first call")
    parser.add_argument("--calls", type=int, default=20, help="(b): calls of each tool after its first")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="(b): seconds a call may take; and a tool's calls after its first, in all")  # fmt: skip
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="the server's --budget, in bytes")
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache", help="where the built stores are kept")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON after the tables")
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    args = parser.parse_args(argv)
    if args.smoke:
        args.runs, args.records, args.rounds, args.calls, args.timeout = SMOKE_RUNS, 500, 2, 2, 60.0
    args.parts = set(args.parts.replace(",", "").replace(" ", ""))
    if not args.parts or args.parts - {"a", "b"}:
        parser.error("--parts: a, b or a,b")
    return args


async def measure(args: argparse.Namespace, stores: Stores) -> None:

    results: dict[str, Any] = {}
    header = f"agenttui MCP server benchmarks, {datetime.now():%Y-%m-%d %H:%M}, checkout {checkout()}\n{machine()}"
    if args.smoke:
        header += "\nsmoke: tiny sizes; the verdicts below are not judged"
    tables = []
    if stores.production is not None:
        a = await part_a(args, stores.production)
        results["a"] = asdict(a)
        tables.append(report_a(a, args.rounds))
    if stores.long_run is not None:
        b = await part_b(args, stores.long_run)
        results["b"] = asdict(b)
        tables.append(report_b(b, args.calls))
    print("\n\n".join([header, *tables]))
    if args.json:
        print(json.dumps(results, indent=1))


@dataclass
class Stores:
    """Each part's store (and (b)'s run), built first if not cached."""

    production: Path | None
    long_run: LongRun | None


def built_stores(args: argparse.Namespace) -> Stores:
    """Each part's store, built first if not cached (outside the event loop: the builders run their own)."""
    from benchmarks.shapes import LONGEST_RECORDS, LONGEST_RUN, production_store
    from benchmarks.tui import long_run_store

    longest = SMOKE_LONGEST if args.smoke else LONGEST_RECORDS
    production = production_store(Path(args.cache), args.runs, longest=longest) if "a" in args.parts else None
    long_run = None
    if "b" in args.parts and args.shape == "production":
        long_run = LongRun(production_store(Path(args.cache), args.runs, longest=longest), LONGEST_RUN)
    elif "b" in args.parts:
        long_run = LongRun(long_run_store(Path(args.cache), args.records), "long-run")
    return Stores(production, long_run)


def main() -> None:
    args = parse()
    if not args.smoke:
        asyncio.run(measure(args, built_stores(args)))
        return
    with tempfile.TemporaryDirectory(prefix="agenttui-bench-smoke-") as scratch:
        args.cache = scratch
        os.environ["XDG_CACHE_HOME"] = str(Path(scratch) / "xdg")  # never the user's
        asyncio.run(measure(args, built_stores(args)))


if __name__ == "__main__":
    main()
