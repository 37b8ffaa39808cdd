"""Drawing primitives of the flowchart: a labelled box on the spine, the arrow into it, a fan-out row.

The geometry: the spine runs down column ``SPINE``. Every box starts at column 0 and is as wide as
its own label; its bottom edge carries the connector at the spine column, and the row under it is
either an arrow (``▼``) into the next box or a fan-out row (``├─▶ label``) hanging off the spine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agenttui.render.cells import cell_width, cut
from agenttui.render.flow import FAIL_MARK, FlowKind, FlowStep
from agenttui.render.glyphs import BoxStyle, Glyphs
from agenttui.render.rows import Role, Row, Span

SPINE = 3
"""The spine's column: the connector under each box and the arrows between boxes."""
BOX_HEIGHT = 3
"""Top edge, label row, bottom edge."""
BOX_PADDING = 4
"""Cells a box adds around its label: a border and a space on each side."""
MIN_WIDTH = 12
"""The narrowest drawing width honoured; narrower panes get rows this wide."""


@dataclass(frozen=True, slots=True)
class Canvas:
    """How to draw: the width rows must fit, the character set, the selected record, the current
    turn and the records marked changed."""

    width: int
    glyphs: Glyphs
    selected: int | None = None
    current_turn: int | None = None
    changed: frozenset[int] = frozenset()

    def is_selected(self, step: FlowStep) -> bool:
        return step.record_index is not None and step.record_index == self.selected

    def label_role(self, step: FlowStep, role: Role) -> Role:
        """``role``, unless the node is selected, of the current turn or marked changed."""
        if self.is_selected(step):
            return Role.SELECTED
        if step.turn is not None and step.turn == self.current_turn:
            return Role.CURRENT
        if step.record_index in self.changed:
            return Role.CHANGED
        return role


def arrow_row(glyphs: Glyphs) -> Row:
    return Row(Span(" " * SPINE + glyphs.arrow, Role.EDGE))


def box(
    label: Sequence[Span], style: BoxStyle, border: Role, *, lead: bool, connector: bool, glyphs: Glyphs
) -> list[Row]:
    """A box around ``label``, after an arrow row if ``lead``, with the spine leaving it if ``connector``."""
    return lines_box((label,), style, border, lead=lead, connector=connector, glyphs=glyphs)


def lines_box(
    lines: Sequence[Sequence[Span]], style: BoxStyle, border: Role, *, lead: bool, connector: bool, glyphs: Glyphs
) -> list[Row]:
    """A box around label ``lines`` (as wide as the widest), drawn as ``box`` draws one."""
    widths = [sum(cell_width(span.text) for span in line) for line in lines]
    inner = max(widths) + 2
    h = style.horizontal
    rows = [arrow_row(glyphs)] if lead else []
    rows.append(Row(Span(style.top_left + h * inner + style.top_right, border)))
    for line, width in zip(lines, widths, strict=True):
        pad = " " * (inner - 2 - width)
        rows.append(Row(Span(style.vertical + " ", border), *line, Span(pad + " " + style.vertical, border)))
    if connector:
        rows.append(
            Row(
                Span(style.bottom_left + h * (SPINE - 1), border),
                Span(style.connector, Role.EDGE),
                Span(h * (inner - SPINE) + style.bottom_right, border),
            )
        )
    else:
        rows.append(Row(Span(style.bottom_left + h * inner + style.bottom_right, border)))
    return rows


def node_look(step: FlowStep, glyphs: Glyphs) -> tuple[BoxStyle, Role, Role]:
    """A node's border style, border role and label role: styling by what it is, not by colour."""
    if step.kind == FlowKind.UNFINISHED:
        if step.failed:
            return glyphs.heavy_dashed, Role.ERROR, Role.ERROR
        return glyphs.dashed, Role.UNFINISHED, Role.UNFINISHED
    if step.failed:
        return glyphs.heavy, Role.ERROR, Role.ERROR
    if step.kind in (FlowKind.USER, FlowKind.DONE):
        return glyphs.rounded, Role.BORDER, Role.LABEL
    if step.kind == FlowKind.STEP:
        return glyphs.light, Role.MUTED, Role.MUTED
    return glyphs.light, Role.BORDER, Role.LABEL


def node_rows(step: FlowStep, canvas: Canvas, *, lead: bool, connector: bool) -> list[Row]:
    """One node drawn as a box."""
    style, border, role = node_look(step, canvas.glyphs)
    label = Span(fit_label(step, canvas.width - BOX_PADDING, canvas.glyphs), canvas.label_role(step, role))
    return box((label,), style, border, lead=lead, connector=connector, glyphs=canvas.glyphs)


def end_rows(step: FlowStep, canvas: Canvas, lines: int, *, lead: bool, connector: bool) -> list[Row]:
    """The node a chart ends in, its label wrapped at words in ``lines`` lines (blank ones when
    the width drawn at needs fewer): where a run stands is a sentence, read whole where it fits."""
    style, border, role = node_look(step, canvas.glyphs)
    wrapped = canvas.glyphs.wrap(step.label, canvas.width - BOX_PADDING, lines)
    wrapped += [""] * (lines - len(wrapped))
    role = canvas.label_role(step, role)
    return lines_box([(Span(text, role),) for text in wrapped], style, border, lead=lead, connector=connector,
                     glyphs=canvas.glyphs)  # fmt: skip


def fan_row(step: FlowStep, canvas: Canvas, *, last: bool) -> Row:
    """One parallel tool call hanging off the spine."""
    glyphs = canvas.glyphs
    branch = " " * SPINE + (glyphs.last_branch if last else glyphs.branch)
    role = canvas.label_role(step, Role.ERROR if step.failed else Role.LABEL)
    return Row(Span(branch, Role.EDGE), Span(fit_label(step, canvas.width - cell_width(branch), glyphs), role))


def fit_label(step: FlowStep, cells: int, glyphs: Glyphs) -> str:
    """A node's label in ``cells``; a failure keeps its mark when the rest is cut."""
    mark = " " + FAIL_MARK
    if step.failed and step.label.endswith(mark):
        return fit_around("", step.label.removesuffix(mark), " " + glyphs.fail_mark, cells, glyphs)
    return glyphs.fit(step.label, cells)


def fit_around(prefix: str, name: str, suffix: str, cells: int, glyphs: Glyphs) -> str:
    """``prefix + name + suffix`` in ``cells``: the name is cut first, so counts stay readable."""
    room = cells - cell_width(prefix) - cell_width(suffix)
    if room >= 1:
        return prefix + glyphs.fit(name, room) + suffix
    return cut(prefix + glyphs.fit(name, cells) + suffix, cells, glyphs.ellipsis)
