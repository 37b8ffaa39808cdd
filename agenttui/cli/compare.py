"""``agenttui compare``: two runs side by side, by turn, what differs and the tokens each turn spent."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from agenttui.cli.app import EXIT_DIVERGED, main, run_async, with_store
from agenttui.journal.inert import printable, printable_id, safe_json

if TYPE_CHECKING:
    from agenttui.replay.compare import Comparison, Side, TurnPair
    from agenttui.runs.cost.lens import Spend
    from agenttui.stores.base import Store


@main.command("compare")
@click.argument("store")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--other-store", metavar="STORE2", help="Read RUN_B from this store instead (a fork saved to a file).")
@click.option("--json", "as_json", is_flag=True, help="Every turn's tokens and differing records, as JSON.")
@run_async
async def compare_command(store: str, run_a: str, run_b: str, other_store: str | None, as_json: bool) -> None:
    """Compare two runs turn by turn: the first difference, the records that differ, the tokens.

    \b
    exit 0: the runs are the same (salts, claims and times aside)
    exit 3: they differ (the first difference is shown, both sides in full)
    """
    from agenttui.replay.compare import Side, compare_sides
    from agenttui.replay.reports import comparison_json
    from agenttui.runs.cost.lens import PriceBook, cost_change, spend_json
    from agenttui.runs.cost.reading import store_costs

    prices = PriceBook()

    async def body(left_store: Store) -> tuple[Side, Side, Comparison, Spend, Spend]:
        left = Side(left_store, run_a, run_a)

        async def against(right_store: Store) -> tuple[Side, Side, Comparison, Spend, Spend]:
            right = Side(right_store, run_b, run_b)
            comparison = await compare_sides(left, right)
            # What each run cost, its sub-runs rolled up: after the comparison, which says if a run is missing.
            (left_cost,) = [cost.total async for cost in store_costs(left_store, [run_a], prices)]
            (right_cost,) = [cost.total async for cost in store_costs(right_store, [run_b], prices)]
            return left, right, comparison, left_cost, right_cost

        if other_store is None:
            return await against(left_store)
        return await with_store(other_store, against)

    left, right, comparison, left_cost, right_cost = await with_store(store, body)
    if as_json:
        found = comparison_json(left, right, comparison)
        found["cost"] = {"left": spend_json(left_cost), "right": spend_json(right_cost), "prices": prices.describe()}
        click.echo(safe_json(found))
    else:
        lines = comparison_lines(left, right, comparison)
        lines.insert(2, cost_change(left_cost, right_cost) + f" (prices: {prices.describe()})")
        for line in lines:
            click.echo(line)
    sys.exit(0 if comparison.same else EXIT_DIVERGED)


def _tokens(turn: TurnPair) -> str:
    return f"{turn.left_tokens:,} → {turn.right_tokens:,} ({turn.token_delta:+,})"


def comparison_lines(left: Side, right: Side, comparison: Comparison) -> list[str]:
    """The comparison for people: totals, the first difference, each differing turn, and the
    first differing record's payloads in full."""
    from agenttui.render.diff import payload_diff

    a, b = printable_id(left.label), printable_id(right.label)
    first = comparison.first_difference
    lines = [
        f"{a} ⇄ {b}: " + ("the same" if first is None else "they differ"),
        f"turns {comparison.left_turns:,} ⇄ {comparison.right_turns:,} · tokens "
        f"{comparison.left_usage.total:,} → {comparison.right_usage.total:,} ({comparison.token_delta:+,})",
    ]
    if first is None:
        return lines
    differing = comparison.differing_turns
    lines.append(f"first difference: {printable(first.words(left.label, right.label))}")
    lines.append(f"{len(differing):,} of {len(comparison.turns):,} turns differ:")
    for turn in differing:
        names = ", ".join(printable(row.name) for row in turn.differing)
        lines.append(f"  turn {turn.number:>4}  tokens {_tokens(turn)}  {names}")
    lines.append(f"{printable(first.row.name)}, {a} against {b}:")
    for line in payload_diff(
        first.row.left, first.row.right, left_label=left.label, right_label=right.label, context=1_000
    ):
        lines.append("  " + printable(line))
    return lines
