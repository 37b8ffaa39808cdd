"""What runs cost: tokens and money per model turn, per run (its sub-runs rolled up and shown
apart), per tool and per model, and the spend that failed, retried, hedged or late requests
wasted.

Every model turn records its usage (input, output, cache read and cache write tokens, disjoint),
the model that answered and ``discarded_usage``: what the turn's dropped requests cost. A
``@spend/<id>`` record holds a failed request's usage (the turn after it retried it), a
``@spend-late/<id>`` one a request that answered too late (the turn before it had moved on).

Prices come from ``genai-prices`` (its bundled snapshot, so no look-up leaves the machine),
overridden by a TOML file for negotiated or self-hosted prices (``PriceBook.load``). A model with
no price is named as unknown, never costed at zero: a ``Spend`` keeps the known part's cost and
the models it could not price.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenttui.errors import ConfigError
from agenttui.journal import keys
from agenttui.journal.record import ModelInfo, Record, StepKind, Usage

if TYPE_CHECKING:
    from agenttui.journal.journal import Journal
    from agenttui.stores.base import Entry, Store

ZERO = Decimal(0)
MILLION = Decimal(1_000_000)
NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class Rates:
    """A model's flat prices, in US dollars per million tokens."""

    input: Decimal = ZERO
    output: Decimal = ZERO
    cache_read: Decimal = ZERO
    cache_write: Decimal = ZERO

    def cost(self, usage: Usage) -> Decimal:
        return (
            usage.input_tokens * self.input
            + usage.output_tokens * self.output
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
        ) / MILLION


def sent_tokens(usage: Usage) -> int:
    """The input tokens a request sent, cached or not (the journal counts the three apart): the
    size of the conversation, and what a price's tiers are counted on."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


def model_name(model: ModelInfo | None) -> str:
    """A model as the cost lens names it: ``provider/model`` (``unknown`` when a turn names none)."""
    if model is None or not model.model:
        return "unknown"
    return f"{model.provider}/{model.model}" if model.provider else model.model


class PriceBook:
    """Model prices: an override file's first, then genai-prices' bundled snapshot.

    A flat price is kept as ``Rates`` and reckoned here, as the library reckons it; a price in
    tiers (a higher rate for every token past a context size) too below its first tier, and
    asked of the library above it.
    """

    def __init__(self, overrides: Mapping[str, Rates] | None = None, *, source: str = "") -> None:
        self.overrides = {name.lower(): rates for name, rates in (overrides or {}).items()}
        self.override_source = source
        """The override file, or ""."""
        self._found: dict[str, Rates | _Tiered | None] = {}

    @classmethod
    def load(cls, path: str | Path | None) -> PriceBook:
        """The prices, with ``path`` (TOML) overriding the library's: a table per model, named
        ``"provider/model"`` or ``"model"``, in dollars per million tokens::

            ["acme/house-llm-2"]
            input = 0.40
            output = 1.60
            cache_read = 0.04
            cache_write = 0.50
        """
        if path is None:
            return cls()
        try:
            tables = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"--prices {path}: {exc.strerror or exc}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--prices {path}: not a TOML file: {exc}") from None
        overrides: dict[str, Rates] = {}
        for name, table in tables.items():
            if not isinstance(table, dict) or not table or set(table) - set(Rates.__slots__):
                raise ConfigError(
                    f"--prices {path}: [{name}] takes input, output, cache_read and cache_write"
                    " (dollars per million tokens)"
                )
            try:
                overrides[name] = Rates(**{key: Decimal(str(value)) for key, value in table.items()})
            except ArithmeticError:
                raise ConfigError(f"--prices {path}: [{name}] holds a price that is not a number") from None
        return cls(overrides, source=str(path))

    def warm(self) -> PriceBook:
        """Read the library's prices now (its import and snapshot: about 0.2 s), so that a cost
        asked for later does not wait on them: a viewer calls it off its event loop."""
        from genai_prices import data_snapshot

        data_snapshot.get_snapshot()
        return self

    @cached_property
    def library(self) -> str:
        """Where the prices come from, with their date: the library's release (its bundled prices)."""
        from importlib.metadata import version

        return f"genai-prices {version('genai-prices')}"

    def describe(self) -> str:
        return self.library + (f", overridden by {self.override_source}" if self.override_source else "")

    def cost(self, model: ModelInfo | None, usage: Usage) -> Decimal | None:
        """What ``usage`` cost on ``model``, or None when the model has no known price."""
        if not usage:
            return ZERO
        name = model_name(model)
        if name not in self._found:
            self._found[name] = self._look_up(model, name)
        price = self._found[name]
        if price is None:
            return None
        return price.cost(usage)

    def _look_up(self, model: ModelInfo | None, name: str) -> Rates | _Tiered | None:
        if model is None or not model.model:
            return None
        for key in (name.lower(), model.model.lower()):
            if key in self.overrides:
                return self.overrides[key]
        from genai_prices import data_snapshot, types

        try:
            _, info = data_snapshot.get_snapshot().find_provider_model(model.model, None, model.provider or None, None)
        except LookupError:
            return None
        prices = info.get_prices(datetime.now(UTC))
        members = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")
        values = [getattr(prices, member, None) for member in members]
        tiered = [value for value in values if isinstance(value, types.TieredPrices)]
        base = Rates(*(_base(value) for value in values))
        if not tiered:
            return base
        # Below the first tier every token pays the base price: the library is asked only above it.
        return _Tiered(base, min(tier.start for value in tiered for tier in value.tiers), prices)


