"""What-if fork speed: a fork at turn 500 of a 1,000-turn run, replayed headless to its end.

    python benchmarks/fork.py [--turns 1000] [--at 500] [--repeats 3] [--smoke]

The run is the demo's bulk audit (``build_demo(bulk_turns=...)``: each turn a read-only lookup,
then the answer), written by the runtime into a SQLite file. The fork rewords turn ``--at``
(same call), so the recording answers every later turn: the fork replays the whole run (a replay
is deterministic: it always starts from the beginning) and the turns after the edit come from the
recording. Reported, best of ``--repeats``: turns/s over the turns after the edit (the target:
at least 2,000 turns/s), over the whole fork (open included), the CPU time, the peak RSS of
this process, and the load average.

``--smoke``: a 20-turn run forked at turn 10, once (a second or so), to check that the benchmark
still runs; its figures are not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenttui.demo.build import build_demo  # noqa: E402
from agenttui.replay.fork import ForkSession  # noqa: E402
from agenttui.replay.session import ReplaySession, ReplayState  # noqa: E402
from agenttui.stores.sqlite import SQLiteStore  # noqa: E402

RUN = "audit-bulk"


async def build(path: Path, turns: int) -> None:
    store = await SQLiteStore.open(path)
    await build_demo(store, bulk_turns=turns)
    await store.close()


async def fork_once(path: Path, at: int) -> tuple[float, float, float, float, int]:
    """Seconds for the turns after the edit (wall clock, CPU), for the whole fork (wall clock,
    CPU), and the turns replayed."""
    store = await SQLiteStore.open(path, read_only=True)
    started, cpu = time.perf_counter(), time.process_time()
    recording = await ReplaySession.open(store, RUN)
    record = next(r for r in recording.recording if r.name == f"@llm/{at}")
    assert record.message is not None
    call = record.message.tool_uses[0]
    value = {"role": "assistant", "parts": [{"type": "text", "text": "Checking the next order, reworded."},
             {"type": "tool_use", "id": call.id, "name": call.name, "args": json.loads(call.args or b"{}")}]}  # fmt: skip
    fork = await ForkSession.create(store, RUN, f"@llm/{at}", json.dumps(value))
    edit_reached = edit_cpu = 0.0

    def on_turn(turn: int) -> None:
        nonlocal edit_reached, edit_cpu
        if turn == at + 1:
            edit_reached, edit_cpu = time.perf_counter(), time.process_time()

    await fork.run_to_end(on_turn)
    ended, cpu_ended = time.perf_counter(), time.process_time()
    assert fork.progress.state == ReplayState.FINISHED, fork.progress.reason
    await fork.aclose()
    await store.close()
    return ended - edit_reached, cpu_ended - edit_cpu, ended - started, cpu_ended - cpu, fork.progress.turn


#: What ``--help`` says of the stores this benchmark builds, where it keeps them and how long that takes.
FIRST_RUN = """Builds its run in a temporary SQLite file each run (the demo's bulk audit, a few seconds at
1,000 turns); no large store, nothing cached."""
SMOKE = "tiny sizes (a 20-turn run forked at turn 10, once), seconds: checks the benchmark runs; figures not judged"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog=FIRST_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--at", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help=SMOKE)
    args = parser.parse_args()
    if args.smoke:
        args.turns, args.at, args.repeats = 20, 10, 1
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bulk.db"
        asyncio.run(build(path, args.turns))
        runs = [asyncio.run(fork_once(path, args.at)) for _ in range(args.repeats)]
    after, after_cpu, whole, cpu, turns = min(runs)
    remaining = turns - args.at - 1
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"fork at @llm/{args.at} of a {args.turns}-turn run ({RUN}), best of {args.repeats}"
          + (" (smoke: tiny sizes, not judged)" if args.smoke else ""))  # fmt: skip
    print(
        f"  turns after the edit  {remaining:>6,}  {after:7.3f} s  {remaining / after:>8,.0f} turns/s  (target >= 2,000)"
    )
    print(f"  the whole fork        {turns:>6,}  {whole:7.3f} s  {turns / whole:>8,.0f} turns/s  (open included)")
    print(f"  the same, CPU time    {remaining:>6,}  {after_cpu:7.3f} s  {remaining / after_cpu:>8,.0f} turns/s")
    print(f"  the whole fork, CPU   {turns:>6,}  {cpu:7.3f} s  {turns / cpu:>8,.0f} turns/s")
    print(f"  peak RSS              {rss:7.1f} MiB")
    print(f"  load average          {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
