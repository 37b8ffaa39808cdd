"""The ASCII flowchart: a run's chain of nodes drawn as box art, one window of rows at a time, at any size.

Over SSH nobody renders Mermaid, so the same nodes ``mermaid_text`` writes are drawn here for a
terminal pane. The drawing is a left spine with each box as wide as its own label; parallel tool
calls hang off the spine; runs of identical LLM → tool loops and sub-agents fold. Rows come as
spans tagged by role, for the front end to style from its theme.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate

from agenttui.render.blocks import Block, EndBlock, FanOutBlock, LoopBlock, NodeBlock, SubAgentBlock, loop_name
from agenttui.render.boxes import MIN_WIDTH, Canvas
from agenttui.render.bulk import collector_paused
from agenttui.render.flow import END_KINDS, FlowKind, FlowStep
from agenttui.render.glyphs import glyphs_for
from agenttui.render.rows import Row

Children = Mapping[str, Sequence[FlowStep]]
"""The steps of each sub-agent run, by run id; it may load lazily (any ``Mapping`` will do)."""


class Flowchart:
    """A run's flowchart as rows of box art, drawn a window at a time.

    The chart is cut into blocks (a box, a fan-out, a fold of loops, a sub-agent) whose heights
    are computed without drawing, and which do not depend on the width, since labels are cut to
    one line: all but the node the chart ends in, the last block, whose label (where the run
    stands) wraps at the width the chart is ``fit`` to. An index of each block's first row finds the blocks under any window by bisection,
    so drawing 50 rows costs the same for a chart of 100 or 100,000 nodes; drawn blocks are kept
    in a small LRU cache. Steps are expected in record order, as ``flow_steps`` gives them.
    """

    CACHE_SIZE = 4096
    """Drawn blocks kept: a few screens' worth at a few widths."""
    CACHEABLE_HEIGHT = 64
    """Taller blocks (unfolded loops and sub-agents) draw just the window asked for, uncached."""

    def __init__(self, steps: Iterable[FlowStep] = (), *, children: Children | None = None) -> None:
        self.selected: int | None = None
        """The record index whose node is drawn with the ``selected`` role."""
        self.current_turn: int | None = None
        """The model turn whose nodes are drawn with the ``current`` role (a replay's step)."""
        self._changed: frozenset[int] = frozenset()
        self._children: Children = children if children is not None else {}
        self._blocks: list[Block] = []
        # The index. Arrays take 8 bytes an entry where a list of new ints takes 36; the record
        # indices are the steps' own ints, so a list of them costs no more and appends faster.
        self._starts = array("q")  # each block's first row, ascending
        self._node_records: list[int] = []  # the record index of each node that has one, ascending
        self._node_blocks = array("q")  # the block drawing each of those nodes
        self._row_count = 0
        self._wrap: int | None = None
        """The width the closing node's label wraps at (``fit``); None: one line, cut."""
        self._cache: OrderedDict[tuple[Block, int, bool, int, bool], tuple[Row, ...]] = OrderedDict()
        self.extend(steps)

    @property
    def changed(self) -> frozenset[int]:
        """The record indices whose nodes are drawn with the ``changed`` role."""
        return self._changed

    def mark_changed(self, record_indices: Iterable[int]) -> None:
        """Draw the nodes of ``record_indices`` (and no others) as changed."""
        changed = frozenset(record_indices)
        if changed != self._changed:
            self._changed = changed
            self._cache.clear()  # drawn blocks hold their labels' roles

    # -- size and the index ------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return self._row_count

    @property
    def block_count(self) -> int:
        return len(self._blocks)

    def block_at(self, row: int) -> int:
        """The block drawing ``row``; raises ``IndexError`` outside the chart."""
        if not 0 <= row < self._row_count:
            raise IndexError(f"row {row} outside a chart of {self._row_count} rows")
        return bisect_right(self._starts, row) - 1

    def block_rows(self, block: int) -> range:
        """The rows ``block`` spans."""
        start = self._starts[block]
        return range(start, start + self._blocks[block].height)

    def block_heights(self) -> list[int]:
        return [block.height for block in self._blocks]

    # -- drawing -----------------------------------------------------------------------------

    def rows(self, start: int, stop: int, width: int, *, ascii: bool = False) -> list[Row]:
        """Rows ``start`` to ``stop`` (clamped to the chart), each fitting ``width`` cells.

        Widths under ``MIN_WIDTH`` are drawn at ``MIN_WIDTH``. Only the blocks under the window
        are drawn.
        """
        start, stop = max(start, 0), min(stop, self._row_count)
        if start >= stop:
            return []
        current = self.current_turn
        canvas = Canvas(max(width, MIN_WIDTH), glyphs_for(ascii), self.selected, current, self._changed)
        selected = self._block_of(self.selected) if self.selected is not None else None
        out: list[Row] = []
        b = self.block_at(start)
        row = start
        while row < stop:
            block, top = self._blocks[b], self._starts[b]
            lo, hi = row - top, min(stop - top, block.height)
            has_next = b + 1 < len(self._blocks)
            cacheable = b != selected and block.height <= self.CACHEABLE_HEIGHT
            if cacheable and (current is None or not block.holds_turn(current)):
                out += self._drawn(block, canvas, has_next)[lo:hi]
            else:
                out += block.rows(lo, hi, canvas, has_next=has_next)
            row = top + hi
            b += 1
        return out

    def fit(self, width: int) -> bool:
        """Wrap the closing node's label to be drawn at ``width``; whether the chart's rows changed."""
        cells = max(width, MIN_WIDTH)
        if cells == self._wrap:
            return False
        self._wrap = cells
        last = self._blocks[-1] if self._blocks else None
        if not isinstance(last, EndBlock):
            return False
        before = self._row_count
        self._blocks[-1] = EndBlock(last.step, last.lead, cells)
        self._grew()
        return self._row_count != before

    def text(self, width: int, *, ascii: bool = False) -> str:
        """The whole drawing as plain text, one line per row."""
        self.fit(width)
        return "".join(row.text + "\n" for row in self.rows(0, self._row_count, width, ascii=ascii))

    def _drawn(self, block: Block, canvas: Canvas, has_next: bool) -> tuple[Row, ...]:
        """All of a block's rows, from the cache when drawn before (never selected, nor of the current turn)."""
        # Keyed by the block itself: the cache holds it, so no new block can take its identity.
        key = (block, block.version, has_next, canvas.width, canvas.glyphs.ascii)
        rows = self._cache.get(key)
        if rows is None:
            rows = tuple(block.rows(0, block.height, canvas, has_next=has_next))
            self._cache[key] = rows
            if len(self._cache) > self.CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return rows

    # -- records and rows --------------------------------------------------------------------

    def row_for_record(self, record: int) -> int:
        """The row showing the node of history record ``record``.

        A record with no node of its own (an attempt marker, a signal, the header) maps to the
        node drawn before it, or to the start node's label row.
        """
        node = bisect_right(self._node_records, record) - 1
        if node < 0:
            return min(1, max(self._row_count - 1, 0))
        block = self._node_blocks[node]
        return self._starts[block] + self._blocks[block].row_of(self._node_records[node])

    def _block_of(self, record: int) -> int | None:
        """The block drawing the node of ``record``, None if it has no node."""
        node = bisect_right(self._node_records, record) - 1
        return self._node_blocks[node] if node >= 0 and self._node_records[node] == record else None

    def record_for_row(self, row: int) -> int | None:
        """The history record the node at ``row`` shows (a fold: its first), None for start and the end."""
        block = self.block_at(row)
        return self._blocks[block].record_at(row - self._starts[block])

    # -- folding -----------------------------------------------------------------------------

    def fold(self, block: int) -> bool:
        """Fold a loop fold or a sub-agent; whether that changed anything."""
        return self._refold(block, self._blocks[block].set_folded(True))

    def unfold(self, block: int) -> bool:
        """Unfold a loop fold or a sub-agent; whether that changed anything."""
        return self._refold(block, self._blocks[block].set_folded(False))

    def is_folded(self, block: int) -> bool:
        return self._blocks[block].folded

    def toggle(self, row: int) -> bool:
        """Fold or unfold what ``row`` belongs to (inside an open sub-agent: the child's block there)."""
        block = self.block_at(row)
        return self._refold(block, self._blocks[block].toggle(row - self._starts[block]))

    def _refold(self, block: int, changed: bool) -> bool:
        """Re-index the rows from ``block`` on, after its height changed."""
        if changed:
            blocks = self._blocks
            heights = (b.height for b in blocks[block:-1])
            self._starts[block:] = array("q", accumulate(heights, initial=self._starts[block]))
            self._row_count = self._starts[-1] + blocks[-1].height
        return changed

    # -- building and the live tail ----------------------------------------------------------

    def append(self, step: FlowStep) -> int:
        """Add a node for a new record: one block is added or the last one grows, nothing re-indexed.

        The closing node (``done``, or where an unfinished run stands), if the chart ends with
        one, stays last. Returns the first row whose drawing changed.
        """
        return self.extend((step,))

    def extend(self, steps: Iterable[FlowStep]) -> int:
        """Add the nodes of new records, as ``append`` adds one; the first row whose drawing changed."""
        end = self._pop_end()
        changed = len(self._blocks) - 1  # its bottom edge gains a connector
        with collector_paused():  # a long run's blocks are many objects, all kept
            for step in steps:
                first = self._push(step)
                if changed < 0 or first < changed:
                    changed = first
        if end is not None:
            self._push(end)
        return self._starts[changed] if changed >= 0 else 0

    @property
    def end(self) -> FlowStep | None:
        """The closing node: ``done``, where an unfinished run stands (``unfinished``), or None."""
        last = self._blocks[-1] if self._blocks else None
        return last.step if isinstance(last, NodeBlock) and last.step.kind in END_KINDS else None

    def set_end(self, end: FlowStep) -> int:
        """Close the chart with ``end`` instead of the closing node it has (if any), as a run's
        status changes; the first row whose drawing changed."""
        if end == self.end:
            return self._row_count
        self._pop_end()
        changed = len(self._blocks) - 1  # the block above: its bottom edge may gain a connector
        self._push(end)
        return self._starts[changed] if changed >= 0 else 0

    def _pop_end(self) -> FlowStep | None:
        end = self.end
        if end is not None:
            self._pop(1)
            if end.record_index is not None:
                del self._node_records[-1], self._node_blocks[-1]
        return end

    def _push(self, step: FlowStep) -> int:
        """Add one node to the end, grouped with the blocks before it; the first block changed."""
        blocks = self._blocks
        if step.kind != _TOOL:  # a box of its own: most nodes, so added here without more calls
            first = len(blocks)
            kind = step.kind
            box = (
                EndBlock(step, first > 0, self._wrap)
                if kind is _DONE or kind is _UNFINISHED
                else NodeBlock(step, first > 0)
            )
            blocks.append(box)
            self._starts.append(self._row_count)
            self._row_count += box.height
        else:
            first = self._place_call(step)
        if step.record_index is not None:
            self._node_records.append(step.record_index)
            self._node_blocks.append(len(blocks) - 1)  # a new node always lands in the last block
        return first

    def _place_call(self, tool: FlowStep) -> int:
        """Add a tool call: a sub-agent's box, a row of its turn's fan-out, or a box that may fold loops."""
        blocks = self._blocks
        child = self._children.get(tool.child_run_id) if tool.child_run_id is not None else None
        if child is not None:
            return self._add(SubAgentBlock(tool, child, self._open_child, bool(blocks)))
        if not tool.parallel:
            return self._fold_loops(tool)
        last = blocks[-1] if blocks else None
        if isinstance(last, FanOutBlock) and last.turn == tool.turn:
            last.extend(tool)
            return self._grew()
        return self._add(FanOutBlock(tool))

    def _fold_loops(self, tool: FlowStep) -> int:
        """Add a single tool call's box, folding the tail once it ends with enough identical loops.

        Returns the first block changed. The tail is only ever looked at from its end, so building
        the chart node by node and appending a node to it group alike.
        """
        blocks = self._blocks
        # The tool box joins the blocks ..., [-2] a loop fold or a tool box, [-1] an LLM box. This
        # runs for every single tool call: most are told apart in a few comparisons, inline.
        llm = blocks[-1] if len(blocks) >= 2 else None
        if type(llm) is not NodeBlock or llm.step.kind != _LLM:
            return self._add(NodeBlock(tool, bool(blocks)))
        name = loop_name(tool)
        before = blocks[-2]
        if type(before) is LoopBlock:
            if before.name != name:
                return self._add(NodeBlock(tool, True))
            self._pop(1)  # the LLM box joins the fold, with this tool
            before.extend(llm.step, tool)
            return self._remap(before, llm.step)
        if type(before) is not NodeBlock or before.step.kind != _TOOL or loop_name(before.step) != name:
            return self._add(NodeBlock(tool, True))  # the commonest case: no loop repeated
        loop = [tool, llm.step, before.step]  # the loops' boxes, from the last one back
        for at in range(-3, -2 * LoopBlock.MIN_LOOPS, -1):
            box = blocks[at] if len(blocks) >= -at else None
            kind = _TOOL if at % 2 == 0 else _LLM
            if type(box) is not NodeBlock or box.step.kind != kind or (kind == _TOOL and loop_name(box.step) != name):
                return self._add(NodeBlock(tool, True))
            loop.append(box.step)
        loop.reverse()
        self._pop(len(loop) - 1)
        fold = LoopBlock(loop, lead=bool(blocks))
        self._add(fold)
        return self._remap(fold, *loop[:-1])

    def _remap(self, block: Block, *steps: FlowStep) -> int:
        """Point the records of ``steps``, moved into ``block`` (the last block), at it.

        They are the last nodes added, so their entries are the last of ``_node_blocks``.
        """
        index = self._grew()
        node_blocks, node = self._node_blocks, len(self._node_blocks)
        for step in steps:
            if step.record_index is not None:
                node -= 1
                node_blocks[node] = index
        return index

    def _add(self, block: Block) -> int:
        self._blocks.append(block)
        self._starts.append(self._row_count)
        self._row_count += block.height
        return len(self._blocks) - 1

    def _grew(self) -> int:
        """Account for the last block having grown."""
        index = len(self._blocks) - 1
        self._row_count = self._starts[index] + self._blocks[index].height
        return index

    def _pop(self, count: int) -> None:
        del self._blocks[-count:]
        del self._starts[-count:]
        self._row_count = self._starts[-1] + self._blocks[-1].height if self._blocks else 0

    def _open_child(self, steps: Sequence[FlowStep]) -> Flowchart:
        return Flowchart(steps, children=self._children)


# Enum attribute lookups cost ~0.3 µs each, a third of the budget per node when indexing 100,000.
_LLM, _TOOL, _DONE, _UNFINISHED = FlowKind.LLM, FlowKind.TOOL, FlowKind.DONE, FlowKind.UNFINISHED


def render_text(
    steps: Iterable[FlowStep], *, width: int = 80, ascii: bool = False, children: Children | None = None
) -> str:
    """The whole flowchart of ``steps`` as plain text, folds folded."""
    return Flowchart(steps, children=children).text(width, ascii=ascii)
