"""The canonical record codec: Go-compatible bytes out, tolerant decoding in (format sections 1.3, 1.4).

Encoding reproduces the SDK's ``EncodeRecord`` byte for byte: members in the fixed order, compact,
no HTML escaping, U+2028/U+2029 escaped in strings, raw JSON values kept verbatim but for
insignificant whitespace, parts with their ``type`` member and all members sorted.

Decoding keeps raw sub-values as stored bytes. It works on the bytes decoded with
``surrogateescape`` so that every index maps back to the exact stored bytes; string members are
then cleaned the way Go's decoder does (each invalid UTF-8 byte and each lone surrogate becomes
U+FFFD).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable
from json.decoder import JSONDecodeError, scanstring  # type: ignore[attr-defined]  # public at run time (C or Python), absent from typeshed
from json.encoder import c_make_encoder  # type: ignore[attr-defined]  # None where the C accelerator is absent
from typing import Any, cast

from agenttui.errors import CorruptRecordError
from agenttui.journal.record import (
    HEADER_NAME,
    JOURNAL_FORMAT,
    ApprovalPolicy,
    ImagePart,
    Message,
    ModelInfo,
    Part,
    ReasoningPart,
    Record,
    Safety,
    StepKind,
    TextPart,
    Tombstone,
    ToolResultPart,
    ToolUsePart,
    UnknownPart,
    Usage,
)

# -- encoding ----------------------------------------------------------------------------------

_LINE_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029"})
_SURROGATES = re.compile("[\ud800-\udfff]")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_WHITESPACE = " \t\n\r"
_go_json_string: Callable[[str], str] = json.encoder.encode_basestring  # c_encode_basestring or py_encode_basestring


def encode_string(value: str) -> bytes:
    """A JSON string as Go's encoder writes it with HTML escaping off."""
    quoted = _go_json_string(_SURROGATES.sub("\ufffd", value))
    return quoted.translate(_LINE_SEPARATORS).encode()


#: Made once: ``json.dumps`` with options builds an encoder on every call (most of a tool
#: result's encoding time, and a replay encodes each one its agent returns).
_compact_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


#: The C encoder itself, made once, for values parsed from JSON text: they hold nothing but JSON
#: and no cycle, which ``JSONEncoder.encode`` sets up a check for on every call (a third of the
#: time it takes to encode a record's members again, ``decode_record``'s test).
_parsed_encode = (
    c_make_encoder(None, None, _go_json_string, None, ":", ",", False, False, False) if c_make_encoder else None
)


def go_json(value: Any) -> bytes:
    """Compact JSON of Python data as Go's encoder writes it with HTML escaping off: lone
    surrogates become U+FFFD (Go's strings are UTF-8), U+2028/U+2029 are escaped."""
    return _as_go_writes(_compact_encode(value)).encode()


def _parsed_json(value: Any) -> str:
    """``go_json`` of a value parsed from JSON text, as text."""
    return _as_go_writes("".join(_parsed_encode(value, 0)) if _parsed_encode else _compact_encode(value))


def _as_go_writes(text: str) -> str:
    """Compact JSON text with lone surrogates made U+FFFD and U+2028/U+2029 escaped."""
    if text.isascii():  # no surrogate, no line separator: nothing to replace
        return text
    return _SURROGATES.sub("\ufffd", text).translate(_LINE_SEPARATORS)


def _b64(data: bytes) -> bytes:
    return b'"' + base64.b64encode(data) + b'"'


def compact_raw(raw: bytes) -> bytes:
    """A raw JSON value with insignificant whitespace removed, every other byte kept.

    Raises ``CorruptRecordError`` if ``raw`` is not one JSON value.
    """
    text = raw.decode("utf-8", "surrogateescape")
    try:
        _, end = _scan(text, _skip(text, 0))
    except (JSONDecodeError, StopIteration, ValueError, RecursionError) as exc:
        raise CorruptRecordError(f"not a JSON value: {raw[:60]!r}") from exc
    if _skip(text, end) != len(text):
        raise CorruptRecordError(f"trailing bytes after a JSON value: {raw[:60]!r}")
    return _compact_valid(text, raw)


