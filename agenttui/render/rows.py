"""Drawn rows: text spans tagged with a role, which a front end maps to its theme (never to a colour here)."""

from __future__ import annotations

import enum
from typing import NamedTuple

from agenttui.render.cells import cell_width, cut


class Role(enum.StrEnum):
    """What a span of a drawing is, for styling."""

    BORDER = "border"
    LABEL = "label"
    EDGE = "edge"
    """Arrows, connectors and fan-out branches: the spine and what hangs off it."""
    ERROR = "error"
    """A failed tool call or a denial: border and label."""
    MUTED = "muted"
    """``step:`` nodes: engine markers and user steps, of less interest than the agent's moves."""
    SELECTED = "selected"
    """The label of the node whose record is selected."""
    CURRENT = "current"
    """The labels of the current turn's nodes (a replay's step being replayed), when not selected."""
    CHANGED = "changed"
    """The labels of nodes whose records differ from another run's (a fork's, from the run as
    recorded), when not selected nor of the current turn."""
    TITLE = "title"
    """The title of a sub-agent, folded or framed."""
    UNFINISHED = "unfinished"
    """Where an unfinished run stands (a halted one's is an ``ERROR``): border and label."""


class Span(NamedTuple):
    """A piece of a row's text and its role."""

    text: str
    role: Role


class Row(tuple[Span, ...]):
    """One drawn row: its spans, left to right."""

    __slots__ = ()

    def __new__(cls, *spans: Span) -> Row:
        return super().__new__(cls, spans)

    @property
    def text(self) -> str:
        return "".join(span.text for span in self)

    @property
    def cells(self) -> int:
        return sum(cell_width(span.text) for span in self)


def clip_row(row: Row, cells: int) -> Row:
    """``row`` cut hard at ``cells`` (no ellipsis): the last resort for frames nested past the width."""
    if row.cells <= cells:
        return row
    kept: list[Span] = []
    room = cells
    for span in row:
        text = cut(span.text, room, "")
        if text:
            kept.append(Span(text, span.role))
        room -= cell_width(text)
        if text != span.text:
            break
    return Row(*kept)
