"""The ``run:start`` payload: a run's input, settings and the tool policy readers need.

agenttui writes the newest SDK's ``RunStart`` shape (format section 2.4), and in ``tools`` one
entry per tool: ``{"name", "safety"?, "approval"?, "interrupts"?}``. The SDK leaves the shape
of ``tools`` open; agenttui's choice lets a reader tell the pauses apart from the journal alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from agenttui.journal.codec import decode_json, decode_record, encode_message, go_json
from agenttui.journal.record import Message, TextPart


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """What a reader needs to know of a tool: whether it is retry-safe, gated, or asks humans."""

    name: str
    read_only: bool = False
    idempotent: bool = False
    idempotency_key: bool = False
    needs_approval: bool = False
    interrupts: bool = False

    @property
    def retry_safe(self) -> bool:
        return self.read_only or self.idempotent or self.idempotency_key

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        safety = {k: True for k in ("read_only", "idempotent", "idempotency_key") if getattr(self, k)}
        if safety:
            out["safety"] = safety
        if self.needs_approval:
            out["approval"] = {"single": True}
        if self.interrupts:
            out["interrupts"] = True
        return out

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> ToolPolicy:
        safety = value.get("safety") or {}
        return cls(
            str(value.get("name", "")),
            bool(safety.get("read_only")),
            bool(safety.get("idempotent")),
            bool(safety.get("idempotency_key")),
            bool(value.get("approval")),
            bool(value.get("interrupts")),
        )


@dataclass(frozen=True, slots=True)
class RunStart:
    input: Message
    kind: str = "agent"
    settings: dict[str, Any] = field(default_factory=dict)
    tools: tuple[ToolPolicy, ...] = ()

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
            payload += b',"tools":' + go_json([t.to_json() for t in self.tools])
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
        tools = tuple(ToolPolicy.from_json(t) for t in value.get("tools") or () if isinstance(t, dict))
        return cls(message, str(value.get("kind") or "agent"), dict(value.get("settings") or {}), tools)

    def policy(self, tool_name: str) -> ToolPolicy | None:
        return next((t for t in self.tools if t.name == tool_name), None)
