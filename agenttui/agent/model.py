"""The Model protocol: what the agent loop asks of a language model, and how it streams back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from agenttui.journal.record import Message, ModelInfo, Part, ReasoningPart, TextPart, ToolUsePart, Usage


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as a model sees it: name, description and the JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One model turn's request. ``run_id`` and ``turn`` let a replay model find its recording."""

    run_id: str
    turn: int
    messages: Sequence[Message]
    tools: Sequence[ToolSpec] = ()
    system_prompt: str = ""
    agent: str = "agent"
    """The name of the agent asking; sub-agents have their own."""


def request_digests(system_prompt: str, tools: Sequence[ToolSpec]) -> tuple[str, str]:
    """What a model turn's record says of the request it answered (its ``prompt_digest`` and
    ``tools_digest``), so a replay serving the recorded output to new code can tell the request
    changed: SHA-256 (64 hex) of the system prompt's UTF-8, and of the tool list as compact JSON
    (each tool's name, description and parameters, keys sorted, in the order the model gets them)."""
    listed = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    tools_json = _sorted_compact_encode(listed)
    return _sha256(system_prompt), _sha256(tools_json)


#: Made once: ``json.dumps`` with options builds an encoder on every call, and each agent made
#: (a regression suite makes one a run) digests its tool list.
_sorted_compact_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    signature: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A piece of a tool call: the first delta of a call carries its id and name."""

    index: int
    id: str = ""
    name: str = ""
    args: str = ""


@dataclass(frozen=True, slots=True)
class Finish:
    """The end of a turn: why it stopped, and what it cost."""

    finish: str
    usage: Usage | None = None
    """None when the model reports no usage (then the turn's record carries none)."""
    raw_finish: str = ""
    model: ModelInfo | None = None
    discarded_usage: Usage | None = None
    """What retried or hedged requests of this turn cost, though their output was dropped."""
    message: Message | None = None
    """The turn's whole message when the model already has it exactly (a replay re-emitting a
    recording): it is journaled as it stands, byte for byte, instead of being re-assembled."""


ModelDelta: TypeAlias = TextDelta | ReasoningDelta | ToolCallDelta | Finish


class Model(Protocol):
    """A language model. ``stream`` yields deltas and ends with exactly one ``Finish``."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]: ...


@dataclass(slots=True)
class TurnAssembler:
    """Builds a turn's assistant message from its deltas, in the order parts began."""

    _parts: list[list[Any]] = field(default_factory=list)
    _calls: dict[int, list[Any]] = field(default_factory=dict)
    finish: Finish | None = None

    def add(self, delta: ModelDelta) -> None:
        match delta:
            case TextDelta(text=text):
                if self._parts and self._parts[-1][0] == "text":
                    self._parts[-1][1] += text
                else:
                    self._parts.append(["text", text])
            case ReasoningDelta(text=text, signature=signature):
                if self._parts and self._parts[-1][0] == "reasoning":
                    self._parts[-1][1] += text
                    self._parts[-1][2] = signature or self._parts[-1][2]
                else:
                    self._parts.append(["reasoning", text, signature])
            case ToolCallDelta(index=index, id=id_, name=name, args=args):
                call = self._calls.get(index)
                if call is None:
                    call = self._calls[index] = ["tool_use", id_, name, args]
                    self._parts.append(call)
                else:
                    call[3] += args
            case Finish():
                self.finish = delta

    def message(self) -> Message:
        if self.finish is not None and self.finish.message is not None:
            return self.finish.message
        parts: list[Part] = []
        for kind, *rest in self._parts:
            if kind == "text":
                parts.append(TextPart(rest[0]))
            elif kind == "reasoning":
                parts.append(ReasoningPart(rest[0], rest[1]))
            else:
                call_id, name, args = rest
                parts.append(ToolUsePart(call_id, name, (args or "{}").encode()))
        return Message.assistant(*parts)
