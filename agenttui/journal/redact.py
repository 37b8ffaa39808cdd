"""Redaction of record payloads: JSON paths whose values are replaced by a marker, bytes kept.

A ``Redactor`` takes paths such as ``$.result.card_number`` (a JSON path from the record's top),
``$.message.parts[*].args.token``, ``$..email`` (a member anywhere below), or a bare member
name, ``card_number``, which means ``$..card_number``. Each value a path names is replaced, in
the stored bytes, by the JSON string ``"[redacted]"`` (``MARKER``); every other byte of the
record stays as stored (its salt, its member order, the spelling of its numbers), so an
unredacted record is copied byte for byte and a redacted one differs only where a value was.

Only payloads are redacted, never the record's own members: values inside ``result`` and
``evidence`` (raw JSON, any value may become a string), inside a message part's tool ``args``
and tool ``result``, and a text or reasoning part's ``text`` (a string stays a string). A path
that names a member of the record itself (``$.name``, ``$.usage``, ``$.salt`` ...) is refused
(``RedactionError``): changing one would make the record undecodable or another record. A
redacted record therefore always decodes with the codec, as before; a value the runtime itself
reads (a ``run:start`` setting, a timer's wake time) can still be redacted, and then the run
reads as that value being the marker.

Paths: ``$`` then ``.name``, ``['name']`` or ``["name"]``, ``[N]``, ``[*]`` or ``.*`` (any member
or element), ``..name`` (that member at any depth below).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # public at run time, absent from typeshed

from agenttui.errors import ConfigError
from agenttui.journal.codec import decode_record, encode_string
from agenttui.journal.record import Record

MARKER = "[redacted]"
"""What a redacted value becomes: this JSON string."""
_MARKER_JSON = encode_string(MARKER).decode()

#: The record's members whose values are payload (raw JSON a tool or a person wrote).
_PAYLOAD_MEMBERS = ("result", "evidence")
#: A message part's members that hold payload: raw JSON (``args``, ``result``) or free text.
_PART_RAW = ("args", "result")
_PART_TEXT = "text"
_WHITESPACE = " \t\n\r"


class RedactionError(ConfigError):
    """A redaction path that is malformed or names a member of the record itself."""

    title = "Bad redaction path"


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of a path: a member (``key``), an element (``index``), any child (``wild``), or
    a member at any depth below (``descend`` with ``key``)."""

    key: str | None = None
    index: int | None = None
    wild: bool = False
    descend: bool = False


Node = tuple[str | int, ...]
"""Where a value sits in a record: member names and element indices from the top."""

_NAME = re.compile(r"[^.\[\]'\"]+")


@dataclass(frozen=True, slots=True)
class RedactPath:
    """A parsed redaction path; ``text`` is as the person wrote it (reports name it so)."""

    text: str
    steps: tuple[_Step, ...]

    @classmethod
    def parse(cls, text: str) -> RedactPath:
        """Parse ``text``; raise ``RedactionError`` for a malformed path or one that names a
        member of the record itself rather than a payload."""
        if not text.strip():
            raise RedactionError("an empty redaction path")
        if not text.startswith("$"):
            if not _NAME.fullmatch(text):
                raise RedactionError(f"{text!r}: a bare member name has no '.', '[', ']' or quotes (or write a $ path)")
            return cls(text, (_Step(key=text, descend=True),))
        steps = _parse_steps(text)
        if not steps:
            raise RedactionError(f"{text!r}: '$' is the whole record; name a member inside a payload")
        first = steps[0]
        if not first.descend and first.key not in (*_PAYLOAD_MEMBERS, "message"):
            raise RedactionError(
                f"{text!r} names a member of the record itself; only payloads can be redacted: "
                "values inside $.result, $.evidence, and a message part's args, result or text"
            )
        if first.key == "message" and not first.descend and len(steps) == 1:
            raise RedactionError(f"{text!r}: redact a message part's args, result or text, not the message")
        return cls(text, steps)

    def matches(self, node: Node) -> bool:
        return _matches(self.steps, node)


def _parse_steps(text: str) -> tuple[_Step, ...]:
    steps: list[_Step] = []
    i, n = 1, len(text)
    while i < n:
        if text.startswith("..", i):
            i += 2
            if text.startswith("*", i):
                raise RedactionError(f"{text!r}: '..*' would redact every value; name the member")
            name = _NAME.match(text, i)
            if name is None:
                raise RedactionError(f"{text!r}: a member name must follow '..' (at {i})")
            steps.append(_Step(key=name.group(), descend=True))
            i = name.end()
        elif text.startswith(".*", i):
            steps.append(_Step(wild=True))
            i += 2
        elif text.startswith(".", i):
            name = _NAME.match(text, i + 1)
            if name is None:
                raise RedactionError(f"{text!r}: a member name must follow '.' (at {i})")
            steps.append(_Step(key=name.group()))
            i = name.end()
        elif text.startswith("[", i):
            close = _bracket_end(text, i)
            inner = text[i + 1 : close]
            if inner == "*":
                steps.append(_Step(wild=True))
            elif inner.isdigit():
                steps.append(_Step(index=int(inner)))
            elif len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
                steps.append(_Step(key=inner[1:-1]))
            else:
                raise RedactionError(f"{text!r}: [{inner}] is neither an index, '*' nor a quoted name")
            i = close + 1
        else:
            raise RedactionError(f"{text!r}: expected '.', '..' or '[' at {i}")
    return tuple(steps)


def _bracket_end(text: str, i: int) -> int:
    quote = text[i + 1 : i + 2]
    if quote in ("'", '"'):
        end = text.find(quote + "]", i + 2)
        if end == -1:
            raise RedactionError(f"{text!r}: unclosed [{quote} at {i}")
        return end + 1
    end = text.find("]", i)
    if end == -1:
        raise RedactionError(f"{text!r}: unclosed [ at {i}")
    return end


