"""Production-shaped stores for the benchmarks, every run driven by agenttui's own runtime.

    python benchmarks/shapes.py [--runs 100000] [--cache DIR] [--check sample|all] [--smoke]

builds the store once (cached under ``--cache`` as ``v<SHAPE_VERSION>-production-<runs>.db``, with
``.shape.json`` beside it: what it holds and how long it took), then prints its shape and checks
its statuses: ``sample`` (the default, a few seconds) reads up to 50 runs of each status, by the
summary path and by the exact rules; ``all`` reads every run's status as ``agenttui runs`` does.

What a store of ``runs`` runs holds (sub-runs count as runs, as the runs list shows them):

- **Statuses as production has them**: mostly complete (answered, refunded after an approval,
  denied, a failed lookup, asked the customer, slept until a card settled, asked a sub-agent),
  and a percent or two each of the unfinished kinds. Each is made the way it happens: the agent
  loop (``Agent``, ``ScriptedModel``, the refund desk's tools) driven until it pauses, crashes or
  ends; a person's ``approve``, ``deny``, ``answer`` or ``cancel``; a re-drive; a process that
  dies mid-turn (stalled), mid-refund (halted) or inside a sub-agent; a live lease held by
  another worker (in flight) or a dead worker's lapsed one. What the Python runtime cannot write
  is written record by record through the ``Journal`` as the Go SDK writes it: sagas rolled back
  (aborted) or asked to (cancelling), a signal sent ahead of its run (not started), and a record
  cut short (unreadable).
- **Lengths**: most runs 5-50 records, 1% about 500, 0.01% about 5,000, and one of 50,000
  (``LONGEST_RUN``, a complete audit): the padding is order lookups, one or two a turn.
- **Large tool results**: 0.5% of runs fetch an order's history of 100 kB-1 MB (the longest run
  fetches five).
- **Ids and times**: ids of several styles, so that the runs list interleaves every kind; each
  run has a fixed clock of its own, 30 s after the previous run's (attempts, timers), from
  2025-09-01. Sleeping runs wake in 2100, so they read as sleeping whenever this runs.

The runs are driven concurrently on one event loop, a batch at a time, into a ``MemStore``; each
batch's entries are copied to the SQLite file in commit order (so runs interleave in the file as
they do in production) with their lease rows. The plan comes from a seeded generator and every
clock is fixed: the same store each time, but for the random salts and attempt claims the
runtime draws, and lease expiries (judged when the store is built).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agenttui.agent.loop import Agent  # noqa: E402
from agenttui.agent.model import Model  # noqa: E402
from agenttui.agent.pauses import Interrupted, PendingApproval, RunPaused  # noqa: E402
from agenttui.agent.scripted import Call, ScriptedModel, Turn  # noqa: E402
from agenttui.agent.tools import Tool, tool  # noqa: E402
from agenttui.demo.build import CrashingModel, SimulatedCrash, write_saga  # noqa: E402
from agenttui.demo.desk import ORDERS, SPECIALIST_TURNS, SYSTEM_PROMPT, Effects, desk_tools, refund_story, turns  # noqa: E402
from agenttui.journal import Journal, Record, StepKind, keys  # noqa: E402
from agenttui.journal.codec import go_json  # noqa: E402
from agenttui.journal.keys import sub_run_id  # noqa: E402
from agenttui.journal.record import Usage  # noqa: E402
from agenttui.runs.recovery.actions import answer, approve, cancel, deny  # noqa: E402
from agenttui.runs.statuses.status import RunState, list_statuses, run_status, statuses  # noqa: E402
from agenttui.stores.memory import MemStore  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402

SHAPE_VERSION = 1
"""Bumped when what a production store holds changes, so a stale cache is rebuilt."""
SEED = 14
LONGEST_RUN = "audit-ledger-2025"
LONGEST_RECORDS = 50_000
BASE_CLOCK = datetime(2025, 9, 1, tzinfo=UTC)
FAR_WAKE = datetime(2100, 1, 1, tzinfo=UTC)
LIVE_LEASE_S = 100 * 365 * 86400.0
"""In-flight runs' leases: live however long the benchmark takes, and whenever it runs."""
LAPSED_S = 3600.0
"""A dead worker's lease lapsed this long before the store was built."""
BATCH_RUNS = 2000
"""Root runs driven together into one MemStore before it is copied to the file."""
BIG_RESULT_SHARE = 0.005
BIG_RESULT_BYTES = (100_000, 1_000_000)
LENGTH_BUCKETS = ((1, 4), (5, 50), (51, 1_000), (1_001, 10_000), (10_001, 10**9))


