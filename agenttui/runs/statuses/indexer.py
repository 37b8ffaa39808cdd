"""The shared run index's indexer (``agenttui index run``): one process, by a lease, keeps every
run's verdict in the index current (``stores.postgres.run_index``).

Each batch takes changes off the index's queue, reads the runs they name by the status path
every reader uses (``runs.statuses.status.unleased_verdicts``: no second implementation of
the rules), and writes their rows back, all in one transaction under the lease: a change is
gone only with the row it led to, so an indexer killed anywhere loses and doubles nothing,
and the next one, here or on another machine once the lease lapses, goes on from the queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass

from agenttui.errors import ConfigError, StoreError
from agenttui.journal.keys import root_run_id
from agenttui.runs.statuses.status import unleased_verdicts
from agenttui.stores.base import Store
from agenttui.stores.postgres.run_index import IndexLostError, IndexRow, SharedRunIndex

#: How long the indexer's lease runs unless renewed: a standby takes over this long after the
#: holder stops renewing it (killed, or cut off from the database).
LEASE_SECONDS = 30.0
#: Changes a batch takes off the queue (a batch is one transaction).
BATCH_CHANGES = 2000
#: How long an idle indexer waits before it looks at the queue again.
IDLE_SECONDS = 0.5


@dataclass(slots=True)
class Progress:
    """What an indexer has done since it started (``on_progress`` is told after each step)."""

    holder: str
    holding: bool = False
    """Whether it holds the lease (False: a standby, waiting for it to lapse)."""
    batches: int = 0
    runs: int = 0
    """Runs written (a run written in two batches counts twice)."""
    watermark: int = 0
    caught_up: bool = False
    rebuilt: bool = False


def default_holder() -> str:
    """This process, as the lease names it: its host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


def index_of(store: Store) -> SharedRunIndex:
    """The store's shared run index; ``ConfigError`` for a store that keeps none."""
    index = store.run_index()
    if index is None:
        raise ConfigError("only a PostgreSQL journal (the Bide SDK's layout) keeps a shared run index")
    return index


async def catch_up(
    store: Store, holder: str, progress: Progress, *, batch: int = BATCH_CHANGES, lease: float = LEASE_SECONDS
) -> None:
    """Take batches off the queue until it is empty (the index then says it caught up)."""
    index = index_of(store)
    while True:
        async with index.claim(holder, lease, batch) as claimed:
            if claimed.run_ids:
                read = await unleased_verdicts(store, claimed.run_ids)
                rows = [IndexRow(run_id, root_run_id(run_id), mark, verdict) for run_id, mark, verdict in read.rows]
                await claimed.write(rows, read.vanished, read.again)
        progress.batches += 1
        progress.runs += len(claimed.run_ids)
        progress.watermark = max(progress.watermark, claimed.watermark)
        if not claimed.run_ids:
            progress.caught_up = True
            return
        progress.caught_up = False


async def run_indexer(
    store: Store,
    *,
    holder: str | None = None,
    once: bool = False,
    idle: float = IDLE_SECONDS,
    batch: int = BATCH_CHANGES,
    lease: float = LEASE_SECONDS,
    on_progress: Callable[[Progress], None] = lambda progress: None,
) -> Progress:
    """Keep the store's shared run index current until cancelled (``once``: until it has caught
    up once). Waits as a standby while another indexer holds the lease (``lease`` seconds, each
    batch renewing it), looking again every third of it; builds the index again where it is of
    an older version. The lease is given up on the way out."""
    index = index_of(store)
    progress = Progress(holder or default_holder())
    if not await index.installed():
        raise ConfigError(f"no shared run index is installed (schema {index.schema}): run agenttui index install")
    try:
        while True:
            progress.holding = await index.take_lease(progress.holder, lease)
            if progress.holding:
                try:
                    if await index.rebuild_if_stale(progress.holder):
                        progress.rebuilt = True
                        await index.take_lease(progress.holder, lease)  # made again, it held none
                    await catch_up(store, progress.holder, progress, batch=batch, lease=lease)
                except IndexLostError:
                    progress.holding = False
            on_progress(progress)
            if once and progress.caught_up:
                return progress
            await asyncio.sleep(idle if progress.holding else lease / 3)
    finally:
        if progress.holding:
            await asyncio.shield(_release(index, progress.holder))


async def _release(index: SharedRunIndex, holder: str) -> None:
    """Give the lease up, so a standby takes over at once; if the database does not answer soon,
    the lease lapses by itself."""
    with contextlib.suppress(TimeoutError, OSError, StoreError):
        await asyncio.wait_for(index.release_lease(holder), 5.0)