def _base(value: Any) -> Decimal:
    """A price's base rate (a tiered one's rate below its first tier), zero where there is none."""
    if value is None:
        return ZERO
    base = getattr(value, "base", value)
    return base if isinstance(base, Decimal) else Decimal(str(base))


@dataclass(frozen=True, slots=True)
class _Tiered:
    """A price with tiers: flat ``base`` below ``threshold`` input tokens, the library's above."""

    base: Rates
    threshold: int
    prices: Any

    def cost(self, usage: Usage) -> Decimal:
        if sent_tokens(usage) < self.threshold:
            return self.base.cost(usage)
        return _tiered_cost(self.prices, usage)


def _tiered_cost(prices: Any, usage: Usage) -> Decimal:
    """A tiered price's cost, as the library reckons it (its input count holds the cached ones)."""
    from genai_prices import Usage as LibraryUsage

    counted = LibraryUsage(
        input_tokens=sent_tokens(usage),
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    total: Decimal = prices.calc_price(counted)["total_price"]
    return total


@dataclass(frozen=True, slots=True)
class Spend:
    """Tokens and what they cost: used (the answers kept) and wasted (requests dropped)."""

    usage: Usage = NO_USAGE
    cost: Decimal = ZERO
    """What the priced part of ``usage`` cost."""
    wasted: Usage = NO_USAGE
    wasted_cost: Decimal = ZERO
    unpriced: frozenset[str] = frozenset()
    """Models whose tokens here have no known price (their cost is not in ``cost``)."""

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usage + other.usage, self.cost + other.cost, self.wasted + other.wasted,
                     self.wasted_cost + other.wasted_cost, self.unpriced | other.unpriced)  # fmt: skip

    @property
    def tokens(self) -> int:
        return self.usage.total + self.wasted.total

    @property
    def priced(self) -> bool:
        """Whether every token here is priced (else ``cost`` is a part, and says so)."""
        return not self.unpriced

    @property
    def total_cost(self) -> Decimal:
        return self.cost + self.wasted_cost


def spend_of(prices: PriceBook, model: ModelInfo | None, usage: Usage | None, wasted: Usage | None = None) -> Spend:
    """One model's usage and wasted usage, priced."""
    usage, wasted = usage or NO_USAGE, wasted or NO_USAGE
    cost, wasted_cost = prices.cost(model, usage), prices.cost(model, wasted)
    unpriced = frozenset({model_name(model)}) if cost is None or wasted_cost is None else frozenset()
    return Spend(usage, cost or ZERO, wasted, wasted_cost or ZERO, unpriced)


@dataclass(frozen=True, slots=True)
class TurnCost:
    """One model turn: its spend, the model that answered, the tools it called."""

    name: str
    """Its record's name (``@llm/<n>``)."""
    model: str
    spend: Spend
    tools: tuple[str, ...]
    """The tools the turn called, in order."""

    @property
    def context(self) -> int:
        """The tokens the request sent (input, cached or not): how big the conversation was."""
        return sent_tokens(self.spend.usage)


@dataclass(frozen=True)
class RunCost:
    """A run's spend: its own turns, its sub-runs' (rolled up, shown apart), per tool and model."""

    run_id: str
    turns: tuple[TurnCost, ...]
    own: Spend
    """The run's own model turns, and the wasted spend of its failed and late requests."""
    sub_runs: Spend = Spend()
    """Every sub-run below it, rolled up (priced by the sub-runs' own turns)."""
    by_tool: Mapping[str, Spend] = field(default_factory=dict)
    """Per tool: the turns that called it (a turn calling two counts for both), and the sub-runs its
    calls started."""
    by_model: Mapping[str, Spend] = field(default_factory=dict)
    """Per model, the sub-runs' turns included."""
    token_budget: int | None = None
    """``run:start``'s token budget, where it sets one."""
    unreadable: str = ""
    """Why the run, or a sub-run below it, could not be read ("" when all of it was): its
    spend is then only what could be."""

    @property
    def total(self) -> Spend:
        return self.own + self.sub_runs

    @property
    def budget_used(self) -> float | None:
        """The share of the token budget spent (the run and its sub-runs, wasted tokens too)."""
        if not self.token_budget:
            return None
        return self.total.tokens / self.token_budget