# -- the agent: the refund desk, and one tool whose results are large -------------------------------


@dataclass
class HistoryExport:
    order_id: str
    size: int
    """About how many bytes of history to return."""


@tool(read_only=True)
async def export_order_history(args: HistoryExport) -> dict[str, Any]:
    """Every event in an order's history, as a warehouse system exports it (large)."""
    events = [
        {"at": f"2025-08-{1 + n % 28:02d}T{n % 24:02d}:{n % 60:02d}:00Z", "event": ("scanned", "moved", "packed")[n % 3],
         "site": f"DC-{n % 17:02d}", "note": f"{args.order_id} line {n}: handled by shift {n % 3}, bay {n % 41}"}
        for n in range(max(1, args.size // 130))
    ]  # fmt: skip
    return {"order_id": args.order_id, "events": events}


@dataclass(frozen=True)
class Desk:
    """The tools every run is driven with, built once (each tool derives its schema on creation)."""

    tools: tuple[Tool, ...]
    crashing: tuple[Tool, ...]
    """The same, but a refund kills the process after its attempt marker (a halted run)."""

    @classmethod
    def build(cls) -> Desk:
        return cls(
            (*desk_tools(), export_order_history),
            (*desk_tools(Effects(on_refund=_die)), export_order_history),
        )


def _die(*_: object) -> None:
    raise SimulatedCrash()


# -- the plan: which runs, of what story, how long ------------------------------------------------


@dataclass(frozen=True)
class RunPlan:
    run_id: str
    story: str
    records: int
    """The length aimed at; a story longer than that is not cut."""
    clock: datetime
    big_results: tuple[int, ...] = ()
    """Sizes of the large tool results the run fetches, in bytes."""
    holder: str = ""
    """The worker holding the run's lease: live for an in-flight run; for a stalled or a halted
    one, a worker that died (its lease lapsed)."""


@dataclass(frozen=True)
class Story:
    state: RunState
    weight: float
    """Percent of root runs."""
    drive: Callable[[RunDriver], Awaitable[None]]
    own_records: int
    """Records the story writes with no padding (lookups fill the rest of ``RunPlan.records``)."""
    child: RunState | None = None
    """The status of the one sub-run the story starts, if it starts one."""
    padded: bool = True
    """False for the stories the Go SDK writes (fixed records); they are never long."""


class RunDriver:
    """Drives one planned run into a store, as its process and the people around it would."""

    def __init__(self, store: MemStore, desk: Desk, plan: RunPlan) -> None:
        self.store, self.desk, self.plan = store, desk, plan
        self.padding = padding_turns(plan)

    @property
    def run_id(self) -> str:
        return self.plan.run_id

    async def drive(
        self,
        tail: Sequence[Turn],
        *,
        crash_at: int | None = None,
        crash_in: str = "refund_desk",
        tools: Sequence[Tool] | None = None,
        later: timedelta = timedelta(),
    ) -> RunPaused | None:
        """Drive (or re-drive) the run: the padding, then ``tail``. Returns the pause it stopped
        at, or None when it finished or its process died (``crash_at``: the turn it died asking
        for, counted from the tail's first; ``later``: how long after the run's clock)."""
        script = [*self.padding, *tail]
        model: Model = ScriptedModel(script, agents={"refunds_specialist": SPECIALIST_TURNS})
        if crash_at is not None:
            turn = crash_at + (len(self.padding) if crash_in == "refund_desk" else 0)
            model = CrashingModel(model, turn, agent=crash_in)
        clock = self.plan.clock + later
        agent = Agent(model, self.store, *(tools or self.desk.tools), name="refund_desk", system_prompt=SYSTEM_PROMPT,
                      max_turns=len(script) + 1, clock=lambda: clock)  # fmt: skip
        try:
            await agent.run(self.run_id, PROMPTS[len(self.run_id) % len(PROMPTS)])
        except RunPaused as pause:
            return pause
        except SimulatedCrash:
            pass
        return None

    async def hold_lease(self) -> None:
        """The lease of the worker named in the plan: live for a run in flight, lapsed otherwise."""
        live = self.plan.story == "in-flight"
        await self.store.acquire_lease(self.run_id, self.plan.holder, LIVE_LEASE_S if live else -LAPSED_S)

    def tail_call(self, tail_turn: int, index: int = 0) -> str:
        """The id ScriptedModel gives the ``index``-th call of the tail's turn ``tail_turn``."""
        return f"call_{len(self.padding) + tail_turn}_{index}"


PROMPTS = [
    "Check my open orders and refund anything that arrived damaged.",
    "Where is my refund? Order A-1002.",
    "Audit today's orders for anomalies.",
    "I returned the keyboard last week, can I get my money back?",
]


def padding_turns(plan: RunPlan) -> list[Turn]:
    """Order lookups that bring the run to its planned length: 2 records a turn (3 with two
    calls), the large results' fetches among them."""
    missing = max(0, plan.records - STORIES[plan.story].own_records) if STORIES[plan.story].padded else 0
    calls: list[list[Call]] = [[Call("lookup_order", {"order_id": ORDER_IDS[n % 5]})] for n in range(missing // 2)]
    if missing % 2 and calls:
        calls[-1].append(Call("lookup_order", {"order_id": ORDER_IDS[(missing + 1) % 5]}))
    for n, size in enumerate(plan.big_results):
        fetch = Call("export_order_history", {"order_id": ORDER_IDS[n % 5], "size": size})
        if n * 7 < len(calls):
            calls[n * 7][0] = fetch
        else:
            calls.append([fetch])
    return [Turn(f"Checking {' and '.join(c.args['order_id'] for c in turn)} ({n + 1}).", turn,
                 usage=Usage(420 + 40 * min(n, 3000), 25 + n % 40, 380 if n else 0)) for n, turn in enumerate(calls)]  # fmt: skip


ORDER_IDS = sorted(ORDERS)


# -- the stories: how each status comes about ------------------------------------------------------

ANSWER = [Turn("Everything checks out: nothing needs a refund.", usage=Usage(900, 40))]
QUESTION = turns(
    ("Let me look that order up.", [Call("lookup_order", {"order_id": "A-1001"})]),
    ("Before I refund: card or store credit?", [Call("ask_customer", {"question": "Refund to your card, or as store credit?"})]),
    ("Noted: store credit of $42.50 issued for order A-1001.", []),
)  # fmt: skip
DELEGATE = turns(
    ("Let me ask the refunds specialist.", [Call("refunds_specialist", {"task": "Is order A-1004 eligible for a full refund?"})]),
    ("Good news: order A-1004 is eligible for a full refund.", []),
)  # fmt: skip
FAILED_LOOKUP = turns(
    ("Let me find order Z-0042.", [Call("lookup_order", {"order_id": "Z-0042"})]),
    ("I could not find order Z-0042. Could you check the number on your receipt?", []),
)


def settlement(wake: timedelta) -> list[Turn]:
    hours = wake.total_seconds() / 3600
    return turns(
        ("Refund submitted; waiting for the card network to settle it.", [Call("wait_for_settlement", {"order_id": "A-1002", "hours": hours})]),
        ("Settled: the money is back on your card.", []),
    )  # fmt: skip


REFUND = refund_story("A-1002", 129.0)
DECLINED = [
    *refund_story("A-1003", 18.75, email=False)[:2],
    Turn("The refund was declined; I've opened a lost-parcel claim instead."),
]


async def answered(run: RunDriver) -> None:
    await run.drive(ANSWER)


async def refunded(run: RunDriver) -> None:
    pause = await run.drive(REFUND)
    assert isinstance(pause, PendingApproval), pause
    await approve(run.store, run.run_id, pause.tool_use_id, approver="ops@example.com")
    await run.drive(REFUND)


async def denied(run: RunDriver) -> None:
    pause = await run.drive(DECLINED)
    assert isinstance(pause, PendingApproval), pause
    await deny(run.store, run.run_id, pause.tool_use_id, approver="ops@example.com")
    await run.drive(DECLINED)


async def failed_lookup(run: RunDriver) -> None:
    await run.drive(FAILED_LOOKUP)


async def delegated(run: RunDriver) -> None:
    await run.drive(DELEGATE)


async def asked_answered(run: RunDriver) -> None:
    pause = await run.drive(QUESTION)
    assert isinstance(pause, Interrupted), pause
    await answer(run.store, run.run_id, pause.name, "store credit, please")
    await run.drive(QUESTION)


async def settled(run: RunDriver) -> None:
    await run.drive(settlement(timedelta(hours=36)))
    await run.drive(settlement(timedelta(hours=36)), later=timedelta(hours=40))


async def cancelled(run: RunDriver) -> None:
    await run.drive(REFUND)
    await cancel(run.store, run.run_id, "customer withdrew the request")


async def halted(run: RunDriver) -> None:
    pause = await run.drive(REFUND)
    assert isinstance(pause, PendingApproval), pause
    await approve(run.store, run.run_id, pause.tool_use_id, approver="ops@example.com")
    await run.drive(REFUND, tools=run.desk.crashing)
    if run.plan.holder:
        await run.hold_lease()


async def awaiting_approval(run: RunDriver) -> None:
    await run.drive(REFUND)


async def awaiting_input(run: RunDriver) -> None:
    await run.drive(QUESTION)


async def sleeping(run: RunDriver) -> None:
    await run.drive(settlement(FAR_WAKE - run.plan.clock))


async def ready_approved(run: RunDriver) -> None:
    pause = await run.drive(REFUND)
    assert isinstance(pause, PendingApproval), pause
    await approve(run.store, run.run_id, pause.tool_use_id, approver="ops@example.com")


async def ready_woken(run: RunDriver) -> None:
    await run.drive(settlement(timedelta(hours=36)))  # its wake time is long past


async def ready_answered(run: RunDriver) -> None:
    pause = await run.drive(QUESTION)
    assert isinstance(pause, Interrupted), pause
    await answer(run.store, run.run_id, pause.name, "to my card")


async def in_flight(run: RunDriver) -> None:
    await run.drive(ANSWER, crash_at=0)  # another worker is asking the model right now
    await run.hold_lease()


async def stalled(run: RunDriver) -> None:
    await run.drive(ANSWER, crash_at=0)
    if run.plan.holder:
        await run.hold_lease()


async def stalled_in_subagent(run: RunDriver) -> None:
    await run.drive(DELEGATE, crash_at=1, crash_in="refunds_specialist")


async def unreadable(run: RunDriver) -> None:
    await run.drive(ANSWER, crash_at=0)
    turn = len(run.padding)
    # A bad disk or a buggy writer left the next turn cut short.
    await run.store.insert(
        run.run_id, keys.llm_key(turn), b'{"name":"@llm/%d","kind":"model","message":{"role":"assis' % turn
    )


async def saga_aborted(run: RunDriver) -> None:
    await write_saga(run.store, run.run_id, rolled_back=True)


async def saga_cancelling(run: RunDriver) -> None:
    await write_saga(run.store, run.run_id, rolled_back=False)


async def not_started(run: RunDriver) -> None:
    # A reply sent to a run that was never started: the SDK's Signal writes it all the same.
    await Journal(run.store).append(
        run.run_id, Record(keys.signal_key("customer-reply"), StepKind.SIGNAL, result=go_json("yes, card please"))
    )


STORIES: dict[str, Story] = {
    "answered": Story(RunState.COMPLETE, 40.0, answered, 4),
    "refunded": Story(RunState.COMPLETE, 15.0, refunded, 12),
    "denied": Story(RunState.COMPLETE, 5.0, denied, 9),
    "failed-lookup": Story(RunState.COMPLETE, 6.0, failed_lookup, 6),
    "delegated": Story(RunState.COMPLETE, 8.0, delegated, 6, child=RunState.COMPLETE),
    "asked-answered": Story(RunState.COMPLETE, 6.0, asked_answered, 9),
    "settled": Story(RunState.COMPLETE, 6.0, settled, 7),
    "cancelled": Story(RunState.CANCELLED, 1.5, cancelled, 6),
    "halted": Story(RunState.HALTED, 0.5, halted, 7),
    "awaiting-approval": Story(RunState.AWAITING_APPROVAL, 2.0, awaiting_approval, 5),
    "awaiting-input": Story(RunState.AWAITING_INPUT, 1.5, awaiting_input, 5),
    "sleeping": Story(RunState.SLEEPING, 1.5, sleeping, 4),
    "ready-approved": Story(RunState.READY, 0.5, ready_approved, 6),
    "ready-woken": Story(RunState.READY, 0.5, ready_woken, 4),
    "ready-answered": Story(RunState.READY, 0.5, ready_answered, 6),
    "in-flight": Story(RunState.IN_FLIGHT, 1.5, in_flight, 2),
    "stalled": Story(RunState.STALLED, 1.5, stalled, 2),
    "stalled-in-subagent": Story(RunState.STALLED, 0.5, stalled_in_subagent, 3, child=RunState.STALLED),
    "unreadable": Story(RunState.UNREADABLE, 0.2, unreadable, 3),
    "saga-aborted": Story(RunState.ABORTED, 1.0, saga_aborted, 8, padded=False),
    "saga-cancelling": Story(RunState.CANCELLING, 0.3, saga_cancelling, 6, padded=False),
    "not-started": Story(RunState.NOT_STARTED, 0.5, not_started, 2, padded=False),
}
#: Stories whose worker may have held a lease when it died.
LEASED_WHEN_DEAD = ("stalled", "halted")


def production_plan(runs: int, *, seed: int = SEED, longest: int = LONGEST_RECORDS) -> list[RunPlan]:
    """The root runs of a store of ``runs`` runs (sub-runs included), in the order they start.

    Every story appears at least once; then stories are drawn by weight. One run of ``longest``
    records, ``runs // 10_000`` of about 5,000 and ``runs // 100`` of about 500 go to drawn runs
    of padded stories; the rest are 5-50 records long (log-uniform)."""
    rng = random.Random(seed)
    names, weights = list(STORIES), [s.weight for s in STORIES.values()]
    drawn: list[str] = []
    total = 0
    while total < runs:
        story = names[len(drawn)] if len(drawn) < len(names) else rng.choices(names, weights)[0]
        if total + 1 + (STORIES[story].child is not None) > runs:
            story = "answered"
        drawn.append(story)
        total += 1 + (STORIES[story].child is not None)
    longest_at = drawn.index("answered")
    padded = [n for n, story in enumerate(drawn) if STORIES[story].padded and n != longest_at]
    rng.shuffle(padded)
    long_ones = [rng.randint(4_000, 6_000) for _ in range(runs // 10_000)] + [
        rng.randint(400, 600) for _ in range(runs // 100)
    ]
    lengths = {longest_at: longest, **dict(zip(padded, long_ones, strict=False))}
    fetching = set(rng.sample(padded, min(len(padded), max(1, round(runs * BIG_RESULT_SHARE)))))
    used: set[str] = set()
    plans = []
    for n, story in enumerate(drawn):
        records = lengths.get(n) or round(math.exp(rng.uniform(math.log(5), math.log(50))))
        fetches = 5 if n == longest_at else int(n in fetching)
        sizes = tuple(round(math.exp(rng.uniform(*map(math.log, BIG_RESULT_BYTES)))) for _ in range(fetches))
        holder = ""
        if story == "in-flight" or (story in LEASED_WHEN_DEAD and rng.random() < 0.5):
            holder = f"refund-worker-{rng.randint(1, 8)}-{rng.randint(1000, 99999)}#{rng.getrandbits(64):016x}"
        run_id = LONGEST_RUN if n == longest_at else fresh_run_id(rng, used)
        clock = BASE_CLOCK + timedelta(seconds=30 * n + rng.randint(0, 29))
        plans.append(RunPlan(run_id, story, records, clock, sizes, holder))
    return plans


def fresh_run_id(rng: random.Random, used: set[str]) -> str:
    """A fresh id in one of the styles services name their runs with."""
    while True:
        style = rng.random()
        if style < 0.55:
            run_id = f"{rng.getrandbits(128):032x}"
            run_id = f"{run_id[:8]}-{run_id[8:12]}-4{run_id[13:16]}-{run_id[16:20]}-{run_id[20:]}"
        elif style < 0.85:
            run_id = f"refund-{ORDER_IDS[rng.randrange(5)].lower()}-{rng.getrandbits(24):06x}"
        else:
            run_id = f"desk-{rng.randrange(1, 9)}-{rng.getrandbits(40):010x}"
        if run_id not in used and run_id != LONGEST_RUN:
            used.add(run_id)
            return run_id


def expected_statuses(plans: Sequence[RunPlan]) -> dict[str, RunState]:
    """Every run's status as planned, sub-runs included."""
    expected = {}
    for plan in plans:
        story = STORIES[plan.story]
        expected[plan.run_id] = story.state
        if story.child is not None:  # the delegating call is the tail's first turn
            expected[sub_run_id(plan.run_id, f"call_{len(padding_turns(plan))}_0")] = story.child
    return expected


# -- building: drive batches into memory, copy them to the file --------------------------------------


async def write_production(path: Path, plans: Sequence[RunPlan], progress: Callable[[str], None] | None = None) -> None:
    """Drive every planned run and write them to the SQLite file ``path`` (created)."""
    await (await SQLiteStore.open(path)).close()  # the SDK's tables, made by the store itself
    desk = Desk.build()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA synchronous = OFF")
        for start in range(0, len(plans), BATCH_RUNS):
            store = MemStore()
            batch = plans[start : start + BATCH_RUNS]
            await asyncio.gather(*(STORIES[plan.story].drive(RunDriver(store, desk, plan)) for plan in batch))
            await _copy(store, conn)
            if progress is not None:
                progress(f"{start + len(batch):,} of {len(plans):,} root runs")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


async def _copy(store: MemStore, conn: sqlite3.Connection) -> None:
    """The store's entries, in commit order, and its lease rows (expiry on the file's clock, now)."""
    run_ids = [run_id async for run_id in store.runs()]
    rows = [(entry.seq, run_id, entry.name, entry.data) for run_id in run_ids async for entry in store.load(run_id)]
    rows.sort(key=lambda row: row[0])
    leases = await store.get_leases(run_ids)
    now = time.time()
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO bide_steps (run_id, name, data) VALUES (?, ?, ?)", (row[1:] for row in rows))
    conn.executemany("INSERT INTO bide_leases (run_id, holder, expiry) VALUES (?, ?, ?)",
                     [(lease.run_id, lease.holder, now + lease.expires_in) for lease in leases.values()])  # fmt: skip
    conn.execute("COMMIT")


def production_store(cache: Path, runs: int = 100_000, *, longest: int = LONGEST_RECORDS) -> Path:
    """The production-shaped store of ``runs`` runs, built once under ``cache`` (into a temporary
    name, renamed when complete, with its shape beside it in ``.shape.json``); ``longest``: the
    records of its longest run (another length than ``LONGEST_RECORDS`` is in the file's name)."""
    cache.mkdir(parents=True, exist_ok=True)
    longer = "" if longest == LONGEST_RECORDS else f"-longest-{longest}"
    path = cache / f"v{SHAPE_VERSION}-production-{runs}{longer}.db"
    if path.exists():
        return path
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    for stale in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        stale.unlink(missing_ok=True)
    plans = production_plan(runs, longest=longest)
    started, cpu = time.perf_counter(), time.process_time()
    asyncio.run(write_production(partial, plans, progress=lambda done: _say(f"production store: {done}")))
    built = {
        "build_s": time.perf_counter() - started,
        "build_cpu_s": time.process_time() - cpu,
        "load": os.getloadavg(),
    }
    _say(f"built {path.name} in {built['build_s']:.0f} s")
    shape = {**measure_shape(partial, plans), **built}
    Path(f"{path}.shape.json").write_text(json.dumps(shape, indent=1))
    for suffix in ("-wal", "-shm"):
        Path(f"{partial}{suffix}").unlink(missing_ok=True)
    partial.rename(path)
    return path


def _say(what: str) -> None:
    print(f"... {what}", file=sys.stderr, flush=True)


# -- what a store holds ------------------------------------------------------------------------------


def measure_shape(path: Path, plans: Sequence[RunPlan]) -> dict[str, Any]:
    """Counts per planned status and per length bucket, sizes, from the file and the plan."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        lengths = conn.execute(
            "SELECT run_id, count(*), sum(length(data)), max(length(data)) FROM bide_steps GROUP BY run_id"
        ).fetchall()
        leases = conn.execute("SELECT count(*) FROM bide_leases").fetchone()[0]
    expected = expected_statuses(plans)
    buckets = Counter(_bucket(n) for _, n, _, _ in lengths)
    return {
        "runs": len(lengths), "root_runs": len(plans), "sub_runs": len(lengths) - len(plans),
        "records": sum(n for _, n, _, _ in lengths), "data_bytes": sum(b for _, _, b, _ in lengths),
        "file_bytes": path.stat().st_size, "lease_rows": leases,
        "statuses": dict(Counter(state.value for state in expected.values()).most_common()),
        "stories": dict(Counter(plan.story for plan in plans).most_common()),
        "lengths": {_bucket(low): buckets[_bucket(low)] for low, _ in LENGTH_BUCKETS},
        "longest": max(n for _, n, _, _ in lengths),
        "big_results": sum(len(plan.big_results) for plan in plans),
        "big_result_bytes": sum(sum(plan.big_results) for plan in plans),
        "largest_record_bytes": max(m for _, _, _, m in lengths),
    }  # fmt: skip


def _bucket(records: int) -> str:
    low, high = next((low, high) for low, high in LENGTH_BUCKETS if low <= records <= high)
    return f"{low:,}-{high:,}" if high < LENGTH_BUCKETS[-1][1] else f"{low:,}+"


def shape_of(path: Path) -> dict[str, Any]:
    """The shape written beside a production store when it was built."""
    loaded: dict[str, Any] = json.loads(Path(f"{path}.shape.json").read_text())
    return loaded


def describe(shape: dict[str, Any]) -> str:
    mb = 1024 * 1024
    lines = [
        f"{shape['runs']:,} runs ({shape['root_runs']:,} roots, {shape['sub_runs']:,} sub-runs), {shape['records']:,} records,"
        f" {shape['data_bytes'] / mb:,.0f} MB of record data, file {shape['file_bytes'] / mb:,.0f} MB, {shape['lease_rows']:,} lease rows",
        f"built in {shape['build_s']:,.0f} s ({shape['build_cpu_s']:,.0f} s CPU), load average {shape['load'][0]:.1f}",
        f"large results: {shape['big_results']:,} ({shape['big_result_bytes'] / mb:,.0f} MB), largest record {shape['largest_record_bytes'] / 1000:,.0f} kB",
        "records a run: " + ", ".join(f"{bucket}: {n:,}" for bucket, n in shape["lengths"].items()) + f" (longest {shape['longest']:,})",
        "statuses: " + ", ".join(f"{state} {n:,}" for state, n in shape["statuses"].items()),
    ]  # fmt: skip
    return "\n".join(lines)


# -- checking: the statuses are the ones planned ----------------------------------------------------


async def check_statuses(path: Path, expected: dict[str, RunState], *, per_state: int | None = 50) -> Counter[str]:
    """Read statuses and compare them with the plan; raise ``AssertionError`` naming the runs that
    differ. ``per_state``: how many runs of each planned status to read (seeded sample; the
    longest run is left out), by the summary path and by the exact rules; None: every run, as
    ``agenttui runs`` reads them. Returns the count of each status read."""
    store = await SQLiteStore.open(path, read_only=True)
    try:
        if per_state is None:
            found = {status.run_id: status.state async for status in list_statuses(store)}
        else:
            rng = random.Random(SEED)
            by_state: dict[RunState, list[str]] = {}
            for run_id, state in expected.items():
                if run_id != LONGEST_RUN:
                    by_state.setdefault(state, []).append(run_id)
            sample = [r for ids in by_state.values() for r in rng.sample(ids, min(per_state, len(ids)))]
            summed = await statuses(store, sample)
            exact = [await run_status(store, run_id) for run_id in sample]
            differ = [(s.run_id, s.state, e.state) for s, e in zip(summed, exact, strict=True) if s.state != e.state]
            assert not differ, f"summary and exact statuses differ: {differ[:10]}"
            found = {status.run_id: status.state for status in exact}
    finally:
        await store.close()
    wrong = [(run_id, expected.get(run_id), state) for run_id, state in found.items() if expected.get(run_id) != state]
    assert not wrong, f"{len(wrong)} runs are not what was planned (run, planned, read): {wrong[:10]}"
    return Counter(state.value for state in found.values())


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """The first run builds the production-shaped store of --runs runs under --cache
(v1-production-<runs>.db, 1.4 GB at 100,000 runs) and records its build time in .shape.json
beside it: 19 minutes (548 s CPU) on this 2-core machine at load 5.6, 48 minutes (1,254 s CPU)
at load 4.7 with other builds running; count 20-50 minutes. Later runs reuse it and take seconds (--check all: minutes)."""


SMOKE_RUNS = 300
"""``--smoke``'s store: every story at least once, a few runs of each unfinished kind."""
SMOKE_LONGEST = 600
"""``--smoke``'s longest run (``LONGEST_RUN``), in records."""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=FIRST_RUN, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the store, sub-runs included")
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache", help="where built stores are kept")
    parser.add_argument("--check", choices=["sample", "all"], default="sample", help="how many statuses to read back")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"a store of {SMOKE_RUNS} runs (the longest {SMOKE_LONGEST} records) built in a fresh temporary "
        "directory, every status read back (--check all): seconds",
    )
    args = parser.parse_args()
    if args.smoke:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="agenttui-shapes-smoke-") as temporary:
            os.environ["XDG_CACHE_HOME"] = str(Path(temporary) / "xdg-cache")
            build_and_check(Path(temporary), SMOKE_RUNS, "all", SMOKE_LONGEST)
    else:
        build_and_check(Path(args.cache), args.runs, args.check, LONGEST_RECORDS)


def build_and_check(cache: Path, runs: int, check: str, longest: int) -> None:
    path = production_store(cache, runs, longest=longest)
    print(f"{path}\n{describe(shape_of(path))}")
    started = time.perf_counter()
    read = asyncio.run(check_statuses(path, expected_statuses(production_plan(runs, longest=longest)),
                                      per_state=None if check == "all" else 50))  # fmt: skip
    print(f"checked {read.total():,} statuses in {time.perf_counter() - started:.1f} s, each as planned: "
          + ", ".join(f"{state} {n:,}" for state, n in read.most_common()))  # fmt: skip


if __name__ == "__main__":
    main()
