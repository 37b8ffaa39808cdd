"""Breakpoints: where "run to the end" of a replay or a fork stops, and the grammar to name them.

::

    tool:NAME           a turn calls the tool NAME
    call:NAME K=V ...   a call to NAME whose arguments hold K equal to V, for every K=V given
                        (V is read as JSON, else as text: amount=120, to=a@b.c, ok=true)
    kind:KIND           a record of step kind KIND is written (model, tool_result, approval,
                        attempt, value, ...)
    divergence          a record the replay writes is not the recording's (a fork's edit aside)
    tokens>=N           the replay's token total (every model turn's usage) reaches N

The replay stops after the turn in which a breakpoint is met, and says which and why.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenttui.agent.events import AgentEvent, AssistantTurn
from agenttui.errors import AgentTuiError
from agenttui.journal.describe import json_value
from agenttui.journal.record import Record, StepKind
from agenttui.render.diff import same_outcome
from agenttui.replay.verdict import without_request_digests


class BadBreakpoint(AgentTuiError):
    title = "Bad breakpoint"


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """A parsed breakpoint: ``text`` as given, and what it asks."""

    text: str
    kind: str
    """``tool``, ``call``, ``kind``, ``divergence`` or ``tokens``."""
    name: str = ""
    args: tuple[tuple[str, Any], ...] = ()
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class BreakpointHit:
    """A breakpoint met: which, at which turn, and what met it, in words."""

    breakpoint: Breakpoint
    turn: int
    """The turn the replay stopped after (counted from 0, as ``@llm/<n>``)."""
    why: str

    def summary(self) -> str:
        return f"stopped at breakpoint {self.breakpoint.text} after turn {self.turn}: {self.why}"


STEP_KINDS = tuple(kind.value for kind in StepKind)


def parse_breakpoint(text: str) -> Breakpoint:
    """One breakpoint from its text. Raises ``BadBreakpoint`` with one line saying what is wrong."""
    spec = text.strip()
    head, _, rest = spec.partition(":")
    if spec == "divergence":
        return Breakpoint(spec, "divergence")
    if spec.startswith("tokens"):
        count = spec.removeprefix("tokens").lstrip().removeprefix(">=").strip().replace("_", "")
        if not spec.removeprefix("tokens").lstrip().startswith(">=") or not count.isdigit():
            raise BadBreakpoint(f"breakpoint {text!r}: write tokens>=N with N a whole number of tokens")
        return Breakpoint(spec, "tokens", tokens=int(count))
    if head == "tool" and rest.strip():
        return Breakpoint(spec, "tool", name=rest.strip())
    if head == "kind":
        if rest.strip() not in STEP_KINDS:
            raise BadBreakpoint(f"breakpoint {text!r}: kind is one of {', '.join(STEP_KINDS)}")
        return Breakpoint(spec, "kind", name=rest.strip())
    if head == "call" and rest.strip():
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            raise BadBreakpoint(f"breakpoint {text!r}: {exc}") from None
        args = []
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or not key:
                raise BadBreakpoint(f"breakpoint {text!r}: {word!r} is not KEY=VALUE")
            args.append((key, _value(value)))
        return Breakpoint(spec, "call", name=words[0], args=tuple(args))
    raise BadBreakpoint(
        f"breakpoint {text!r} is not one of tool:NAME, call:NAME K=V..., kind:KIND, divergence, tokens>=N"
    )


def parse_breakpoints(texts: Iterable[str]) -> tuple[Breakpoint, ...]:
    return tuple(parse_breakpoint(t) for t in texts)


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


@dataclass
class BreakpointCheck:
    """Checks each replayed step against the breakpoints, keeping the token total as it goes.

    ``recorded`` maps step names to the recording's records (for ``divergence``); ``ignored``
    names records that differ on purpose (a fork's edit).
    """

    breakpoints: Sequence[Breakpoint]
    recorded: Mapping[str, Record]
    ignored: frozenset[str] = frozenset()
    tokens: int = 0
    """The replay's token total so far."""

    def check(self, turn: int, events: list[AgentEvent], written: list[Record]) -> BreakpointHit | None:
        """The first breakpoint the step met (its events, the records it wrote), or None."""
        self.tokens += sum(r.usage.total for r in written if r.kind == StepKind.MODEL and r.usage)
        for point in self.breakpoints:
            if why := self._met(point, events, written):
                return BreakpointHit(point, turn, why)
        return None

    def _met(self, point: Breakpoint, events: list[AgentEvent], written: list[Record]) -> str:
        if point.kind == "tokens":
            return f"{self.tokens:,} tokens so far" if self.tokens >= point.tokens else ""
        if point.kind == "kind":
            found = next((r for r in written if r.kind == point.name), None)
            return f"wrote {found.name} ({point.name})" if found else ""
        if point.kind == "divergence":
            for record in written:
                if record.name in self.ignored:
                    continue
                recorded = self.recorded.get(record.name)
                if recorded is None:
                    return f"{record.name} is not in the recording"
                if not same_outcome(without_request_digests(recorded), without_request_digests(record)):
                    return f"{record.name} differs from the recording"
            return ""
        for event in events:
            if not isinstance(event, AssistantTurn):
                continue
            for call in event.message.tool_uses:
                if call.name != point.name:
                    continue
                if point.kind == "tool":
                    return f"turn {event.turn} calls {call.name} ({call.id})"
                args = json_value(call.args or b"{}")
                if isinstance(args, dict) and all(k in args and args[k] == v for k, v in point.args):
                    shown = " ".join(f"{k}={json.dumps(args[k], ensure_ascii=False)}" for k, _ in point.args)
                    return f"turn {event.turn} calls {call.name} ({call.id}) with {shown}".rstrip()
        return ""
