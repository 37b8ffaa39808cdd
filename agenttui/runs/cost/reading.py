"""What runs cost, read from a store: each run's cost with its sub-runs rolled up
(``store_costs``), or many runs' spend summed by model or by day (``store_spend``).

A first look reads each run's model turns, dropped requests and ``run:start`` (only those are
decoded: a run's tool results are most of its bytes), a page of runs in one round trip. It keeps
what it read of each run in the status index (``runs.cost.RunTokens``, beside the run's status,
validated as the status is), so that a second look at a store's cost reads no record of a run
that did not change: its tokens are priced as they are read.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from agenttui.journal import keys
from agenttui.journal.record import Record, Usage
from agenttui.runs.cost.lens import PriceBook, RunCost, RunTokens, Spend, model_info, model_name, run_cost, spend_of

if TYPE_CHECKING:
    from agenttui.journal.journal import Journal
    from agenttui.runs.statuses.index import KeptTokens
    from agenttui.stores.base import Entry, Store

#: Root runs read in one round trip, with their sub-runs.
COST_PAGE = 500
#: The records a cost is made of: model turns, dropped requests' spend, the budget, and the
#: attempts that carry the run's times.
_COSTED = ("@llm/", "@spend/", "@spend-late/", keys.RUN_START, "attempt:")


async def store_costs(
    store: Store,
    run_ids: Sequence[str] | None,
    prices: PriceBook,
    *,
    turns: bool = True,
    below: Mapping[str, Sequence[str]] | None = None,
) -> AsyncIterator[RunCost]:
    """The cost of each of ``run_ids`` (every root run of the store when None), each with the
    sub-runs below it rolled up, as each is read. ``below``: the sub-runs of each of ``run_ids``
    at every depth, where the caller knows them (else listed, a query a run).

    ``turns=False``: without each turn's spend nor the tools' (``RunCost.turns`` and ``by_tool``
    left empty), made from the tokens the status index keeps of the runs that did not change
    since a look kept them, and kept there of the others."""
    async for reader, page, sub_runs in _pages(store, run_ids, prices, kept=not turns, below=below):
        for root in page:
            tree = sub_runs.get(root, [])
            costs: dict[str, RunCost] = {}
            for run_id in sorted(tree, key=lambda r: -r.count(">")):  # the deepest first: a parent sums its children
                children = {c: costs[c] for c in tree if c in costs and keys.parent_run_id(c) == run_id}
                costs[run_id] = await reader.cost(run_id, children)
            yield await reader.cost(root, {c: costs[c] for c in tree if keys.parent_run_id(c) == root})


class StoreSpend(NamedTuple):
    """What a store's runs cost together, as far as the status index keeps their tokens."""

    spend: Spend
    missing: int
    """Runs whose cost is not in ``spend``: the index keeps no tokens of them (no look at their
    cost since they changed), and they were too many to read."""
    not_read_whole: int = 0
    """Runs of which a record could not be read (what could be is in ``spend``)."""
    unindexed: int = 0
    """Runs the caller knows of that the status index holds no status of yet (in ``missing``)."""
    runs: int = 0
    """Every run counted or missing."""


async def kept_spend(store: Store, prices: PriceBook, *, runs: int = 0) -> StoreSpend | None:
    """What the runs whose statuses the status index holds cost together: their kept tokens
    summed in one pass over the index, and the few runs it keeps none of read (as ``agenttui
    cost`` reads them). None where it keeps none or cannot say (a tiered price reached: those
    runs are priced turn by turn, as ``agenttui cost`` does). ``runs``: how many runs the caller
    knows the store holds, where the index may not hold them all yet (its missing count them)."""
    from agenttui.runs.statuses.index import summed_tokens

    summed = await summed_tokens(store)
    if summed is None or not (summed.runs or summed.missing_ids):
        return None
    total, missing, broken = Spend(), summed.missing, 0
    if summed.missing_ids:
        tally = SpendTally(prices, "model")
        alone = dict.fromkeys(summed.missing_ids, ())  # each its own, its sub-runs summed apart
        async for reader, page, _ in _pages(store, summed.missing_ids, prices, kept=True, below=alone):
            for run_id in page:
                tally.add(await reader.spend(run_id, run_id), "")
        total, missing, broken = tally.spends()[1], 0, tally.not_read_whole
    for provider, model, counts in summed.models:
        info = model_info(provider, model)
        if counts[8] is not None and not prices.summable(info, counts[8]):
            return None
        total += spend_of(prices, info, Usage(*counts[:4]), Usage(*counts[4:8]), counts[8])
    if any(summed.unattributed):
        total += spend_of(prices, model_info("", ""), None, Usage(*summed.unattributed), 0)
    unindexed = max(0, runs - summed.runs - summed.missing)
    every = max(runs, summed.runs + summed.missing)
    return StoreSpend(total, missing + unindexed, broken, unindexed, every)


