"""RunsTable: one line per run, its status as an icon and a word, sub-runs indented under parents."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget

from agenttui.journal.describe import clip, printable, printable_id
from agenttui.runs.status import RunState
from agenttui.tui.runs_model import RunRow
from agenttui.tui.widgets.virtual_list import VirtualList

_STATE_CLASSES = {
    RunState.COMPLETE: "runs-table--ok",
    RunState.IN_FLIGHT: "runs-table--live",
    RunState.SLEEPING: "runs-table--paused",
    RunState.AWAITING_APPROVAL: "runs-table--attention",
    RunState.AWAITING_INPUT: "runs-table--attention",
    RunState.HALTED: "runs-table--danger",
    RunState.STALLED: "runs-table--attention",
    RunState.UNREADABLE: "runs-table--danger",
    RunState.ABORTED: "runs-table--danger",
    RunState.CANCELLED: "virtual-list--muted",
    RunState.CANCELLING: "runs-table--paused",
    RunState.READY: "runs-table--attention",
    RunState.NOT_STARTED: "virtual-list--muted",
}


#: Narrower than this, the steps, turns and tokens columns give way to what a run waits on.
COUNTS_FROM_WIDTH = 100


def shows_counts(width: int) -> bool:
    """Whether a table (or its header) this many cells wide has the counts columns."""
    return width >= COUNTS_FROM_WIDTH


class RunsTable(VirtualList[RunRow]):
    """The run list. Columns: run id, status, steps, turns, tokens, what it waits on."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualList.COMPONENT_CLASSES | {
        "runs-table--ok", "runs-table--live", "runs-table--paused", "runs-table--attention", "runs-table--danger",
    }  # fmt: skip

    BINDINGS = [
        *VirtualList.BINDINGS,
        Binding("l,right", "unfold", "Unfold", id="runs.unfold"),
        Binding("h,left", "fold", "Fold", id="runs.fold"),
    ]

    id_width = 28

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks: list[str] = []
        """Runs marked for a diff, oldest first."""

    def render_item(self, item: RunRow, index: int, width: int) -> Text:
        marker = ("▸ " if item.folded else "▾ ") if item.children else "  "
        if item.run_id in self.marks:
            marker = f"{self.marks.index(item.run_id) + 1} "
        run_label = (
            "  " * item.depth
            + marker
            + printable_id(item.run_id if item.depth == 0 else "›" + item.run_id.rpartition(">")[2])
        )
        line = Text(clip(run_label, self.id_width).ljust(self.id_width + 1), no_wrap=True)
        status = item.line
        if status is None:
            line.append("  … computing", style=self.muted())
            return line
        line.append(
            f"{status.state.icon} {status.state.value:<19}",
            style=self.get_component_rich_style(_STATE_CLASSES[status.state], partial=True),
        )
        if shows_counts(self.size.width):  # the header decides on the same outer width
            line.append(f"{status.steps:>7} {status.turns:>6} {_tokens(status.tokens):>7}  ")
        if item.folded and item.children:
            line.append(f"+{item.children} sub-run{'s' * (item.children != 1)}  ", style=self.muted())
        if status.legacy:
            line.append("legacy ", style="reverse")  # a pre-v0.9 journal: shown and replayed, never written to
        if status.lease_unknown:
            line.append("lease unknown ", style="reverse")  # the lease table could not be read
        if status.detail:
            line.append(printable(status.detail), style=self.muted() if status.state.finished else "")
        return line

    @staticmethod
    def header(id_width: int, width: int) -> str:
        counts = f"{'STEPS':>7} {'TURNS':>6} {'TOKENS':>7}  " if shows_counts(width) else ""
        return f"{'RUN':<{id_width + 1}}{'STATUS':<21}{counts}PENDING / DETAIL"

    class FoldToggled(VirtualList.Chosen):
        """Fold (``unfold=False``) or unfold the run at ``index``."""

        def __init__(self, sender: VirtualList[Any], index: int, unfold: bool) -> None:
            super().__init__(sender, index)
            self.unfold = unfold

    def action_unfold(self) -> None:
        self.post_message(self.FoldToggled(self, self.cursor, True))

    def action_fold(self) -> None:
        self.post_message(self.FoldToggled(self, self.cursor, False))


class RunsHeader(Widget):
    """The column titles over a ``RunsTable`` as wide as this header."""

    def render(self) -> str:
        return RunsTable.header(RunsTable.id_width, self.size.width)


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1000:.0f}k"
    return str(count)
