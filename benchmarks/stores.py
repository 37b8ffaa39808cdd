"""Store benchmarks: loading a long run, listing many runs, and Journal.do() throughput.

    python benchmarks/stores.py [--records 50000] [--runs 100000] [--repeats 5] [--do-records 1024]
                                [--writers 16] [--do-repeats 3] [--db /tmp/agenttui-bench-stores.db]
                                [--rebuild] [--no-postgres] [--no-reads] [--no-writes] [--profile [N]] [--smoke]

Each figure is measured on a SQLite file and on PostgreSQL, next to a baseline measured in the
same process a moment before or after it, and the ratio of the two is reported:

(1) History: ``Journal(store).history(run_id)`` of one ``--records``-entry run (header, run:start,
    model turns with text, reasoning and tool calls, tool results with JSON results, user step
    values, run:complete; canonical and salted, as the Journal writes them) against the raw
    driver reading the same rows (``SELECT seq, name, data ... ORDER BY seq`` in one query) and
    ``json.loads`` of each entry: aiosqlite (the store's driver; plain ``sqlite3`` shown too),
    asyncpg ``fetch``. Target: at most 3x the baseline.
(2) Listing: ``store.runs()`` over ``--runs`` runs (the long run among them, the others of 2-8
    entries) against one ``SELECT DISTINCT run_id FROM bide_steps ORDER BY run_id``. Target: at
    most 2x the baseline.
(3) ``Journal.do()`` throughput, records/s: one writer doing ``--do-records`` sequential ``do()``
    calls on one run, and ``--writers`` tasks each doing its share on its own run (one Journal
    and one store handle, as one runtime process has). Baselines: ``store.insert()`` of the same
    bytes, and the raw driver's insert statement (SQLite: one autocommit INSERT on one
    aiosqlite connection, as the store has; PostgreSQL: the store's INSERT with ``next_seq_v1``
    but without its NOTIFY, on an asyncpg pool of the store's size). Every insert is a durable
    commit (SQLite WAL with synchronous=FULL; PostgreSQL with fsync on). No target.

Times are the best of ``--repeats`` for (1) and (2), store and baseline alternating, and of
``--do-repeats`` passes for (3), each on fresh runs with the three writers in a rotating order. Every
measurement starts after a garbage collection and drops its result before the next one starts.
"CPU" is this process's CPU time (the PostgreSQL server's is not in it). ``--profile`` runs
cProfile over one more call of each subject that missed its target and reports its top functions.

The data of (1) and (2) is built once into ``--db`` (a SQLite file, kept for the next run while its
contents match this script's parameters; ``--rebuild`` forces a new one) by bulk inserts of the
bytes the Journal writes: the long run is written through a real ``Journal`` over a ``MemStore``,
the short runs with the Journal's own encoder and a fresh salt per record. PostgreSQL gets the same
rows by ``COPY`` (its ``seq`` counted per run, as ``next_seq_v1`` numbers them), then ``VACUUM
ANALYZE``, as autovacuum would leave a settled table.

PostgreSQL: the server ``AGENTTUI_BENCH_PG_DSN`` names (a fresh schema in it, dropped afterwards),
or else the test suite's throwaway cluster (``tests/pg.py``; needs ``initdb`` and ``pg_ctl`` on
PATH), switched to fsync on so that its commits cost what SQLite's do.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import gc
import io
import json
import os
import platform
import pstats
import random
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiosqlite  # noqa: E402

from agenttui.journal import (  # noqa: E402
    Journal,
    Message,
    ModelInfo,
    ReasoningPart,
    Record,
    Safety,
    StepKind,
    TextPart,
    ToolUsePart,
    Usage,
    decode_record,
    encode_header,
    encode_record,
    keys,
)
from agenttui.journal.journal import SALT_BYTES  # noqa: E402
from agenttui.stores.base import Store  # noqa: E402
from agenttui.stores.memory import MemStore  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402
from benchmarks._postgres import bench_schema, throwaway_postgres  # noqa: E402

DEFAULT_DB = Path(tempfile.gettempdir()) / "agenttui-bench-stores.db"
HISTORY_RUN = "bench/history-long"
"""The long run of (1); one of the listed runs of (2)."""
HISTORY_TARGET = 3.0
LISTING_TARGET = 2.0
DATA_VERSION = "1"
"""Bump when the generated data changes, so that cached files are rebuilt."""
SEED = 20261129


# -- realistic records -----------------------------------------------------------------------------

WORDS = (  # noqa: SIM905  (one readable paragraph of words beats a 32-item list literal)
    "order refund customer delivered shipment warehouse invoice total carrier tracking status "
    "pending approved address returned damaged replacement credit account payment euro week "
    "priority escalate review policy café naïve résumé → ✓ 配送"
).split()
TOOLS = ("lookup_order", "search_tickets", "refund_order", "get_customer", "list_shipments", "send_email")
STATUSES = ("delivered", "in_transit", "pending", "returned", "cancelled")


def compact_json(value: Any) -> bytes:
    """JSON as the runtime records results and run:start (compact, UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return text[:1].upper() + text[1:] + "."


def tool_args(rng: random.Random, tool: str) -> bytes:
    args: dict[str, Any] = {"order_id": f"A-{rng.randrange(1000, 99999)}"}
    if tool in ("search_tickets", "list_shipments"):
        args = {"query": sentence(rng, rng.randrange(2, 6)), "limit": rng.choice((5, 10, 20))}
        args["include_closed"] = rng.random() < 0.3
    elif tool == "refund_order":
        args["amount"] = {"value": f"{rng.uniform(5, 500):.2f}", "currency": "EUR"}
        args["reason"] = sentence(rng, 6)
    elif tool == "send_email":
        args = {
            "to": f"customer{rng.randrange(10_000)}@example.com",
            "subject": sentence(rng, 4),
            "body": sentence(rng, 30),
        }
    return compact_json(args)


def tool_result(rng: random.Random, tool: str) -> bytes:
    """A result as the runtime records it (``tools.encode_result``): compact, UTF-8."""
    items = [
        {"sku": f"SKU-{rng.randrange(100_000)}", "qty": rng.randrange(1, 5), "price": round(rng.uniform(1, 200), 2),
         "title": sentence(rng, rng.randrange(2, 6))}
        for _ in range(rng.randrange(1, 6))
    ]  # fmt: skip
    value: dict[str, Any] = {
        "order_id": f"A-{rng.randrange(1000, 99999)}",
        "status": rng.choice(STATUSES),
        "total": {"amount": f"{sum(i['price'] * i['qty'] for i in items):.2f}", "currency": "EUR"},
        "items": items,
        "history": [
            {"at": 1_764_000_000_000 + rng.randrange(10**9), "event": rng.choice(STATUSES)}
            for _ in range(rng.randrange(0, 4))
        ],
        "notes": sentence(rng, rng.randrange(3, 25)),
    }
    if tool == "search_tickets":
        count = rng.randrange(1, 8)
        tickets = [
            {"id": rng.randrange(10**6), "subject": sentence(rng, 5), "open": rng.random() < 0.5} for _ in range(count)
        ]
        value = {"tickets": tickets}
    return compact_json(value)


MODEL = ModelInfo("anthropic", "claude-sonnet-4-5")


def model_turn(rng: random.Random, turn: int, calls: list[tuple[str, str]]) -> Record:
    parts: list[Any] = []
    if rng.random() < 0.2:
        parts.append(ReasoningPart(sentence(rng, rng.randrange(20, 80)), signature=f"sig{rng.getrandbits(256):064x}"))
    parts.append(TextPart(sentence(rng, rng.randrange(5, 60))))
    parts += [ToolUsePart(call_id, tool, tool_args(rng, tool)) for call_id, tool in calls]
    return Record(
        keys.llm_key(turn),
        StepKind.MODEL,
        message=Message.assistant(*parts),
        usage=Usage(rng.randrange(500, 50_000), rng.randrange(10, 800), rng.randrange(0, 40_000)),
        finish="tool_use" if calls else "stop",
        raw_finish="tool_use" if calls else "end_turn",
        model=MODEL,
    )


def run_records(rng: random.Random, count: int) -> Iterator[Record]:
    """``count`` records of one run after its header: run:start, turns, step values, run:complete.

    A turn is a model record (text, a reasoning part one time in five, 1-3 tool calls) followed by
    one tool result per call; one turn in ten is followed by a user step's value. With ``count``
    under 3 the run is unfinished (run:start, then one turn's model record at most).
    """
    start = {"input": sentence(rng, 12), "kind": "agent", "settings": {"max_turns": 10_000}, "tools": list(TOOLS)}
    yield Record(keys.RUN_START, StepKind.VALUE, result=compact_json(start))
    left, turn = count - 1, 0
    finished = count >= 3
    while left > (2 if finished else 0):
        room = left - (2 if finished else 0) - 1  # records after this turn's model record
        calls = [
            (f"toolu_{rng.getrandbits(96):024x}", rng.choice(TOOLS))
            for _ in range(min(room, rng.choice((1, 1, 1, 2, 3))))
        ]
        yield model_turn(rng, turn, calls)
        for call_id, tool in calls:
            failed = rng.random() < 0.05
            result = b'{"error":"upstream timeout"}' if failed else tool_result(rng, tool)
            yield Record(keys.tool_key(call_id), StepKind.TOOL_RESULT, tool_use_id=call_id, result=result, is_error=failed,
                         safety=Safety(read_only=tool not in ("refund_order", "send_email")))  # fmt: skip
        left -= 1 + len(calls)
        turn += 1
        if turn % 10 == 0 and left > (2 if finished else 0):
            value = {"turn": turn, "checked": rng.randrange(100), "summary": sentence(rng, 8)}
            yield Record(f"checkpoint/{turn}", StepKind.VALUE, result=compact_json(value))
            left -= 1
    if finished:
        yield model_turn(rng, turn, [])
        yield Record(keys.RUN_COMPLETE, StepKind.VALUE)


def journal_bytes(record: Record) -> bytes:
    """The bytes ``Journal.insert`` stores for ``record``: a fresh salt, the canonical encoding."""
    return encode_record(dataclasses.replace(record, salt=os.urandom(SALT_BYTES)))


def header_bytes() -> bytes:
    """The bytes ``Journal`` writes first in every run (``_check_header``)."""
    return encode_header(os.urandom(SALT_BYTES))


async def long_run_via_journal(count: int) -> list[tuple[str, bytes]]:
    """The long run's ``count`` entries (header included), written by a real Journal into a MemStore."""
    store = MemStore()
    journal = Journal(store)
    for record in run_records(random.Random(SEED), count - 1):
        await journal.append(HISTORY_RUN, record)
    entries = [(e.name, e.data) for e in [e async for e in store.load(HISTORY_RUN)]]
    assert len(entries) == count and entries[0][0] == keys.HEADER, "the long run came out wrong"
    return entries


def short_run_ids(runs: int) -> list[str]:
    rng = random.Random(SEED + 1)
    prefixes = ("support/", "audit-", "nightly/orders-", "triage-")
    ids: set[str] = set()
    while len(ids) < runs - 1:
        ids.add(f"{rng.choice(prefixes)}{rng.getrandbits(64):016x}")
    return sorted(ids)


# -- the cached SQLite file of (1) and (2) ---------------------------------------------------------


def _meta(records: int, runs: int) -> dict[str, str]:
    return {"version": DATA_VERSION, "records": str(records), "runs": str(runs), "history_run": HISTORY_RUN}


def cached_db_valid(path: Path, records: int, runs: int) -> bool:
    """Whether ``path`` is a database this script built with the same parameters, intact."""
    if not path.exists():
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            meta = dict(conn.execute("SELECT key, value FROM agenttui_bench_meta").fetchall())
            if meta != _meta(records, runs):
                return False
            (count,) = conn.execute("SELECT count(*) FROM bide_steps WHERE run_id = ?", (HISTORY_RUN,)).fetchone()
            first_sql = "SELECT name FROM bide_steps WHERE run_id = ? ORDER BY seq LIMIT 1"
            (first,) = conn.execute(first_sql, (HISTORY_RUN,)).fetchone()
            (listed,) = conn.execute("SELECT count(*) FROM (SELECT DISTINCT run_id FROM bide_steps)").fetchone()
            return count == records and first == keys.HEADER and listed == runs
        finally:
            conn.close()
    except (sqlite3.Error, TypeError):
        return False


async def build_db(path: Path, records: int, runs: int) -> None:
    """Build the file of (1) and (2) beside ``path`` and move it into place when complete."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    building = path.with_name(path.name + ".building")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{building}{suffix}").unlink(missing_ok=True)
    store = await SQLiteStore.open(building)  # the store's own schema
    await store.close()
    step(f"data: writing the {records:,}-record run through a Journal")
    long_run = await long_run_via_journal(records)
    step(f"data: encoding {runs - 1:,} short runs")
    rng = random.Random(SEED + 2)
    ids = short_run_ids(runs)
    order = ids[:]
    rng.shuffle(order)  # commit order is not id order
    rows: list[tuple[str, str, bytes]] = []
    middle = len(order) // 2
    for n, run_id in enumerate(order):
        if n == middle:
            rows += [(HISTORY_RUN, name, data) for name, data in long_run]
        rows.append((run_id, keys.HEADER, header_bytes()))
        rows += [(run_id, r.name, journal_bytes(r)) for r in run_records(rng, rng.randrange(1, 8))]
    # The bytes must be canonical (a fixed point of decode -> encode), as the Journal writes them.
    for run_id, name, data in rows[:: max(1, len(rows) // 2000)]:
        assert encode_record(decode_record(data, name)) == data, f"{run_id} {name}: not canonical bytes"
    step(f"data: inserting {len(rows):,} rows into {path}")
    conn = sqlite3.connect(building, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", rows)
        conn.execute("CREATE TABLE agenttui_bench_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.executemany("INSERT INTO agenttui_bench_meta VALUES (?, ?)", _meta(records, runs).items())
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
        conn.execute("PRAGMA journal_mode = WAL")  # as SQLiteStore leaves every file it writes
    finally:
        conn.close()
    os.replace(building, path)


def db_rows(path: Path) -> Iterator[tuple[str, int, str, bytes]]:
    """Every row of the file as PostgreSQL stores it: (run_id, seq counted per run, name, data)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cursor = conn.execute("SELECT run_id, name, data FROM bide_steps ORDER BY seq")
        counters: dict[str, int] = {}
        for run_id, name, data in cursor:
            seq = counters.get(run_id, 0)
            counters[run_id] = seq + 1
            yield run_id, seq, name, data
    finally:
        conn.close()


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Timing:
    wall: list[float] = dataclasses.field(default_factory=list)
    cpu: list[float] = dataclasses.field(default_factory=list)

    @property
    def best_wall(self) -> float:
        return min(self.wall)

    @property
    def best_cpu(self) -> float:
        return min(self.cpu)


async def timed(operation: Callable[[], Awaitable[Any]], timing: Timing, summarize: Callable[[Any], Any] = len) -> Any:
    """Run ``operation`` once under both clocks and return ``summarize(result)``.

    The result itself is dropped at once, and garbage collected before the start, so that no
    measurement's collections have to walk the objects another one made.
    """
    gc.collect()
    cpu_started, started = time.process_time(), time.perf_counter()
    result = await operation()
    timing.wall.append(time.perf_counter() - started)
    timing.cpu.append(time.process_time() - cpu_started)
    return summarize(result)


@dataclass
class Comparison:
    """One figure and its baseline, from the same process, alternating."""

    what: str
    store: str
    items: int
    subject: Timing
    baseline: Timing
    baseline_name: str
    target: float | None = None
    extra: list[tuple[str, Timing]] = dataclasses.field(default_factory=list)
    """More baselines shown for information (not in the ratio)."""
    profile: list[str] = dataclasses.field(default_factory=list)
    """cProfile's top functions for a subject that missed its target (``--profile``)."""

    @property
    def ratio(self) -> float:
        return self.subject.best_wall / self.baseline.best_wall

    @property
    def cpu_ratio(self) -> float:
        return self.subject.best_cpu / self.baseline.best_cpu

    @property
    def met(self) -> bool:
        return self.target is None or self.ratio <= self.target


async def compare(what: str, store: str, items: int, subject: Callable[[], Awaitable[Any]], baseline_name: str,
                  baseline: Callable[[], Awaitable[Any]], repeats: int, target: float | None,
                  extra: Sequence[tuple[str, Callable[[], Awaitable[Any]]]] = (),
                  summarize: Callable[[Any], Any] = len, baseline_summarize: Callable[[Any], Any] = len,
                  check: Callable[[Any, Any], None] | None = None) -> Comparison:  # fmt: skip
    """Time ``subject`` and ``baseline`` (then each ``extra``) ``repeats`` times, alternating.

    ``check(subject's summary, baseline's summary)`` runs after every round: the two must agree.
    """
    result = Comparison(
        what, store, items, Timing(), Timing(), baseline_name, target, [(n, Timing()) for n, _ in extra]
    )
    for _ in range(repeats):
        expected = await timed(baseline, result.baseline, baseline_summarize)
        got = await timed(subject, result.subject, summarize)
        for (_, operation), (_, timing) in zip(extra, result.extra, strict=True):
            await timed(operation, timing)
        if check is not None:
            check(got, expected)
    return result


async def profile(comparison: Comparison, subject: Callable[[], Awaitable[Any]], top: int) -> None:
    """cProfile one more run of a subject that missed its target; the top functions go in the report."""
    profiler = cProfile.Profile()
    profiler.enable()
    await subject()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    lines = out.getvalue().strip().splitlines()
    start = next((n for n, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    comparison.profile = [lines[0].strip(), *(line.rstrip() for line in lines[start:])]


# -- (1) history and (2) listing -------------------------------------------------------------------

HISTORY_SQL = "SELECT seq, name, data FROM {steps} WHERE run_id = {p} ORDER BY seq"
LISTING_SQL = "SELECT DISTINCT run_id FROM {steps} ORDER BY run_id"


def history_summary(records: list[Record]) -> tuple[int, bool, int]:
    return len(records), bool(records) and records[0].is_header, sum(1 for r in records if r.unreadable)


def check_history(got: tuple[int, bool, int], expected: int) -> None:
    count, header_first, unreadable = got
    assert count == expected, f"history: {count} records, the baseline read {expected}"
    assert header_first and not unreadable, f"history: header first {header_first}, {unreadable} records unreadable"


def same(result: Any) -> Any:
    return result


def check_listing(listed: list[str], raw: list[str]) -> None:
    assert listed == raw, f"listing: {len(listed)} runs listed, the baseline read {len(raw)} (or in another order)"


async def bench_sqlite_reads(path: Path, records: int, runs: int, repeats: int, profiling: int) -> list[Comparison]:
    store = await SQLiteStore.open(path, read_only=True)
    raw = await aiosqlite.connect(f"file:{path}?mode=ro", uri=True)
    plain = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    journal = Journal(store)
    history_sql = HISTORY_SQL.format(steps="bide_steps", p="?")
    listing_sql = LISTING_SQL.format(steps="bide_steps")

    async def raw_history() -> list[Any]:
        rows = await raw.execute_fetchall(history_sql, (HISTORY_RUN,))
        return [json.loads(data) for _, _, data in rows]

    async def plain_history() -> list[Any]:
        return [json.loads(data) for _, _, data in plain.execute(history_sql, (HISTORY_RUN,)).fetchall()]

    async def listed() -> list[str]:
        return [run_id async for run_id in store.runs()]

    async def raw_listing() -> list[str]:
        return [run_id for (run_id,) in await raw.execute_fetchall(listing_sql)]

    async def plain_listing() -> list[str]:
        return [run_id for (run_id,) in plain.execute(listing_sql).fetchall()]

    try:
        step(f"(1) SQLite: history of {records:,} records")
        history = await compare("history", "SQLite", records, lambda: journal.history(HISTORY_RUN), "aiosqlite + json.loads",
                                raw_history, repeats, HISTORY_TARGET, [("sqlite3 + json.loads", plain_history)],
                                summarize=history_summary, check=check_history)  # fmt: skip
        if profiling and not history.met:
            await profile(history, lambda: journal.history(HISTORY_RUN), profiling)
        step(f"(2) SQLite: listing {runs:,} runs")
        listing = await compare("listing", "SQLite", runs, listed, "aiosqlite SELECT DISTINCT", raw_listing, repeats,
                                LISTING_TARGET, [("sqlite3 SELECT DISTINCT", plain_listing)],
                                summarize=same, baseline_summarize=same, check=check_listing)  # fmt: skip
        if profiling and not listing.met:
            await profile(listing, listed, profiling)
    finally:
        plain.close()
        await raw.close()
        await store.close()
    return [history, listing]


async def bench_postgres_reads(
    dsn: str, schema: str, path: Path, records: int, runs: int, repeats: int, profiling: int
) -> list[Comparison]:
    import asyncpg

    from agenttui.stores.postgres import PostgresStore

    store = await PostgresStore.open(dsn, schema=schema)
    raw = await asyncpg.connect(dsn)
    steps = f'"{schema}".bide_steps'
    try:
        step("data: copying the rows into PostgreSQL")
        await raw.copy_records_to_table("bide_steps", schema_name=schema, columns=["run_id", "seq", "name", "data"],
                                        records=db_rows(path))  # fmt: skip
        await raw.execute(f"VACUUM ANALYZE {steps}")
        journal = Journal(store)
        history_sql = HISTORY_SQL.format(steps=steps, p="$1")
        listing_sql = LISTING_SQL.format(steps=steps)

        async def raw_history() -> list[Any]:
            return [json.loads(row["data"]) for row in await raw.fetch(history_sql, HISTORY_RUN)]

        async def listed() -> list[str]:
            return [run_id async for run_id in store.runs()]

        async def raw_listing() -> list[str]:
            return [row["run_id"] for row in await raw.fetch(listing_sql)]

        step(f"(1) PostgreSQL: history of {records:,} records")
        history = await compare("history", "PostgreSQL", records, lambda: journal.history(HISTORY_RUN),
                                "asyncpg fetch + json.loads", raw_history, repeats, HISTORY_TARGET,
                                summarize=history_summary, check=check_history)  # fmt: skip
        if profiling and not history.met:
            await profile(history, lambda: journal.history(HISTORY_RUN), profiling)
        step(f"(2) PostgreSQL: listing {runs:,} runs")
        listing = await compare("listing", "PostgreSQL", runs, listed, "asyncpg SELECT DISTINCT", raw_listing, repeats,
                                LISTING_TARGET, summarize=same, baseline_summarize=same, check=check_listing)  # fmt: skip
        if profiling and not listing.met:
            await profile(listing, listed, profiling)
    finally:
        await raw.close()
        await store.close()
    return [history, listing]


# -- (3) Journal.do() throughput -------------------------------------------------------------------


@dataclass
class Throughput:
    store: str
    mode: str
    """"1 writer" or "<n> runs"."""
    records: int
    rows: list[tuple[str, Timing]]
    """(what, timing): do() first, then the baselines."""


def do_workload(records: int, writers: int, prefix: str) -> tuple[dict[str, list[Record]], dict[str, list[Record]]]:
    """The runs of the 1-writer and the n-writer measurements: ``records`` records each in all."""
    rng = random.Random(SEED + 3)
    sequential = {f"{prefix}/seq": list(run_records(rng, records))}
    concurrent = {f"{prefix}/conc-{k:02d}": list(run_records(rng, records // writers)) for k in range(writers)}
    return sequential, concurrent


async def drive(runs: dict[str, list[Record]], write: Callable[[str, Record], Awaitable[Any]]) -> None:
    """Each run's records written in order by its own task; all runs at once."""

    async def one(run_id: str, records: list[Record]) -> None:
        for record in records:
            await write(run_id, record)

    await asyncio.gather(*(one(run_id, records) for run_id, records in runs.items()))


def encoded(runs: dict[str, list[Record]]) -> dict[str, list[Record]]:
    """The same runs with each record's bytes made ahead (in ``raw``), header first, for the baselines."""
    out = {}
    for run_id, records in runs.items():
        head = Record(keys.HEADER, StepKind.HEADER, raw=header_bytes())
        out[run_id] = [head, *(dataclasses.replace(r, raw=journal_bytes(r)) for r in records)]
    return out


def journal_do(journal: Journal) -> Callable[[str, Record], Awaitable[Any]]:
    async def write(run_id: str, record: Record) -> None:
        async def step_() -> Record:
            return record

        await journal.do(run_id, record.name, step_)

    return write


async def bench_throughput(
    name: str,
    store: Store,
    raw_name: str,
    raw_insert: Callable[[str, str, bytes], Awaitable[Any]],
    records: int,
    writers: int,
    repeats: int,
    warm: Callable[[], Awaitable[Any]] | None = None,
) -> list[Throughput]:
    """Each mode ``repeats`` times on fresh runs, the three writers in a rotating order; best of each."""
    prefix = f"do-{uuid.uuid4().hex[:8]}"
    results = []
    for index, mode in enumerate(("1 writer", f"{writers} runs")):
        timings = {"do": Timing(), "insert": Timing(), "raw": Timing()}
        for repeat in range(repeats):
            runs = do_workload(records, writers, f"{prefix}-{repeat}")[index]
            total = sum(len(r) for r in runs.values())
            step(f"(3) {name}: {total:,} records, {mode} ({repeat + 1}/{repeats})")
            pre = encoded(runs)
            write = journal_do(Journal(store))
            writes: dict[str, Callable[[], Awaitable[Any]]] = {
                "do": lambda: drive(runs, write),
                "insert": lambda: drive({f"{r}/insert": recs for r, recs in pre.items()},
                                        lambda run_id, rec: store.insert(run_id, rec.name, rec.raw)),
                "raw": lambda: drive({f"{r}/raw": recs for r, recs in pre.items()},
                                     lambda run_id, rec: raw_insert(run_id, rec.name, rec.raw)),
            }  # fmt: skip
            order = list(writes)[repeat % 3 :] + list(writes)[: repeat % 3]
            for what in order:
                if warm is not None:
                    await warm()  # every pool at full size before the clock starts
                await timed(writes[what], timings[what], same)
        # +1 a run: its header, which do() writes before the run's first record.
        rows = [("Journal.do()", timings["do"]), ("store.insert()", timings["insert"]), (raw_name, timings["raw"])]
        results.append(Throughput(name, mode, total + len(runs), rows))
    return results


async def bench_sqlite_writes(workdir: Path, records: int, writers: int, repeats: int) -> list[Throughput]:
    store = await SQLiteStore.open(workdir / "do.db")
    raw_path = workdir / "raw.db"
    await (await SQLiteStore.open(raw_path)).close()  # the same schema, WAL
    raw = await aiosqlite.connect(raw_path, isolation_level=None)
    await raw.execute("PRAGMA busy_timeout = 30000")
    mode = (await raw.execute_fetchall("PRAGMA journal_mode"))[0][0]
    sync = (await raw.execute_fetchall("PRAGMA synchronous"))[0][0]
    assert mode == "wal" and sync == 2, f"SQLite is not WAL + synchronous=FULL ({mode}, {sync})"
    sql = "INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?) ON CONFLICT (run_id, name) DO NOTHING RETURNING seq"

    async def raw_insert(run_id: str, name: str, data: bytes) -> Any:
        return await raw.execute_fetchall(sql, (run_id, name, data))

    try:
        return await bench_throughput("SQLite", store, "aiosqlite INSERT", raw_insert, records, writers, repeats)
    finally:
        await raw.close()
        await store.close()


async def bench_postgres_writes(dsn: str, schema: str, records: int, writers: int, repeats: int) -> list[Throughput]:
    import asyncpg

    from agenttui.stores.postgres import POOL_SIZE, PostgresStore

    store = await PostgresStore.open(dsn, schema=schema)

    async def no_reset(_conn: asyncpg.Connection) -> None:
        return None

    raw = await asyncpg.create_pool(dsn, min_size=1, max_size=POOL_SIZE, reset=no_reset)
    sql = (f'INSERT INTO "{schema}".bide_steps (run_id, seq, name, data) VALUES ($1, "{schema}".bide_next_seq_v1($1), $2, $3)'
           " ON CONFLICT (run_id, name) DO NOTHING RETURNING seq")  # fmt: skip

    async def raw_insert(run_id: str, name: str, data: bytes) -> Any:
        return await raw.fetchval(sql, run_id, name, data)

    async def warm() -> None:
        await asyncio.gather(*(store.get("warm-up", "x") for _ in range(2 * POOL_SIZE)))
        await asyncio.gather(*(raw.fetchval("SELECT 1") for _ in range(2 * POOL_SIZE)))

    try:
        return await bench_throughput(
            "PostgreSQL", store, "asyncpg INSERT", raw_insert, records, writers, repeats, warm
        )
    finally:
        await raw.close()
        await store.close()


# -- report ----------------------------------------------------------------------------------------


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| "
        + " | ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False)))
        + " |"
        for r in rows
    ]
    return "\n".join([line, rule, *body])


def loadavg() -> str:
    return " / ".join(f"{load:.1f}" for load in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return (f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
            f"{platform.system()} {platform.release()}")  # fmt: skip


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def comparison_table(comparisons: list[Comparison], unit: str) -> str:
    rows = []
    for c in comparisons:
        rows.append([f"{c.store}: {c.what}", ms(c.subject.best_wall), ms(c.subject.best_cpu),
                     f"{c.items / c.subject.best_wall:,.0f}", "", ""])  # fmt: skip
        for name, timing in [(c.baseline_name, c.baseline), *c.extra]:
            ratio = c.subject.best_wall / timing.best_wall
            cpu_ratio = c.subject.best_cpu / timing.best_cpu
            mark = "" if timing is c.baseline else " (info)"
            rows.append([f"  baseline: {name}{mark}", ms(timing.best_wall), ms(timing.best_cpu),
                         f"{c.items / timing.best_wall:,.0f}", f"{ratio:.2f}x", f"{cpu_ratio:.2f}x"])  # fmt: skip
    return table(["", "wall", "CPU", f"{unit}/s", "ratio (wall)", "ratio (CPU)"], rows)


def verdicts(comparisons: list[Comparison], judged: bool = True) -> list[str]:
    return [
        f"{c.store} {c.what}: {c.ratio:.2f}x the baseline by the wall clock ({c.cpu_ratio:.2f}x by CPU), "
        f"target <= {c.target:g}x: {('met' if c.met else 'MISSED') if judged else 'smoke: not judged'}"
        for c in comparisons
        if c.target is not None
    ]


def throughput_table(results: list[Throughput]) -> str:
    rows = []
    for t in results:
        first = t.rows[0][1]
        for n, (name, timing) in enumerate(t.rows):
            wall, cpu = timing.best_wall, timing.best_cpu
            rows.append([
                f"{t.store}, {t.mode}" if n == 0 else "", name, f"{t.records:,}", ms(wall), ms(cpu),
                f"{t.records / wall:,.0f}", f"{t.records / cpu:,.0f}", "" if n == 0 else f"{first.best_wall / wall:.2f}x",
            ])  # fmt: skip
    return table(
        ["store, writers", "writes by", "records", "wall", "CPU", "records/s", "records/CPU-s", "do() / this"], rows
    )


def report(reads: list[Comparison], writes: list[Throughput], args: argparse.Namespace, loads: list[str]) -> str:
    out = [f"agenttui store benchmarks, {date.today().isoformat()}", machine(),
           f"load average (1/5/15 min) at start {loads[0]}, at end {loads[-1]}", ""]  # fmt: skip
    history = [c for c in reads if c.what == "history"]
    listing = [c for c in reads if c.what == "listing"]
    if history:
        out += [f"(1) Journal.history() of a {args.records:,}-record run vs the raw driver + json.loads (best of {args.repeats})",
                comparison_table(history, "records"), ""]  # fmt: skip
    if listing:
        out += [f"(2) store.runs() over {args.runs:,} runs vs SELECT DISTINCT run_id (best of {args.repeats})",
                comparison_table(listing, "runs"), ""]  # fmt: skip
    if reads:
        out += [*verdicts(history + listing, judged=not args.smoke), ""]
        for c in reads:
            if c.profile:
                out += [f"cProfile of {c.store} {c.what} (top functions by own time):", *c.profile, ""]
    if writes:
        out += [f"(3) Journal.do() throughput: {args.do_records:,} records by 1 writer, and by {args.writers} runs at once "
                f"(+1 header a run); best of {args.do_repeats} passes, each on fresh runs", throughput_table(writes)]  # fmt: skip
    return "\n".join(out)


def step(what: str) -> None:
    """Progress on stderr, so that stdout holds only the report."""
    print(f"... {what} (load {loadavg()})", file=sys.stderr, flush=True)


async def main(args: argparse.Namespace) -> None:
    if args.smoke and args.db is None:  # every file and the status index's cache in a fresh directory
        with tempfile.TemporaryDirectory(prefix="agenttui-stores-smoke-") as temporary:
            os.environ["XDG_CACHE_HOME"] = str(Path(temporary) / "xdg-cache")
            args.db = str(Path(temporary) / "stores.db")
            await measure(args)
    else:
        await measure(args)


async def measure(args: argparse.Namespace) -> None:
    loads = [loadavg()]
    db = Path(args.db)
    if args.rebuild or not cached_db_valid(db, args.records, args.runs):
        step(f"data: building {db}")
        started = time.perf_counter()
        await build_db(db, args.records, args.runs)
        step(f"data: built in {time.perf_counter() - started:.1f} s")
        assert cached_db_valid(db, args.records, args.runs), f"{db} did not come out as expected"
    else:
        step(f"data: reusing {db}")
    reads: list[Comparison] = []
    writes: list[Throughput] = []
    workdir = Path(tempfile.mkdtemp(prefix="agenttui-bench-stores-"))
    try:
        if not args.no_reads:
            reads += await bench_sqlite_reads(db, args.records, args.runs, args.repeats, args.profile)
        if not args.no_writes:
            writes += await bench_sqlite_writes(workdir, args.do_records, args.writers, args.do_repeats)
        if not args.no_postgres:
            async with throwaway_postgres() as dsn:
                if not args.no_reads:
                    async with bench_schema(dsn) as schema:
                        reads += await bench_postgres_reads(
                            dsn, schema, db, args.records, args.runs, args.repeats, args.profile
                        )
                if not args.no_writes:
                    async with bench_schema(dsn) as schema:
                        writes += await bench_postgres_writes(
                            dsn, schema, args.do_records, args.writers, args.do_repeats
                        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    reads.sort(key=lambda c: (c.what != "history", c.store != "SQLite"))
    loads.append(loadavg())
    print(report(reads, writes, args, loads))


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """The first run builds the SQLite file of (1) and (2) (--db, default /tmp/agenttui-bench-stores.db,
370 MB: a run of --records entries and --runs runs), about 85 s on this 2-core machine, and
reuses it while its contents match the parameters (--rebuild forces a new one); PostgreSQL gets
its copy in a fresh schema each run (a minute or two). --smoke runs every part at tiny sizes
(SMOKE below) on a file in a fresh temporary directory: seconds, PostgreSQL's cluster included."""

SMOKE = {"records": 300, "runs": 200, "repeats": 1, "do_records": 64, "writers": 4, "do_repeats": 1, "db": None}
"""``--smoke``'s defaults (an option given still wins): the file of (1) and (2) in a temporary directory."""


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog=FIRST_RUN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=50_000, help="entries of the long run of (1) (default 50,000)")
    parser.add_argument("--runs", type=int, default=100_000, help="runs listed in (2) (default 100,000)")
    parser.add_argument(
        "--do-records", type=int, default=1024, help="records written by do() in (3), per mode (default 1,024)"
    )
    parser.add_argument("--writers", type=int, default=16, help="concurrent runs in (3) (default 16)")
    parser.add_argument("--do-repeats", type=int, default=3, help="passes of (3) to take the best of (default 3)")
    parser.add_argument("--repeats", type=int, default=5, help="repeats of (1) and (2) to take the best of (default 5)")
    parser.add_argument("--db", default=str(DEFAULT_DB), help=f"the cached data of (1) and (2) (default {DEFAULT_DB})")
    parser.add_argument("--rebuild", action="store_true", help="rebuild --db even if it is valid")
    parser.add_argument("--no-reads", action="store_true", help="skip (1) and (2)")
    parser.add_argument("--no-writes", action="store_true", help="skip (3)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument(
        "--profile",
        type=int,
        nargs="?",
        const=15,
        default=0,
        metavar="N",
        help="cProfile each subject that misses its target and report its top N functions (default 15)",
    )
    parser.add_argument("--smoke", action="store_true", help="every part at tiny sizes, in a temporary directory")
    if "--smoke" in (sys.argv[1:] if argv is None else argv):
        parser.set_defaults(**SMOKE)
    args = parser.parse_args(argv)
    if args.records < 3 or args.runs < 2 or args.writers < 1 or args.do_records < args.writers:
        parser.error("need --records >= 3, --runs >= 2, --writers >= 1 and --do-records >= --writers")
    return args


if __name__ == "__main__":
    asyncio.run(main(parse()))