def _matches(steps: Sequence[_Step], node: Sequence[str | int]) -> bool:
    if not steps:
        return not node
    if not node:
        return False
    step, rest = steps[0], steps[1:]
    if step.descend:
        # the member at this level, or at any depth below it
        return any(
            isinstance(node[k], str) and node[k] == step.key and _matches(rest, node[k + 1 :]) for k in range(len(node))
        )
    head = node[0]
    if step.wild:
        return _matches(rest, node[1:])
    if step.key is not None:
        return isinstance(head, str) and head == step.key and _matches(rest, node[1:])
    return isinstance(head, int) and head == step.index and _matches(rest, node[1:])


def _payload(node: Node) -> bool:
    """Whether the value at ``node`` lies in a payload a redaction may replace."""
    if not node:
        return False
    if node[0] in _PAYLOAD_MEMBERS:
        return True
    # message.parts[i].<member>...
    if len(node) >= 4 and node[0] == "message" and node[1] == "parts" and isinstance(node[2], int):
        return node[3] in _PART_RAW or (node[3] == _PART_TEXT and len(node) == 4)
    return False


def _descends(node: Node) -> bool:
    """Whether the walk goes into the value at ``node`` to look for payloads below it."""
    return (
        node == ("message",)
        or node == ("message", "parts")
        or (len(node) == 3 and node[:2] == ("message", "parts") and isinstance(node[2], int))
        or _payload(node)
    )


class Redactor:
    """Applies a set of redaction paths to records' stored bytes."""

    def __init__(self, paths: Sequence[str]) -> None:
        """Raises ``RedactionError`` for a path that is malformed or names the record's own members."""
        self.paths = tuple(dict.fromkeys(RedactPath.parse(p) for p in paths))
        # The member names the paths need: bytes holding none of them (as a JSON key) are left
        # alone without a parse. Only a key spelled with an escape could hide one: those bytes
        # are walked anyway.
        keys = {step.key for path in self.paths for step in path.steps if step.key is not None}
        self._needles = tuple(encode_string(key) + b":" for key in keys)
        self._any_wild = any(step.wild or step.index is not None for p in self.paths for step in p.steps)

    def __bool__(self) -> bool:
        return bool(self.paths)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.paths)

    def redact(self, data: bytes) -> tuple[bytes, Counter[str]]:
        """``data`` with every value the paths name replaced by the marker, and how many values
        each path replaced. Bytes that are not a JSON object (an unreadable row, a tombstone has
        no payload) come back unchanged."""
        counts: Counter[str] = Counter()
        if not self.paths or not self._might_match(data):
            return data, counts
        text = data.decode("utf-8", "surrogateescape")
        spans: list[tuple[int, int]] = []

        def take(node: Node) -> bool:
            if _payload(node):
                for path in self.paths:
                    if path.matches(node):
                        counts[path.text] += 1
                        return True
            return False

        try:
            start = _skip(text, 0)
            if text[start : start + 1] != "{":
                return data, counts
            _walk(text, start, (), take, spans)
        except (ValueError, IndexError, StopIteration, RecursionError):
            return data, Counter()  # not JSON: nothing a path names can be found in it
        if not spans:
            return data, counts
        out, last = [], 0
        for begin, finish in spans:
            out.append(text[last:begin])
            out.append(_MARKER_JSON)
            last = finish
        out.append(text[last:])
        return "".join(out).encode("utf-8", "surrogateescape"), counts

    def redact_record(self, record: Record) -> Record:
        """``record`` as its redacted bytes decode (itself when nothing in it is redacted)."""
        if not record.raw or record.unreadable or record.tombstone is not None:
            return record
        data, counts = self.redact(record.raw)
        return decode_record(data, record.name) if counts else record

    def _might_match(self, data: bytes) -> bool:
        return self._any_wild or b"\\" in data or any(needle in data for needle in self._needles)


_scan = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, absent from typeshed


def _skip(text: str, i: int) -> int:
    while text[i : i + 1] in _WHITESPACE and i < len(text):
        i += 1
    return i


def _walk(text: str, i: int, node: Node, take: Callable[[Node], bool], spans: list[tuple[int, int]]) -> int:
    """Walk the object or array at ``text[i]``, handing each value below it to ``_child``;
    return where it ends."""
    closing = "}" if text[i] == "{" else "]"
    i = _skip(text, i + 1)
    if text[i : i + 1] == closing:
        return i + 1
    index = 0
    while True:
        if closing == "}":
            if text[i : i + 1] != '"':
                raise ValueError("expected a member name")
            key, i = scanstring(text, i + 1)
            i = _skip(text, i)
            if text[i : i + 1] != ":":
                raise ValueError("expected ':'")
            i = _child(text, _skip(text, i + 1), (*node, key), take, spans)
        else:
            i = _child(text, i, (*node, index), take, spans)
            index += 1
        i = _skip(text, i)
        if text[i : i + 1] == ",":
            i = _skip(text, i + 1)
        elif text[i : i + 1] == closing:
            return i + 1
        else:
            raise ValueError(f"expected ',' or {closing!r}")


def _child(text: str, i: int, node: Node, take: Callable[[Node], bool], spans: list[tuple[int, int]]) -> int:
    """The value at ``text[i]``: taken whole when a path names it, walked into when payloads
    may lie below it, else skipped; return where it ends."""
    if take(node):
        _, end = _scan(text, i)
        spans.append((i, end))
        return int(end)
    if text[i : i + 1] in ("{", "[") and _descends(node):
        return _walk(text, i, node, take, spans)
    _, end = _scan(text, i)
    return int(end)
