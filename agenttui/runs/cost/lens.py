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

import json
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any

from agenttui.errors import ConfigError
from agenttui.journal import keys
from agenttui.journal.record import ModelInfo, Record, StepKind, Usage

ZERO = Decimal(0)
#: The most of a price table read (a TOML file of a few models' prices is a few kilobytes).
PRICES_LIMIT = 1_000_000
MILLION = Decimal(1_000_000)
NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class Rates:
    """A model's flat prices, in US dollars per million tokens."""

    input: Decimal = ZERO
    output: Decimal = ZERO
    cache_read: Decimal = ZERO
    cache_write: Decimal = ZERO

    def cost(self, usage: Usage, sent: int = 0) -> Decimal:
        """What ``usage`` costs (``sent``, the input tokens its request sent, is a tiered price's)."""
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


def model_info(provider: str, model: str) -> ModelInfo | None:
    """The model a run's kept tokens name by (provider, model); None for turns that name none."""
    return ModelInfo(provider, model) if model else None


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
        from agenttui.stores.files import read_small_file

        try:
            tables = tomllib.loads(read_small_file(path, limit=PRICES_LIMIT).decode("utf-8"))
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
                prices = {key: Decimal(str(value)) for key, value in table.items()}
            except ArithmeticError:
                prices = {}
            if not prices or not all(price.is_finite() and price >= 0 for price in prices.values()):
                raise ConfigError(f"--prices {path}: [{name}] holds a price that is not a number of dollars, 0 or more")
            overrides[name] = Rates(**prices)
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

    def cost(self, model: ModelInfo | None, usage: Usage, largest: int | None = None) -> Decimal | None:
        """What ``usage`` cost on ``model``, or None when the model has no known price.
        ``largest``: where ``usage`` sums parts priced apart, the most input tokens one of them
        sent (``summable`` says whether such a sum can be priced)."""
        if not usage:
            return ZERO
        price = self._price(model)
        if price is None:
            return None
        return price.cost(usage, sent_tokens(usage) if largest is None else largest)

    def summable(self, model: ModelInfo | None, largest: int) -> bool:
        """Whether parts of which none sent more than ``largest`` input tokens cost, summed,
        what they cost apart: a flat price's do, and a tiered one's below its first tier."""
        price = self._price(model)
        return not isinstance(price, _Tiered) or largest < price.threshold

    def _price(self, model: ModelInfo | None) -> Rates | _Tiered | None:
        name = model_name(model)
        if name not in self._found:
            self._found[name] = self._look_up(model, name)
        return self._found[name]

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

    def cost(self, usage: Usage, sent: int = 0) -> Decimal:
        if sent < self.threshold:
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


def spend_of(
    prices: PriceBook, model: ModelInfo | None, usage: Usage | None, wasted: Usage | None = None,
    largest: int | None = None,
) -> Spend:  # fmt: skip
    """One model's usage and wasted usage, priced (``largest``: ``PriceBook.cost``'s)."""
    usage, wasted = usage or NO_USAGE, wasted or NO_USAGE
    cost, wasted_cost = prices.cost(model, usage, largest), prices.cost(model, wasted, largest)
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
    """Each model turn's spend (empty where the cost was made from a run's kept tokens,
    ``RunTokens``: ``turn_count`` says how many)."""
    own: Spend
    """The run's own model turns, and the wasted spend of its failed and late requests."""
    sub_runs: Spend = Spend()
    """Every sub-run below it, rolled up (priced by the sub-runs' own turns)."""
    by_tool: Mapping[str, Spend] = field(default_factory=dict)
    """Per tool: the turns that called it (a turn calling two counts for both), and the sub-runs its
    calls started (empty where made from kept tokens, as ``turns``)."""
    by_model: Mapping[str, Spend] = field(default_factory=dict)
    """Per model, the sub-runs' turns included."""
    token_budget: int | None = None
    """``run:start``'s token budget, where it sets one."""
    unreadable: str = ""
    """Why the run, or a sub-run below it, could not be read ("" when all of it was): its
    spend is then only what could be."""
    turn_count: int = 0
    """How many model turns the run itself took."""
    earliest_ms: int | None = None
    """The earliest time its records carry (an attempt's ``attempted_at``, Unix milliseconds):
    the journal keeps no other time of a run."""

    @property
    def total(self) -> Spend:
        return self.own + self.sub_runs

    @property
    def budget_used(self) -> float | None:
        """The share of the token budget spent (the run and its sub-runs, wasted tokens too)."""
        if not self.token_budget:
            return None
        return self.total.tokens / self.token_budget


