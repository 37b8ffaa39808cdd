"""CompareView: two runs aligned by turn, in two columns or, when narrow, one with both sides interleaved."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from rich.cells import cell_len
from rich.text import Text

from agenttui.journal.describe import kind_icon, printable, summary
from agenttui.journal.record import Record
from agenttui.render.diff import DiffRow, RowState
from agenttui.replay.compare import TurnPair
from agenttui.tui.layout import middle_truncate
from agenttui.tui.widgets.diff_view import ROW_MARKS
from agenttui.tui.widgets.virtual_list import VirtualList

#: The step name column's bounds in a cell (a side's half of the line, or the whole line).
NAME_COLUMN_MIN, NAME_COLUMN_MAX = 10, 24
GUTTER = 4
"""The first difference's mark, the row's mark and their spaces."""
DIVIDER = "│ "
"""Between the two columns."""


@dataclass(frozen=True, slots=True)
class CompareLine:
    """A turn's heading (``row`` None), a row of it on both sides, or one side of a changed row
    (``side`` "left" or "right": the interleaved layout gives each its own line). ``folded``: a
    heading standing for that many identical turns, hidden."""

    turn: TurnPair
    row: DiffRow | None = None
    side: str = "both"
    folded: int = 0

    @property
    def differs(self) -> bool:
        return self.row is not None and self.row.state.diverges


def compare_lines(turns: Iterable[TurnPair], *, interleaved: bool, differing_only: bool) -> list[CompareLine]:
    """The lines of ``turns``: each turn's heading and rows. ``interleaved``: a changed row takes
    two lines, the left's then the right's. ``differing_only``: identical turns fold into a line
    saying how many."""
    lines: list[CompareLine] = []
    hidden: list[TurnPair] = []
    for turn in turns:
        if differing_only and not turn.differs:
            hidden.append(turn)
            continue
        if hidden:
            lines.append(CompareLine(hidden[0], folded=len(hidden)))
            hidden = []
        lines.append(CompareLine(turn))
        for row in turn.rows:
            if interleaved and row.state == RowState.CHANGED:
                lines.append(CompareLine(turn, row, "left"))
                lines.append(CompareLine(turn, row, "right"))
            else:
                lines.append(CompareLine(turn, row))
    if hidden:
        lines.append(CompareLine(hidden[0], folded=len(hidden)))
    return lines


def tokens_text(turn: TurnPair) -> str:
    """A turn's tokens on each side and their delta: "tokens 230 → 260 (+30)"."""
    left = "—" if turn.left_usage is None else f"{turn.left_tokens:,}"
    right = "—" if turn.right_usage is None else f"{turn.right_tokens:,}"
    return f"tokens {left} → {right} ({turn.token_delta:+,})"


class CompareView(VirtualList[CompareLine]):
    """Two runs by turn: a heading per turn (its tokens on each side and their delta), then its
    records paired by step name; the first difference marked ``▶``."""

    COMPONENT_CLASSES: ClassVar[set[str]] = VirtualList.COMPONENT_CLASSES | {
        "compare-view--turn",
        "compare-view--left",
        "compare-view--right",
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.first: DiffRow | None = None
        """The first difference's row: marked where it is drawn."""
        self.interleaved = False
        """One column, both sides in turn (a narrow terminal), rather than two side by side."""
        self.names: tuple[dict[str, str], dict[str, str]] = ({}, {})
        """Each side's call ids to tool names: a tool result names its tool."""
        self._longest_name = 0

    def show(self, lines: list[CompareLine], *, first: DiffRow | None, interleaved: bool) -> None:
        self.first, self.interleaved = first, interleaved
        self._longest_name = 0
        self._measure(lines)
        self.set_items(lines)

    def add(self, lines: list[CompareLine], *, first: DiffRow | None) -> None:
        """Lines of turns read since: appended (a longer step name, or the first difference
        found among lines already drawn, draws every line again)."""
        widened = self._measure(lines)
        moved, self.first = self.first is not first, first
        self.extend(lines)
        if widened or moved:
            self.refresh_items()

    def _measure(self, lines: list[CompareLine]) -> bool:
        longest = max((len(line.row.name) for line in lines if line.row is not None), default=0)
        if longest <= self._longest_name:
            return False
        self._longest_name = longest
        return True

    def render_item(self, item: CompareLine, index: int, width: int) -> Text:
        turn = item.turn
        if item.folded:
            return Text(
                f"  ≡ {item.folded:,} identical turn{'s' * (item.folded != 1)} from turn {turn.number}",
                style=self.muted(),
            )
        row = item.row
        if row is None:
            heading = Text(f"turn {turn.number}", style=self.get_component_rich_style("compare-view--turn"))
            heading.append(f"  {tokens_text(turn)}", style="" if turn.token_delta else self.muted())
            count = len(turn.differing)
            heading.append(f"  {count} differ" if count else "  same", style=self.error() if count else self.muted())
            return heading
        mark_style = self.error() if row.state.diverges else self.muted()
        first = row is self.first and item.side != "right"
        line = Text(f"{'▶' if first else ' '} {ROW_MARKS[row.state]} ", style=mark_style, no_wrap=True)
        if self.interleaved:
            side = item.side
            if side == "both":
                side = "right" if row.left is None else "left"
            record = row.left if side == "left" else row.right
            sign = {"left": "−", "right": "+"}[side] if row.state != RowState.SAME else " "
            line.append(sign + " ", style=self.get_component_rich_style(f"compare-view--{side}", partial=True))
            line.append_text(self._cell(record, side, width - GUTTER - 2))
            return line
        half, rest = _halves(width)
        line.append_text(self._cell(row.left, "left", half))
        line.append(DIVIDER, style=self.muted())
        line.append_text(self._cell(row.right, "right", rest))
        return line

    def column_labels(self, left: str, right: str) -> Text:
        """What each column holds, over the columns as the lines draw them."""
        half, rest = _halves(self.scrollable_content_region.width or self.app.size.width)
        labels = Text(" " * GUTTER)
        labels.append(middle_truncate(printable(left), half).ljust(half))
        labels.append(DIVIDER)
        labels.append(middle_truncate(printable(right), rest))
        return labels

    def _cell(self, record: Record | None, side: str, width: int) -> Text:
        """A record in ``width`` cells: kind icon, step name, what it holds; blank where the side has none."""
        if record is None:
            return Text(" " * width)
        names = self.names[0 if side == "left" else 1]
        column = max(NAME_COLUMN_MIN, min(NAME_COLUMN_MAX, self._longest_name, width // 3))
        cell = Text(f"{kind_icon(record)} ", no_wrap=True)
        cell.append(middle_truncate(printable(record.name), column).ljust(column + 1))
        cell.append(printable(summary(record, names)[: width * 2]))
        if cell_len(cell.plain) > width:
            cell.truncate(width, overflow="ellipsis")
        else:
            cell.pad_right(width - cell.cell_len)
        return cell


def _halves(width: int) -> tuple[int, int]:
    """The cells of the left column and of the right, side by side in ``width``."""
    room = max(2, width - GUTTER - len(DIVIDER))
    return room // 2, room - room // 2
