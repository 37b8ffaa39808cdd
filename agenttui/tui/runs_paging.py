"""The runs list of a store with a shared run index: read a page at a time, never the whole store.

Over the index the runs screen reads the runs in run id order by keyset
(``runs.selection.indexed.next_candidates``), a page when the rows on screen come near the end
of those read, and takes its counts from the database (``count_statuses``). The filters narrow
on the database: the status filter and a text filter that is an expression become the page's
``Where``; the runs model still decides what shows of what was read, as without the index, so a
list shows the same rows either way, as far as it has read. Plain words cannot narrow on the
database: the pages are read on until they fill the screen.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from agenttui.journal.keys import parent_run_id
from agenttui.runs.selection.where import Where, parse_where
from agenttui.tui.runs_model import STATUS_FILTERS

if TYPE_CHECKING:
    from agenttui.tui.runs_model import RunsModel

#: How many runs a page after the first covers.
PAGE_RUNS = 1000
#: The first page: this many screens of rows, so that the first frame waits on no more.
FIRST_PAGE_SCREENS = 2
#: More is read while fewer than this many screens of rows lie below the last one on screen.
SCREENS_AHEAD = 2


def paging_where(model: RunsModel) -> Where:
    """What the database narrows the list by: the status filter, and the text filter when it is
    an expression (plain words, and a text that does not parse, narrow nothing there)."""
    parts = []
    if model.where is not None:
        parts.append(f"({model.text_filter})")
    states = STATUS_FILTERS[model.status_filter][1]
    if states is not None:
        parts.append("status=" + ",".join(sorted(state.value for state in states)))
    return parse_where(" and ".join(parts))


def wants_more(rows: int, last_on_screen: int, height: int) -> bool:
    """Whether a list of ``rows`` rows, its last on screen at ``last_on_screen``, should read more."""
    return rows - last_on_screen < SCREENS_AHEAD * max(height, 1)


def parents_missing(run_ids: Iterable[str], known: Collection[str]) -> list[str]:
    """The runs above each of ``run_ids``, up to its top-level run, that neither they nor
    ``known`` hold: a sub-run a filter selected is listed under them, as without the index."""
    listed = set(run_ids)
    missing: set[str] = set()
    for run_id in listed:
        parent = parent_run_id(run_id)
        while parent is not None and parent not in listed and parent not in known and parent not in missing:
            missing.add(parent)
            parent = parent_run_id(parent)
    return sorted(missing)
