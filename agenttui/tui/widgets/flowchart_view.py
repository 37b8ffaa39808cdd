"""FlowchartView: the run's ASCII flowchart in a pane, drawn a window of rows at a time."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from agenttui.journal.record import Record
from agenttui.render.ascii import Children, Flowchart
from agenttui.render.flow import DONE, START, FlowStep, FlowTail
from agenttui.render.rows import Role


class FlowchartView(ScrollView, can_focus=True):
    """Box art of the run; its cursor row follows the journal's record and the other way round.

    Roles map to component classes, and those to theme variables in the app's stylesheet.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "move(1)", "Down", show=False, id="flow.down"),
        Binding("k,up", "move(-1)", "Up", show=False, id="flow.up"),
        Binding("g,home", "move_to(0)", "Top", show=False, id="flow.top"),
        Binding("G,end", "move_to(-1)", "Bottom", show=False, id="flow.bottom"),
        Binding("enter", "toggle_fold", "Fold/unfold", id="flow.fold"),
    ]
    COMPONENT_CLASSES: ClassVar[set[str]] = {f"flowchart--{role.value}" for role in Role} | {"flowchart--cursor"}

    cursor_row: reactive[int] = reactive(0)
    ascii_only: reactive[bool] = reactive(False)

    class RecordSelected(Message):
        """The cursor moved onto the node of ``record_index``. Coalesces."""

        def __init__(self, record_index: int) -> None:
            super().__init__()
            self.record_index = record_index

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, FlowchartView.RecordSelected)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chart = Flowchart([START, DONE])
        self._tail = FlowTail()
        self._following_record: int | None = None
        self._end = DONE
        """The chart's last node: where the run stands, as its screen last heard (``set_end``)."""

    # -- data --------------------------------------------------------------------------------

    def load(self, records: list[Record], run_id: str | None = None, children: Children | None = None) -> None:
        """Draw ``records`` afresh; ``children`` holds the steps of sub-runs, drawn as foldable frames."""
        self._tail = FlowTail(run_id=run_id, sub_runs=children or {})
        current = self.chart.current_turn
        self.chart = Flowchart([START, *self._tail.steps(records), self._end], children=children)
        self.chart.current_turn = current
        self._sized()

    def set_end(self, end: FlowStep) -> None:
        """End the chart in ``end``: ``done``, or where an unfinished run stands (``runs.chart_end``)."""
        self._end = end
        self.chart.set_end(end)
        self._sized()

    def show_turn(self, turn: int | None) -> None:
        """Highlight the nodes of model turn ``turn`` (a replay's step), or none."""
        self.chart.current_turn = turn
        self.refresh()

    def mark_changed(self, record_indices: Iterable[int]) -> None:
        """Mark the nodes of ``record_indices`` as changed (a fork's, against the run as recorded)."""
        self.chart.mark_changed(record_indices)
        self.refresh()

    def append(self, records: list[Record]) -> None:
        """New records of a tailed run: each adds one block, nothing is re-indexed."""
        self.chart.extend(self._tail.steps(records))
        self._sized()

    def _sized(self) -> None:
        if width := self.scrollable_content_region.width:  # none while its tab is hidden
            self.chart.fit(width)
        self.virtual_size = Size(self.size.width, self.chart.row_count)
        self.refresh()

    def select_record(self, record_index: int) -> None:
        """Follow the journal: put the cursor on the node of ``record_index`` (no message back)."""
        if self.chart.row_count == 0:
            return
        self._following_record = record_index
        self.chart.selected = record_index
        self.cursor_row = self.chart.row_for_record(record_index)
        # Once laid out again: rows just added may bring a scrollbar, and the region shrinks.
        self.call_after_refresh(self._keep_cursor_in_view)
        self.refresh()

    # -- drawing -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        row_index = round(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        rows = self.chart.rows(row_index, row_index + 1, max(width, 1), ascii=self.ascii_only)
        if not rows:
            return Strip.blank(width, base)
        cursor = row_index == self.cursor_row and self.has_focus
        line_style = base + self.get_component_rich_style("flowchart--cursor") if cursor else base
        segments = [Segment(span.text, line_style + self._role_style(span.role)) for span in rows[0]]
        return Strip(segments).crop_extend(0, width, line_style)

    def _role_style(self, role: Role) -> Style:
        return self.get_component_rich_style(f"flowchart--{role.value}", partial=True)

    # -- cursor ------------------------------------------------------------------------------

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh_lines(old - round(self.scroll_offset.y), 1)
        self.refresh_lines(new - round(self.scroll_offset.y), 1)
        self._keep_cursor_in_view()

    def _keep_cursor_in_view(self) -> None:
        """Scroll the cursor row into view; on the last node before the chart's end, the end too.

        Also called on a resize: while its tab is hidden the pane has no height, and it scrolls
        to where the journal's cursor went once it is shown.
        """
        top, height = round(self.scroll_offset.y), self.scrollable_content_region.height
        if not height:
            return
        chart, row = self.chart, self.cursor_row
        if not 0 <= row < chart.row_count:
            return
        on_last_node = chart.end is not None and chart.block_count >= 2 and chart.block_at(row) == chart.block_count - 2
        if on_last_node and chart.row_count - row <= height:
            lowest = max(chart.row_count - height, 0)  # the first top that shows the chart's last row
            if not lowest <= top <= row:
                self.scroll_to(y=lowest, animate=False)
        elif row < top or row >= top + height:
            self.scroll_to(y=max(0, row - height // 2), animate=False)

    def validate_cursor_row(self, value: int) -> int:
        return max(0, min(value, self.chart.row_count - 1))

    def action_move(self, delta: int) -> None:
        self.cursor_row += delta
        self._announce()

    def action_move_to(self, row: int) -> None:
        self.cursor_row = row if row >= 0 else self.chart.row_count - 1
        self._announce()

    def _announce(self) -> None:
        record = self.chart.record_for_row(self.cursor_row)
        if record is not None and record != self._following_record:
            self._following_record = record
            self.chart.selected = record
            self.refresh()
            self.post_message(self.RecordSelected(record))

    def action_toggle_fold(self) -> None:
        if self.chart.toggle(self.cursor_row):
            self._sized()

    def on_resize(self) -> None:
        self._sized()
        self._keep_cursor_in_view()