def _compact_valid(text: str, raw: bytes) -> bytes:
    """``raw`` (decoded as ``text``), known to be one valid JSON value, without whitespace outside strings."""
    if b" " not in raw and b"\t" not in raw and b"\n" not in raw and b"\r" not in raw:
        return raw
    # Nearly every tool result has spaces, inside its strings: decide with C string operations
    # whether any whitespace lies outside them before walking the text in Python.
    if "\\" not in text:  # noqa: SIM108  (two branches, so that the first can say why it is exact)
        outside = "".join(text.split('"')[::2])  # no escapes: the quotes delimit the strings exactly
    else:
        outside = _JSON_STRING.sub("", text)
    if " " not in outside and "\t" not in outside and "\n" not in outside and "\r" not in outside:
        return raw
    return _strip_whitespace(text).encode("utf-8", "surrogateescape")


def _strip_whitespace(text: str) -> str:
    """Drop whitespace outside strings; ``text`` is known to be valid JSON."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            _, end = scanstring(text, i + 1, False)
            out.append(text[i:end])
            i = end
            continue
        if c not in " \t\n\r":
            out.append(c)
        i += 1
    return "".join(out)


def _encode_usage(usage: Usage) -> bytes:
    members = []
    for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        if value := getattr(usage, key):
            members.append(b'"%s":%d' % (key.encode(), value))
    return b"{" + b",".join(members) + b"}"


def _encode_part(part: Part) -> bytes:
    # Members sorted bytewise by name, "type" among them (section 2.2).
    members: list[tuple[str, bytes]]
    match part:
        case TextPart(text=text):
            members = [("text", encode_string(text)), ("type", b'"text"')]
        case ReasoningPart(text=text, signature=signature, redacted=redacted):
            members = [("text", encode_string(text)), ("type", b'"reasoning"')]
            if signature:
                members.append(("signature", encode_string(signature)))
            if redacted:
                members.append(("redacted", encode_string(redacted)))
        case ToolUsePart(id=id_, name=name, args=args, signature=signature):
            members = [("id", encode_string(id_)), ("name", encode_string(name)), ("type", b'"tool_use"')]
            if args:
                members.append(("args", compact_raw(args)))
            if signature:
                members.append(("signature", encode_string(signature)))
        case ToolResultPart(tool_use_id=tool_use_id, result=result, is_error=is_error):
            members = [("tool_use_id", encode_string(tool_use_id)), ("type", b'"tool_result"')]
            if result:
                members.append(("result", compact_raw(result)))
            if is_error:
                members.append(("is_error", b"true"))
        case ImagePart(mime=mime, data=data, url=url):
            members = [("type", b'"image"')]
            if mime:
                members.append(("mime", encode_string(mime)))
            if data:
                members.append(("data", _b64(data)))
            if url:
                members.append(("url", encode_string(url)))
        case UnknownPart(raw=raw):
            return compact_raw(raw)
    members.sort(key=lambda m: m[0].encode())
    return b"{" + b",".join(b'"' + k.encode() + b'":' + v for k, v in members) + b"}"


def encode_message(message: Message) -> bytes:
    out = b'{"role":' + encode_string(message.role)
    if message.parts:
        out += b',"parts":[' + b",".join(map(_encode_part, message.parts)) + b"]"
    return out + b"}"


def _encode_model(model: ModelInfo) -> bytes:
    members = [
        b'"%s":%s' % (key.encode(), encode_string(value))
        for key in ("provider", "model", "response_format")
        if (value := getattr(model, key))
    ]
    return b"{" + b",".join(members) + b"}"


def _encode_safety(safety: Safety) -> bytes:
    members = [b'"%s":true' % key.encode() for key in ("read_only", "idempotent") if getattr(safety, key)]
    return b"{" + b",".join(members) + b"}"


def _encode_approval(approval: ApprovalPolicy) -> bytes:
    if approval.single:
        return b'{"single":true}'
    members = []
    if approval.need:
        members.append(b'"need":%d' % approval.need)
    if approval.approvers:
        members.append(b'"approvers":[' + b",".join(map(encode_string, approval.approvers)) + b"]")
    return b"{" + b",".join(members) + b"}"


def _true(_: bool) -> bytes:
    return b"true"


# The members that are pointers to structs in Go: omitempty drops only a nil one, so a zero
# struct that is present is written as {} (a Go model reporting no usage, a side-effect tool's
# safety). None is their absence.
_STRUCT_MEMBERS = frozenset({"usage", "discarded_usage", "model", "safety", "approval"})

# (member name, attribute, encoder, whether a zero value is written) in the SDK's member order.
_MEMBERS: tuple[tuple[bytes, str, Callable[[Any], bytes], bool], ...] = tuple(
    (b',"' + key.encode() + b'":', key, encoder, key in _STRUCT_MEMBERS)
    for key, encoder in (
        ("message", encode_message),
        ("usage", _encode_usage),
        ("discarded_usage", _encode_usage),
        ("finish", encode_string),
        ("raw_finish", encode_string),
        ("model", _encode_model),
        ("prompt_digest", encode_string),
        ("tools_digest", encode_string),
        ("tool_use_id", encode_string),
        ("result", compact_raw),
        ("is_error", _true),
        ("approved", _true),
        ("approver", encode_string),
        ("approver_alg", encode_string),
        ("signature", _b64),
        ("attempted_at", lambda ms: str(ms).encode()),
        ("reconciled", _true),
        ("read_only", _true),  # v0.8 wrote it here; later SDKs never do, so either order holds
        ("outcome_unknown", _true),
        ("safety", _encode_safety),
        ("approval", _encode_approval),
        ("evidence", compact_raw),
        ("format", encode_string),
        ("claim", encode_string),
        ("salt", _b64),
    )
)


# The salt is written last of all (section 1.2): a record being journaled gets its salt there.
_BEFORE_SALT, _SALT_PREFIX = _MEMBERS[:-1], _MEMBERS[-1][0]
assert _MEMBERS[-1][1] == "salt"


def encode_record(record: Record, salt: bytes | None = None) -> bytes:
    """The canonical bytes of ``record`` (salt included when the record carries one); ``salt``,
    when given, is written instead of the record's own (as a journal writes a fresh one)."""
    if record.tombstone is not None:
        t = record.tombstone
        return b'{"redacted":{"leaf_hash":%s,"at_ms":%d}}' % (encode_string(t.leaf_hash), t.at_ms)
    out = [b'{"name":', encode_string(record.name), b',"kind":', encode_string(record.kind)]
    for prefix, attribute, encoder, zero_written in _BEFORE_SALT:
        value = getattr(record, attribute)
        # Zero values are omitted, but for a struct member only None; a raw b"null" is non-empty
        # and kept, as Go keeps RawMessage("null").
        if not value and (not zero_written or value is None):
            continue
        out.append(prefix)
        out.append(encoder(value))
    if salt := record.salt if salt is None else salt:
        out.append(_SALT_PREFIX)
        out.append(_b64(salt))
    out.append(b"}")
    return b"".join(out)


