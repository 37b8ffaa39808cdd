"""``agenttui cost``: where the money went, per turn, run, tool or model, and what retries wasted."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from agenttui.cli.app import fail, main, run_async, takes_view, with_store
from agenttui.journal.inert import printable, printable_id, safe_json

if TYPE_CHECKING:
    from agenttui.runs.cost.lens import PriceBook, RunCost, Spend
    from agenttui.runs.cost.reading import SpendTally
    from agenttui.runs.selection.where import Where
    from agenttui.stores.base import Store

GROUPINGS = ("turn", "run", "tool", "model", "day")
#: The groupings whose runs' tokens are summed before they are priced (``SpendTally``).
SUMMED = ("model", "day")


def _no_spend() -> Spend:
    from agenttui.runs.cost.lens import Spend

    return Spend()


#: The width of a turn's context bar.
CONTEXT_CELLS = 12


@main.command("cost")
@click.argument("store")
@click.argument("run_id", required=False)
@click.option("--where", "where_text", metavar="EXPR", help="The runs this filter selects (docs/guide/filters.md).")
@takes_view()
@click.option("--by", "grouping", type=click.Choice(GROUPINGS),
              help="A line a model turn (the default for one run), run (the default), tool, model, or day"
                   " (the UTC day of a run's earliest recorded time).")  # fmt: skip
@click.option("--prices", "prices_path", metavar="FILE",
              help="A TOML file of prices that override the library's (docs/guide/cost.md).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="The lines and the total as one JSON object.")
@run_async
async def cost_command(
    store: str, run_id: str | None, where_text: str | None, grouping: str | None, prices_path: str | None,
    as_json: bool,
) -> None:  # fmt: skip
    """Tokens and money a run, or every run (or a filter's), spent: input, cached, cache-write
    and output tokens, what they cost at the model's price, and the spend that failed, retried,
    hedged or late requests wasted. Sub-runs are rolled up into the run that started them and
    shown apart. A model with no known price is named, never costed at zero.

    \b
      agenttui cost demo.db                     a line a run, and the total
      agenttui cost demo.db refund-a1002        a line a model turn
      agenttui cost demo.db --by model --where 'status=complete'
      agenttui cost demo.db --by day            a line a day

    A second look at a store reads no record of a run that did not change since the first: the
    tokens each run spent are kept beside its status in the status index (docs/guide/stores.md,
    "The status index"), and priced as they are read.
    """
    from agenttui.runs.cost.lens import PriceBook

    if run_id is not None and where_text is not None:
        fail("give RUN_ID or --where, not both")
    if grouping == "turn" and run_id is None:
        fail("--by turn takes one RUN_ID")
    where = None
    if where_text is not None:
        from agenttui.runs.selection.where import parse_where

        where = parse_where(where_text)  # a bad filter says so before the store opens
    prices = PriceBook.load(prices_path)
    chosen = grouping or ("turn" if run_id is not None else "run")

    async def body(opened: Store) -> Tally:
        from agenttui.runs.cost.reading import SpendTally, store_costs, store_spend

        if run_id is not None:
            if not [r async for r in opened.runs(prefix=run_id)] and opened.IMPLEMENTS_LISTING:
                from agenttui.errors import RunNotFoundError

                raise RunNotFoundError(run_id)
            run_ids: Sequence[str] | None = [run_id]
        else:
            run_ids = await _selected(opened, where) if where is not None else None
        if chosen in SUMMED:
            summed, day = SpendTally(prices, chosen), UNDATED
            async for spent in store_spend(opened, run_ids, prices):
                if spent.run_id == spent.root:  # a sub-run's spend goes on its top-level run's day
                    day = _day(spent.earliest_ms)
                summed.add(spent, day)
            return Tally.of_sums(summed)
        tally = Tally(chosen)
        # Tallied as read: a run's turns are not kept.
        async for cost in store_costs(opened, run_ids, prices, turns=chosen in ("turn", "tool")):
            tally.add(cost)
        return tally

    tally = await with_store(store, body)
    if where is not None and not tally.runs:
        fail(f"no run of {store} matches {where_text!r}", 1)
    if as_json:
        click.echo(safe_json(_as_json(tally, prices)))
    else:
        _print(tally, prices)


async def _selected(store: Store, where: Where) -> list[str]:
    """The runs the filter selects, but none below another selected run (its spend is rolled up there)."""
    from datetime import UTC, datetime

    from agenttui.runs.statuses.status import list_statuses

    now, chosen = datetime.now(UTC), list[str]()
    async for status in list_statuses(store):
        if where.matches(status, now) and not any(status.run_id.startswith(c + ">") for c in chosen[-1:]):
            chosen.append(status.run_id)
    return chosen


@dataclass
class Line:
    """One line of the table: a turn, a run, a tool or a model, its spend, and what more it says."""

    name: str
    turns: int
    spend: Spend
    more: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """What ``--json`` adds for it (a run's sub-runs and budget, a turn's model and context)."""


@dataclass
class Tally:
    """The lines of a grouping and the total, as run costs come in."""

    grouping: str
    lines: list[Line] = field(default_factory=list)
    total: Spend = field(default_factory=_no_spend)
    runs: int = 0
    turns: int = 0
    not_read_whole: int = 0
    merged: dict[str, Spend] = field(default_factory=dict)
    counted: dict[str, int] = field(default_factory=dict)
    """The top-level runs of each day (``--by day``)."""

    def add(self, cost: RunCost) -> None:
        from agenttui.runs.cost.lens import Spend, spend_json

        self.total += cost.total
        self.runs += 1
        self.turns += cost.turn_count
        self.not_read_whole += bool(cost.unreadable)
        if self.grouping == "turn":
            self.lines += _turn_lines(cost)
        elif self.grouping == "run":
            self.lines.append(Line(cost.run_id, cost.turn_count, cost.total, _run_more(cost), {
                "turns": cost.turn_count, "sub_runs": spend_json(cost.sub_runs), "token_budget": cost.token_budget,
                "budget_used": cost.budget_used, "unreadable": cost.unreadable or None,
            }))  # fmt: skip
        else:
            for name, spend in cost.by_tool.items():
                self.merged[name] = self.merged.get(name, Spend()) + spend

    @classmethod
    def of_sums(cls, summed: SpendTally) -> Tally:
        """The lines of a grouping whose spend was summed (``SUMMED``)."""
        merged, total = summed.spends()
        return cls(summed.by, [], total, summed.runs, summed.turns, summed.not_read_whole, merged, summed.day_runs)

    def shown(self) -> list[Line]:
        """The lines in order: turns and runs as read, tools and models by cost, the largest first."""
        if self.grouping in ("turn", "run"):
            return self.lines
        if self.grouping == "day":  # in time order, the runs with no time last
            days = sorted(self.merged, key=lambda day: (day == UNDATED, day))
            return [
                Line(day, 0, self.merged[day], _runs(self.counted[day]), {"runs": self.counted[day]}) for day in days
            ]
        ordered = sorted(self.merged.items(), key=lambda item: (-item[1].total_cost, -item[1].tokens, item[0]))
        return [Line(name, 0, spend) for name, spend in ordered]


#: The day of the runs whose journal carries no time (only attempts record one).
UNDATED = "undated"


def _day(earliest_ms: int | None) -> str:
    """The UTC day of a run's earliest recorded time, or ``UNDATED``."""
    if earliest_ms is None:
        return UNDATED
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(earliest_ms / 1000, UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):  # a time no calendar holds
        return UNDATED


def _turn_lines(cost: RunCost) -> list[Line]:
    from agenttui.render.cells import meter

    # The context each turn sent, as a bar against the largest: how the conversation grew.
    most = max((turn.context for turn in cost.turns), default=0)
    lines = [
        Line(turn.name, 1, turn.spend,
             f"{meter(turn.context, most, CONTEXT_CELLS):<{CONTEXT_CELLS}}  context {turn.context:,}  {turn.model}"
             + (f"  calls {', '.join(turn.tools)}" if turn.tools else ""),
             {"model": turn.model, "context_tokens": turn.context, "tools": list(turn.tools)})
        for turn in cost.turns
    ]  # fmt: skip
    if cost.sub_runs.tokens:
        lines.append(Line("sub-runs", 0, cost.sub_runs, "rolled up from the runs its calls started"))
    return lines


def _run_more(cost: RunCost) -> str:
    more = [cost.unreadable] if cost.unreadable else []
    if cost.sub_runs.tokens:
        more.append(f"sub-runs {_money(cost.sub_runs)}")
    if (used := cost.budget_used) is not None:
        more.append(f"budget {used:.0%} of {cost.token_budget:,}")
    return "  ".join(more)


def _runs(count: int) -> str:
    return f"{count:,} run{'s' if count != 1 else ''}"


def _money(spend: Spend, *, wasted: bool = False) -> str:
    from agenttui.runs.cost.lens import format_cost

    return format_cost(spend, wasted=wasted)


def _print(tally: Tally, prices: PriceBook) -> None:
    out, grouping, lines = sys.stdout, tally.grouping, tally.shown()
    width = min(40, max([len(grouping), len("total"), *(len(printable_id(line.name)) for line in lines)]))
    turns_column = grouping == "run"
    head = f"{grouping:<{width}}" + ("  turns" if turns_column else "")
    head += (
        f"  {'input':>9}  {'cached':>9}  {'cache w.':>9}  {'output':>9}  {'cost':>10}  {'wasted':>9}  {'wasted $':>9}"
    )
    out.write(head + "\n")

    def row(name: str, turns: int, spend: Spend, more: str) -> str:
        usage = spend.usage
        text = f"{printable_id(name)[:width]:<{width}}" + (f"  {turns:>5}" if turns_column else "")
        text += (f"  {usage.input_tokens:>9,}  {usage.cache_read_tokens:>9,}  {usage.cache_write_tokens:>9,}"
                 f"  {usage.output_tokens:>9,}  {_money(spend):>10}  {spend.wasted.total:>9,}"
                 f"  {_money(spend, wasted=True):>9}")  # fmt: skip
        return (text + (f"  {printable(more)}" if more else "")).rstrip()

    for line in lines:
        out.write(row(line.name, line.turns, line.spend, line.more) + "\n")
    runs = _runs(tally.runs)
    if tally.not_read_whole:
        runs += f", {tally.not_read_whole:,} not read whole (their spend is what could be read)"
    out.write(row("total", tally.turns, tally.total, runs) + "\n")
    out.write(f"prices: {prices.describe()}\n")
    if unpriced := tally.total.unpriced:
        named = sorted(unpriced - {"unknown"}) + (["turns that name no model"] if "unknown" in unpriced else [])
        out.write(f"no price known for {printable(', '.join(named))}: their tokens are counted, not costed"
                  " (--prices FILE gives prices)\n")  # fmt: skip


def _as_json(tally: Tally, prices: PriceBook) -> dict[str, Any]:
    from agenttui.runs.cost.lens import spend_json

    lines = [{tally.grouping: line.name} | spend_json(line.spend) | line.extra for line in tally.shown()]
    total = {"runs": tally.runs, "not_read_whole": tally.not_read_whole} | spend_json(tally.total)
    return {"by": tally.grouping, "prices": prices.describe(), "lines": lines, "total": total}