@dataclass(slots=True)
class _Turn:
    """A model turn as read, before prices: its usage and the parts of its wasted usage that are
    priced apart (what came before it, then each late request added after)."""

    name: str
    model: ModelInfo | None
    usage: Usage
    wasted: list[Usage]
    tools: tuple[str, ...]


@dataclass(slots=True)
class _Walk:
    """What a run's records say of its spend, before prices (``_walk``)."""

    turns: list[_Turn] = field(default_factory=list)
    unattributed: Usage = NO_USAGE
    """Dropped requests' usage with no turn in the run to put it on."""
    calls: dict[str, str] = field(default_factory=dict)
    """Each call's tool, by call id."""
    budget: int | None = None
    earliest_ms: int | None = None
    damaged: str = ""


def _negative(usage: Usage | None) -> bool:
    return (
        usage is not None
        and min(usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) < 0
    )


def _walk(records: Sequence[Record]) -> _Walk:
    """A run's model turns and dropped requests, in order: a failed request's usage goes on the
    turn after it (the retry), a late one's on the turn before it."""
    walk = _Walk()
    turns = walk.turns
    late: list[Usage] = []  # a late request's usage before any turn: carried to the next one
    failed: list[Usage] = []  # failed requests' usage: the turn after them retried them
    for record in records:
        name = record.name
        if record.unreadable:
            walk.damaged = walk.damaged or f"record {name} could not be read: its spend is not counted"
        elif _negative(record.usage) or _negative(record.discarded_usage):
            # A count below zero is no count (a writer's bug): summed, it would hide the others.
            walk.damaged = walk.damaged or f"record {name} holds a negative token count: its spend is not counted"
        elif record.kind == StepKind.MODEL and name.startswith("@llm/"):
            wasted = sum([*failed, *late], record.discarded_usage or NO_USAGE)
            failed, late = [], []
            uses = record.message.tool_uses if record.message else ()
            walk.calls.update((call.id, call.name) for call in uses)
            turns.append(_Turn(name, record.model, record.usage or NO_USAGE, [wasted], tuple(c.name for c in uses)))
        elif name.startswith("@spend/"):
            failed.append(record.discarded_usage or NO_USAGE)
        elif name.startswith("@spend-late/"):
            if turns:  # added to the turn before it, priced apart with that turn's model
                turns[-1].wasted.append(record.discarded_usage or NO_USAGE)
            else:
                late.append(record.discarded_usage or NO_USAGE)
        elif name == keys.RUN_START and record.result:
            walk.budget = _token_budget(record.result)
        elif record.kind == StepKind.ATTEMPT and record.attempted_at:
            walk.earliest_ms = min(walk.earliest_ms or record.attempted_at, record.attempted_at)
    if leftover := sum([*failed, *late], NO_USAGE):  # requests that failed after the last turn
        if turns:
            turns[-1].wasted.append(leftover)
        else:
            walk.unattributed = leftover
    return walk


def _turn_spend(prices: PriceBook, turn: _Turn) -> Spend:
    first, *later = turn.wasted
    spend = spend_of(prices, turn.model, turn.usage, first)
    return sum((spend_of(prices, turn.model, None, wasted) for wasted in later), spend)


def run_cost(
    run_id: str, records: Sequence[Record], prices: PriceBook, sub_runs: Mapping[str, RunCost] | None = None
) -> RunCost:
    """``run_id``'s cost from its records; ``sub_runs``: the costs of the sub-runs its calls
    started, by sub-run id (each with its own sub-runs rolled up), read by the caller."""
    walk = _walk(records)
    turns = [TurnCost(turn.name, model_name(turn.model), _turn_spend(prices, turn), turn.tools) for turn in walk.turns]
    own = sum((turn.spend for turn in turns), Spend())
    if walk.unattributed:
        own = own + spend_of(prices, None, None, walk.unattributed)
    by_tool: dict[str, Spend] = {}
    by_model: dict[str, Spend] = {}
    for turn in turns:
        for tool in dict.fromkeys(turn.tools):
            by_tool[tool] = by_tool.get(tool, Spend()) + turn.spend
        by_model[turn.model] = by_model.get(turn.model, Spend()) + turn.spend
    below = Spend()
    for sub_id, sub in (sub_runs or {}).items():
        below += sub.total
        tool = walk.calls.get(_call_of(sub_id, walk.calls), "")
        if tool:
            by_tool[tool] = by_tool.get(tool, Spend()) + sub.total
        _merge(by_model, sub.by_model)
    return RunCost(run_id, tuple(turns), own, below, by_tool, by_model, walk.budget, walk.damaged,
                   len(turns), walk.earliest_ms)  # fmt: skip