def encode_header(salt: bytes) -> bytes:
    """The ``@journal`` header naming the format agenttui writes (section 1.5)."""
    return encode_record(Record(HEADER_NAME, StepKind.HEADER, format=JOURNAL_FORMAT, salt=salt))


# -- decoding ----------------------------------------------------------------------------------


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_no_constants)
_scan: Callable[[str, int], tuple[Any, int]] = _decoder.scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, absent from typeshed


def _go_string(value: str) -> str:
    """What Go's decoder makes of a JSON string: invalid bytes and lone surrogates become U+FFFD."""
    if value.isascii():  # ids, names, base64: most strings, and none can hold a surrogate
        return value
    return _SURROGATES.sub("\ufffd", value) if _SURROGATES.search(value) else value


#: Never None: the pattern matches the empty string.
_whitespace_run = cast(Callable[[str, int], re.Match[str]], re.compile(r"[ \t\n\r]*").match)


def _skip(text: str, i: int) -> int:
    """The first index at or after ``i`` that is not JSON whitespace."""
    # Canonical bytes have no whitespace: test one character before starting the regex.
    return _whitespace_run(text, i).end() if text[i : i + 1] in _WHITESPACE else i


def _walk_object(text: str, i: int, read_value: Callable[[str, int], int]) -> int:
    """Walk the object at ``text[i]``, handing each member to ``read_value(key, value_start)``,
    which reads the value and returns where it ends. Returns the index after the closing brace.

    Callers read each value once, descending into the members they decode (a message, its parts):
    scanning a record whole and then again member by member cost most of the decoding time. The
    whitespace tests are written out (``text[i:i+1] in _WHITESPACE`` before any regex) because
    this loop runs for every member of every record read, and canonical bytes have none.
    """
    if text[i : i + 1] != "{":
        raise ValueError("expected an object")
    i += 1
    if text[i : i + 1] in _WHITESPACE:
        i = _whitespace_run(text, i).end()
    if text[i : i + 1] == "}":
        return i + 1
    while True:
        if text[i : i + 1] != '"':
            raise ValueError(f"expected a member name at offset {i}")
        key, i = scanstring(text, i + 1)
        if text[i : i + 1] in _WHITESPACE:
            i = _whitespace_run(text, i).end()
        if text[i : i + 1] != ":":
            raise ValueError(f"expected ':' at offset {i}")
        i += 1
        if text[i : i + 1] in _WHITESPACE:
            i = _whitespace_run(text, i).end()
        i = read_value(key, i)
        if text[i : i + 1] in _WHITESPACE:
            i = _whitespace_run(text, i).end()
        separator = text[i : i + 1]
        if separator == ",":
            i += 1
            if text[i : i + 1] in _WHITESPACE:
                i = _whitespace_run(text, i).end()
        elif separator == "}":
            return i + 1
        else:
            raise ValueError(f"expected ',' or '}}' at offset {i}")


