"""Renderings of a run: its flow steps, as Mermaid text or as an ASCII flowchart for a terminal pane.

Nothing here imports Textual or Rich: the front ends style the role-tagged rows themselves.

Names load on first use, as Textual's widgets do: the runs list, the first screen, fits text with
``render.cells`` alone, and importing it must not bring in the flowchart and Mermaid code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agenttui.render.ascii import Children, Flowchart, render_text
    from agenttui.render.boxes import MIN_WIDTH
    from agenttui.render.cells import cell_width, cut, sanitize
    from agenttui.render.flow import DONE, START, FlowKind, FlowStep, FlowTail, flow_steps, unfinished
    from agenttui.render.mermaid import MermaidSyntaxError, mermaid_of, mermaid_text, parse_mermaid, render_mermaid
    from agenttui.render.rows import Role, Row, Span

#: Where each name of the package lives.
_HOMES = {
    "ascii": ("Children", "Flowchart", "render_text"),
    "boxes": ("MIN_WIDTH",),
    "cells": ("cell_width", "cut", "sanitize"),
    "flow": ("DONE", "START", "FlowKind", "FlowStep", "FlowTail", "flow_steps", "unfinished"),
    "mermaid": ("MermaidSyntaxError", "mermaid_of", "mermaid_text", "parse_mermaid", "render_mermaid"),
    "rows": ("Role", "Row", "Span"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "DONE", "MIN_WIDTH", "START", "Children", "FlowKind", "FlowStep", "FlowTail", "Flowchart",
    "MermaidSyntaxError", "Role", "Row", "Span", "cell_width", "cut", "flow_steps", "mermaid_of", "mermaid_text",
    "parse_mermaid", "render_mermaid", "render_text", "sanitize", "unfinished",
]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # looked up once
    return value
