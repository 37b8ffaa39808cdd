"""What-if edits: a recorded model turn or tool result given a new value, checked against the
shape the agent loop accepts before a fork uses it.

A model turn's value is its message, ``{"role": "assistant", "parts": [...]}`` with parts as
``agenttui show --json`` prints them (``text``, ``reasoning``, ``tool_use`` with ``args`` an
object), or ``{"message": {...}, "usage": {...}}`` to change what it cost too. A tool result's
value is the JSON the tool returned. ``editable_value`` gives the recorded value in that form.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agenttui.errors import AgentTuiError
from agenttui.journal import keys
from agenttui.journal.codec import go_json
from agenttui.journal.describe import json_value, part_json
from agenttui.journal.record import Message, Part, ReasoningPart, Record, StepKind, TextPart, ToolUsePart, Usage

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class BadEdit(AgentTuiError):
    """An edit a fork cannot take: the step is not an output of the loop, or the value does not
    have the shape of the record it replaces. The message says what is wrong, and where."""

    title = "Bad edit"


@dataclass(frozen=True, slots=True)
class Edit:
    """One recorded output and the record that replaces it in a fork."""

    original: Record
    edited: Record
    value: str
    """The new value as compact JSON: what ``--set`` takes to make the same edit."""

    @property
    def name(self) -> str:
        return self.original.name

    @property
    def turn(self) -> int | None:
        """The model turn edited, or None for a tool result."""
        return model_turn(self.name) if self.original.kind == StepKind.MODEL else None

    @property
    def call_id(self) -> str:
        """The call whose result is edited ("" for a model turn)."""
        return self.original.tool_use_id if self.original.kind == StepKind.TOOL_RESULT else ""


def model_turn(name: str) -> int | None:
    tail = name.removeprefix("@llm/")
    return int(tail) if tail != name and tail.isdigit() else None


def editable(record: Record) -> str:
    """Why ``record`` cannot be forked at, or "" when it can: only what the loop itself wrote and a
    replay re-derives (a model turn, a tool's result) is a fork point."""
    if record.unreadable or record.tombstone is not None:
        return f"{record.name} is unreadable or redacted: there is no value to edit"
    if record.kind == StepKind.MODEL and model_turn(record.name) is not None:
        return ""
    if record.kind == StepKind.TOOL_RESULT and record.name.startswith(keys.TOOL_PREFIX):
        if record.reconciled:
            return (
                f"{record.name} was recorded by a person (a reconciled result): it is an input, not the loop's output"
            )
        return ""
    return f"{record.name} ({record.kind or 'no kind'}) is not a model turn or a tool result: a fork edits those only"


def find_step(recording: Sequence[Record], name: str) -> Record:
    """The record named ``name``, if a fork may edit it. Raises ``BadEdit`` saying why not."""
    record = next((r for r in recording if r.name == name), None)
    if record is None:
        turns = [r.name for r in recording if r.kind == StepKind.MODEL]
        hint = f" (its model turns: {turns[0]} … {turns[-1]})" if turns else ""
        raise BadEdit(f"the run has no step {name!r}{hint}")
    if why := editable(record):
        raise BadEdit(why)
    return record


def editable_value(record: Record) -> str:
    """The recorded value of a model turn or tool result, as indented JSON to edit."""
    if record.kind == StepKind.MODEL:
        message = record.message or Message.assistant()
        value: Any = {"role": message.role, "parts": [part_json(p) for p in message.parts]}
    else:
        value = json_value(record.result)
    return json.dumps(value, indent=2, ensure_ascii=False)


def make_edit(record: Record, text: str, *, is_error: bool | None = None) -> Edit:
    """``record`` with the value ``text``, checked. Raises ``BadEdit`` naming what is wrong.

    ``is_error`` sets a tool result's error flag (None keeps the recorded one).
    """
    if why := editable(record):
        raise BadEdit(why)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadEdit(f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise BadEdit("not valid JSON: nested too deeply") from None
    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if record.kind == StepKind.TOOL_RESULT:
        error = record.is_error if is_error is None else is_error
        return Edit(record, dataclasses.replace(record, result=go_json(value), is_error=error, raw=b""), compact)
    if is_error is not None:
        raise BadEdit(f"{record.name} is a model turn: only a tool result is an error or not")
    message, usage = _model_value(value, record)
    calls, was = bool(message.tool_uses), bool(record.message and record.message.tool_uses)
    finish = record.finish if calls == was else ("tool_use" if calls else "stop")
    raw_finish = record.raw_finish if calls == was else ""
    edited = dataclasses.replace(record, message=message, usage=usage, finish=finish, raw_finish=raw_finish, raw=b"")
    return Edit(record, edited, compact)


def _model_value(value: Any, record: Record) -> tuple[Message, Usage | None]:
    usage = record.usage
    if isinstance(value, dict) and "parts" not in value and "message" in value:
        if unknown := sorted(set(value) - {"message", "usage"}):
            raise BadEdit(f"a model turn takes message and usage, not {', '.join(unknown)}")
        if "usage" in value:
            usage = _usage(value["usage"])
        value = value["message"]
    if not isinstance(value, dict):
        raise BadEdit(f"a model turn is an object with role and parts, not {_kind(value)}")
    if unknown := sorted(set(value) - {"role", "parts"}):
        raise BadEdit(f"a message has role and parts, not {', '.join(unknown)}")
    if value.get("role", "assistant") != "assistant":
        raise BadEdit(f"a model turn's role is assistant, not {value.get('role')!r}")
    parts = value.get("parts", [])
    if not isinstance(parts, list):
        raise BadEdit(f"parts is a list, not {_kind(parts)}")
    recorded_calls = {p.id: p for p in (record.message.tool_uses if record.message else ())}
    decoded = tuple(_part(index, part, recorded_calls) for index, part in enumerate(parts))
    seen: set[str] = set()
    for index, part in enumerate(decoded):
        if isinstance(part, ToolUsePart):
            if part.id in seen:
                raise BadEdit(f"part {index} (tool_use): id {part.id!r} is used twice; each call needs its own")
            seen.add(part.id)
    return Message("assistant", decoded), usage


def _part(index: int, part: Any, recorded_calls: dict[str, ToolUsePart]) -> Part:
    where = f"part {index}"
    if not isinstance(part, dict):
        raise BadEdit(f"{where} is an object with a type, not {_kind(part)}")
    kind = part.get("type")
    allowed = {"text": {"text"}, "reasoning": {"text", "signature", "redacted"}, "tool_use": {"id", "name", "args"}}
    if kind not in allowed:
        raise BadEdit(f"{where}: type is text, reasoning or tool_use, not {kind!r}")
    where = f"{where} ({kind})"
    if unknown := sorted(set(part) - allowed[kind] - {"type"}):
        raise BadEdit(f"{where}: unknown member {', '.join(unknown)} (it takes {', '.join(sorted(allowed[kind]))})")
    for member in allowed[kind] - {"args"}:
        if member in part and not isinstance(part[member], str):
            raise BadEdit(f"{where}: {member} is a string, not {_kind(part[member])}")
    if kind == "text":
        return TextPart(part.get("text", ""))
    if kind == "reasoning":
        return ReasoningPart(part.get("text", ""), part.get("signature", ""), part.get("redacted", ""))
    for member in ("id", "name"):
        if not part.get(member):
            raise BadEdit(f"{where}: {member} must be a non-empty string")
    args = part.get("args", {})
    if not isinstance(args, dict):
        raise BadEdit(f"{where}: args is an object of the call's arguments, not {_kind(args)}")
    call = ToolUsePart(part["id"], part["name"], go_json(args))
    recorded = recorded_calls.get(call.id)
    if recorded is not None and recorded.name == call.name and json_value(recorded.args or b"{}") == args:
        return recorded  # unchanged: keep its bytes and signature
    return call


def _usage(value: Any) -> Usage:
    if not isinstance(value, dict):
        raise BadEdit(f"usage is an object of token counts, not {_kind(value)}")
    if unknown := sorted(set(value) - set(USAGE_KEYS)):
        raise BadEdit(f"usage: unknown member {', '.join(unknown)} (it takes {', '.join(USAGE_KEYS)})")
    for key, count in value.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise BadEdit(f"usage: {key} is a count of tokens (a whole number, 0 or more), not {count!r}")
    return Usage(**value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