def _scanned_members(text: str, i: int) -> tuple[dict[str, tuple[int, int, Any]], int]:
    """The members of the object at ``text[i]`` by key (the last of duplicates wins, as in Go):
    (value start, value end, parsed value); and the index after the object."""
    members: dict[str, tuple[int, int, Any]] = {}

    def read_value(key: str, start: int) -> int:
        value, end = _scan(text, start)
        members[key] = (start, end, value)
        return end

    return members, _walk_object(text, i, read_value)


def _raw(text: str, start: int, end: int) -> bytes:
    # The span was already parsed while scanning its object, so it needs no second validation.
    span = text[start:end]
    return _compact_valid(span, span.encode("utf-8", "surrogateescape"))


def _str(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} is not a string")
    return _go_string(value)


def _int(value: Any, key: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} is not an integer")
    return value


def _bytes(value: Any, key: str) -> bytes:
    if value is None:
        return b""
    try:
        return base64.b64decode(_str(value, key), validate=True)
    except ValueError as exc:
        raise ValueError(f"{key} is not base64") from exc


def _usage(value: Any, key: str) -> Usage | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{key} is not an object")
    return Usage(
        *(_int(value.get(k), k) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))
    )


def _string_member(value: Any, key: str) -> str:
    return "" if value is None else _str(value, key)


def _part_string(members: dict[str, tuple[int, int, Any]], key: str) -> str:
    return _string_member(members.get(key, (0, 0, None))[2], key)


def _part_raw(text: str, members: dict[str, tuple[int, int, Any]], key: str) -> bytes | None:
    if key not in members:
        return None
    start, end, _ = members[key]
    return _raw(text, start, end)


def _decode_part(text: str, start: int) -> tuple[Part, int]:
    """The part at ``text[start]``, and the index after it."""
    members, end = _scanned_members(text, start)
    part_type = members.get("type", (0, 0, ""))[2]
    part: Part
    match part_type:
        case "text":
            part = TextPart(_part_string(members, "text"))
        case "reasoning":
            part = ReasoningPart(
                _part_string(members, "text"), _part_string(members, "signature"), _part_string(members, "redacted")
            )
        case "tool_use":
            part = ToolUsePart(
                _part_string(members, "id"),
                _part_string(members, "name"),
                _part_raw(text, members, "args"),
                _part_string(members, "signature"),
            )
        case "tool_result":
            is_error = members.get("is_error", (0, 0, False))[2]
            part = ToolResultPart(
                _part_string(members, "tool_use_id"), _part_raw(text, members, "result"), bool(is_error)
            )
        case "image":
            data = members.get("data", (0, 0, None))[2]
            part = ImagePart(_part_string(members, "mime"), _bytes(data, "data"), _part_string(members, "url"))
        case _:
            part = UnknownPart(str(part_type), _raw(text, start, end))
    return part, end


