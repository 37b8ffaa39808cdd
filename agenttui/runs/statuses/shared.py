"""Statuses read from the shared run index, where the store's database keeps one (``agenttui
index``; ``stores.postgres.run_index``): every reader's look, with no index of its own to build.

The index holds what the status rules make of each run without its lease row (a ``Verdict``)
and queues the runs written since the indexer last read them; a reader takes both in one
snapshot, makes each status of its verdict with the lease row and the clock at its look, as a
reopen does from the status index in the user's cache, and reads the queued runs from the
journal. Where the index is missing, not caught up, of another version, or ``--no-cache`` is
given, nothing here answers, and statuses are read as without it.
"""

from __future__ import annotations

import asyncio
import bisect
import math
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from agenttui.runs.statuses.index import Changes, KeptLines, Verdict, enabled
from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.stores.postgres.run_index import Counted, Selected, SharedRunIndex


#: How long a store found without a usable shared index is not asked again: a look reads a
#: page at a time, and each would otherwise ask the catalog first.
UNUSED_SECONDS = 2.0
_unused_at: weakref.WeakKeyDictionary[Store, float] = weakref.WeakKeyDictionary()


def _index_of(store: Store) -> SharedRunIndex | None:
    """The store's shared run index, unless it is off or was found unusable a moment ago."""
    if not enabled() or time.monotonic() - _unused_at.get(store, -math.inf) < UNUSED_SECONDS:
        return None
    return store.run_index()


def _unused(store: Store) -> None:
    _unused_at[store] = time.monotonic()


async def in_use(store: Store) -> bool:
    """Whether a look at ``store`` reads its statuses from the shared run index."""
    index = _index_of(store)
    if index is None:
        return False
    if not await index.usable():
        _unused(store)
        return False
    return True


async def shared_lines(store: Store) -> KeptLines | None:
    """Every run's verdict the shared run index holds, as ``indexed_lines`` gives the cache's,
    with its changes known at once: the runs queued (and those whose verdict is not kept) are
    changed, and every run is listed (the index's and the queued, in byte order); None where
    the index is not read."""
    index = _index_of(store)
    lines = await index.lines() if index is not None else None
    if lines is None:
        if index is not None:
            _unused(store)
        return None
    run_ids, verdicts = lines.run_ids, lines.verdicts
    states = verdicts[Verdict._fields.index("state")]
    changed = {*lines.pending, *(run_id for run_id, state in zip(run_ids, states, strict=True) if state is None)}
    every_run = run_ids
    if lines.pending or lines.gone:
        gone = set(lines.gone)
        new = [run_id for run_id in lines.pending if not _holds(run_ids, run_id)]
        # Two sorted lists: Timsort merges them in one pass.
        every_run = sorted([*(run_id for run_id in run_ids if run_id not in gone), *new])
    done: asyncio.Future[Changes] = asyncio.get_running_loop().create_future()
    done.set_result(Changes(changed, every_run))
    return KeptLines(run_ids, verdicts, lines.plain, done)


async def shared_verdicts(store: Store, run_ids: Sequence[str]) -> dict[str, Verdict] | None:
    """The verdicts the shared run index holds of ``run_ids`` that no change is queued for; None
    where the index is not read."""
    index = _index_of(store)
    if index is None or not run_ids:
        return None
    if (rows := await index.rows(run_ids)) is None:
        _unused(store)
        return None
    return {run_id: Verdict._make(columns) for run_id, columns in rows.verdicts.items()}


def _holds(sorted_ids: Sequence[str], run_id: str) -> bool:
    at = bisect.bisect_left(sorted_ids, run_id)
    return at < len(sorted_ids) and sorted_ids[at] == run_id


async def shared_selection(
    store: Store,
    condition: str,
    args: Sequence[object],
    *,
    unsettled: tuple[str, Sequence[object]],
    after: str = "",
    limit: int | None = None,
) -> Selected | None:
    """The runs after ``after`` a filter's SQL may select from the shared run index, and the
    runs to read from the journal, through the ``limit``-th (``SharedRunIndex.select``); None
    where the index is not read."""
    index = _index_of(store)
    if index is None:
        return None
    selected = await index.select(condition, args, unsettled=unsettled, after=after, limit=limit)
    if selected is None:
        _unused(store)
    return selected


async def shared_counts(store: Store) -> Counted | None:
    """The runs counted by state in the shared run index (``SharedRunIndex.counts``); None
    where the index is not read."""
    index = _index_of(store)
    if index is None:
        return None
    if (counted := await index.counts()) is None:
        _unused(store)
    return counted