def run_cost(
    run_id: str, records: Sequence[Record], prices: PriceBook, sub_runs: Mapping[str, RunCost] | None = None
) -> RunCost:
    """``run_id``'s cost from its records; ``sub_runs``: the costs of the sub-runs its calls
    started, by sub-run id (each with its own sub-runs rolled up), read by the caller."""
    turns: list[TurnCost] = []
    models: list[ModelInfo | None] = []  # each turn's, to price what is added to it later
    late: list[Usage] = []  # a late request's usage before any turn: carried to the next one
    failed: list[Usage] = []  # failed requests' usage: the turn after them retried them
    calls: dict[str, str] = {}
    budget: int | None = None
    damaged = ""
    for record in records:
        name = record.name
        if record.unreadable:
            damaged = damaged or f"record {name} could not be read: its spend is not counted"
        elif record.kind == StepKind.MODEL and name.startswith("@llm/"):
            wasted = sum([*failed, *late], record.discarded_usage or NO_USAGE)
            failed, late = [], []
            uses = record.message.tool_uses if record.message else ()
            calls.update((call.id, call.name) for call in uses)
            spend = spend_of(prices, record.model, record.usage, wasted)
            turns.append(TurnCost(name, model_name(record.model), spend, tuple(call.name for call in uses)))
            models.append(record.model)
        elif name.startswith("@spend/"):
            failed.append(record.discarded_usage or NO_USAGE)
        elif name.startswith("@spend-late/"):
            if turns:  # added to the turn before it, re-priced with that turn's model
                turns[-1] = _with_wasted(turns[-1], models[-1], record.discarded_usage or NO_USAGE, prices)
            else:
                late.append(record.discarded_usage or NO_USAGE)
        elif name == keys.RUN_START and record.result:
            budget = _token_budget(record.result)
    if (leftover := sum([*failed, *late], NO_USAGE)) and turns:  # requests that failed after the last turn
        turns[-1] = _with_wasted(turns[-1], models[-1], leftover, prices)
    own = sum((turn.spend for turn in turns), Spend())
    if leftover and not turns:
        own = own + spend_of(prices, None, None, leftover)
    by_tool: dict[str, Spend] = {}
    by_model: dict[str, Spend] = {}
    for turn in turns:
        for tool in dict.fromkeys(turn.tools):
            by_tool[tool] = by_tool.get(tool, Spend()) + turn.spend
        by_model[turn.model] = by_model.get(turn.model, Spend()) + turn.spend
    below = Spend()
    for sub_id, sub in (sub_runs or {}).items():
        below += sub.total
        tool = calls.get(_call_of(sub_id, calls), "")
        if tool:
            by_tool[tool] = by_tool.get(tool, Spend()) + sub.total
        for model, spend in sub.by_model.items():
            by_model[model] = by_model.get(model, Spend()) + spend
    return RunCost(run_id, tuple(turns), own, below, by_tool, by_model, budget, unreadable=damaged)


def _with_wasted(turn: TurnCost, model: ModelInfo | None, wasted: Usage, prices: PriceBook) -> TurnCost:
    """``turn`` with more wasted usage, priced at its model's price."""
    return dataclasses.replace(turn, spend=turn.spend + spend_of(prices, model, None, wasted))


def _call_of(sub_run_id: str, calls: Mapping[str, str]) -> str:
    """The call of the parent's that started ``sub_run_id`` (``<parent>><encoded call id>``)."""
    encoded = sub_run_id.rpartition(">")[2]
    return next((call for call in calls if keys.encode_id(call) == encoded), "")


def _token_budget(raw: bytes) -> int | None:
    from agenttui.agent.runstart import RunStart

    budget = RunStart.decode(raw).settings.get("token_budget")
    return budget if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0 else None


def format_cost(spend: Spend, *, wasted: bool = False) -> str:
    """Dollars as a person reads them: ``$0.0123``, ``$12.34``; ``+?`` when part is unpriced,
    ``unknown`` when none of it is priced."""
    cost = spend.wasted_cost if wasted else spend.cost
    tokens = spend.wasted.total if wasted else spend.usage.total
    if spend.unpriced and not cost and tokens:
        return "unknown"
    text = f"${cost:,.2f}" if cost >= 1 or not cost else f"${cost:.4f}"
    return text + ("+?" if spend.unpriced and tokens else "")


