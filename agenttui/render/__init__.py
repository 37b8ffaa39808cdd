"""Renderings of a run: its flow steps, as Mermaid text or as an ASCII flowchart for a terminal pane.

Nothing here imports Textual or Rich: the front ends style the role-tagged rows themselves.
"""

from agenttui.render.ascii import Children, Flowchart, render_text
from agenttui.render.boxes import MIN_WIDTH
from agenttui.render.cells import cell_width, cut, sanitize
from agenttui.render.flow import DONE, START, FlowKind, FlowStep, FlowTail, flow_steps, unfinished
from agenttui.render.mermaid import MermaidSyntaxError, mermaid_of, mermaid_text, parse_mermaid, render_mermaid
from agenttui.render.rows import Role, Row, Span

__all__ = [
    "DONE", "MIN_WIDTH", "START", "Children", "FlowKind", "FlowStep", "FlowTail", "Flowchart",
    "MermaidSyntaxError", "Role", "Row", "Span", "cell_width", "cut", "flow_steps", "mermaid_of", "mermaid_text",
    "parse_mermaid", "render_mermaid", "render_text", "sanitize", "unfinished",
]  # fmt: skip
