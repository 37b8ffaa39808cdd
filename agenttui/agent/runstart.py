"""The ``run:start`` payload: a run's input, settings and the tool policy readers need.

agenttui writes the newest SDK's ``RunStart`` shape (format section 2.4), and in ``tools`` one
entry per tool: ``{"name", "safety"?, "approval"?, "interrupts"?}``. The SDK leaves the shape
of ``tools`` open; agenttui's choice lets a reader tell the pauses apart from the journal alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agenttui.agent.tools import ToolSafety
from agenttui.journal.codec import decode_json, decode_record, encode_message, go_json
from agenttui.journal.record import Message, TextPart


def policy_json(name: str, safety: ToolSafety) -> dict[str, Any]:
    """A tool's entry in ``run:start``'s ``tools``: its name and what a reader must know of it."""
    out: dict[str, Any] = {"name": name}
    flags = {k: True for k in ("read_only", "idempotent", "idempotency_key") if getattr(safety, k)}
    if flags:
        out["safety"] = flags
    if safety.needs_approval:
        out["approval"] = {"single": True}
    if safety.interrupts:
        out["interrupts"] = True
    return out


def policy_from_json(value: dict[str, Any]) -> tuple[str, ToolSafety]:
    flags = value.get("safety") or {}
    safety = ToolSafety(
        bool(flags.get("read_only")), bool(flags.get("idempotent")), bool(flags.get("idempotency_key")),
        bool(value.get("approval")), bool(value.get("interrupts")),
    )  # fmt: skip
    return str(value.get("name", "")), safety


@dataclass(frozen=True, slots=True)
class RunStart:
    input: Message
    kind: str = "agent"
    settings: dict[str, Any] = field(default_factory=dict)
    tools: tuple[tuple[str, ToolSafety], ...] = ()
    """Each tool's name and safety, in the agent's order."""

    def encode(self) -> bytes:
        """The payload bytes; ``input`` is a JSON string when it is one user text part."""
        parts = self.input.parts
        if self.input.role == "user" and len(parts) == 1 and isinstance(parts[0], TextPart):
            input_json = go_json(parts[0].text)
        else:
            input_json = encode_message(self.input)
        payload = b'{"input":' + input_json + b',"kind":' + go_json(self.kind)
        if self.settings:
            payload += b',"settings":' + go_json(self.settings)
        if self.tools:
            payload += b',"tools":' + go_json([policy_json(name, safety) for name, safety in self.tools])
        return payload + b"}"

    @classmethod
    def decode(cls, raw: bytes | None) -> RunStart:
        """Read any RunStart shape (v0.8's ``{"input","saga"}`` included); unknown members ignored."""
        value = decode_json(raw) if raw else {}
        if not isinstance(value, dict):
            value = {}
        given = value.get("input", "")
        if isinstance(given, dict):
            wrapped = b'{"name":"x","kind":"x","message":' + json.dumps(given).encode() + b"}"
            message = decode_record(wrapped).message or Message.user("")
        else:
            message = Message.user(str(given))
        tools = tuple(policy_from_json(t) for t in value.get("tools") or () if isinstance(t, dict))
        return cls(message, str(value.get("kind") or "agent"), dict(value.get("settings") or {}), tools)

    def policy(self, tool_name: str) -> ToolSafety | None:
        """The recorded safety of ``tool_name``, or None when ``run:start`` does not say."""
        return next((safety for name, safety in self.tools if name == tool_name), None)
