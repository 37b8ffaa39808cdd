"""Two recoverer processes on one PostgreSQL schema: every run driven by one of them at a time.

Fifty refund-desk runs are left unfinished in-process, as drivers that died between model turns
leave them (some before their first turn, some after the read-only lookup, some after the refund
or even the email). Then two processes run ``recover`` in a loop against the same schema, with
short leases and a scripted model slow enough that their drives overlap. The refund is not
retry-safe and not gated; every effect (refund, email) is appended to one shared file with the
run id and the process id, and every drive's start and end times to its recoverer's own file.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from agenttui.agent import Agent, ScriptedModel, Tool, ToolContext, Turn, tool
from agenttui.demo.build import CrashingModel, SimulatedCrash
from agenttui.demo.desk import ORDERS, SYSTEM_PROMPT, Email, Refund, desk_tools, refund_story
from agenttui.journal import keys
from agenttui.runs import is_complete, recover_runs
from agenttui.stores.base import Store
from agenttui.stores.postgres import PostgresStore
from tests.pg import PostgresCluster

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
RUNS = 50
#: Lease TTL of both recoverers: renewed from 2.5 s, far longer than one drive.
TTL = 5.0
#: Per model turn; makes each drive last long enough for the other recoverer to run into it.
LATENCY = 0.03
#: Seconds a recoverer keeps looping before it gives up on unfinished runs.
DEADLINE = 60.0
PROMPT = "Please refund my order."


def run_ids() -> list[str]:
    return [f"refund-{n:03d}" for n in range(RUNS)]


def script_for(run_id: str) -> list[Turn]:
    """Look up, refund, email, answer; the order (and so the amount) depends on the run."""
    order = sorted(ORDERS)[int(run_id.rsplit("-", 1)[1]) % len(ORDERS)]
    return refund_story(order, ORDERS[order]["amount"])


def append_effect(path: Path, line: str) -> None:
    """One line in one write to an O_APPEND file, fsynced: two processes never interleave lines."""
    with path.open("a") as effects:
        effects.write(line + "\n")
        effects.flush()
        os.fsync(effects.fileno())


def recoverer_tools(effects: Path) -> list[Tool]:
    lookup_order = next(t for t in desk_tools() if t.name == "lookup_order")

    @tool()
    async def refund_payment(ctx: ToolContext, args: Refund) -> dict[str, Any]:
        """Refund money to the customer's card: not retry-safe (an attempt marker), not gated."""
        append_effect(effects, f"refund {ctx.run_id} {os.getpid()} {args.order_id} {args.amount}")
        return {"refund_id": f"rf_{args.order_id.lower()}", "amount": args.amount, "state": "submitted"}

    @tool(idempotency_key=True)
    async def send_email(ctx: ToolContext, args: Email) -> dict[str, Any]:
        """Email the customer. Retry-safe, so nothing but the lease stops two drivers sending it twice."""
        append_effect(effects, f"email {ctx.run_id} {os.getpid()} {ctx.idempotency_key}")
        return {"message_id": f"msg_{ctx.idempotency_key[:12]}", "to": args.to}

    return [lookup_order, refund_payment, send_email]


def desk(store: Store, effects: Path, model: Any) -> Agent:
    return Agent(model, store, *recoverer_tools(effects), name="refund_desk", system_prompt=SYSTEM_PROMPT)


# -- a recoverer process ---------------------------------------------------------------------------


async def recoverer(dsn: str, schema: str, effects: str, drives: str) -> None:
    """Recover until no unfinished run is left; log every drive; print a JSON summary."""
    store = await PostgresStore.open(dsn, schema=schema)
    summary: dict[str, Any] = {"pid": os.getpid(), "passes": 0, "driven": [], "held": 0, "paused": {}, "errors": {}}

    async def resume(run_id: str) -> None:
        started = time.time()
        try:
            agent = desk(store, Path(effects), ScriptedModel(script_for(run_id), latency=LATENCY))
            await agent.run(run_id, PROMPT)
        finally:
            with open(drives, "a") as log:
                log.write(f"{run_id} {os.getpid()} {started!r} {time.time()!r}\n")

    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)  # both start at once, so they contend from the first run
    try:
        deadline = time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            report = await recover_runs(store, resume, ttl=TTL)
            summary["passes"] += 1
            summary["driven"] += report.re_driven
            summary["held"] += sum("is being driven by" in why for why in report.skipped.values())
            summary["paused"].update({r: repr(p) for r, p in report.paused.items()})
            summary["errors"].update({r: repr(e) for r, e in report.errors.items()})
            if not [r async for r in store.runs(exclude_holding=keys.END_MARKERS)]:
                break
            await asyncio.sleep(0.05)
    finally:
        await store.close()
    print(json.dumps(summary), flush=True)