class SpendTally:
    """Many runs' spend summed by a key (their model, their day): each run's kept tokens added
    up as integers as they are read, and priced once a key and model (``spends``), since below a
    price's tiers a sum of tokens costs what its parts do. A run whose tokens reach a tier, or
    whose records could not all be read, is priced by its turns and added as it is."""

    def __init__(self, prices: PriceBook, by: str) -> None:
        self.prices = prices
        self.by = by
        """``model`` or ``day``."""
        self.runs = self.turns = 0
        self._broken: set[str] = set()
        """The top-level runs of which a record could not be read."""
        self._tokens: dict[tuple[str | None, str, str], list[int]] = {}
        """By (key, provider, model): the four used counts, the four wasted, the largest part.
        A key of None counts in the total only (a model's tally: wasted usage no turn names)."""
        self._priced: dict[str, Spend] = {}
        """Each key's spend of the runs priced by their turns."""
        self._priced_total = Spend()
        self._names: dict[tuple[str, str], str] = {}
        self.day_runs: dict[str, int] = {}
        """The top-level runs of each day (a tally by day)."""

    def add(self, spent: RunSpend, day: str) -> None:
        """A run's own spend (``day``: its top-level run's, for a tally by day)."""
        if spent.run_id == spent.root:
            self.runs += 1
            if self.by == "day":
                self.day_runs[day] = self.day_runs.get(day, 0) + 1
        if spent.cost is not None:
            cost = spent.cost
            self.turns += cost.turn_count
            if cost.unreadable:
                self._broken.add(spent.root)
            # By model, what no turn names (wasted usage) counts in the total only.
            for key, spend in (cost.by_model if self.by == "model" else {day: cost.own}).items():
                self._priced[key] = self._priced.get(key, Spend()) + spend
            self._priced_total += cost.own
            return
        models, unattributed, _, _ = spent.tokens
        tokens, by_model = self._tokens, self.by == "model"
        for provider, model, *counts in models:
            self.turns += counts[9]
            _add_counts(tokens, (self._name(provider, model) if by_model else day, provider, model), counts)
        if any(unattributed):
            _add_counts(tokens, (None if by_model else day, "", ""), [*[0] * 4, *unattributed, 0, 0])

    def _name(self, provider: str, model: str) -> str:
        """``model_name`` of a model its tokens name, made once a model."""
        if (name := self._names.get((provider, model))) is None:
            name = self._names[provider, model] = model_name(model_info(provider, model))
        return name

    @property
    def not_read_whole(self) -> int:
        return len(self._broken)

    def spends(self) -> tuple[dict[str, Spend], Spend]:
        """Each key's spend, and the total."""
        lines = dict(self._priced)
        total = self._priced_total
        for (key, provider, model), counts in self._tokens.items():
            spend = spend_of(
                self.prices, model_info(provider, model), Usage(*counts[:4]), Usage(*counts[4:8]), counts[8]
            )
            if key is not None:
                lines[key] = lines.get(key, Spend()) + spend
            total += spend
        return lines, total


def _add_counts(tokens: dict[tuple[str | None, str, str], list[int]], key: tuple[str | None, str, str],
                counts: list[int]) -> None:  # fmt: skip
    """Add a model's eight counts to a tally's, and keep the larger of their largest parts."""
    had = tokens.get(key)
    if had is None:
        tokens[key] = counts[:9]
        return
    for at in range(8):
        had[at] += counts[at]
    had[8] = max(had[8], counts[8])