def _decode_parts(text: str, i: int) -> tuple[tuple[Part, ...], int]:
    """The parts array at ``text[i]`` (a ``[``), and the index after it."""
    parts: list[Part] = []
    i = _skip(text, i + 1)
    if text[i : i + 1] == "]":
        return (), i + 1
    while True:
        if text[i : i + 1] != "{":
            _scan(text, i)  # not a value at all: the scanner's error says where
            raise ValueError("expected an object")
        part, i = _decode_part(text, i)
        parts.append(part)
        i = _skip(text, i)
        if text[i : i + 1] == ",":
            i = _skip(text, i + 1)
        elif text[i : i + 1] == "]":
            return tuple(parts), i + 1
        else:
            raise ValueError(f"expected ',' or ']' at offset {i}")


def _decode_message(text: str, start: int) -> tuple[Message | None, int]:
    """The message at ``text[start]`` (``null`` is none), and the index after it."""
    if text[start : start + 1] != "{":
        value, end = _scan(text, start)
        if value is None:
            return None, end
        raise ValueError("expected an object")
    role = ""
    parts: tuple[Part, ...] = ()

    def read_value(key: str, value_start: int) -> int:
        nonlocal role, parts
        if key == "parts" and text[value_start : value_start + 1] == "[":
            parts, end = _decode_parts(text, value_start)
            return end
        value, end = _scan(text, value_start)
        if key == "role":
            role = _str(value, "role")
        elif key == "parts":
            if value is not None:
                raise ValueError("expected an array")
            parts = ()
        return end

    end = _walk_object(text, start, read_value)
    return Message(role, parts), end


def _decode_approval(value: Any) -> ApprovalPolicy:
    # Lenient, as the SDK reads it: single=true wins whatever else is there (section 1.4).
    if not isinstance(value, dict):
        raise ValueError("approval is not an object")
    if value.get("single") is True:
        return ApprovalPolicy(single=True)
    approvers = value.get("approvers") or []
    if not isinstance(approvers, list):
        raise ValueError("approval.approvers is not a list")
    return ApprovalPolicy(
        need=_int(value.get("need"), "approval.need"), approvers=tuple(_str(a, "approver") for a in approvers)
    )


def _bool_member(value: Any, key: str) -> bool:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{key} is not a boolean")
    return bool(value)


def _model_member(value: Any, key: str) -> ModelInfo | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{key} is not an object")
    return ModelInfo(*(_str(value.get(k) or "", k) for k in ("provider", "model", "response_format")))


def _safety_member(value: Any, key: str) -> Safety | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{key} is not an object")
    return Safety(bool(value.get("read_only")), bool(value.get("idempotent")))


def _approval_member(value: Any, key: str) -> ApprovalPolicy | None:
    return None if value is None else _decode_approval(value)


# How each record member is made from its parsed JSON value ("message", "result" and "evidence"
# are read from the text instead: the first is walked, the others are kept as raw bytes).
_RECORD_MEMBERS: dict[str, Callable[[Any, str], Any]] = {
    **dict.fromkeys(
        (
            "name",
            "kind",
            "finish",
            "raw_finish",
            "prompt_digest",
            "tools_digest",
            "tool_use_id",
            "approver",
            "approver_alg",
            "format",
            "claim",
        ),
        _string_member,
    ),
    **dict.fromkeys(("is_error", "approved", "reconciled", "read_only", "outcome_unknown"), _bool_member),
    "usage": _usage,
    "discarded_usage": _usage,
    "model": _model_member,
    "signature": _bytes,
    "salt": _bytes,
    "attempted_at": _int,
    "safety": _safety_member,
    "approval": _approval_member,
}


_TOMBSTONE_PREFIX = b'{"redacted":'


def _decode_tombstone(text: str) -> Tombstone | None:
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict) or set(obj) != {"redacted"}:
        return None
    inner = obj["redacted"]
    if not isinstance(inner, dict) or not set(inner) <= {"leaf_hash", "at_ms"}:
        return None
    leaf_hash, at_ms = inner.get("leaf_hash"), inner.get("at_ms", 0)
    if not isinstance(leaf_hash, str) or not leaf_hash or isinstance(at_ms, bool) or not isinstance(at_ms, int):
        return None
    return Tombstone(leaf_hash, at_ms)


