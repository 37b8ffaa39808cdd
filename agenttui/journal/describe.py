"""Records described for people: one-line summaries, JSON views, and untrusted text made safe.

Everything a record holds is untrusted: model text, tool results and run ids may carry escape
sequences, control characters or bidi overrides. ``printable`` makes such text inert; the CLI and
the TUI show record content only through it.
"""

from __future__ import annotations

import base64
import json
import re
import unicodedata
from collections.abc import Mapping
from typing import Any

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

# C0 and C1 controls (tab and newline are handled by the caller's choice), DEL, the bidi
# embeddings, overrides and isolates that can reorder what a terminal shows, and the invisible
# characters (zero-width spaces and joiners, word joiner, soft hyphen, BOM) that make two
# different strings print alike.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ud800-\udfff]"
)


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control and bidi character shown as an escape, never interpreted.

    Newlines and tabs are kept when ``multiline``; otherwise they become ``⏎`` and spaces.
    """
    text = _UNSAFE.sub(_visible, text)
    if not multiline:
        text = text.replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎").replace("\t", " ")
    else:
        text = text.replace("\r", "\\r")
    return text


# JSON escapes what JSON must; these are what a terminal could still act on, escaped as JSON allows.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def printable_id(text: str) -> str:
    """An id (a run id, a step name, a call id) made unambiguous: ``printable``, and letters of
    another script mixed into Latin ones (a Cyrillic ``а`` in ``refund-а1002``) shown as escapes,
    so two ids that differ are never shown alike."""
    text = printable(text)
    scripts = {_script(c) for c in text if c.isalpha()}
    if "LATIN" not in scripts or len(scripts) == 1:
        return text
    return "".join(c if not c.isalpha() or _script(c) == "LATIN" else f"\\u{ord(c):04x}" for c in text)


def _script(char: str) -> str:
    return unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]


# Made once: json.dumps with options builds a new encoder on every call (a CLI may write a
# million objects).
_ENCODERS = {indent: json.JSONEncoder(indent=indent, ensure_ascii=False) for indent in (None, 2)}


def safe_json(value: Any, *, indent: int | None = 2) -> str:
    """JSON text for a terminal or a pipe: readable Unicode, but no byte a terminal acts on."""
    encoder = _ENCODERS.get(indent) or json.JSONEncoder(indent=indent, ensure_ascii=False)
    text = encoder.encode(value)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


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
