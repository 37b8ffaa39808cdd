"""``agenttui cost``: where the money went, per turn, run, tool or model, and what retries wasted."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from agenttui.cli.app import fail, main, run_async, with_store
from agenttui.journal.inert import printable, printable_id, safe_json

if TYPE_CHECKING:
    from agenttui.runs.cost import PriceBook, RunCost, Spend
    from agenttui.runs.where import Where
    from agenttui.stores.base import Store

GROUPINGS = ("turn", "run", "tool", "model")
#: The width of a turn's context bar.
CONTEXT_CELLS = 12


@main.command("cost")
@click.argument("store")
@click.argument("run_id", required=False)
@click.option("--where", "where_text", metavar="EXPR", help="The runs this filter selects (README: Filters).")
@click.option("--by", "grouping", type=click.Choice(GROUPINGS),
              help="A line a model turn (the default for one run), run (the default), tool or model.")  # fmt: skip
@click.option("--prices", "prices_path", metavar="FILE",
              help="A TOML file of prices that override the library's (README: The cost lens).")  # fmt: skip
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
    """
    from agenttui.runs.cost import PriceBook

    if run_id is not None and where_text is not None:
        fail("give RUN_ID or --where, not both")
    if grouping == "turn" and run_id is None:
        fail("--by turn takes one RUN_ID")
    where = None
    if where_text is not None:
        from agenttui.runs.where import parse_where

        where = parse_where(where_text)  # a bad filter says so before the store opens
    prices = PriceBook.load(prices_path)
    chosen = grouping or ("turn" if run_id is not None else "run")

    async def body(opened: Store) -> list[RunCost]:
        from agenttui.runs.cost import store_costs

        if run_id is not None:
            if not [r async for r in opened.runs(prefix=run_id)] and opened.IMPLEMENTS_LISTING:
                from agenttui.errors import RunNotFoundError

                raise RunNotFoundError(run_id)
            run_ids: Sequence[str] | None = [run_id]
        else:
            run_ids = await _selected(opened, where) if where is not None else None
        return [cost async for cost in store_costs(opened, run_ids, prices)]

    costs = await with_store(store, body)
    if where is not None and not costs:
        fail(f"no run of {store} matches {where_text!r}", 1)
    lines, total = _lines(chosen, costs)
    if as_json:
        click.echo(safe_json(_as_json(chosen, lines, total, costs, prices)))
    else:
        _print(chosen, lines, total, costs, prices)


async def _selected(store: Store, where: Where) -> list[str]:
    """The runs the filter selects, but none below another selected run (its spend is rolled up there)."""
    from datetime import UTC, datetime

    from agenttui.runs.status import list_statuses

    now, chosen = datetime.now(UTC), list[str]()
    async for status in list_statuses(store):
        if where.matches(status, now) and not any(status.run_id.startswith(c + ">") for c in chosen[-1:]):
            chosen.append(status.run_id)
    return chosen


def _lines(grouping: str, costs: list[RunCost]) -> tuple[list[tuple[str, int, Spend, str]], Spend]:
    """(name, turns, spend, more) a line, and the total."""
    from agenttui.runs.cost import Spend

    total = Spend()
    for cost in costs:
        total += cost.total
    if grouping == "turn":
        from agenttui.render.cells import meter

        (cost,) = costs
        # The context each turn sent, as a bar against the largest: how the conversation grew.
        most = max((turn.context for turn in cost.turns), default=0)
        lines = [(turn.name, 1, turn.spend, f"{meter(turn.context, most, CONTEXT_CELLS):<{CONTEXT_CELLS}}"
                  f"  context {turn.context:,}  {turn.model}" + (f"  calls {', '.join(turn.tools)}" if turn.tools else ""))
                 for turn in cost.turns]  # fmt: skip
        if cost.sub_runs.tokens:
            lines.append(("sub-runs", 0, cost.sub_runs, "rolled up from the runs its calls started"))
        return lines, total
    if grouping == "run":
        return [(cost.run_id, len(cost.turns), cost.total, _run_more(cost)) for cost in costs], total
    merged: dict[str, Spend] = {}
    for cost in costs:
        for name, spend in (cost.by_tool if grouping == "tool" else cost.by_model).items():
            merged[name] = merged.get(name, Spend()) + spend
    ordered = sorted(merged.items(), key=lambda item: (-item[1].total_cost, -item[1].tokens, item[0]))
    return [(name, 0, spend, "") for name, spend in ordered], total


def _run_more(cost: RunCost) -> str:
    more = [cost.unreadable] if cost.unreadable else []
    if cost.sub_runs.tokens:
        more.append(f"sub-runs {_money(cost.sub_runs)}")
    if (used := cost.budget_used) is not None:
        more.append(f"budget {used:.0%} of {cost.token_budget:,}")
    return "  ".join(more)


def _money(spend: Spend, *, wasted: bool = False) -> str:
    from agenttui.runs.cost import format_cost

    return format_cost(spend, wasted=wasted)


_HEADINGS = {"turn": "turn", "run": "run", "tool": "tool", "model": "model"}


def _print(grouping: str, lines: list[tuple[str, int, Spend, str]], total: Spend, costs: list[RunCost],
           prices: PriceBook) -> None:  # fmt: skip
    out = sys.stdout
    width = max([len(_HEADINGS[grouping]), len("total"), *(len(printable_id(name)) for name, *_ in lines)])
    width = min(width, 40)
    turns_column = grouping == "run"
    head = f"{_HEADINGS[grouping]:<{width}}" + ("  turns" if turns_column else "")
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
        out.write(row(*line) + "\n")
    runs = f"{len(costs):,} run{'s' if len(costs) != 1 else ''}"
    if unread := sum(1 for cost in costs if cost.unreadable):
        runs += f", {unread:,} not read whole (their spend is what could be read)"
    out.write(row("total", sum(len(c.turns) for c in costs), total, runs) + "\n")
    out.write(f"prices: {prices.describe()}\n")
    if total.unpriced:
        named = sorted(total.unpriced - {"unknown"}) + (
            ["turns that name no model"] if "unknown" in total.unpriced else []
        )
        out.write(f"no price known for {printable(', '.join(named))}: their tokens are counted, not costed"
                  " (--prices FILE gives prices)\n")  # fmt: skip


def _as_json(grouping: str, lines: list[tuple[str, int, Spend, str]], total: Spend, costs: list[RunCost],
             prices: PriceBook) -> dict[str, Any]:  # fmt: skip
    from agenttui.runs.cost import spend_json

    out: dict[str, Any] = {"by": grouping, "prices": prices.describe(), "lines": []}
    for name, turns, spend, _ in lines:
        line = {_HEADINGS[grouping]: name} | spend_json(spend)
        if grouping == "run":
            cost = next(c for c in costs if c.run_id == name)
            line |= {"turns": turns, "sub_runs": spend_json(cost.sub_runs), "token_budget": cost.token_budget,
                     "budget_used": cost.budget_used, "unreadable": cost.unreadable or None}  # fmt: skip
        elif grouping == "turn":
            turn = next((t for t in costs[0].turns if t.name == name), None)
            if turn is not None:
                line |= {"model": turn.model, "context_tokens": turn.context, "tools": list(turn.tools)}
        out["lines"].append(line)
    out["total"] = {"runs": len(costs), "not_read_whole": sum(1 for c in costs if c.unreadable)} | spend_json(total)
    return out
