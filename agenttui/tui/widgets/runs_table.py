"""RunsTable: one line per run, its status as an icon and a word, sub-runs indented under parents."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding
from textual.reactive import var
from textual.widget import Widget

from agenttui.journal.inert import printable, printable_id
from agenttui.render.cells import clip_words
from agenttui.runs.statuses.state import RunState
from agenttui.tui.layout import elide_shared, middle_truncate, shared_ends
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
    RunState.FORK: "virtual-list--muted",
}


MARK = "●"
"""What a marked run's line starts with (its id styled ``runs-table--marked`` too)."""
STATUS_WIDTH = 2 + max(len(state.value) for state in RunState) + 1
"""The status column: the icon, a space, the longest state's word and a space."""
COST_WIDTH = len("$1,234.56")
#: The counts columns (steps, turns, tokens, cost) and their widths, each followed by a space:
#: those a saved view chooses (``View.columns``) show together, or none where there is no room.
COUNT_WIDTHS = {"steps": 7, "turns": 6, "tokens": 7, "cost": COST_WIDTH}


def counts_width(chosen: Sequence[str]) -> int:
    """The cells the counts columns ``chosen`` take, a space after each and one more after them."""
    return sum(COUNT_WIDTHS[column] + 1 for column in chosen) + (1 if chosen else 0)


#: The run id column is as wide as the longest run's line (indent and fold marker included),
#: but gives way to what a run waits on: below ``ID_COMFORT`` cells only when the detail would
#: have less than ``DETAIL_MIN``; never below ``ID_MIN`` (ids are then cut in the middle).
ID_MIN, ID_COMFORT, ID_MAX = 16, 24, 64
#: What a run waits on (the last column) is kept ``DETAIL_MIN`` cells before the id column grows
#: past ``ID_MIN``, and ``DETAIL_WANT`` before the counts columns show (about 120 columns).
DETAIL_MIN, DETAIL_WANT = 30, 40


@dataclass(frozen=True, slots=True)
class RunsColumns:
    """Which columns a runs table of some width shows, and how wide: the detail takes the rest."""

    id_width: int
    """Cells for the run's line (indent, fold marker, id); one space follows."""
    counts: tuple[str, ...] = ()
    """The counts columns that show (of ``COUNT_WIDTHS``), in order; none where there is no room."""

    def header(self) -> str:
        counts = self.row({column: column.upper() for column in self.counts})
        return f"{'RUN':<{self.id_width + 1}}{'STATUS':<{STATUS_WIDTH}}{counts}PENDING / DETAIL"

    def row(self, values: dict[str, str]) -> str:
        """The counts columns' cells of a line, each right-aligned in its column."""
        return "".join(f"{values[column]:>{COUNT_WIDTHS[column]}} " for column in self.counts) + " " * bool(self.counts)


