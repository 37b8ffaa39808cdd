"""Mermaid text of a run's flowchart, in the exact dialect the SDK's ``RenderMermaid`` writes, and back.

The dialect (format section 5.1) is one chain: ``flowchart TD``, ``  start([user])``, then for each
node ``  n<i>["<label>"]`` and the edge ``  <prev> --> n<i>``, and finally
``  <prev> --> done([done])``; two-space indent, every line ended by ``\\n``. Labels are
entity-encoded: each ``"``, ``#``, ``&``, ``<``, backtick, control character or U+FFFD becomes
``#<decimal code point>;``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agenttui.errors import AgentTuiError
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record
from agenttui.render.flow import DONE, END_KINDS, FAIL_MARK, OK_MARK, START, FlowKind, FlowStep, flow_steps
from agenttui.stores.base import Store

HEADER = "flowchart TD"
START_LINE = "  start([user])"
DONE_NODE = "done([done])"

# Lone surrogates stand for invalid UTF-8, which Go reads as U+FFFD; they are encoded as that.
_ENCODED = re.compile('["#&<`\x00-\x1f\x7f-\x9f\ufffd\ud800-\udfff]')
_REPLACEMENT = 0xFFFD


def _entity(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"#{_REPLACEMENT if 0xD800 <= code <= 0xDFFF else code};"


def encode_label(label: str) -> str:
    """A node label quoted and entity-encoded as ``mermaid.Label`` does it."""
    return '"' + _ENCODED.sub(_entity, label) + '"'


def mermaid_text(steps: Iterable[FlowStep]) -> str:
    """The Mermaid flowchart of these nodes, as the SDK writes it.

    The start node and the end node in ``steps`` are implied, not written: the text always ends
    in ``done``, even where a drawing ends in where an unfinished run stands.
    """
    lines = [HEADER, START_LINE]
    prev = "start"
    body = (step for step in steps if step.kind != FlowKind.USER and step.kind not in END_KINDS)
    for i, step in enumerate(body):
        node = f"n{i}"
        lines.append(f"  {node}[{encode_label(step.label)}]")
        lines.append(f"  {prev} --> {node}")
        prev = node
    lines.append(f"  {prev} --> {DONE_NODE}")
    return "\n".join(lines) + "\n"


_BIDI = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def for_terminal(mermaid: str) -> str:
    """Mermaid text safe to print: bidi controls also entity-encoded (Mermaid decodes them back).

    ``mermaid_text`` follows the SDK's encoding to the byte, which lets bidi overrides through;
    printed raw, they would reorder what a terminal shows.
    """
    return _BIDI.sub(lambda m: f"#{ord(m.group())};", mermaid)


def mermaid_of(records: Sequence[Record]) -> str:
    """A run's history as the SDK's ``RenderMermaid`` renders it. Pure."""
    return mermaid_text(flow_steps(records))


async def render_mermaid(store: Store, run_id: str) -> str:
    """The spec's ``RenderMermaid``: the flowchart of what the run's journal says ran."""
    return mermaid_of(await Journal(store).history(run_id))


# -- reading -----------------------------------------------------------------------------------


class MermaidSyntaxError(AgentTuiError):
    """Mermaid text outside the dialect ``RenderMermaid`` writes; names the 1-based line."""

    title = "Unsupported Mermaid"

    def __init__(self, line_number: int, line: str, problem: str) -> None:
        shown = line if len(line) <= 60 else line[:59] + "…"
        super().__init__(f"line {line_number}: {problem}: {shown!r}")
        self.line_number = line_number
        self.line = line
        self.problem = problem


_NODE = re.compile(r'  n(0|[1-9][0-9]*)\["(.*)"\]')
_ENTITY = re.compile(r"#([0-9]{1,7});")
_RAW_IN_LABEL = re.compile('["#&<`\x00-\x1f\x7f-\x9f\ufffd]')
_MAX_CODE_POINT = 0x10FFFF


def decode_label(text: str) -> str:
    """The label an entity-encoded label (without its quotes) stands for; raises ``ValueError``."""
    out: list[str] = []
    pos = 0
    for match in _ENTITY.finditer(text):
        out.append(_check_raw(text[pos : match.start()]))
        code = int(match.group(1))
        if code > _MAX_CODE_POINT or 0xD800 <= code <= 0xDFFF:
            raise ValueError(f"entity {match.group()} is not a character")
        out.append(chr(code))
        pos = match.end()
    out.append(_check_raw(text[pos:]))
    return "".join(out)


def _check_raw(text: str) -> str:
    if found := _RAW_IN_LABEL.search(text):
        raise ValueError(f"the label holds {found.group()!r} where the dialect writes an entity")
    return text


def _step_for_label(label: str) -> FlowStep:
    """The node a decoded label stands for, its kind told by the label's form."""
    fail_suffix = " " + FAIL_MARK
    if label == "LLM":
        return FlowStep(FlowKind.LLM, label)
    if label.startswith("tool: "):
        return FlowStep(FlowKind.TOOL, label, failed=label.endswith(fail_suffix))
    if label in (f"approved {OK_MARK}", f"denied {FAIL_MARK}"):
        return FlowStep(FlowKind.APPROVAL, label, failed=label.endswith(fail_suffix))
    if label.startswith("step: "):
        return FlowStep(FlowKind.STEP, label)
    raise ValueError("a label RenderMermaid never writes (LLM, tool: …, approved ✓, denied ✗, step: …)")