async def store_costs(store: Store, run_ids: Sequence[str] | None, prices: PriceBook) -> AsyncIterator[RunCost]:
    """The cost of each of ``run_ids`` (every root run of the store when None), each with the
    sub-runs below it rolled up, as each is read."""
    from agenttui.journal.journal import Journal

    journal = Journal(store)
    listing = store.IMPLEMENTS_LISTING
    if run_ids is None:
        every = [run_id async for run_id in store.runs()]
        below: dict[str, list[str]] = {}
        for run_id in every:
            if (root := keys.root_run_id(run_id)) != run_id:
                below.setdefault(root, []).append(run_id)
        roots = [run_id for run_id in every if keys.root_run_id(run_id) == run_id]
    else:
        roots, below = list(run_ids), {}
        for run_id in roots:
            below[run_id] = [r async for r in store.runs(prefix=run_id + ">")] if listing else []
    for start in range(0, len(roots), COST_PAGE):
        page = roots[start : start + COST_PAGE]
        # One round trip for a page of runs and their sub-runs; a page that cannot be read whole
        # (a damaged one) is read again a run at a time, so that only its broken run says so.
        loaded = await _load_page(store, [run_id for root in page for run_id in (root, *below.get(root, []))])
        for root in page:
            tree = below.get(root, [])
            costs: dict[str, RunCost] = {}
            for run_id in sorted(tree, key=lambda r: -r.count(">")):  # the deepest first: a parent sums its children
                children = {c: costs[c] for c in tree if c in costs and keys.parent_run_id(c) == run_id}
                costs[run_id] = await _read_cost(journal, run_id, prices, children, loaded)
            children = {c: costs[c] for c in tree if keys.parent_run_id(c) == root}
            yield await _read_cost(journal, root, prices, children, loaded)


#: Root runs read in one round trip, with their sub-runs.
COST_PAGE = 500
#: The records a cost is made of: model turns, dropped requests' spend, the budget.
_COSTED = ("@llm/", "@spend/", "@spend-late/", keys.RUN_START)


async def _load_page(store: Store, run_ids: list[str]) -> dict[str, list[Entry]] | None:
    """Each run's entries in one round trip, or None when the page cannot be read whole."""
    from agenttui.errors import StoreConnectionError, StoreError, StoreLockedError

    try:
        return await store.load_runs(run_ids)
    except (StoreConnectionError, StoreLockedError):  # the store's state, not a run's
        raise
    except StoreError:
        return None


async def _read_cost(
    journal: Journal, run_id: str, prices: PriceBook, children: Mapping[str, RunCost],
    loaded: Mapping[str, list[Entry]] | None,
) -> RunCost:  # fmt: skip
    """``run_cost`` of a run read from the store (its entries in ``loaded`` where its page was
    read whole): one whose rows cannot be read (a damaged page) costs nothing and says why, and
    the runs around it are costed still."""
    from agenttui.errors import StoreConnectionError, StoreError, StoreLockedError
    from agenttui.journal.journal import decode_entry

    try:
        entries = loaded.get(run_id, []) if loaded is not None else [e async for e in journal.store.load(run_id)]
    except (StoreConnectionError, StoreLockedError):  # the store's state, not this run's
        raise
    except StoreError as exc:
        return RunCost(run_id, (), Spend(), unreadable=f"could not be read: {exc.message}")
    # Only what a cost reads is decoded: a run's tool results are most of its bytes.
    records = [decode_entry(entry) for entry in entries if entry.name.startswith(_COSTED)]
    cost = run_cost(run_id, records, prices, children)
    if broken := next((child for child in children.values() if child.unreadable), None):
        cost = dataclasses.replace(cost, unreadable=f"sub-run {broken.run_id} {broken.unreadable}")
    return cost


def cost_change(before: Spend, after: Spend, names: tuple[str, str] = ("", "")) -> str:
    """Two spends' cost and the change between them: ``cost $0.0058 → $0.0061 (+$0.0003)``,
    each figure followed by its name where given (the change left out where either side holds
    unpriced tokens)."""
    first, second = (f" {name}" if name else "" for name in names)
    text = f"cost {format_cost(before)}{first} → {format_cost(after)}{second}"
    if before.priced and after.priced:
        change = after.cost - before.cost
        text += f" ({'+' if change >= 0 else '-'}{format_cost(Spend(cost=abs(change)))})"
    return text


def spend_json(spend: Spend) -> dict[str, Any]:
    """A spend for scripts and agents: the tokens by kind, dollars (to the millionth), unpriced models."""
    usage, wasted = spend.usage, spend.wasted
    return {
        "input_tokens": usage.input_tokens, "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens, "output_tokens": usage.output_tokens,
        "cost_usd": float(round(spend.cost, 6)), "wasted_tokens": wasted.total,
        "wasted_cost_usd": float(round(spend.wasted_cost, 6)), "unpriced_models": sorted(spend.unpriced),
    }  # fmt: skip