class RunSpend(NamedTuple):
    """A run's own spend as a tally reads it: its tokens as the index keeps them (JSON, parsed),
    or its cost where those cannot be priced summed (a tier its turns reach, a record that could
    not be read)."""

    root: str
    run_id: str
    tokens: list[Any]
    cost: RunCost | None = None

    @property
    def earliest_ms(self) -> int | None:
        return self.cost.earliest_ms if self.cost is not None else self.tokens[3]


async def store_spend(store: Store, run_ids: Sequence[str] | None, prices: PriceBook) -> AsyncIterator[RunSpend]:
    """Each run's own spend (``RunSpend``), of ``run_ids`` and their sub-runs (every run of the
    store when None), a top-level run before its sub-runs, for a ``SpendTally``."""
    async for reader, page, below in _pages(store, run_ids, prices, kept=True):
        for root in page:
            for run_id in (root, *below.get(root, [])):
                yield await reader.spend(root, run_id)


async def _pages(
    store: Store,
    run_ids: Sequence[str] | None,
    prices: PriceBook,
    *,
    kept: bool,
    below: Mapping[str, Sequence[str]] | None = None,
) -> AsyncIterator[tuple[_PageReader, list[str], Mapping[str, Sequence[str]]]]:
    """The top-level runs asked for (every one when None) a page at a time, each page read
    (``_PageReader``), with the sub-runs below each."""
    from agenttui.journal.journal import Journal

    if run_ids is None:
        every = [run_id async for run_id in store.runs()]
        listed: dict[str, list[str]] = {}
        for run_id in every:
            if (root := keys.root_run_id(run_id)) != run_id:
                listed.setdefault(root, []).append(run_id)
        roots, below = [run_id for run_id in every if keys.root_run_id(run_id) == run_id], listed
    elif below is None:
        roots, listed = list(run_ids), {}
        for run_id in roots:
            listed[run_id] = [r async for r in store.runs(prefix=run_id + ">")] if store.IMPLEMENTS_LISTING else []
        below = listed
    else:
        roots = list(run_ids)
    journal = Journal(store)
    for start in range(0, len(roots), COST_PAGE):
        page = roots[start : start + COST_PAGE]
        reader = await _PageReader.read(journal, prices, [r for root in page for r in (root, *below.get(root, []))],
                                        kept=kept)  # fmt: skip
        yield reader, page, below
        await reader.keep()


