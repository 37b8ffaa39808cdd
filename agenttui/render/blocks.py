"""The blocks a flowchart is cut into: each knows its height without drawing, and draws any window of its rows.

A block is a node box, a fan-out of parallel tool calls, a fold of repeated LLM → tool loops, or
a sub-agent (a folded box, or a titled frame around the child run's own chart). Offsets are rows
counted from the block's first row. ``version`` changes whenever the block's drawing would, so a
cache keyed by ``(block, version)`` never serves a stale drawing.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from agenttui.render.boxes import (  # isort: skip  (kept packed, like the fmt: skip below)
    BOX_HEIGHT, BOX_PADDING, MIN_WIDTH, SPINE, Canvas, arrow_row, box, end_rows, fan_row, fit_around, node_rows,
)  # fmt: skip
from agenttui.render.cells import wrap_words
from agenttui.render.flow import END_KINDS, FAIL_MARK, FlowKind, FlowStep
from agenttui.render.rows import Role, Row, Span, clip_row


class Chart(Protocol):
    """What a sub-agent frame needs of the child run's chart (``Flowchart`` provides it)."""

    @property
    def row_count(self) -> int: ...

    def rows(self, start: int, stop: int, width: int, *, ascii: bool = False) -> list[Row]: ...

    def toggle(self, row: int) -> bool: ...


class Block:
    """A run of the chart's rows drawn as one unit.

    ``lead`` says the block starts with the arrow from the block above (every box but the
    chart's first; a fan-out hangs off the box above instead).
    """

    __slots__ = ("lead",)
    version: int = 0
    """Bumped by blocks that can change (they give it a slot); a node box never changes."""

    def __init__(self, lead: bool) -> None:
        self.lead = lead

    @property
    def height(self) -> int:
        raise NotImplementedError

    def row_of(self, record: int) -> int:
        """The offset of the row showing ``record``, one of this block's records."""
        raise NotImplementedError

    def record_at(self, offset: int) -> int | None:
        """The record the row at ``offset`` shows, or None (start, done, a node read from Mermaid)."""
        raise NotImplementedError

    def rows(self, lo: int, hi: int, canvas: Canvas, *, has_next: bool) -> list[Row]:
        """Rows ``lo`` to ``hi`` (offsets) of the block; ``has_next`` says a block follows it."""
        raise NotImplementedError

    def holds_turn(self, turn: int) -> bool:
        """Whether a node of model turn ``turn`` is drawn here (its drawing depends on the current turn)."""
        return False

    @property
    def folded(self) -> bool:
        return False

    def set_folded(self, folded: bool) -> bool:
        """Fold or unfold the block; whether that changed anything."""
        return False

    def toggle(self, offset: int) -> bool:
        """Fold or unfold what the row at ``offset`` belongs to; whether that changed anything."""
        return self.set_folded(not self.folded)


class NodeBlock(Block):
    """One node as a box."""

    __slots__ = ("step",)

    def __init__(self, step: FlowStep, lead: bool) -> None:
        self.lead = lead  # not through Block.__init__: a long run makes one of these per node
        self.step = step

    @property
    def height(self) -> int:
        return self.lead + BOX_HEIGHT

    def row_of(self, record: int) -> int:
        return self.lead + 1

    def record_at(self, offset: int) -> int | None:
        return self.step.record_index

    def holds_turn(self, turn: int) -> bool:
        return self.step.turn == turn

    def rows(self, lo: int, hi: int, canvas: Canvas, *, has_next: bool) -> list[Row]:
        return node_rows(self.step, canvas, lead=self.lead, connector=has_next)[lo:hi]


END_LINES = 4
"""The most lines the node a chart ends in wraps to before its last line is cut."""


class EndBlock(NodeBlock):
    """The node a chart ends in (``done``, or where an unfinished run stands, "halted on
    refund_payment: outcome unknown"): its label wrapped at words in as many lines as it takes at
    ``cells`` (the chart's width, ``Flowchart.fit``), up to ``END_LINES``; one line, cut, when
    the chart has no width yet. The chart's last block, so a new width re-indexes nothing."""

    __slots__ = ("lines",)

    def __init__(self, step: FlowStep, lead: bool, cells: int | None) -> None:
        super().__init__(step, lead)
        self.lines = 1 if cells is None else len(wrap_words(step.label, cells - BOX_PADDING, END_LINES))

    @property
    def height(self) -> int:
        return self.lead + BOX_HEIGHT - 1 + self.lines

    def rows(self, lo: int, hi: int, canvas: Canvas, *, has_next: bool) -> list[Row]:
        return end_rows(self.step, canvas, self.lines, lead=self.lead, connector=has_next)[lo:hi]