CHILD = """
import asyncio, sys
sys.path.insert(0, sys.argv[1])
from tests.agent.test_recoverers import recoverer
asyncio.run(recoverer(*sys.argv[2:]))
"""


# -- the test --------------------------------------------------------------------------------------


async def leave_unfinished(store: Store, effects: Path) -> dict[str, int]:
    """Drive each run until its driver dies asking for model turn 0, 1, 2 or 3; return which."""
    died_at = {}
    for n, run_id in enumerate(run_ids()):
        died_at[run_id] = n % 4
        model = CrashingModel(ScriptedModel(script_for(run_id)), died_at[run_id])
        with pytest.raises(SimulatedCrash):
            await desk(store, effects, model).run(run_id, PROMPT)
    return died_at


async def test_two_recoverers_drive_each_run_once_and_one_at_a_time(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    schema = "recover_" + uuid.uuid4().hex[:12]
    effects = tmp_path / "effects.log"
    store = await PostgresStore.open(postgres_cluster.dsn, schema=schema)
    try:
        died_at = await leave_unfinished(store, effects)
        unfinished = [r async for r in store.runs(exclude_holding=keys.END_MARKERS)]
        assert unfinished == run_ids()

        drive_logs = [tmp_path / f"drives-{i}.log" for i in range(2)]
        children = [
            await asyncio.create_subprocess_exec(
                sys.executable, "-c", CHILD, str(ROOT), postgres_cluster.dsn, schema, str(effects), str(log),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
            )
            for log in drive_logs
        ]  # fmt: skip
        try:
            for child in children:
                assert child.stdout is not None and child.stderr is not None  # both are PIPEs
                ready = await asyncio.wait_for(child.stdout.readline(), 60)
                assert ready == b"ready\n", (ready, await child.stderr.read())
            for child in children:
                assert child.stdin is not None  # a PIPE
                child.stdin.write(b"go\n")
                await child.stdin.drain()
            outputs = [await asyncio.wait_for(child.communicate(), DEADLINE + 30) for child in children]
        finally:
            for child in children:
                if child.returncode is None:
                    child.kill()
                    await child.wait()
        for child, (_, err) in zip(children, outputs, strict=True):
            assert child.returncode == 0, err.decode()
        summaries = [json.loads(out.decode().splitlines()[-1]) for out, _ in outputs]

        # Every run completed, with no genuine error and no pause on the way.
        assert [r async for r in store.runs(exclude_holding=keys.END_MARKERS)] == []
        assert all([await is_complete(store, run_id) for run_id in run_ids()])
        for summary in summaries:
            assert summary["errors"] == {} and summary["paused"] == {}

        # Every effect fired exactly once: the setup's drivers fired those before their death.
        lines = [line.split() for line in effects.read_text().splitlines()]
        assert Counter((kind, run_id) for kind, run_id, *_ in lines) == Counter(
            {(kind, run_id): 1 for run_id in run_ids() for kind in ("refund", "email")}
        )

        # One driver at a time per run: no two drives of one run overlap, whoever made them.
        drives: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
        for log in drive_logs:
            for line in log.read_text().splitlines():
                run_id, pid, started, ended = line.split()
                drives[run_id].append((float(started), float(ended), int(pid)))
        assert sorted(drives) == run_ids()
        for run_id, intervals in drives.items():
            intervals.sort()
            for (_, ended_at, _), (started_at, _, _) in itertools.pairwise(intervals):
                assert started_at >= ended_at, (run_id, intervals)
        # Each run was driven once (a drive completes it), by the process that fired its effects.
        assert sum(len(i) for i in drives.values()) == RUNS
        driver = {run_id: intervals[0][2] for run_id, intervals in drives.items()}
        setup = os.getpid()
        for kind, run_id, pid, *_ in lines:
            fired_in_setup = died_at[run_id] > {"refund": 1, "email": 2}[kind]
            assert int(pid) == (setup if fired_in_setup else driver[run_id]), (kind, run_id, pid)

        # The two really ran side by side and ran into each other's leases.
        pids = {s["pid"] for s in summaries}
        assert set(driver.values()) == pids and len(pids) == 2
        spans = [
            (
                min(s for s, _, p in itertools.chain.from_iterable(drives.values()) if p == pid),
                max(e for _, e, p in itertools.chain.from_iterable(drives.values()) if p == pid),
            )
            for pid in pids
        ]
        assert max(s for s, _ in spans) < min(e for _, e in spans)
        assert sum(s["held"] for s in summaries) > 0
    finally:
        await store.close()