def decode_record(data: bytes, row_name: str | None = None) -> Record:
    """Decode stored bytes into a Record, keeping raw values and ignoring unknown members.

    A tombstone decodes as a record carrying only ``row_name`` and its ``tombstone``. Raises
    ``CorruptRecordError`` when the bytes are not a record, or when the record's ``name`` is not
    ``row_name`` (when given): the SDK refuses such a row, and so does agenttui.
    """
    text = data.decode("utf-8", "surrogateescape")
    if data.lstrip().startswith(_TOMBSTONE_PREFIX) and (tombstone := _decode_tombstone(text)) is not None:
        return Record(row_name or "", "", tombstone=tombstone, raw=data)
    fields = _canonical_members(text) if len(text) <= _PARSED_UP_TO else None
    if fields is None:
        fields = _walked_members(text, row_name)
    if "name" not in fields:
        raise CorruptRecordError(
            f"not a journal record: no name member{'' if row_name is None else f' (step {row_name!r})'}"
        )
    fields.setdefault("kind", "")
    if row_name is not None and fields["name"] != row_name:
        raise CorruptRecordError(f"record names {fields['name']!r} but is stored as {row_name!r}")
    return Record(**fields, raw=data)


#: The longest record (in characters) read by the parser first (``_canonical_members``): it
#: encodes what it parsed to test it, which costs more than the walk's scan of a long value.
_PARSED_UP_TO = 1024


def _canonical_members(text: str) -> dict[str, Any] | None:
    """The members of a record written as the codec writes it (as Go's ``EncodeRecord`` and
    agenttui write every record), read by the C parser; None for any other text, walked instead.

    The text is the codec's when what it parses to encodes back to it, character for character:
    then each raw member (``result``, ``evidence``, a part's ``args`` or ``result``) is its value
    encoded again, the very bytes stored, for the encoding of an object is its members' in turn.
    Spaces, another number spelling, an escape the codec would not write or a duplicate name
    fail the test, and so does any member ``decode_record`` would refuse: the walk reads those
    bytes, and says what is wrong. A model turn of 500 bytes is read in three fifths of the
    walk's time, a tool result of 250 in five sixths (a ``run:start`` of 350 in a fifth more:
    its nested result is encoded twice); past a kilobyte the walk is faster (``_PARSED_UP_TO``)."""
    try:
        value, end = _scan(text, 0)  # the scanner itself: the codec writes no space to skip
        if end != len(text) or type(value) is not dict or _parsed_json(value) != text:
            return None
        fields: dict[str, Any] = {}
        for key, member in value.items():
            if key == "message":
                fields[key] = _message_of(member)
            elif key == "result" or key == "evidence":
                fields[key] = _parsed_json(member).encode()
            elif (decode := _RECORD_MEMBERS.get(key)) is not None:
                fields[key] = decode(member, key)
        return fields
    except (ValueError, StopIteration, RecursionError):
        return None


def _message_of(value: Any) -> Message | None:
    """``_decode_message`` of a parsed message (``_canonical_members``)."""
    if value is None:
        return None
    if type(value) is not dict:
        raise ValueError("expected an object")
    parts = value.get("parts")
    if parts is not None and type(parts) is not list:
        raise ValueError("expected an array")
    role = _str(value["role"], "role") if "role" in value else ""
    return Message(role, tuple(_part_of(part) for part in parts) if parts else ())


def _part_of(part: Any) -> Part:
    """``_decode_part`` of a parsed part (``_canonical_members``)."""
    if type(part) is not dict:
        raise ValueError("expected an object")
    get = part.get
    match part_type := get("type", ""):
        case "text":
            return TextPart(_string_member(get("text"), "text"))
        case "reasoning":
            return ReasoningPart(
                _string_member(get("text"), "text"),
                _string_member(get("signature"), "signature"),
                _string_member(get("redacted"), "redacted"),
            )
        case "tool_use":
            args = _parsed_json(part["args"]).encode() if "args" in part else None
            return ToolUsePart(
                _string_member(get("id"), "id"), _string_member(get("name"), "name"), args,
                _string_member(get("signature"), "signature"),
            )  # fmt: skip
        case "tool_result":
            result = _parsed_json(part["result"]).encode() if "result" in part else None
            return ToolResultPart(_string_member(get("tool_use_id"), "tool_use_id"), result, bool(get("is_error")))
        case "image":
            mime, url = _string_member(get("mime"), "mime"), _string_member(get("url"), "url")
            return ImagePart(mime, _bytes(get("data"), "data"), url)
        case _:
            return UnknownPart(str(part_type), _parsed_json(part).encode())


