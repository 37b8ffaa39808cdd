"""DiffView: two journals aligned by step name, identical runs folded, the first divergence marked."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.text import Text

from agenttui.journal.describe import printable
from agenttui.render.diff import DiffRow, JournalDiff, RowState, payload_diff
from agenttui.tui.widgets.virtual_list import VirtualList

ROW_MARKS = {
    RowState.SAME: "=",
    RowState.CHANGED: "≠",
    RowState.MISSING: "−",
    RowState.EXTRA: "+",
    RowState.PENDING: "…",
    RowState.MARKER: "·",
}
"""Each row state's mark, as every view of a diff draws it."""


@dataclass(frozen=True, slots=True)
class DiffLine:
    """A row of the diff, or a fold of ``count`` identical steps."""

    row: DiffRow | None
    count: int = 0
    first: bool = False


def diff_lines(diff: JournalDiff) -> list[DiffLine]:
    """The diff's rows with each run of identical steps folded into one line."""
    lines: list[DiffLine] = []
    first = diff.first_divergence
    same = 0
    for row in diff.rows:
        if row.state == RowState.SAME:
            same += 1
            continue
        if same:
            lines.append(DiffLine(None, same))
            same = 0
        lines.append(DiffLine(row, first=row is first))
    if same:
        lines.append(DiffLine(None, same))
    return lines


class DiffView(VirtualList[DiffLine]):
    """One line per differing step (identical ones folded); the cursor starts on the first divergence."""

    def show(self, diff: JournalDiff) -> None:
        lines = diff_lines(diff)
        self.set_items(lines)
        first = next((i for i, line in enumerate(lines) if line.first), None)
        if first is not None:
            self.cursor = first

    def render_item(self, item: DiffLine, index: int, width: int) -> Text:
        if item.row is None:
            return Text(f"  ≡ {item.count} identical step{'s' * (item.count != 1)}", style=self.muted())
        row = item.row
        line = Text(
            f"{'▶' if item.first else ' '} {ROW_MARKS[row.state]} ", style=self.error() if row.state.diverges else ""
        )
        line.append(f"{printable(row.name):<32} ")
        line.append(row.reason or row.state.value, style=self.error() if row.state.diverges else self.muted())
        return line


def diff_detail(row: DiffRow, *, left_label: str = "recorded", right_label: str = "replayed") -> RenderableType:
    """A row's reason and the unified diff of its two payloads, as inert text."""
    header = Text(f"{printable(row.name)}: {row.reason or row.state.value}", style="bold")
    if row.state == RowState.PENDING:
        return Group(header, Text("not replayed yet", style="italic"))
    lines = payload_diff(row.left, row.right, left_label=left_label, right_label=right_label)
    if not lines:
        return Group(header, Text("payloads identical (salts, claims and times aside)", style="italic"))
    body = []
    for line in lines:
        style = "bold" if line.startswith(("+", "-")) and not line.startswith(("+++", "---")) else ""
        body.append(Text(printable(line), style=style))
    return Group(header, *body)
