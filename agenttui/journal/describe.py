"""Records described for people: one-line summaries, JSON views, and untrusted text made safe.

Everything a record holds is untrusted: model text, tool results and run ids may carry escape
sequences, control characters or bidi overrides. ``printable`` makes such text inert; the CLI and
the TUI show record content only through it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from agenttui.journal.inert import clip as clip
from agenttui.journal.inert import printable as printable
from agenttui.journal.inert import printable_id as printable_id
from agenttui.journal.inert import safe_json as safe_json
from agenttui.journal.record import (
    ImagePart,
    Part,
    ReasoningPart,
    Record,
    StepKind,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    UnknownPart,
)

KIND_ICONS: Mapping[str, str] = {
    StepKind.HEADER: "≡",
    StepKind.MODEL: "◆",
    StepKind.TOOL_RESULT: "⚙",
    StepKind.VALUE: "•",
    StepKind.SIGNAL: "↯",
    StepKind.APPROVAL: "✓",
    StepKind.ATTEMPT: "→",
    StepKind.SAGA_FAIL: "✗",
    StepKind.NOT_STARTED: "∅",
}


def kind_icon(record: Record) -> str:
    if record.unreadable:
        return "!"
    if record.tombstone is not None:
        return "▒"
    if record.kind == StepKind.TOOL_RESULT and record.is_error:
        return "✗"
    if record.kind == StepKind.APPROVAL and not record.approved:
        return "⊘"
    return KIND_ICONS.get(record.kind, "?")


def raw_json_text(raw: bytes | None, *, indent: int | None = None) -> str:
    """A raw JSON value as text: pretty when ``indent`` is given and it parses, verbatim otherwise."""
    if raw is None:
        return ""
    text = raw.decode("utf-8", "replace")
    if indent is None:
        return text
    try:
        return json.dumps(json.loads(text), indent=indent, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def summary(record: Record, tool_names: Mapping[str, str] | None = None) -> str:
    """One line saying what the record holds (unescaped: pass it through ``printable``)."""
    if record.unreadable:
        return f"unreadable: {record.unreadable}"
    if record.tombstone is not None:
        return "redacted"
    match record.kind:
        case StepKind.HEADER:
            return record.format
        case StepKind.MODEL:
            message = record.message
            text = (message.text.strip().splitlines() or [""])[0] if message else ""
            calls = ", ".join(c.name for c in message.tool_uses) if message else ""
            return " → ".join(filter(None, (text, f"calls {calls}" if calls else "")))
        case StepKind.TOOL_RESULT | StepKind.SAGA_FAIL:
            name = (tool_names or {}).get(record.tool_use_id) or record.tool_use_id
            flags = " ✗" if record.is_error else ""
            flags += " (reconciled)" if record.reconciled else ""
            return f"{name}{flags}: {raw_json_text(record.result)}"
        case StepKind.APPROVAL:
            who = f" by {record.approver}" if record.approver else ""
            return f"{'approved' if record.approved else 'denied'} {record.tool_use_id}{who}"
        case StepKind.ATTEMPT:
            return f"attempting {record.tool_use_id}"
        case StepKind.NOT_STARTED:
            return f"attempt of {record.tool_use_id} never fired"
        case _:
            return raw_json_text(record.result)


def json_value(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw.decode("utf-8", "replace")


def part_text(part: Part) -> str:
    """A message part as plain text (unescaped: pass it through ``printable``)."""
    match part:
        case TextPart(text=text):
            return text
        case ReasoningPart(text=text, redacted=redacted):
            return f"(reasoning) {text or '(redacted)' if redacted else text}"
        case ToolUsePart(id=call_id, name=name, args=args):
            return f"→ call {name} ({call_id}) {raw_json_text(args)}"
        case ToolResultPart(tool_use_id=call_id, result=result, is_error=is_error):
            return f"← result of {call_id}{' ✗' if is_error else ''} {raw_json_text(result)}"
        case ImagePart(mime=mime, data=data, url=url):
            return f"[image {mime} {len(data):,} bytes{' ' + url if url else ''}]"
        case UnknownPart(type=kind, raw=raw):
            return f"[{kind} part] " + raw.decode("utf-8", "replace")


def part_json(part: Part) -> dict[str, Any]:
    match part:
        case TextPart(text=text):
            return {"type": "text", "text": text}
        case ReasoningPart(text=text, signature=signature, redacted=redacted):
            return (
                {"type": "reasoning", "text": text}
                | ({"signature": signature} if signature else {})
                | ({"redacted": redacted} if redacted else {})
            )
        case ToolUsePart(id=call_id, name=name, args=args):
            return {"type": "tool_use", "id": call_id, "name": name, "args": json_value(args)}
        case ToolResultPart(tool_use_id=call_id, result=result, is_error=is_error):
            return {"type": "tool_result", "tool_use_id": call_id, "result": json_value(result), "is_error": is_error}
        case ImagePart(mime=mime, data=data, url=url):
            return {"type": "image", "mime": mime, "bytes": len(data), "url": url}
        case UnknownPart(type=kind, raw=raw):
            return {"type": kind, "raw": raw.decode("utf-8", "replace")}


def record_json(record: Record) -> dict[str, Any]:
    """The record as JSON-able data for scripts: every non-zero member, raw values parsed."""
    out: dict[str, Any] = {"name": record.name, "kind": record.kind}
    if record.unreadable:
        return out | {"unreadable": record.unreadable, "raw": base64.b64encode(record.raw).decode()}
    if record.tombstone is not None:
        return out | {"redacted": {"leaf_hash": record.tombstone.leaf_hash, "at_ms": record.tombstone.at_ms}}
    if record.message is not None:
        out["message"] = {"role": record.message.role, "parts": [part_json(p) for p in record.message.parts]}
    # Present-but-empty members show as {}: "safety":{} says the call ran as a side effect.
    for key in ("usage", "discarded_usage", "model", "safety", "approval"):
        if (value := getattr(record, key)) is not None:
            out[key] = {k: v for k, v in _fields(value).items() if v}
    for key in ("finish", "raw_finish", "prompt_digest", "tools_digest", "tool_use_id", "is_error", "approved",
                "approver", "approver_alg", "attempted_at", "reconciled", "read_only", "outcome_unknown", "format", "claim"):  # fmt: skip
        if value := getattr(record, key):
            out[key] = value
    for key in ("result", "evidence"):
        if (value := getattr(record, key)) is not None:
            out[key] = json_value(value)
    if record.signature:
        out["signature"] = base64.b64encode(record.signature).decode()
    return out


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__slots__}
