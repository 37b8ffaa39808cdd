"""The ``run:start`` payload: a run's input, settings, tool filter, and the tool policy readers need.

agenttui writes the newest SDK's ``RunStart`` (format section 2.4), whose ``tools`` is a tool
filter (a list of names) that agenttui's loop, like a Go loop without one, leaves out. What
agenttui's readers need to tell the pauses apart from the journal alone (each tool's safety,
gate and questions) goes in the extension member: ``"ext":{"agenttui":{"tools":[{"name", "safety"?, "approval"?,
"interrupts"?}]}}``. Earlier agenttui builds wrote those objects in ``tools`` itself; they still
read. Runs of Go services carry no policy: ``policy`` says None for their tools.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any

from agenttui.agent.safety import ToolSafety
from agenttui.errors import CorruptRecordError
from agenttui.journal.codec import decode_json, decode_record, encode_message, go_json
from agenttui.journal.record import Message, TextPart

#: agenttui's member of ``ext``, where it keeps its tool policies.
EXT_NAMESPACE = "agenttui"


def policy_json(name: str, safety: ToolSafety) -> dict[str, Any]:
    """A tool's entry in ``ext.agenttui.tools``: its name and what a reader must know of it."""
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
    """A tool's name and policy from its entry (a ``tools`` object of an earlier agenttui build
    reads the same); members of the wrong type read as unset."""
    flags = value.get("safety")
    if not isinstance(flags, dict):
        flags = {}
    safety = ToolSafety(
        read_only=flags.get("read_only") is True,
        idempotent=flags.get("idempotent") is True,
        idempotency_key=flags.get("idempotency_key") is True,
        needs_approval=bool(value.get("approval")),
        interrupts=value.get("interrupts") is True,
    )
    return str(value.get("name", "")), safety


def _object(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) and value else None


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run's ``run:start``: every member the SDK writes, and agenttui's tool policies."""

    input: Message
    kind: str = "agent"
    settings: dict[str, Any] = field(default_factory=dict)
    """``max_turns``, ``token_budget``, ``system_prompt``... as recorded."""
    tools: tuple[str, ...] = ()
    """The SDK's tool filter: the only tools the run may use (none: every tool of the agent).
    agenttui's loop writes none, as a Go loop without ``WithToolFilter`` does."""
    policies: dict[str, ToolSafety] = field(default_factory=dict)
    """agenttui's policy of each tool by name, in the agent's order; empty for a Go service's run."""
    saga: bool = False
    session: dict[str, Any] | None = None
    """``{"id", "turn"?, "key"?}`` of a session turn."""
    flow: dict[str, Any] | None = None
    """``{"name"}`` of a flow run."""
    typed: dict[str, Any] | None = None
    principal: dict[str, Any] | None = None
    ext: dict[str, Any] = field(default_factory=dict)
    """Extensions, as recorded, but for agenttui's tool policies (they are ``policies``)."""
    raw: bytes = field(default=b"", compare=False, repr=False)
    """The payload as recorded, authoritative (empty for one not yet written)."""

    def encode(self) -> bytes:
        """The payload bytes, members in the SDK's order, empty ones omitted; ``input`` is a JSON
        string when it is one user text part."""
        parts = self.input.parts
        if self.input.role == "user" and len(parts) == 1 and isinstance(parts[0], TextPart):
            input_json = go_json(parts[0].text)
        else:
            input_json = encode_message(self.input)
        ext = dict(self.ext)
        if self.policies:
            namespace = ext.get(EXT_NAMESPACE)
            tools = [policy_json(name, safety) for name, safety in self.policies.items()]
            ext[EXT_NAMESPACE] = {**(namespace if isinstance(namespace, dict) else {}), "tools": tools}
        members: list[tuple[str, Any]] = [
            ("saga", self.saga), ("kind", self.kind), ("session", self.session), ("flow", self.flow),
            ("typed", self.typed), ("settings", self.settings), ("principal", self.principal),
            ("tools", list(self.tools)), ("ext", dict(sorted(ext.items()))),  # a Go map: members by name
        ]  # fmt: skip
        return (
            b'{"input":'
            + input_json
            + b"".join(b',"%s":%s' % (key.encode(), go_json(value)) for key, value in members if value)
            + b"}"
        )

    @classmethod
    def decode(cls, raw: bytes | None) -> RunStart:
        """Read any RunStart shape: the SDK's (v0.8's ``{"input","saga"}`` included), this
        build's, and earlier agenttui builds' policies in ``tools``. Unknown members are
        ignored, and members of the wrong type read as absent: a status never fails on them.

        The same bytes read lately are not read again: the RunStart is shared (a replay reads
        its run's four times: its status, its refusal, its session and its loop), and nobody
        changes a RunStart's members."""
        return _decoded(raw or b"")

    @classmethod
    def _read(cls, raw: bytes) -> RunStart:
        try:
            value = decode_json(raw) if raw else {}
        except ValueError:
            value = {}
        if not isinstance(value, dict):
            value = {}
        names: list[str] = []
        policies: dict[str, ToolSafety] = {}
        tools = value.get("tools")
        for entry in tools if isinstance(tools, list) else ():
            if isinstance(entry, str):
                names.append(entry)
            elif isinstance(entry, dict):  # an earlier agenttui build: the policy in the filter's place
                name, safety = policy_from_json(entry)
                names.append(name)
                policies[name] = safety
        ext = dict(value["ext"]) if isinstance(value.get("ext"), dict) else {}
        namespace = ext.get(EXT_NAMESPACE)
        if isinstance(namespace, dict) and isinstance(namespace.get("tools"), list):
            policies.update(policy_from_json(entry) for entry in namespace["tools"] if isinstance(entry, dict))
            rest = {k: v for k, v in namespace.items() if k != "tools"}
            if rest:
                ext[EXT_NAMESPACE] = rest
            else:
                del ext[EXT_NAMESPACE]
        return cls(
            _input_message(value.get("input", "")),
            str(value.get("kind") or "agent"),
            _object(value.get("settings")) or {},
            tuple(names),
            policies,
            saga=value.get("saga") is True,
            session=_object(value.get("session")),
            flow=_object(value.get("flow")),
            typed=_object(value.get("typed")),
            principal=_object(value.get("principal")),
            ext=ext,
            raw=raw,
        )

    def policy(self, tool_name: str) -> ToolSafety | None:
        """The recorded policy of ``tool_name``, or None when ``run:start`` does not say."""
        return self.policies.get(tool_name)


@functools.lru_cache(maxsize=256)
def _decoded(raw: bytes) -> RunStart:
    return RunStart._read(raw)


def _input_message(given: Any) -> Message:
    """``input``: a JSON string for one user text part, else a Message object."""
    if not isinstance(given, dict):
        return Message.user(given if isinstance(given, str) else json.dumps(given, ensure_ascii=False))
    wrapped = b'{"name":"x","kind":"x","message":' + go_json(given) + b"}"
    try:
        return decode_record(wrapped).message or Message.user("")
    except CorruptRecordError:  # not a Message: show what was recorded rather than fail
        return Message.user(json.dumps(given, ensure_ascii=False))