def _merge(into: dict[str, Spend], spends: Mapping[str, Spend]) -> None:
    for name, spend in spends.items():
        into[name] = into.get(name, Spend()) + spend


@dataclass(frozen=True, slots=True)
class ModelTokens:
    """One model's tokens in a run's own turns, summed over the parts priced apart."""

    usage: Usage = NO_USAGE
    wasted: Usage = NO_USAGE
    largest: int = 0
    """The most input tokens any one part sent: a price whose tiers begin above it prices the sums
    as it prices each part."""
    turns: int = 0


@dataclass(frozen=True, slots=True)
class RunTokens:
    """What a run's cost is made of before prices, summed by model: what the status index keeps
    (``runs.status_index``), so that a second look at a store's cost reads no record of a run
    that did not change. Prices are applied when it is read (``priced``): they change, tokens do not."""

    models: Mapping[tuple[str, str], ModelTokens]
    """By (provider, model); ("", "") for turns that name none."""
    unattributed: Usage = NO_USAGE
    budget: int | None = None
    earliest_ms: int | None = None

    @classmethod
    def of(cls, records: Sequence[Record]) -> RunTokens | None:
        """The run's tokens, or None where a record could not be read (its cost says why)."""
        walk = _walk(records)
        if walk.damaged:
            return None
        models: dict[tuple[str, str], ModelTokens] = {}
        for turn in walk.turns:
            key = (turn.model.provider, turn.model.model) if turn.model and turn.model.model else ("", "")
            was = models.get(key, ModelTokens())
            largest = max(sent_tokens(part) for part in (turn.usage, *turn.wasted))
            models[key] = ModelTokens(was.usage + turn.usage, sum(turn.wasted, was.wasted),
                                      max(was.largest, largest), was.turns + 1)  # fmt: skip
        return cls(models, walk.unattributed, walk.budget, walk.earliest_ms)

    def priced(self, run_id: str, prices: PriceBook, sub_runs: Mapping[str, RunCost] | None = None) -> RunCost | None:
        """The run's cost (without ``turns`` or ``by_tool``), or None where a model's price has a
        tier its largest part reaches: only the turns themselves can be priced then."""
        by_model: dict[str, Spend] = {}
        own = Spend()
        for (provider, model), tokens in self.models.items():
            info = model_info(provider, model)
            if not prices.summable(info, tokens.largest):
                return None
            spend = spend_of(prices, info, tokens.usage, tokens.wasted, tokens.largest)
            own += spend
            _merge(by_model, {model_name(info): spend})
        if self.unattributed:
            own += spend_of(prices, None, None, self.unattributed)
        subs = (sub_runs or {}).values()
        below = sum((sub.total for sub in subs), Spend())
        for sub in subs:
            _merge(by_model, sub.by_model)
        turns = sum(tokens.turns for tokens in self.models.values())
        return RunCost(run_id, (), own, below, {}, by_model, self.budget, "", turns, self.earliest_ms)

    def to_json(self) -> str:
        models = [[provider, model, *_counts(t.usage), *_counts(t.wasted), t.largest, t.turns]
                  for (provider, model), t in self.models.items()]  # fmt: skip
        return json.dumps([models, _counts(self.unattributed), self.budget, self.earliest_ms], separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> RunTokens:
        models, unattributed, budget, earliest_ms = json.loads(text)
        return cls(
            {(m[0], m[1]): ModelTokens(Usage(*m[2:6]), Usage(*m[6:10]), m[10], m[11]) for m in models},
            Usage(*unattributed), budget, earliest_ms,
        )  # fmt: skip


def _counts(usage: Usage) -> list[int]:
    return [usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens]


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
    return money(cost) + ("+?" if spend.unpriced and tokens else "")


def money(amount: Decimal | float) -> str:
    """An amount of dollars as a person reads it: ``$0.0123``, ``$1,234.56``."""
    return f"${amount:,.2f}" if amount >= 1 or not amount else f"${amount:.4f}"


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
        "cost_usd": dollars_json(spend.cost), "wasted_tokens": wasted.total,
        "wasted_cost_usd": dollars_json(spend.wasted_cost), "unpriced_models": sorted(spend.unpriced),
    }  # fmt: skip


def dollars_json(amount: Decimal) -> float | None:
    """Dollars to the millionth, as JSON holds them; None (null) for an amount no number is (a
    figure past a decimal's precision is rounded as a float, never an error)."""
    return round(float(amount), 6) if amount.is_finite() else None
