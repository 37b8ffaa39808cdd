"""CostView: what a run cost, turn by turn: each model turn's tokens and cost, a bar of the
context it sent (how the conversation grew), and the spend its dropped requests wasted, marked
on the turn it went to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from agenttui.journal.inert import printable
from agenttui.render.cells import meter
from agenttui.tui.widgets.scrolling_pane import ScrollingPane

if TYPE_CHECKING:
    from agenttui.runs.cost.lens import RunCost

#: The width of a turn's context bar.
BAR_CELLS = 16


def cost_text(cost: RunCost, prices: str) -> Text:
    """The run's cost, then a block a model turn: name, cost and waste; the context bar, its
    size, output tokens and the model; ``prices`` says where the prices come from."""
    from agenttui.runs.cost.lens import format_cost

    total = cost.total
    text = Text(f"cost {format_cost(total)}", style="bold")
    if total.wasted.total:
        text.append(f" · wasted {format_cost(total, wasted=True)} ({total.wasted.total:,} tokens)")
    text.append(f" · {total.usage.total:,} tokens")
    if cost.sub_runs.tokens:
        text.append(f"\nown {format_cost(cost.own)} · sub-runs {format_cost(cost.sub_runs)} (rolled up)")
    if (used := cost.budget_used) is not None:
        text.append(f"\nbudget {used:.0%} of {cost.token_budget:,} tokens")
    if cost.unreadable:
        text.append(f"\n{printable(cost.unreadable)}", style="italic")
    if total.unpriced:
        text.append(
            f"\nno price known for {printable(', '.join(sorted(total.unpriced)))} (--prices FILE)", style="italic"
        )
    text.append(f"\nprices: {printable(prices)}\n", style="italic")
    most = max((turn.context for turn in cost.turns), default=0)
    for turn in cost.turns:
        spend = turn.spend
        text.append(f"\n{printable(turn.name)}  ", style="bold")
        text.append(format_cost(spend))
        if spend.wasted.total:
            text.append(f"  ▲ wasted {format_cost(spend, wasted=True)} ({spend.wasted.total:,} tokens)", style="bold")
        text.append(f"\n  {meter(turn.context, most, BAR_CELLS):<{BAR_CELLS}} context {turn.context:,}")
        text.append(f" · out {spend.usage.output_tokens:,} · {printable(turn.model)}")
        if turn.tools:
            text.append(f" · calls {printable(', '.join(turn.tools))}")
    if not cost.turns:
        text.append("\nno model turn yet", style="italic")
    return text


class CostView(ScrollingPane):
    """The run's cost, turn by turn (``cost_text``), read when the pane shows and again as the run grows."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = Static("", id="cost-content")

    def compose(self) -> ComposeResult:
        yield self._content

    def reading(self) -> None:
        self._content.update(Text("reading what the run cost…", style="italic"))

    def show(self, cost: RunCost, prices: str) -> None:
        self._content.update(cost_text(cost, prices))