def _walked_members(text: str, row_name: str | None) -> dict[str, Any]:
    """The members of a record's text, walked: each raw member's bytes as stored."""
    fields: dict[str, Any] = {}

    def read_value(key: str, start: int) -> int:
        if key == "message":
            fields[key], end = _decode_message(text, start)
        elif key == "result" or key == "evidence":
            _, end = _scan(text, start)
            fields[key] = _raw(text, start, end)
        else:
            value, end = _scan(text, start)
            if (decode := _RECORD_MEMBERS.get(key)) is not None:
                fields[key] = decode(value, key)
            # else: unknown members are ignored, as every Go decoder does
        return end

    try:
        end = _walk_object(text, _skip(text, 0), read_value)
        if _skip(text, end) != len(text):
            raise ValueError("trailing bytes after the record")
    except (ValueError, IndexError, StopIteration, RecursionError) as exc:
        where = f" (step {row_name!r})" if row_name is not None else ""
        raise CorruptRecordError(f"not a journal record{where}: {exc}") from None
    return fields


def decode_outline(data: bytes, row_name: str) -> Record | None:
    """The name, kind and usage of the record in ``data`` as ``decode_record`` reads them, and
    nothing else (a stand-in for a record whose other members nobody will read); None where they
    cannot be told cheaply, or the record would not decode so (not an object, another name, a
    kind or usage of the wrong type).

    ``data`` should be known to hold one JSON object (a run summary parsed it, or trusted it by
    its shape, ``stores.summary.shaped_kind``; either way the rest is checked when the run is
    opened, by ``decode_record``): bytes that begin
    as the codec writes a record, ``{"name":<row_name>,"kind":"<kind>"``, where no key could be
    a second ``kind`` or a ``usage`` (no other ``"kind"`` or ``"usage"``, no ``\\u`` escape), are
    read from that start alone, unparsed, for a tool result's payload can be a megabyte. Other
    bytes are parsed by the C JSON parser, a tenth of ``decode_record``'s time. The members
    besides these three are not checked, so ``decode_record`` may still refuse the record."""
    start = b'{"name":' + encode_string(row_name) + b',"kind":"'
    if data.startswith(start):
        end = data.find(b'"', len(start))
        written = data[len(start) : end]
        if (
            end != -1
            and b"\\" not in written
            and data.find(b'"kind"', end) == -1
            and b'"usage"' not in data
            and b"\\u" not in data
        ):
            return Record(row_name, _go_string(written.decode("utf-8", "surrogateescape")))
    try:
        value = _decoder.decode(data.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    if type(value) is not dict:
        return None
    name, kind = value.get("name"), value.get("kind")
    if type(name) is not str or _go_string(name) != row_name or (kind is not None and type(kind) is not str):
        return None
    try:
        usage = _usage(value.get("usage"), "usage")
    except ValueError:
        return None
    return Record(row_name, "" if kind is None else _go_string(kind), usage=usage)


def unreadable_record(row_name: str, data: bytes, error: CorruptRecordError) -> Record:
    """The stand-in for stored bytes that do not decode, so the rest of a run still shows."""
    return Record(row_name, "", unreadable=error.message, raw=data)


def decode_json(raw: bytes | None) -> Any:
    """A raw JSON value as Python data (for display and logic, never for re-encoding).

    Raises ``ValueError`` for bytes that are not JSON, or JSON nested too deep to parse.
    """
    if raw is None:
        return None
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def raw_members(raw: bytes) -> dict[str, bytes]:
    """The members of the JSON object ``raw`` by name, in the order written (the last of
    duplicate names kept, as Go's decoder keeps it), each value's bytes as stored but for
    insignificant whitespace: for a writer that changes one member of a raw value and keeps
    every other byte (``runs.forks`` marks a ``run:start`` so).

    Raises ``CorruptRecordError`` when ``raw`` is not one JSON object.
    """
    text = raw.decode("utf-8", "surrogateescape")
    try:
        members, end = _scanned_members(text, _skip(text, 0))
        if _skip(text, end) != len(text):
            raise ValueError("trailing bytes after the object")
    except (ValueError, IndexError, StopIteration, RecursionError) as exc:
        raise CorruptRecordError(f"not a JSON object: {exc}") from None
    return {key: _raw(text, start, stop) for key, (start, stop, _) in members.items()}