def parse_mermaid(text: str) -> list[FlowStep]:
    """The nodes of a Mermaid flowchart in ``RenderMermaid``'s dialect, bracketed by ``START`` and ``DONE``.

    Blank lines and ``\\r\\n`` line endings are tolerated; anything else outside the dialect raises
    ``MermaidSyntaxError`` naming the line. Tool nodes get the turn of the LLM node before them,
    and are ``parallel`` when two or more follow each other.
    """
    lines = [(n, line.removesuffix("\r")) for n, line in enumerate(text.split("\n"), 1)]
    lines = [(n, line) for n, line in lines if line.strip()]
    last = lines[-1] if lines else (1, "")
    expected = iter(lines)

    def next_line(what: str) -> tuple[int, str]:
        try:
            return next(expected)
        except StopIteration:
            raise MermaidSyntaxError(*last, f"the text ends where {what} belongs") from None

    for want in (HEADER, START_LINE):
        number, line = next_line(repr(want))
        if line != want:
            raise MermaidSyntaxError(number, line, f"expected {want!r}")

    steps: list[FlowStep] = [START]
    prev = "start"
    while True:
        number, line = next_line(f"a node or '  {prev} --> {DONE_NODE}'")
        if line == f"  {prev} --> {DONE_NODE}":
            break
        node = _NODE.fullmatch(line)
        want = f"n{len(steps) - 1}"
        if node is None or f"n{node.group(1)}" != want:
            closing = f"  {prev} --> {DONE_NODE}"
            raise MermaidSyntaxError(number, line, f"expected the node '  {want}[\"…\"]' or {closing!r}")
        try:
            steps.append(_step_for_label(decode_label(node.group(2))))
        except ValueError as exc:
            raise MermaidSyntaxError(number, line, str(exc)) from None
        number, line = next_line(f"'  {prev} --> {want}'")
        if line != f"  {prev} --> {want}":
            raise MermaidSyntaxError(number, line, f"expected the edge '  {prev} --> {want}'")
        prev = want
    if (extra := next(expected, None)) is not None:
        raise MermaidSyntaxError(*extra, "text after the closing edge")
    return [*_infer_turns(steps), DONE]


def _infer_turns(steps: list[FlowStep]) -> list[FlowStep]:
    """Give LLM nodes their turn, and each run of consecutive tool nodes the turn of the LLM before it.

    A run of two or more tool nodes is taken for the parallel calls of that turn.
    """
    out: list[FlowStep] = []
    turn: int | None = None
    i = 0
    while i < len(steps):
        step = steps[i]
        if step.kind == FlowKind.LLM:
            turn = 0 if turn is None else turn + 1
            out.append(FlowStep(step.kind, step.label, turn=turn))
            i += 1
        elif step.kind == FlowKind.TOOL:
            end = i
            while end < len(steps) and steps[end].kind == FlowKind.TOOL:
                end += 1
            parallel = end - i >= 2
            out += (FlowStep(s.kind, s.label, failed=s.failed, turn=turn, parallel=parallel) for s in steps[i:end])
            i = end
        else:
            out.append(step)
            i += 1
    return out