class _PageReader:
    """A page of runs' costs: their entries read in one round trip, or, with ``kept``, the tokens
    the status index keeps of the runs that did not change, and the others' entries."""

    def __init__(self, journal: Journal, prices: PriceBook, kept: KeptTokens | None,
                 loaded: Mapping[str, list[Entry]] | None) -> None:  # fmt: skip
        self.journal, self.prices, self.kept, self.loaded = journal, prices, kept, loaded
        self.to_keep: list[tuple[str, tuple[int, int], str]] = []
        self.spots_differ = False

    @classmethod
    async def read(cls, journal: Journal, prices: PriceBook, run_ids: list[str], *, kept: bool) -> _PageReader:
        from agenttui.runs.statuses.index import KeptTokens, kept_tokens

        tokens = await kept_tokens(journal.store, run_ids) if kept else KeptTokens({}, {}, {})
        # One round trip for the runs whose entries are needed; a page that cannot be read whole
        # (a damaged one) is read again a run at a time, so that only its broken run says so.
        loaded = await _load_page(journal.store, [r for r in run_ids if r not in tokens.tokens])
        return cls(journal, prices, tokens if kept else None, loaded)

    async def cost(self, run_id: str, children: Mapping[str, RunCost]) -> RunCost:
        """``run_cost`` of a run (from its kept tokens where it may be): one whose rows cannot be
        read (a damaged page) costs nothing and says why, and the runs around it are costed still."""
        kept = self.kept
        if kept is not None and (text := kept.tokens.get(run_id)) is not None:
            cost = RunTokens.from_json(text).priced(run_id, self.prices, children)
            if cost is not None:
                return cost
        read = await self._read(run_id)
        if isinstance(read, RunCost):
            return read
        entries, records = read
        cost = None
        if kept is not None and (tokens := self._tokens_of(run_id, entries, records)) is not None:
            cost = tokens.priced(run_id, self.prices, children)
        if cost is None:
            cost = run_cost(run_id, records, self.prices, children)
            if kept is not None:
                cost = dataclasses.replace(cost, turns=(), by_tool={})
        if broken := next((child for child in children.values() if child.unreadable), None):
            cost = dataclasses.replace(cost, unreadable=f"sub-run {broken.run_id} {broken.unreadable}")
        return cost

    async def spend(self, root: str, run_id: str) -> RunSpend:
        """A run's own spend, for a tally: its tokens, kept or read, where they may be priced summed."""
        assert self.kept is not None
        text = self.kept.tokens.get(run_id)
        if text is None:
            read = await self._read(run_id)
            if isinstance(read, RunCost):
                return RunSpend(root, run_id, [], read)
            entries, records = read
            tokens = self._tokens_of(run_id, entries, records)
            if tokens is None:  # a record that could not be read: what could be, and why not the rest
                return RunSpend(root, run_id, [], run_cost(run_id, records, self.prices))
            text = tokens.to_json()
        parsed = json.loads(text)
        summable = self.prices.summable
        if all(summable(model_info(m[0], m[1]), m[10]) for m in parsed[0]):
            return RunSpend(root, run_id, parsed)
        return RunSpend(root, run_id, parsed, await self.cost(run_id, {}))

    async def _read(self, run_id: str) -> tuple[list[Entry], list[Record]] | RunCost:
        """The entries of ``run_id`` and the records of them a cost reads, or, where its rows
        cannot be read, its cost: nothing, and why."""
        from agenttui.errors import StoreConnectionError, StoreError, StoreLockedError
        from agenttui.journal.journal import decode_entry

        kept, loaded = self.kept, self.loaded
        try:
            if loaded is not None and run_id in loaded:
                entries = loaded[run_id]
            elif loaded is not None and (kept is None or run_id not in kept.tokens):
                entries = []  # not in its page's entries: no longer in the store
            else:
                entries = [e async for e in self.journal.store.load(run_id)]
        except (StoreConnectionError, StoreLockedError):  # the store's state, not this run's
            raise
        except StoreError as exc:
            return RunCost(run_id, (), Spend(), unreadable=f"could not be read: {exc.message}")
        # Only what a cost reads is decoded: a run's tool results are most of its bytes.
        return entries, [decode_entry(entry) for entry in entries if entry.name.startswith(_COSTED)]

    def _tokens_of(self, run_id: str, entries: list[Entry], records: list[Record]) -> RunTokens | None:
        """The run's tokens from its records (None: one could not be read), noted to be kept with
        the validator of its entries; a spot-checked run's compared with what the index kept."""
        tokens = RunTokens.of(records)
        if tokens is None or self.kept is None:
            return tokens
        if (spotted := self.kept.spots.get(run_id)) is not None and RunTokens.from_json(spotted) != tokens:
            self.spots_differ = True
        last = entries[-1].seq if entries else None
        if isinstance(last, int) and not isinstance(last, bool) and self.kept.marks.get(run_id) == (len(entries), last):
            self.to_keep.append((run_id, (len(entries), last), tokens.to_json()))
        return tokens

    async def keep(self) -> None:
        """Keep what this page read in the index (or, where a spot check differed, empty it of costs)."""
        from agenttui.runs.statuses.index import forget_tokens, keep_tokens

        if self.spots_differ:
            await forget_tokens(self.journal.store)
        elif self.to_keep:
            await keep_tokens(self.journal.store, self.to_keep)


async def _load_page(store: Store, run_ids: list[str]) -> dict[str, list[Entry]] | None:
    """Each run's entries in one round trip, or None when the page cannot be read whole."""
    from agenttui.errors import StoreConnectionError, StoreError, StoreLockedError

    if not run_ids:
        return {}
    try:
        return await store.load_runs(run_ids)
    except (StoreConnectionError, StoreLockedError):  # the store's state, not a run's
        raise
    except StoreError:
        return None