class FanOutBlock(Block):
    """Consecutive parallel tool calls of one model turn, one row each off the spine."""

    __slots__ = ("steps", "version")

    def __init__(self, step: FlowStep) -> None:
        super().__init__(lead=False)
        self.steps = [step]
        self.version = 0

    @property
    def turn(self) -> int | None:
        return self.steps[0].turn

    def extend(self, step: FlowStep) -> None:
        self.steps.append(step)
        self.version += 1

    @property
    def height(self) -> int:
        return len(self.steps)

    def row_of(self, record: int) -> int:
        return next(i for i, s in enumerate(self.steps) if s.record_index == record)

    def record_at(self, offset: int) -> int | None:
        return self.steps[offset].record_index

    def holds_turn(self, turn: int) -> bool:
        return self.turn == turn

    def rows(self, lo: int, hi: int, canvas: Canvas, *, has_next: bool) -> list[Row]:
        last = len(self.steps) - 1
        return [fan_row(self.steps[i], canvas, last=i == last and not has_next) for i in range(lo, hi)]


class FoldableBlock(Block):
    """A block that can fold into one box; folded when made."""

    __slots__ = ("_folded", "version")

    def __init__(self, lead: bool) -> None:
        super().__init__(lead)
        self._folded = True
        self.version = 0

    @property
    def folded(self) -> bool:
        return self._folded

    def set_folded(self, folded: bool) -> bool:
        if folded == self._folded:
            return False
        self._folded = folded
        self.version += 1
        return True


def loop_name(tool: FlowStep) -> str:
    """What makes LLM → tool loops identical: the tool's label without its failure mark."""
    return tool.label.removesuffix(" " + FAIL_MARK) if tool.failed else tool.label


