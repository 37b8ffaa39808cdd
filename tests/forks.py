"""What-if forks saved for tests: as this build saves them, and as builds before the fork mark did
(the fork's journal as replayed, attempt markers and all, then its ``fork:origin``)."""

from __future__ import annotations

import json

from agenttui.journal import Journal
from agenttui.replay.fork import ForkSession, fork_run
from agenttui.replay.save import origin_record, plan_save
from agenttui.stores.base import Store


def reworded_lookup(order_id: str) -> str:
    """A demo refund's first turn, reworded: the same lookup, so its fork replays on to the refund."""
    return json.dumps(
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "text": f"Looking {order_id} up."},
                {"type": "tool_use", "id": "call_0_0", "name": "lookup_order", "args": {"order_id": order_id}},
            ],
        }
    )


#: The demo's approved refund, not re-driven yet: a fork of it at its first turn stops at the
#: refund (the recording holds no result), its approval fed. Driven, it would refund for real.
APPROVED = "refund-a1005-approved"
APPROVED_REWORDED = reworded_lookup("A-1005")
#: The demo's halted refund: a fork of it at its first turn writes the replay's attempt marker
#: for the refund before it stops where the recording has no result.
HALTED = "refund-a1004-halted"
HALTED_REWORDED = reworded_lookup("A-1004")


async def save_fork(store: Store, run_id: str, value: str, *, into: Store | None = None) -> str:
    """Fork ``run_id`` at ``@llm/0`` with ``value`` and save it as this build does: into ``store``
    as ``<run>~fork-<n>``, or ``into`` another store under the run's own id. Its run id."""
    fork = await fork_run(store, run_id, "@llm/0", value)
    try:
        target = store if into is None else into
        plan = await plan_save(fork, target, where="the test's store", run_id="" if into is None else run_id)
        await plan.apply(target)
        return plan.run_id
    finally:
        await fork.aclose()


async def save_as_before_the_mark(
    store: Store, run_id: str, value: str, saved_as: str, *, into: Store | None = None
) -> ForkSession:
    """Fork ``run_id`` at ``@llm/0`` and write it as ``saved_as`` (into ``store``, or ``into``) as
    builds before the fork mark wrote a saved fork: every record the replay wrote, then ``fork:origin``."""
    fork = await fork_run(store, run_id, "@llm/0", value)
    journal = Journal(store if into is None else into)
    for record in [*(r for r in await fork.replayed() if not r.is_header), origin_record(fork)]:
        await journal.insert(saved_as, record)
    await fork.aclose()
    return fork
