"""The status index: runs' summaries kept in the user's cache, so a look at a large store sums up
only the runs that changed since the last one (docs/decisions.md, "The status index").

One SQLite file per store under ``$XDG_CACHE_HOME/agenttui/`` (``~/.cache/agenttui/``), never
beside the store: agenttui does not write to a store it only views. The file is named by the
store's ``index_identity`` (its path, device and inode; its server, database and schema) and
holds its ``index_fingerprint``, so a replaced store is never taken for the old one.

It keeps per run what ``store.summaries`` said of it (``RunSummary``: entries, turns, tokens,
suspect, forked, the header and the first end marker as stored) with the run's entry count and
highest seq when it was summed. A finished run's status is made from the summary at read time,
as from the store's. Of an unfinished run read whole, the caller may keep a *verdict*
(``keep_page``): ``runs.status`` keeps the status the rules give its records without a lease
row, and of a timer's only the wake time; the lease read at each look is applied to it then (a
live lease outranks every rule after the end markers), and the clock then decides a timer's.
Nothing kept hangs on a lease or the clock. Each page of runs is checked against the store (``store.run_marks``: one query on the
``(run_id, seq)`` index) and only runs whose count or highest seq moved are summed up again, and
written back; a run that vanished is never asked for again. Where seq runs across runs (SQLite),
the index is *settled* at a seq when opened, and a page checks only its runs written past that
seq since (``store.runs_after``). A few runs found in the index are summed up again (a spot
check, ``SPOT_SHARE`` of them): a disagreement empties the index. An index that cannot be
opened, read or written, or that is of another version, store or fingerprint, is rebuilt or left
alone: never an error, never trusted.

``AGENTTUI_CACHE=off`` (or ``disable()``, the CLI's ``--no-cache``) turns it off.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import random
import sqlite3
import stat
import threading
import time
import warnings
import weakref
from collections.abc import Awaitable, Callable, Collection, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from agenttui.errors import AgentTuiWarning
from agenttui.journal.keys import END_MARKERS
from agenttui.stores.base import INT64_MAX, INT64_MIN, Entry, Store
from agenttui.stores.files import remove_own_file
from agenttui.stores.summary import RunSummary, SummedJournal

#: The index files' layout; a file of another is rebuilt.
INDEX_VERSION = 6
#: The environment variable that turns the index off (``off``).
CACHE_ENV = "AGENTTUI_CACHE"
#: The share of the runs found in the index that are summed again and compared (a spot check):
#: two of a page of 500, on average, however the pages are cut (a viewer reads 50 at a time).
SPOT_SHARE = 2 / 500
#: How long an index is trusted, in seconds, before it is made again from the store: a redaction
#: keeps its entry's seq, so only a spot check that picks its run or this age finds it.
MAX_AGE_SECONDS = 24 * 3600
#: How often a look reads again the entries at the index's high-water mark and settled seq (the
#: first page of a look always does): the bound on how long a journal cut back meanwhile goes unseen.
CHECK_SECONDS = 1.0
#: How long a write to the index waits for another process writing the same file.
_BUSY_SECONDS = 1.0


class _Switch:
    off = False
    """``disable`` was called: the whole process reads without an index."""


def disable(off: bool = True) -> None:
    """Turn the index off (or on again) for this process (the CLI's ``--no-cache``)."""
    _Switch.off = off


def enabled() -> bool:
    """Whether statuses may be read through an index (neither ``--no-cache`` nor ``AGENTTUI_CACHE=off``)."""
    return not _Switch.off and os.environ.get(CACHE_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def cache_dir() -> Path:
    """Where the index files live: ``$XDG_CACHE_HOME/agenttui`` (an absolute path only, as the
    XDG spec says), else ``~/.cache/agenttui``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "agenttui"


def _fits(*tokens: int | None) -> bool:
    """Whether SQLite can hold these token counts (64 bits), the one figure a store's data sets
    (counts and seqs are the database's own). A run whose count is absurd (2^64) is not kept, and
    is summed up at each look instead: never an error that blinds the look at every other run."""
    return all(value is None or INT64_MIN <= value <= INT64_MAX for value in tokens)


def _not_private(path: Path) -> str | None:
    """Why the index at ``path`` is not the user's alone, or None when it is: its folder a real
    directory of theirs that nobody else can write, the file (if any) a regular file of theirs.
    A verdict read from a file someone else can write is a verdict they chose (a halted run shown
    complete, and then not found by ``cancel --where status=halted``)."""
    folder = os.lstat(path.parent)
    if stat.S_ISLNK(folder.st_mode):
        return f"{path.parent} is a symbolic link"
    if folder.st_uid != os.geteuid():
        return f"{path.parent} belongs to another user (uid {folder.st_uid})"
    if folder.st_mode & 0o022:
        return f"others can write to {path.parent} (mode {stat.S_IMODE(folder.st_mode):o})"
    try:
        held = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(held.st_mode) or held.st_uid != os.geteuid():
        return f"{path} is not a regular file of yours"
    return None


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(AgentTuiWarning(message), stacklevel=2)


def index_path(identity: str) -> Path:
    """The index file of the store ``identity`` names."""
    return cache_dir() / f"status-{hashlib.sha256(identity.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}.sqlite"


class Verdict(NamedTuple):
    """What the index keeps of a status the caller made of a run (``keep_page``): every
    member of ``runs.status.RunStatus`` but its run id and lease row, one column each."""

    state: str
    detail: str
    tool_use_id: str
    tool_name: str
    interrupt_name: str
    legacy: bool
    fork_of: str
    steps: int
    turns: int
    tokens: int
    earliest_ms: int | None
    latest_ms: int | None
    first_is_earliest: bool | None
    last_is_latest: bool | None
    wake_at: str | None
    """ISO 8601, as ``datetime.isoformat`` writes it."""


class IndexedPage(NamedTuple):
    """What ``indexed_page`` found of a page of runs."""

    summaries: list[RunSummary]
    """The summaries of the page's runs that have no verdict here."""
    verdicts: dict[str, Verdict]
    """What ``keep_page`` kept of runs that did not change since (by run id)."""
    marks: dict[str, tuple[int, int]] | None
    """Each run's validator as read for this page (None: the store keeps no index)."""
    to_keep: _PageWrite | None = None
    """What ``keep_page`` writes to the index (None: nothing)."""


class _PageWrite(NamedTuple):
    """What a page found that the index does not hold yet."""

    summaries: list[tuple[tuple[int, int], RunSummary]]
    """The runs summed up, each with its validator."""
    vanished: list[str]
    """Runs the index holds that the store no longer does."""
    high_water: tuple[int, bytes] | None
    """The index's new high-water mark, if the summaries raise it."""
    settled: tuple[int, bytes] | None
    """The index's settled seq when the page was read (``StatusIndex.write``)."""


async def keep_page(store: Store, page: IndexedPage, verdicts: Sequence[tuple[str, tuple[int, int], Verdict]]) -> None:
    """Keep what ``indexed_page`` found of a page that the index does not hold yet, and what the
    caller made of its runs (``runs.status`` keeps a status that holds whatever the lease and the
    clock say), each verdict with the validator of the entries it was made of: kept only where
    the index holds the run's summary at that same validator. One write to the index a page."""
    if (verdicts or page.to_keep) and (kept := _opened(store)) is not None:
        await _write(store, kept, lambda: kept.write(page.to_keep, verdicts))


def _opened(store: Store) -> StatusIndex | None:
    """The store's index where a look opened one (None: none yet, none kept, or an open the
    store failed, a damaged page: nothing to keep in)."""
    index = _indexes.get(store)
    if index is None or not index.done() or index.cancelled() or index.exception() is not None:
        return None
    return index.result()


async def keep_verdicts(store: Store, verdicts: Sequence[tuple[str, tuple[int, int], Verdict]]) -> None:
    """Keep verdicts of runs read apart from a page (``keep_page``'s rule: each only where the
    index holds the run's summary at the verdict's validator)."""
    await keep_page(store, IndexedPage([], {}, None), verdicts)


async def indexed_page(
    store: Store, run_ids: Sequence[str], end_markers: Collection[str], summed: SummedJournal | None = None
) -> IndexedPage:
    """``store.summaries(run_ids, end_markers)`` (or ``summed.summaries``, a pass's over the
    whole journal), each run that did not change since it was last summed up taken from the
    store's index instead (all of them from the store where it keeps none; errors of the store
    propagate as its own), with the validators read and the verdicts kept of the runs that did
    not change (whose summaries are then left out: the verdict stands for them)."""

    async def sum_up(asked: Sequence[str]) -> list[RunSummary]:
        return await (store.summaries(asked, end_markers) if summed is None else summed.summaries(asked))

    index = await _index_of(store, end_markers) if enabled() else None
    if index is None or not run_ids:
        return IndexedPage(await sum_up(run_ids), {}, None)
    await _check_cut_back_when_due(store, index)
    settled = index.settled
    try:
        kept = await asyncio.to_thread(index.read, run_ids)
    except (sqlite3.Error, OSError):
        _forget(store)
        return IndexedPage(await sum_up(run_ids), {}, None)
    marks = await _marks_now(store, settled, {run_id: mark for run_id, (mark, _) in kept.items()})
    found = {run_id: verdict for run_id, (mark, verdict) in kept.items() if mark == marks.get(run_id)}
    spots = set(random.sample(sorted(found), _spot_count(len(found))))
    # The summaries kept of runs without a verdict, and of those spot-checked (read apart: a
    # reopen has a verdict for most runs, and a summary's bytes are most of a row's).
    kept_summaries = await _read_index(index, [r for r, verdict in found.items() if verdict is None or r in spots])
    if kept_summaries is None:
        _forget(store)
        return IndexedPage(await sum_up(run_ids), {}, None)
    if spotted := {run_id: summary for run_id in spots if (summary := kept_summaries.get(run_id)) is not None}:
        _check_later(store, index, spotted, end_markers)
    asked = [run_id for run_id in run_ids if run_id not in found]
    fresh = {summary.run_id: summary for summary in await sum_up(asked)} if asked else {}
    # A summary says which entries it summed (their count and last seq, read with them): its validator.
    written = [((s.steps, s.last_seq), s) for s in fresh.values() if s.last_seq is not None]
    marks.update((s.run_id, mark) for mark, s in written)
    vanished = [run_id for run_id in kept if run_id not in marks]
    cut_back, high_water = await _high_water(store, index, written)
    # A row must sum every entry of its run up to the settled seq: a pass that ended before it
    # (the index settled again since, on a journal cut back) may have missed some.
    if cut_back or (summed is not None and settled is not None and not summed.reached(settled[0])):
        written = []  # keep nothing of this page
    to_keep = _PageWrite(written, vanished, high_water, settled) if written or vanished else None
    kept_verdicts = {run_id: verdict for run_id, verdict in found.items() if verdict is not None}
    summaries = [
        *(summary for run_id, summary in kept_summaries.items() if run_id in found and run_id not in fresh
          and run_id not in kept_verdicts),
        *(summary for summary in fresh.values() if summary.run_id not in kept_verdicts),
    ]  # fmt: skip
    return IndexedPage(summaries, kept_verdicts, marks, to_keep)


class KeptTokens(NamedTuple):
    """What ``kept_tokens`` found of a page of runs."""

    tokens: dict[str, str]
    """``runs.cost.RunTokens``' JSON of each run that did not change since it was kept."""
    marks: dict[str, tuple[int, int]]
    """Each run's validator, as read now."""
    spots: dict[str, str]
    """Kept tokens to check against the run's records (a spot check, ``SPOT_SHARE`` of them,
    left out of ``tokens``): one that differs empties what the index keeps of costs (``forget_tokens``)."""


async def kept_tokens(store: Store, run_ids: Sequence[str]) -> KeptTokens:
    """What the index keeps of the cost of each of ``run_ids`` that did not change since, read
    beside every run's validator now (one query on the store's ``(run_id, seq)`` index); nothing
    where the index is off or cannot be read."""
    index = await _index_of(store, END_MARKERS) if enabled() else None
    if index is None or not run_ids:
        return KeptTokens({}, {}, {})
    await _check_cut_back_when_due(store, index)
    marks = await store.run_marks(run_ids)
    try:
        kept = await asyncio.to_thread(index.tokens, run_ids)
    except (sqlite3.Error, OSError):
        _forget(store)
        return KeptTokens({}, marks, {})
    found = {run_id: text for run_id, (mark, text) in kept.items() if marks.get(run_id) == mark}
    spots = {run_id: found.pop(run_id) for run_id in random.sample(sorted(found), _spot_count(len(found)))}
    return KeptTokens(found, marks, spots)


async def keep_tokens(store: Store, rows: Sequence[tuple[str, tuple[int, int], str]]) -> None:
    """Keep runs' tokens, each with the validator of the entries it was read from: only those no
    newer than the index's settled seq where seq runs across runs (the settled entry's digest
    vouches for them if the journal is cut back; the others are kept on a later look)."""
    if not rows or (kept := _opened(store)) is None:
        return
    if store.INDEX_GLOBAL_SEQ:
        settled = kept.settled
        rows = [row for row in rows if settled is not None and row[1][1] <= settled[0]]
    if rows:
        await _write(store, kept, lambda: kept.keep_tokens(rows))


async def forget_tokens(store: Store) -> None:
    """Empty what the index keeps of costs: a spot check found one other than its run's records."""
    if (kept := _opened(store)) is not None:
        await _write(store, kept, kept.clear_tokens)


class SummedTokens(NamedTuple):
    """Every run's kept tokens summed (``summed_tokens``): what a store's spend is made of."""

    models: list[tuple[str, str, list[int]]]
    """By (provider, model): the four used counts, the four wasted, and the largest part sent."""
    unattributed: list[int]
    """Wasted usage no turn names, its four counts."""
    runs: int
    """The runs whose tokens are kept and as current as their status."""
    missing: int
    """The runs the index holds a status of and no current tokens: a total is partial by them."""
    missing_ids: list[str]
    """Those runs, when they are few (``SUMMED_NAMES_MISSING``): read, they complete the total."""


#: ``summed_tokens`` names the runs it lacks tokens of up to this many.
SUMMED_NAMES_MISSING = 500


async def summed_tokens(store: Store) -> SummedTokens | None:
    """Every run's kept tokens summed by model, in one pass over the index (each run's kept
    tokens count where they were read at the entries its status was: as current as the
    statuses); None where the index is off or cannot be read (an overflowing sum too)."""
    if (kept := _opened(store)) is None:
        return None
    try:
        return await asyncio.to_thread(kept.summed_tokens)
    except (sqlite3.Error, OSError):
        return None


class Changes(NamedTuple):
    """What checking the index's validators found (``KeptLines.changes``)."""

    changed: set[str]
    """The runs the index holds a verdict of that changed since (or vanished): to be read as any other."""
    every_run: list[str] | None
    """Every run the store holds, in byte order, when the check read every run's validator (a
    store whose seq does not run across runs: PostgreSQL): the store listed at once."""
    check: Callable[[], None] = lambda: None
    """Begins this look's spot checks (``_check_later``): called once the caller's own reads of
    the store are done, which they would hold up."""


class KeptLines:
    """What ``indexed_lines`` found: the verdict of every run the index holds one of, as columns
    (in the index's order), and (``changes``, once the store is checked) which of them changed."""

    def __init__(
        self,
        run_ids: list[str] | None = None,
        verdicts: Sequence[list[Any]] = (),
        plain: list[int] | None = None,
        changes: Awaitable[Changes] | None = None,
    ) -> None:
        self.run_ids = run_ids or []
        self.verdicts = verdicts or [[] for _ in Verdict._fields]
        """One list a member of ``Verdict``, in ``run_ids``' order."""
        self.plain = plain or []
        """1 where the verdict says no more than a status line (no open call, interrupt, fork,
        legacy journal, times or wake time): its state, detail, steps, turns and tokens."""
        self.changes = changes or _no_changes()

    def line_columns(self) -> tuple[list[Any], ...]:
        """The members a status line holds, as columns: state's value, detail, steps, turns, tokens."""
        return tuple(self.verdicts[_VERDICT_AT_NAME[name]] for name in _LINE_MEMBERS)

    def verdict(self, at: int) -> Verdict:
        return Verdict._make(column[at] for column in self.verdicts)


def _no_changes() -> asyncio.Future[Changes]:
    done: asyncio.Future[Changes] = asyncio.get_running_loop().create_future()
    done.set_result(Changes(set(), None))
    return done


async def indexed_lines(store: Store, end_markers: Collection[str]) -> KeptLines:
    """The verdict of every run the index holds (``indexed_page``'s rules, for a whole store at
    once: one pass over the index, in a thread), returned once they are read, while the store
    checks them (``KeptLines.changes``): the runs written since the index's settled seq, or
    every run's validator where the store keeps no global seq, read on the server meanwhile. A
    caller lays them out while it waits; one left out, or changed, is to be read as any other."""
    index = await _index_of(store, end_markers) if enabled() else None
    if index is None:
        return KeptLines()
    await _check_cut_back_when_due(store, index)
    settled = index.settled
    every_mark = asyncio.ensure_future(store.every_run_mark()) if settled is None else None
    try:
        run_ids, counts, lasts, *verdicts, plain = await asyncio.to_thread(index.lines)
    except BaseException as exc:
        if every_mark is not None:
            every_mark.cancel()
        if isinstance(exc, (sqlite3.Error, OSError, ValueError)):  # ValueError: not JSON (an index not as written)
            _forget(store)
            return KeptLines()
        raise
    kept = _KeptMarks(run_ids, counts, lasts)
    changes = asyncio.ensure_future(_changes(store, index, settled, kept, every_mark, end_markers))
    # Its failure is the caller's to raise; one whose caller failed first is not "never retrieved" on stderr.
    changes.add_done_callback(lambda done: done.cancelled() or done.exception())
    return KeptLines(run_ids, verdicts, plain, changes)


class _KeptMarks(NamedTuple):
    """The validator of each run an index holds, as columns: its run ids, counts and highest seqs."""

    run_ids: list[str]
    counts: list[int]
    lasts: list[int]


async def _changes(
    store: Store,
    index: StatusIndex,
    settled: tuple[int, bytes] | None,
    kept: _KeptMarks,
    every_mark: Awaitable[dict[str, tuple[int, int]]] | None,
    end_markers: Collection[str],
) -> Changes:
    """``_changed``, with the spot checks of runs that did not change, ready to begin."""
    changed, every_run = await _changed(store, settled, kept, every_mark)
    run_ids = kept.run_ids
    unchanged = [run_id for run_id in run_ids if run_id not in changed] if changed else run_ids
    spots = random.sample(unchanged, _spot_count(len(unchanged)))
    if (spotted := await _read_index(index, spots)) is None:
        _forget(store)
        return Changes(set(run_ids), every_run)
    return Changes(changed, every_run, lambda: _check_later(store, index, spotted, end_markers) if spotted else None)


async def _changed(
    store: Store,
    settled: tuple[int, bytes] | None,
    kept_marks: _KeptMarks,
    every_mark: Awaitable[dict[str, tuple[int, int]]] | None,
) -> tuple[set[str], list[str] | None]:
    """The runs the index holds at ``kept_marks`` that changed since (or vanished):
    ``_marks_now``'s rule, for a whole index at once. With no settled seq, every run's validator
    is read in one pass (``every_mark``), and the store's runs come with them (in byte order: a
    code point's order is its UTF-8 bytes')."""
    run_ids, counts, lasts = kept_marks
    if every_mark is not None:
        marks = await every_mark
        as_kept = zip(run_ids, zip(counts, lasts, strict=True), strict=True)
        return {run_id for run_id, mark in as_kept if marks.get(run_id) != mark}, sorted(marks)
    assert settled is not None
    written_since = await store.runs_after(settled[0])
    kept = {run_id: (counts[at], lasts[at]) for at, run_id in enumerate(run_ids) if run_id in written_since}
    if not kept:
        return set(), None
    marks = await _marks_now(store, None, kept)
    return {run_id for run_id, mark in kept.items() if marks.get(run_id) != mark}, None


async def _marks_now(
    store: Store, settled: tuple[int, bytes] | None, kept: dict[str, tuple[int, int]]
) -> dict[str, tuple[int, int]]:
    """Each run's validator now, of the runs the index holds at the validators ``kept`` that the
    store still holds: a run with no entry past the settled seq is as the index holds it; the
    others' are read from the store."""
    written_since = await store.runs_after(settled[0]) if settled is not None else None
    marks = (
        {} if written_since is None else {run_id: mark for run_id, mark in kept.items() if run_id not in written_since}
    )
    if others := [run_id for run_id in kept if run_id not in marks]:
        marks.update(await store.run_marks(others))
    return marks


async def holds_runs(store: Store, end_markers: Collection[str]) -> bool:
    """Whether the store's index holds runs from an earlier look (a reopen), opening it if need be."""
    index = await _index_of(store, end_markers) if enabled() else None
    if index is None:
        return False
    try:
        return await asyncio.to_thread(index.holds_runs)
    except (sqlite3.Error, OSError):
        return False


async def _check_cut_back_when_due(store: Store, index: StatusIndex) -> None:
    """``_check_cut_back``, at most every ``CHECK_SECONDS``, where seq runs across runs."""
    if store.INDEX_GLOBAL_SEQ and time.monotonic() - index.checked_at >= CHECK_SECONDS:
        await _check_cut_back(store, index)


async def _check_cut_back(store: Store, index: StatusIndex) -> None:
    """Read again the entries at the index's high-water mark and settled seq: one gone or other
    means the journal was cut back (and maybe written again, over the seqs it had handed out),
    and a run may have its old count and highest seq over other bytes: the index is emptied."""
    index.checked_at = time.monotonic()
    for seq, digest in filter(None, (index.high_water, index.settled)):
        if await store.entry_digest(seq) != digest:
            await _write(store, index, index.clear)
            await _settle(store, index)
            return


async def _high_water(
    store: Store, index: StatusIndex, written: Sequence[tuple[tuple[int, int], RunSummary]]
) -> tuple[bool, tuple[int, bytes] | None]:
    """Whether the journal was cut back already, and the index's new high-water mark (None where
    the summaries about to be kept do not raise it): their highest seq and its entry's digest,
    read before they are kept, so a journal cut back in between fails the next check."""
    seq = max((last for (_, last), _ in written), default=-1)
    if not store.INDEX_GLOBAL_SEQ or seq <= (index.high_water or (-1,))[0]:
        return False, None
    digest = await store.entry_digest(seq)
    return digest is None, None if digest is None else (seq, digest)


async def _read_index(index: StatusIndex, run_ids: Sequence[str]) -> dict[str, RunSummary] | None:
    """``index.summaries(run_ids)``, in a thread; None when the index cannot be read."""
    try:
        return await asyncio.to_thread(index.summaries, run_ids) if run_ids else {}
    except (sqlite3.Error, OSError):
        return None


class _SpotChecks:
    """A store's spot checks waiting, and the task that makes them, one query at a time."""

    def __init__(self) -> None:
        self.waiting: dict[str, RunSummary] = {}
        self.task: asyncio.Task[None] | None = None


_checks: weakref.WeakKeyDictionary[Store, _SpotChecks] = weakref.WeakKeyDictionary()


def _check_later(store: Store, index: StatusIndex, kept: dict[str, RunSummary], end_markers: Collection[str]) -> None:
    """Spot-check ``kept`` summaries in the background, beside the look: a run summed up again
    takes as long as its entries' bytes (a tool result of a megabyte), and a look waited for it
    on every page. The checks waiting are made together, one query at a time, so they hold up
    the look's own reads of the store as little as they can. Once found out, the index is
    emptied: the next look sums every run up again."""
    checks = _checks.setdefault(store, _SpotChecks())
    checks.waiting.update(kept)
    if checks.task is None or checks.task.done():
        checks.task = asyncio.ensure_future(_spot_check(store, index, checks, end_markers))


async def _spot_check(store: Store, index: StatusIndex, checks: _SpotChecks, end_markers: Collection[str]) -> None:
    while checks.waiting:
        kept, checks.waiting = checks.waiting, {}
        try:
            fresh = {summary.run_id: summary for summary in await store.summaries(list(kept), end_markers)}
        except Exception:  # a store closed meanwhile, or its own trouble: the look says so, not this
            return
        if any(fresh.get(run_id) != summary for run_id, summary in kept.items()):
            # What the index says is not what the store says (a redaction, a store changed
            # behind its validators): nothing in it is trusted again.
            checks.waiting.clear()
            await _write(store, index, index.clear)
            await _settle(store, index)


async def spot_checks_done(store: Store) -> None:
    """Wait for the spot checks looks at ``store`` began (a command waits for them before it ends)."""
    if (checks := _checks.get(store)) is not None and checks.task is not None:
        await checks.task


def _spot_count(found: int) -> int:
    """How many of ``found`` runs to spot-check: ``SPOT_SHARE`` of them, the fraction by chance."""
    expected = min(found * SPOT_SHARE, found)
    return int(expected) + (random.random() < expected % 1)


async def _write(store: Store, index: StatusIndex, write: Callable[[], None]) -> None:
    """Run a write to the index in a thread; one that fails (a full disk, a lock held too long)
    leaves the store without an index for the rest of this process."""
    try:
        await asyncio.to_thread(write)
    except (sqlite3.Error, OSError):
        _forget(store)


_indexes: weakref.WeakKeyDictionary[Store, asyncio.Future[StatusIndex | None]] = weakref.WeakKeyDictionary()


def _forget(store: Store) -> None:
    """Use no index for ``store`` from now on (in this process)."""
    done: asyncio.Future[StatusIndex | None] = asyncio.get_running_loop().create_future()
    done.set_result(None)
    previous = _indexes.get(store)
    _indexes[store] = done
    if previous is not None and previous.done() and not previous.cancelled() and (index := previous.result()):
        index.close()


async def _index_of(store: Store, end_markers: Collection[str]) -> StatusIndex | None:
    """The store's index, opened (and checked) once per store handle; None where it keeps none."""
    opening = _indexes.get(store)
    failed = opening is not None and opening.done() and (opening.cancelled() or opening.exception() is not None)
    if opening is None or failed or opening.get_loop() is not asyncio.get_running_loop():
        # Opened once per handle and loop; an open the store failed (a dropped connection) is tried again.
        opening = asyncio.ensure_future(_open(store, end_markers))
        # Its failure is each waiter's to raise; one that outlived them all (a viewer quit while
        # the index opened, and the store closed under it) is not "never retrieved" on stderr.
        opening.add_done_callback(lambda done: done.cancelled() or done.exception())
        _indexes[store] = opening
    return await asyncio.shield(opening)


async def _settle(store: Store, index: StatusIndex) -> None:
    """Move the index's settled seq up to the journal's last: the runs written past the old one
    leave the index (summed up again when next asked for), so every run left holds no entry past
    the new one that its row has not summed (docs/decisions.md, "The status index"). An index
    with no settled seq yet is emptied first: nothing says what its rows summed."""
    if not store.INDEX_GLOBAL_SEQ:
        return
    previous = index.settled
    if previous is None:
        changed: Collection[str] | None = None
        last = await store.last_seq()
    else:
        written_since = await store.runs_after(previous[0])
        if not written_since:
            return
        changed, last = written_since.keys(), max(written_since.values())
    if last is None:  # an empty journal: nothing to settle yet
        return
    digest = await store.entry_digest(last)
    if digest is None:  # cut back while this was read: the next look starts again
        await _write(store, index, index.clear)
        return
    await _write(store, index, lambda: index.settle(previous, changed, (last, digest)))


async def _open(store: Store, end_markers: Collection[str]) -> StatusIndex | None:
    identity = store.index_identity() if store.IMPLEMENTS_SUMMARIES else None
    if identity is None:
        return None
    fingerprint = await store.index_fingerprint()
    expected = {
        "version": str(INDEX_VERSION).encode(),
        "identity": identity.encode("utf-8", "surrogatepass"),
        "fingerprint": fingerprint,
        "end_markers": "\0".join(sorted(end_markers)).encode("utf-8", "surrogatepass"),
    }
    index = await asyncio.to_thread(StatusIndex.open, index_path(identity), expected)
    if index is not None:
        weakref.finalize(store, index.close)
        await _settle(store, index)
    return index


class StatusIndex:
    """One store's index file: each run's validator (entry count, highest seq) and summary."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        """Calls come from ``asyncio.to_thread``'s threads: one at a time on the connection."""
        self.high_water = _mark(conn, "high_water")
        """The highest seq of any entry a kept summary summed, and that entry's ``entry_digest``
        (a store whose seq runs across runs: ``INDEX_GLOBAL_SEQ``)."""
        self.checked_at = -math.inf
        """When a page last read the entries at ``high_water`` and ``settled`` again (monotonic)."""
        self.settled = _mark(conn, "settled")
        """A seq, and its entry's ``entry_digest``, such that every run holding no entry past it
        is as its row says (``INDEX_GLOBAL_SEQ``; ``_settle``)."""

    @classmethod
    def open(cls, path: Path, meta: dict[str, bytes]) -> StatusIndex | None:
        """The index at ``path`` if it is one of this version for the store ``meta`` describes,
        else a new, empty one in its place; None where the cache cannot hold one."""
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if (shared := _not_private(path)) is not None:
                _warn_once(f"the status index is not used: {shared}; every status is read from the store")
                return None
            if (kept := cls._kept(path, meta)) is not None:
                return kept
            remove_own_file(path)
            conn = _connect(path)
            with conn:
                conn.executescript(_SCHEMA)
                made = {**meta, "made_at": repr(time.time()).encode()}
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", sorted(made.items()))
            return cls(conn)
        except (sqlite3.Error, OSError):
            return None

    @classmethod
    def _kept(cls, path: Path, meta: dict[str, bytes]) -> StatusIndex | None:
        """The index already at ``path``, if it is one of this version for the store ``meta``
        describes and young enough; None for anything else (no file, a damaged one, not a
        database at all, another program's, another store's or version's)."""
        try:
            conn = _connect(path)
        except sqlite3.Error:
            return None
        try:
            kept = _meta(conn)
            made_at = float(kept.pop("made_at", b"0"))
            if kept == meta and 0 <= time.time() - made_at < MAX_AGE_SECONDS:
                return cls(conn)  # reads its high-water mark: a file without one is made again
        except (sqlite3.Error, ValueError):
            pass
        conn.close()
        return None

    def read(self, run_ids: Sequence[str]) -> dict[str, tuple[tuple[int, int], Verdict | None]]:
        """The validator and verdict (None: none kept) the index holds of each of ``run_ids`` it holds."""
        found: dict[str, tuple[tuple[int, int], Verdict | None]] = {}
        for run_id, count, last, *verdict in self._rows(_VERDICT_SELECTED, run_ids):
            found[run_id] = ((count, last), None if verdict[0] is None else Verdict._make(verdict))
        return found

    def lines(self) -> list[list[Any]]:
        """Every run with a verdict, as columns: its id, validator (count, last), the verdict's
        members, and whether the verdict says no more than its status line (state, detail, steps,
        turns, tokens). Each column comes as one JSON array: a row at a time, the reader took the
        interpreter's lock back for every row, and the store's listing in another thread waited
        for it each time (the pair took 2.5 times as long as either alone)."""
        with self._lock:
            row = self._conn.execute(_LINES_SELECTED).fetchone()
        return [json.loads(column) for column in row]

    def holds_runs(self) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone() is not None

    def summaries(self, run_ids: Sequence[str]) -> dict[str, RunSummary]:
        """The summary the index holds of each of ``run_ids`` it holds."""
        return {row[0]: _summary_of(row) for row in self._rows(_SUMMARY_SELECTED, run_ids)}

    def tokens(self, run_ids: Sequence[str]) -> dict[str, tuple[tuple[int, int], str]]:
        """The validator and tokens (``runs.cost.RunTokens``' JSON) kept of each of ``run_ids`` held."""
        return {run_id: ((count, last), text) for run_id, count, last, text in self._rows(_TOKENS, run_ids, "costs")}

    def keep_tokens(self, rows: Sequence[tuple[str, tuple[int, int], str]]) -> None:
        """Keep each run's tokens with the validator of the entries they were read from."""
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR REPLACE INTO costs VALUES (?, ?, ?, ?)",
                [(r, count, last, t) for r, (count, last), t in rows],  # tokens as JSON text: any size
            )

    def summed_tokens(self) -> SummedTokens:
        """``summed_tokens``: SQLite sums each model's counts as it reads the kept JSON."""
        with self._lock:
            models = self._conn.execute(_MODELS_SUMMED).fetchall()
            runs, missing, *unattributed = self._conn.execute(_RUNS_SUMMED).fetchone()
            named = self._conn.execute(_MISSING, (SUMMED_NAMES_MISSING,)).fetchall() if missing else []
        missing_ids = [run_id for (run_id,) in named] if missing <= SUMMED_NAMES_MISSING else []
        return SummedTokens([(p, m, list(c)) for p, m, *c in models], unattributed, runs, missing, missing_ids)

    def clear_tokens(self) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM costs")

    def _rows(self, columns: str, run_ids: Sequence[str], table: str = "runs") -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        with self._lock:
            for start in range(0, len(run_ids), _CHUNK):
                chunk = run_ids[start : start + _CHUNK]
                rows += self._conn.execute(
                    f"SELECT {columns} FROM {table} WHERE run_id IN ({', '.join('?' * len(chunk))})", chunk
                ).fetchall()
        return rows

    def write(self, page: _PageWrite | None, verdicts: Sequence[tuple[str, tuple[int, int], Verdict]] = ()) -> None:
        """Keep each summary of ``page`` with the validator it was taken at, drop the runs that
        vanished, raise the high-water mark, and keep each verdict where the run's summary here
        (kept before or now) is at the verdict's validator. If the settled seq has moved since
        the page was read (another look settled the index), a summary no newer than the settled
        seq now may have missed entries it vouches for, and is dropped."""
        summaries, vanished, high_water, settled = page or ([], [], None, None)
        verdict_of = {run_id: (mark, verdict) for run_id, mark, verdict in verdicts}
        with self._lock, self._conn:
            now = _mark(self._conn, "settled")
            if now is not None and now != settled:
                summaries = [(mark, s) for mark, s in summaries if mark[1] > now[0]]
            rows = []
            for (count, last), s in summaries:
                mark, verdict = verdict_of.pop(s.run_id, (None, None))
                rows.append((
                    s.run_id, count, last, s.turns, s.tokens, s.suspect, s.forked, *_entry_columns(s.first),
                    *(_entry_columns(s.end) if s.end is not None else (None,) * 5),
                    *(verdict if verdict is not None and mark == (count, last) else _NO_VERDICT),
                ))  # fmt: skip
            self._conn.executemany(
                f"INSERT OR REPLACE INTO runs VALUES ({', '.join('?' * (_VERDICT_AT + len(Verdict._fields)))})",
                [row for row in rows if _fits(row[_TOKENS_AT], row[_VERDICT_TOKENS_AT])],
            )
            self._keep_verdicts([(run_id, mark, verdict) for run_id, (mark, verdict) in verdict_of.items()])
            for table in ("runs", "costs"):
                self._conn.executemany(f"DELETE FROM {table} WHERE run_id = ?", [(run_id,) for run_id in vanished])
            if high_water is not None and (self.high_water is None or self.high_water[0] < high_water[0]):
                self._conn.execute("INSERT OR REPLACE INTO high_water VALUES (1, ?, ?)", high_water)
                self.high_water = high_water

    def _keep_verdicts(self, verdicts: Sequence[tuple[str, tuple[int, int], Verdict]]) -> None:
        """Keep each verdict with its run's summary, where that was taken at the same validator."""
        columns = ", ".join(f"verdict_{name} = ?" for name in Verdict._fields)
        self._conn.executemany(
            f"UPDATE runs SET {columns} WHERE run_id = ? AND count = ? AND last = ?",
            [(*verdict, run_id, count, last) for run_id, (count, last), verdict in verdicts if _fits(verdict.tokens)],
        )

    def settle(
        self, previous: tuple[int, bytes] | None, changed: Collection[str] | None, settled: tuple[int, bytes]
    ) -> None:
        """Settle the index at ``settled`` (``_settle``): drop the rows of the ``changed`` runs
        (every row, None) unless another look settled it since ``previous`` was read."""
        with self._lock, self._conn:
            now = _mark(self._conn, "settled")
            if now == previous:
                for table in ("runs", "costs"):
                    if changed is None:
                        self._conn.execute(f"DELETE FROM {table}")
                    else:
                        self._conn.executemany(f"DELETE FROM {table} WHERE run_id = ?", [(r,) for r in changed])
                self._conn.execute("INSERT OR REPLACE INTO settled VALUES (1, ?, ?)", settled)
                now = settled
            self.settled = now

    def clear(self) -> None:
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM runs")
            self._conn.execute("DELETE FROM costs")
            self._conn.execute("DELETE FROM high_water")
            self._conn.execute("DELETE FROM settled")
            self.high_water = self.settled = None

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _mark(conn: sqlite3.Connection, table: str) -> tuple[int, bytes] | None:
    """The seq and digest the table ``high_water`` or ``settled`` holds, if any."""
    row = conn.execute(f"SELECT seq, digest FROM {table}").fetchone()
    return None if row is None else (row[0], bytes(row[1]))


def _summary_of(row: tuple[Any, ...]) -> RunSummary:
    """The summary an index row holds (``StatusIndex.read``)."""
    run_id, count, last, turns, tokens, suspect, forked = row[:7]
    end = None if row[12] is None else Entry(*row[12:17])
    return RunSummary(run_id, count, last, turns, tokens, Entry(*row[7:12]), end, bool(suspect), bool(forked))


def _entry_columns(entry: Entry) -> tuple[object, ...]:
    return (entry.seq, entry.name, entry.data, entry.damage, entry.retyped)


#: How many run ids one read of the index asks for (below SQLite's limit on parameters).
_CHUNK = 500

# ``runs`` is kept in its run ids' order (WITHOUT ROWID): a reopen reads every row, and gets them
# in a listing's order for free (sorting them, in SQL or here, took 50-180 ms of 100,000 runs).
_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE high_water (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, digest BLOB NOT NULL);
CREATE TABLE settled (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL, digest BLOB NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, count INTEGER NOT NULL, last INTEGER NOT NULL,
    turns INTEGER NOT NULL, tokens INTEGER NOT NULL, suspect INTEGER NOT NULL, forked INTEGER NOT NULL,
    first_seq, first_name TEXT NOT NULL, first_data BLOB NOT NULL, first_damage TEXT NOT NULL, first_retyped TEXT NOT NULL,
    end_seq, end_name TEXT, end_data BLOB, end_damage TEXT, end_retyped TEXT,
    {verdict}
) WITHOUT ROWID;
CREATE TABLE costs (run_id TEXT PRIMARY KEY, count INTEGER NOT NULL, last INTEGER NOT NULL, tokens TEXT NOT NULL)
    WITHOUT ROWID;
""".format(verdict=", ".join(f"verdict_{name}" for name in Verdict._fields))
#: The kept tokens as current as their run's status (``runs.cost.RunTokens``' JSON).
_CURRENT_COSTS = "costs c JOIN runs r ON r.run_id = c.run_id AND r.count = c.count AND r.last = c.last"
_MODELS_SUMMED = f"""
SELECT json_extract(m.value, '$[0]'), json_extract(m.value, '$[1]'),
    {", ".join(f"sum(json_extract(m.value, '$[{at}]'))" for at in range(2, 10))}, max(json_extract(m.value, '$[10]'))
FROM {_CURRENT_COSTS}, json_each(c.tokens, '$[0]') m GROUP BY 1, 2
"""
_RUNS_SUMMED = f"""
SELECT count(*), (SELECT count(*) FROM runs) - count(*),
    {", ".join(f"coalesce(sum(json_extract(c.tokens, '$[1][{at}]')), 0)" for at in range(4))}
FROM {_CURRENT_COSTS}
"""
_MISSING = """
SELECT r.run_id FROM runs r WHERE NOT EXISTS
    (SELECT 1 FROM costs c WHERE c.run_id = r.run_id AND c.count = r.count AND c.last = r.last) LIMIT ?
"""
#: The column of a ``runs`` row its verdict begins at (the summary's come before it).
_VERDICT_AT = 17
#: Where a row of ``runs`` holds its tokens, and its verdict's (``_fits``).
_TOKENS_AT = 4
_VERDICT_TOKENS_AT = _VERDICT_AT + Verdict._fields.index("tokens")
_NO_VERDICT = (None,) * len(Verdict._fields)
_VERDICT_SELECTED = ", ".join(["run_id", "count", "last", *(f"verdict_{name}" for name in Verdict._fields)])
_PLAIN = (
    "verdict_tool_use_id = '' AND verdict_tool_name = '' AND verdict_interrupt_name = '' AND NOT verdict_legacy"
    " AND verdict_fork_of = '' AND verdict_earliest_ms IS NULL AND verdict_wake_at IS NULL"
)
_LINES_SELECTED = (
    "SELECT "
    + ", ".join(f"json_group_array({column})" for column in [*_VERDICT_SELECTED.split(", "), f"coalesce({_PLAIN}, 0)"])
    + " FROM runs WHERE verdict_state IS NOT NULL"
)
_TOKENS = "run_id, count, last, tokens"
#: The members of a verdict its status line holds, and where each is among its members.
_LINE_MEMBERS = ("state", "detail", "steps", "turns", "tokens")
_VERDICT_AT_NAME = {name: at for at, name in enumerate(Verdict._fields)}
_SUMMARY_SELECTED = (
    "run_id, count, last, turns, tokens, suspect, forked, first_seq, first_name, first_data, first_damage,"
    " first_retyped, end_seq, end_name, end_data, end_damage, end_retyped"
)


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the index file, which is made (mode 0600: it holds run ids and reasons) if missing."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    conn = sqlite3.connect(path, timeout=_BUSY_SECONDS, check_same_thread=False)
    # A cache: a commit need not reach the disk before the look goes on (a page's write waited
    # on fsync longer than the page took to read), and WAL never leaves the file torn by a crash.
    conn.execute("PRAGMA journal_mode = WAL").fetchall()
    conn.execute("PRAGMA synchronous = NORMAL").fetchall()
    return conn


def _meta(conn: sqlite3.Connection) -> dict[str, bytes]:
    return {key: bytes(value) for key, value in conn.execute("SELECT key, value FROM meta").fetchall()}