class LoopBlock(FoldableBlock):
    """Three or more identical consecutive LLM → tool loops: one box while folded, every box unfolded.

    Unfolded, node ``j`` (LLM nodes even, tool nodes odd) has its label row at offset
    ``4 * j + lead + 1``: every box but the first is preceded by its arrow row.
    """

    __slots__ = ("_records", "failures", "name", "steps")
    MIN_LOOPS: ClassVar[int] = 3

    def __init__(self, steps: Sequence[FlowStep], lead: bool) -> None:
        super().__init__(lead)
        self.name = loop_name(steps[1])
        self.steps: list[FlowStep] = []
        self.failures = 0
        # Each step's record index (-1: none), in step order: ascending, as steps come in record
        # order. An array and a search, where a dict took 4 MB for a 50,000-record run's loop.
        self._records = array("q")
        for step in steps:
            self._add(step)

    def _add(self, step: FlowStep) -> None:
        self._records.append(-1 if step.record_index is None else step.record_index)
        self.steps.append(step)
        self.failures += step.failed

    def extend(self, llm: FlowStep, tool: FlowStep) -> None:
        self._add(llm)
        self._add(tool)
        self.version += 1

    @property
    def loops(self) -> int:
        return len(self.steps) // 2

    @property
    def height(self) -> int:
        if self._folded:
            return self.lead + BOX_HEIGHT
        return self.lead + 4 * len(self.steps) - 1

    def row_of(self, record: int) -> int:
        if self._folded:
            return self.lead + 1
        return 4 * self._position(record) + self.lead + 1

    def _position(self, record: int) -> int:
        """The step drawing ``record``; raises ``KeyError`` when none does."""
        records = self._records
        at = bisect_left(records, record)
        if at < len(records) and records[at] == record:
            return at
        if record >= 0 and record in records:  # steps handed over out of record order
            return records.index(record)
        raise KeyError(record)

    def _holds(self, record: int) -> bool:
        try:
            self._position(record)
        except KeyError:
            return False
        return True

    def record_at(self, offset: int) -> int | None:
        if self._folded:
            return self.steps[0].record_index
        return self.steps[self._node_at(offset)].record_index

    def holds_turn(self, turn: int) -> bool:
        # A fold's turns ascend, one LLM → tool loop a turn: no need to look at every step.
        first, last = self.steps[0].turn, self.steps[-1].turn
        return first is not None and last is not None and first <= turn <= last

    def _node_at(self, offset: int) -> int:
        return max(0, (offset - self.lead + 1) // 4)

    def _node_start(self, node: int) -> int:
        return 0 if node == 0 else 4 * node + self.lead - 1

    def rows(self, lo: int, hi: int, canvas: Canvas, *, has_next: bool) -> list[Row]:
        if self._folded:
            return self._folded_rows(canvas, has_next)[lo:hi]
        out: list[Row] = []
        last = len(self.steps) - 1
        for node in range(self._node_at(lo), self._node_at(hi - 1) + 1):
            start = self._node_start(node)
            drawn = node_rows(self.steps[node], canvas, lead=node > 0 or self.lead, connector=node < last or has_next)
            out += drawn[max(lo - start, 0) : hi - start]
        return out

    def _folded_rows(self, canvas: Canvas, has_next: bool) -> list[Row]:
        g = canvas.glyphs
        counts = f" {g.times}{self.loops}" + (f"{g.failures}{self.failures} {g.fail_mark}" if self.failures else "")
        text = fit_around(f"{g.folded} LLM {g.then} ", self.name, counts, canvas.width - BOX_PADDING, g)
        role = Role.LABEL
        if canvas.selected is not None and self._holds(canvas.selected):
            role = Role.SELECTED
        elif canvas.current_turn is not None and self.holds_turn(canvas.current_turn):
            role = Role.CURRENT
        style, border = (g.heavy, Role.ERROR) if self.failures else (g.light, Role.BORDER)
        return box((Span(text, role),), style, border, lead=self.lead, connector=has_next, glyphs=g)


FRAME_TITLE_PADDING = 7
"""Cells a frame's top edge adds around its title: ``┌─── `` before, `` ─`` after."""
FRAME_INDENT = 2
"""Cells a frame's side takes before the child's rows: ``│ ``."""


class SubAgentBlock(FoldableBlock):
    """A tool call that started a sub-agent: a folded box, or a titled frame around the child's chart.

    ``open_chart`` builds the child's chart from its steps, on the first unfold; the frame draws
    only the window of the child's rows it is asked for.
    """

    __slots__ = ("_chart", "_count", "_open_chart", "child_steps", "step")

    def __init__(
        self,
        step: FlowStep,
        child_steps: Sequence[FlowStep],
        open_chart: Callable[[Sequence[FlowStep]], Chart],
        lead: bool,
    ) -> None:
        super().__init__(lead)
        self.step = step
        self.child_steps = child_steps
        self._open_chart = open_chart
        self._chart: Chart | None = None
        self._count: int | None = None

    @property
    def name(self) -> str:
        return loop_name(self.step).removeprefix("tool: ")

    @property
    def step_count(self) -> int:
        """The child's nodes, its start and done not counted."""
        if self._count is None:
            self._count = sum(s.kind != FlowKind.USER and s.kind not in END_KINDS for s in self.child_steps)
        return self._count

    @property
    def chart(self) -> Chart:
        if self._chart is None:
            self._chart = self._open_chart(self.child_steps)
        return self._chart

    @property
    def height(self) -> int:
        if self._folded:
            return self.lead + BOX_HEIGHT
        return self.lead + 2 + self.chart.row_count

    def row_of(self, record: int) -> int:
        return self.lead + (1 if self._folded else 0)

    def record_at(self, offset: int) -> int | None:
        return self.step.record_index

    def holds_turn(self, turn: int) -> bool:
        return self.step.turn == turn

    def toggle(self, offset: int) -> bool:
        interior = offset - self.lead - 1
        if not self._folded and 0 <= interior < self.chart.row_count:
            if not self.chart.toggle(interior):
                return False
            self.version += 1
            return True
        return self.set_folded(not self._folded)

    def _title(self, canvas: Canvas, marker: str, cells: int) -> Span:
        g = canvas.glyphs
        n = self.step_count
        suffix = f" ({n} step{'' if n == 1 else 's'})" + (f" {g.fail_mark}" if self.step.failed else "")
        text = fit_around(f"{marker} sub-agent: ", self.name, suffix, cells, g)
        return Span(text, canvas.label_role(self.step, Role.TITLE))

    def rows(self, lo: int, hi: int, canvas: Canvas, *, has_next: bool) -> list[Row]:
        g = canvas.glyphs
        style, border = (g.heavy, Role.ERROR) if self.step.failed else (g.light, Role.BORDER)
        if self._folded:
            title = self._title(canvas, g.folded, canvas.width - BOX_PADDING)
            return box((title,), style, border, lead=self.lead, connector=has_next, glyphs=g)[lo:hi]

        h = style.horizontal
        title = self._title(canvas, g.unfolded, canvas.width - FRAME_TITLE_PADDING)
        top = Row(Span(style.top_left + h * 3 + " ", border), title, Span(" " + h, border))
        rule = top.cells
        if has_next:
            bottom = Row(
                Span(style.bottom_left + h * (SPINE - 1), border),
                Span(style.connector, Role.EDGE),
                Span(h * (rule - SPINE - 1), border),
            )
        else:
            bottom = Row(Span(style.bottom_left + h * (rule - 1), border))

        first = self.lead + 1  # offset of the child's first row
        stop = first + self.chart.row_count
        out = ([arrow_row(g)] if self.lead else []) + [top]
        out = out[lo : min(hi, first)]
        if max(lo, first) < min(hi, stop):
            side = Span(style.vertical + " ", border)
            # Nested past the pane's width, a child is drawn at the narrowest width and clipped.
            child_width = max(canvas.width - FRAME_INDENT, MIN_WIDTH)
            child = self.chart.rows(max(lo, first) - first, min(hi, stop) - first, child_width, ascii=g.ascii)
            out += (clip_row(Row(side, *row), canvas.width) for row in child)
        if hi > stop:
            out.append(bottom)
        return out