def runs_columns(width: int, longest_label: int, chosen: Sequence[str] = tuple(COUNT_WIDTHS)) -> RunsColumns:
    """The columns for a table ``width`` cells wide whose longest run line is ``longest_label``,
    with the counts columns ``chosen`` (a saved view's) where there is room for them.

    Space goes by priority: the status; the run id (at least ``ID_MIN``, cut in the middle);
    ``DETAIL_MIN`` for what the run waits on; the id up to ``ID_COMFORT``; the detail up to
    ``DETAIL_WANT``; the counts; what is left is shared, half each, by the id (up to its longest)
    and the detail. So the counts are the first to go on a narrow terminal, then the id column
    narrows, then the detail.
    """
    wanted = min(max(longest_label, len("RUN")), ID_MAX)
    room = width - STATUS_WIDTH - 1  # the space after the id column
    id_width = min(wanted, ID_MIN)
    id_width = max(id_width, min(wanted, ID_COMFORT, room - DETAIL_MIN))
    fits = bool(chosen) and room - id_width - DETAIL_WANT >= counts_width(chosen)
    rest = room - id_width - DETAIL_WANT - (counts_width(chosen) if fits else 0)
    id_width += max(0, min(wanted - id_width, (rest + 1) // 2))
    return RunsColumns(id_width, tuple(chosen) if fits else ())


def label_width(run_id: str) -> int:
    """The cells a run's line takes in the id column (a sub-run shows its last part, indented
    under its parent): measured once per run as runs are listed, not per drawn line."""
    depth = run_id.count(">")
    shown = run_id if not depth else run_id.rpartition(">")[2]
    if not (shown.isascii() and shown.isprintable()) or "\\" in shown:  # escapes make it longer (printable_id)
        shown = printable_id(shown)
    return 2 + (len(shown) if not depth else 2 * depth + 1 + len(shown))


def _longest_label(run_ids: Sequence[str]) -> int:
    """The widest of the runs' lines (``label_width``). Top-level ids shown as they are, most
    of a listing, are told at once (in C): two cells more than the longest."""
    plain = [run_id for run_id in run_ids if ">" not in run_id]
    together = "".join(plain)
    if not (together.isascii() and together.isprintable()) or "\\" in together:
        return max(map(label_width, run_ids), default=0)
    sub_runs = [run_id for run_id in run_ids if ">" in run_id] if len(plain) < len(run_ids) else []
    return max(2 + max(map(len, plain), default=-2), max(map(label_width, sub_runs), default=0))


class RunsTable(VirtualList[RunRow]):
    """The run list. Columns: run id, status, steps, turns, tokens, cost, what it waits on; which
    show, and how wide, follow the table's width by priority (``runs_columns``)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualList.COMPONENT_CLASSES | {
        "runs-table--ok", "runs-table--live", "runs-table--paused", "runs-table--attention", "runs-table--danger",
        "runs-table--marked",
    }  # fmt: skip

    BINDINGS = [
        *VirtualList.BINDINGS,
        Binding("l,right", "unfold", "Unfold", id="runs.unfold"),
        Binding("h,left", "fold", "Fold", id="runs.fold"),
    ]

    columns: var[RunsColumns] = var(RunsColumns(ID_COMFORT))
    """The columns shown at the table's width (``runs_columns``); the header watches it."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.marks: dict[str, None] = {}
        """The runs marked (``m``, ``M``), oldest mark first: kept by run id, so a mark stays
        whatever the filter, the order or the live feed does to the rows."""
        self.longest_label = 0
        """The widest run line measured (``measure``): the id column's wish. It never shrinks, so
        columns stay put while a filter or a fold changes which runs show."""
        self._shared: tuple[str | None, str | None] = (None, None)
        """The prefix and suffix every top-level run id measured shares (None: none measured)."""
        self.cut_details: dict[str, bool] = {}
        """Whether each run drawn last had its detail cut to fit (``W`` on the runs list shows it whole)."""
        self.chosen_counts: tuple[str, ...] = tuple(COUNT_WIDTHS)
        """The counts columns to show where there is room (a saved view's ``columns``)."""

    def choose_counts(self, chosen: Sequence[str]) -> None:
        """Show the counts columns ``chosen`` (of ``COUNT_WIDTHS``), where there is room."""
        self.chosen_counts = tuple(chosen)
        self._lay_out()

    def measure(self, run_ids: Sequence[str]) -> None:
        """Note the width of newly listed runs' lines, and what their ids share (elided first
        from an id too long for its column); the columns follow if the widest grew."""
        roots = [run_id for run_id in run_ids if ">" not in run_id]
        if roots:
            shared = shared_ends(roots, *self._shared)
            if shared != self._shared:
                self._shared = shared
                self.refresh_items()
        longest = _longest_label(run_ids)
        if longest > self.longest_label:
            self.longest_label = longest
            self._lay_out()

    def _lay_out(self) -> None:
        columns = runs_columns(self.scrollable_content_region.width, self.longest_label, self.chosen_counts)
        if columns != self.columns:
            self.columns = columns
            self.refresh_items()

    def on_resize(self) -> None:
        super().on_resize()
        self._lay_out()

    def render_item(self, item: RunRow, index: int, width: int) -> Text:
        columns = self.columns
        marker = ("▸ " if item.folded else "▾ ") if item.children else "  "
        marked = item.run_id in self.marks
        if marked:  # the mark takes the fold marker's space: a folded run keeps its ▸ beside it
            marker = MARK + (marker[0] if item.children else " ")
        lead = "  " * item.depth + marker
        room = max(1, columns.id_width - len(lead))
        if item.depth == 0:
            prefix, suffix = self._shared
            shown_id = elide_shared(printable_id(item.run_id), room, prefix or "", suffix or "")
        else:
            shown_id = middle_truncate(printable_id("›" + item.run_id.rpartition(">")[2]), room)
        run_label = lead + shown_id
        line = Text(run_label.ljust(columns.id_width + 1), no_wrap=True)
        if marked:
            line.stylize(self.get_component_rich_style("runs-table--marked", partial=True), 0, len(run_label))
        status = item.line
        if status is None:
            line.append("  … computing", style=self.muted())
            return line
        line.append(
            f"{status.state.icon} {status.state.value:<{STATUS_WIDTH - 2}}",
            style=self.get_component_rich_style(_STATE_CLASSES[status.state], partial=True),
        )
        if columns.counts:
            # A sub-run's cost is rolled up into its top-level run's; "…" while being read.
            cost = "" if item.depth else (item.cost.text if item.cost else "…")
            counts = {"steps": str(status.steps), "turns": str(status.turns), "tokens": _tokens(status.tokens)}
            line.append(columns.row({**counts, "cost": cost}))
        if item.folded and item.children:
            line.append(f"+{item.children} sub-run{'s' * (item.children != 1)}  ", style=self.muted())
        if status.legacy:
            line.append("legacy ", style="reverse")  # a pre-v0.9 journal: shown and replayed, never written to
        if status.lease_unknown:
            line.append("lease unknown ", style="reverse")  # the lease table could not be read
        if status.detail:
            whole = printable(status.detail)
            detail = clip_words(whole, max(1, width - line.cell_len))
            self.cut_details[item.run_id] = detail != whole
            line.append(detail, style=self.muted() if status.state.finished else "")
        return line

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
    """The column titles over the screen's ``RunsTable``, laid out as its columns are."""

    def on_mount(self) -> None:
        self.watch(self.screen.query_one(RunsTable), "columns", self._columns_changed)

    def _columns_changed(self, columns: RunsColumns) -> None:
        self.refresh()

    def render(self) -> str:
        return self.screen.query_one(RunsTable).columns.header()


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1000:.0f}k"
    return str(count)
