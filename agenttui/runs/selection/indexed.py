"""A filter's runs and the counts by status, read through the shared run index where the store
keeps one (``runs.statuses.shared``): the filter narrows the selection on the database
(``where_sql``), and decides on the few statuses it hands back; without the index, every
run's status is read and the filter asked of each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from agenttui.runs.selection.where import Where, unix_ms
from agenttui.runs.selection.where_sql import where_sql
from agenttui.runs.statuses.index import Verdict
from agenttui.runs.statuses.shared import shared_counts, shared_selection
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import (
    RunStatus,
    list_statuses,
    states_of_leased_verdicts,
    statuses,
    statuses_of_verdicts,
)
from agenttui.stores.base import Store

_Item = TypeVar("_Item", str, tuple[Any, ...])

#: How many runs one read of the journal asks for (``statuses``' page).
_PAGE = 500
#: How many runs a page of a selection from the shared run index covers.
CANDIDATE_PAGE = 5000


@dataclass
class Paging:
    """Where a read of a filter's candidates a page at a time stands (``next_candidates``)."""

    where: Where
    after: str = ""
    """The last run read: the next page starts past it."""
    done: bool = False


async def next_candidates(
    store: Store, paging: Paging, now: datetime, *, limit: int = CANDIDATE_PAGE
) -> list[RunStatus] | None:
    """The status of every run of the next page of ``paging``'s candidates (a page covers
    ``limit`` rows of the shared run index, in run id order, by keyset) that ``paging.where`` may
    match at ``now``, ``paging`` moved past them (``done`` after the last page); None where the
    shared run index is not read. The caller asks the filter of each."""
    sql = where_sql(paging.where, unix_ms(now))
    page = await shared_selection(store, sql.settled, sql.settled_args, unsettled=(sql.unsettled, sql.unsettled_args),
                                  after=paging.after, limit=limit)  # fmt: skip
    if page is None:
        return None
    after, upto = paging.after, page.upto
    # A run under a lease or asleep may be among the page's rows too: one row a run.
    rows = {row[0]: row for row in [*page.unsettled, *page.rows]}
    read = await _statuses_of(store, list(rows.values()), _within(page.pending, after, upto), now)
    if upto is None:
        paging.done = True
    else:
        paging.after = upto
    return read


async def candidate_statuses(store: Store, where: Where, now: datetime, *, after: str = "") -> AsyncIterator[RunStatus]:
    """The status of every run after ``after`` that ``where`` may match at ``now``, in run id
    order, at least every run it matches: the caller asks the filter of each. From the shared
    run index, a page at a time by keyset (``next_candidates``); else every run's status."""
    paging = Paging(where, after)
    while not paging.done and (page := await next_candidates(store, paging, now)) is not None:
        for status in page:
            yield status
    if paging.done:
        return
    if paging.after:  # the index went out of use midway: the rest as without it
        async for status in _statuses_after(store, paging.after):
            yield status
        return
    async for status in list_statuses(store):
        yield status


def _within(items: Sequence[_Item], after: str, upto: str | None) -> list[_Item]:
    """The ``items`` (run ids, or rows led by theirs) a page from after ``after`` through
    ``upto`` covers (None: to the end)."""
    return [item for item in items if (run_id := item if isinstance(item, str) else item[0]) > after
            and (upto is None or run_id <= upto)]  # fmt: skip


async def _statuses_after(store: Store, after: str) -> AsyncIterator[RunStatus]:
    async for run_ids in store.run_pages(after=after):
        for status in await statuses(store, run_ids):
            yield status


async def count_statuses(store: Store, now: datetime, where: Where | None = None) -> Counter[RunState]:
    """How many runs are in each status (those ``where`` matches, if given): counted on the
    database from the shared run index where nothing but a run's verdict decides its status,
    the rest made here; else every run's status read and counted."""
    counted: Counter[RunState] = Counter()
    if where is not None:
        matches = where.matcher(now)
        async for status in candidate_statuses(store, where, now):
            if matches(status):
                counted[status.state] += 1
        return counted
    indexed = await shared_counts(store)
    if indexed is None:
        async for status in list_statuses(store):
            counted[status.state] += 1
        return counted
    counted.update({RunState(state): count for state, count in indexed.states.items()})
    counted.update(await states_of_leased_verdicts(store, indexed.uncertain, now))
    pending = indexed.pending
    for start in range(0, len(pending), _PAGE):
        counted.update(status.state for status in await statuses(store, pending[start : start + _PAGE]))
    return counted


async def _statuses_of(
    store: Store, rows: Sequence[tuple[Any, ...]], pending: Sequence[str], now: datetime
) -> list[RunStatus]:
    """The statuses of a selection's runs, in run id order: those of its ``rows`` made of their
    verdicts, with their lease rows and the clock at ``now``; those ``pending``, read from the
    journal a page at a time."""
    made = await statuses_of_verdicts(store, [(row[0], Verdict._make(row[2:])) for row in rows], now)
    read = [status for start in range(0, len(pending), _PAGE)
            for status in await statuses(store, pending[start : start + _PAGE])]  # fmt: skip
    return sorted([*made, *read], key=lambda status: status.run_id)
