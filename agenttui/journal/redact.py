"""Redaction of records: the values JSON paths name replaced by a marker, every other byte kept.

A ``Redactor`` takes paths such as ``$.result.card_number`` (a JSON path from the record's top),
``$.message.parts[*].args.token``, ``$..email`` (a member anywhere below), or a bare member
name, ``card_number``, which means ``$..card_number``. Each value a path names is replaced, in
the stored bytes, by the JSON string ``"[redacted]"`` (``MARKER``); every other byte of the
record stays as stored (its salt, its member order, the spelling of its numbers), so an
unredacted record is copied byte for byte and a redacted one differs only where a value was.

The record is decoded, as JSON, whole: every member, at every depth (the walk keeps its own
stack, so no nesting is too deep for it), the ``@journal`` header and members no format
version knows included; a string that holds a JSON object or array is decoded and walked too,
as if it were that JSON (``$.result.body.token`` goes into a ``body`` string), and written
back as a string in the style it was written in; so is each object or array that prose in a
string quotes (``the API said {"token": "…"}``). Bytes that are not JSON (a damaged or
truncated record) raise ``CorruptRecordError``: nothing in them can be looked for. A UTF-8 byte
order mark before the record is passed over and kept (neither Go nor the codec read such a
record; its run reads as it did).

What the run's reading depends on is never replaced, so a redacted record decodes as it did and
its run reads with the same status and replays the same (``docs/decisions.md``, "Bundles"):
the record's own scalars (``name``, ``kind``, ``format``, ids, the claim, the salt, an
approval's algorithm and signature, which its step name hashes, flags, times, token counts,
``finish``), a message's ``role``, a part's ``type`` and a tool call's ``id`` and ``name``, and
the few payload members the runtime reads (``run:start``'s ``kind``, ``saga``, tool filter and
agenttui's tool policies; an ``approval-tally``'s counts; a timer's wake time). A path naming one
of those is refused (``RedactionError``) when it can name nothing else; a bare name passes over
them. A path that names a value holding some (``$.message``, an approval's ``approvers``) replaces
every other value inside it, one by one, keeping the shape the record is read by. An image's
``data`` (base64) becomes the marker's bytes, base64 encoded. Everything else is replaceable:
payloads, string members such as ``approver`` or an image's ``url``, unknown members anywhere.

Paths: ``$`` then ``.name``, ``['name']`` or ``["name"]``, ``[N]``, ``[*]`` or ``.*`` (any member
or element), ``..name`` (that member at any depth below).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from json.decoder import scanstring  # type: ignore[attr-defined]  # public at run time, absent from typeshed
from typing import Any, Final

from agenttui.errors import ConfigError, CorruptRecordError
from agenttui.journal.codec import decode_record, encode_string
from agenttui.journal.keys import encode_id
from agenttui.journal.record import Record

MARKER = "[redacted]"
"""What a redacted value becomes: this JSON string."""
_MARKER_JSON = encode_string(MARKER).decode()
#: What a base64 member (an image's ``data``) becomes: the marker's own bytes, so it still decodes.
_MARKER_BASE64 = '"' + base64.b64encode(MARKER.encode()).decode() + '"'
_WHITESPACE = " \t\n\r"
_BOM = "\ufeff"
_TOMBSTONE_PREFIX = b'{"redacted":'
#: Most steps a path may have (a state packs the step's index in a byte).
_MAX_STEPS = 255
#: Entries a walk's memo holds before it starts again (member names are the person's data).
_MEMO_SIZE = 50_000


class RedactionError(ConfigError):
    """A redaction path that is malformed or names only what the run's reading depends on."""

    title = "Bad redaction path"


# -- what the record is read by ------------------------------------------------------------------

# How a value sits in a record, by position: what a path naming it does.
_OPEN: Final = 0
"""A payload or a member nothing reads by its value: replaced whole when named."""
_KEEP: Final = 1
"""A scalar the run's reading depends on: never replaced."""
_WITHIN: Final = 2
"""An object or array that holds some ``_KEEP`` values: never replaced whole; named, every other
value in it is replaced one by one."""
_BYTES: Final = 3
"""A base64 member: replaced by the marker's bytes when named; not looked into."""

# The kind of a JSON value, from its first character.
_KINDS = {"{": "o", "[": "a", '"': "s", "t": "b", "f": "b", "n": "z", "-": "n", **dict.fromkeys("0123456789", "n")}


class _Shape:
    """An object or array the reading looks into: the rule of each member it knows (others are
    ``_OPEN``), or of every element."""

    __slots__ = ("items", "members")

    def __init__(self, members: dict[str, _Rule] | None = None, items: _Rule | None = None) -> None:
        self.members = members or {}
        self.items = items


_Rule = dict[str, tuple[int, _Shape | None]]
"""How a value at one position is read, by its kind (``o`` ``a`` ``s`` ``b`` ``n``); a kind not
listed there is not what the reading expects, so nothing protects it (``null`` holds nothing,
and is kept)."""


def _keep(*kinds: str) -> _Rule:
    return dict.fromkeys(kinds, (_KEEP, None))


def _within(shape: _Shape, kind: str = "o") -> _Rule:
    return {kind: (_WITHIN, shape)}


_OPEN_ITEMS = _Shape()  # an array of values the reading counts, but does not read
_USAGE = _Shape(dict.fromkeys(("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"), _keep("n")))
_PART = _Shape(
    {
        "type": _keep("s"), "id": _keep("s"), "name": _keep("s"), "tool_use_id": _keep("s"), "is_error": _keep("b"),
        "data": {"s": (_BYTES, None)},
    }
)  # fmt: skip
_RECORD_MEMBERS: dict[str, _Rule] = {
    **dict.fromkeys(
        ("name", "kind", "format", "tool_use_id", "claim", "salt", "signature", "approver_alg", "finish"), _keep("s")
    ),
    **dict.fromkeys(("is_error", "approved", "reconciled", "read_only", "outcome_unknown"), _keep("b")),
    "attempted_at": _keep("n"),
    "message": _within(_Shape({"role": _keep("s"), "parts": _within(_Shape(items=_within(_PART)), "a")})),
    "usage": _within(_USAGE),
    "discarded_usage": _within(_USAGE),
    "model": _within(_Shape()),
    "safety": _within(_Shape(dict.fromkeys(("read_only", "idempotent"), _keep("b")))),
    "approval": _within(_Shape({"single": _keep("b"), "need": _keep("n"), "approvers": _within(_OPEN_ITEMS, "a")})),
}
_RECORD = _Shape(_RECORD_MEMBERS)

# The payload members the runtime reads (agent/runstart.py, agent/pauses.py, runs/statuses/status.py).
_POLICY = _Shape(
    {
        "name": _keep("s"),
        "safety": _within(_Shape(dict.fromkeys(("read_only", "idempotent", "idempotency_key"), _keep("b")))),
        "approval": {"b": (_KEEP, None), "o": (_WITHIN, _Shape({"single": _keep("b"), "need": _keep("n")}))},
        "interrupts": _keep("b"),
    }
)
_RUN_START = _Shape(
    {
        "kind": _keep("s"),
        "saga": _keep("b"),
        "tools": _within(_Shape(items={"s": (_KEEP, None), "o": (_WITHIN, _POLICY)}), "a"),
        "ext": _within(_Shape({"agenttui": _within(_Shape({"tools": _within(_Shape(items=_within(_POLICY)), "a")}))})),
    }
)
_VOTES: _Rule = {"b": (_KEEP, None), "n": (_KEEP, None), "a": (_WITHIN, _OPEN_ITEMS)}
_TALLY = _Shape({"need": _keep("n"), "approved": _VOTES, "denied": _VOTES})


def _with_result(rule: _Rule) -> _Shape:
    return _Shape({**_RECORD_MEMBERS, "result": rule})


_BY_STEP: tuple[tuple[str, _Shape], ...] = (
    ("run:start", _with_result(_within(_RUN_START))),
    ("approval-tally:", _with_result(_within(_TALLY))),
    ("timer:", _with_result(_keep("s"))),
)


def _record_shape(name: str) -> _Shape:
    """How the record stored under ``name`` is read."""
    for prefix, shape in _BY_STEP:
        if name == prefix or (prefix.endswith(":") and name.startswith(prefix)):
            return shape
    return _RECORD


def _redactable(rule: _Rule | None) -> bool:
    """Whether a path naming a value at a position with this rule names anything the reading
    leaves to payloads (members it does not know aside: a path to ``$.usage`` is a mistake)."""
    if rule is None:
        return True
    for kind, (slot, shape) in rule.items():
        if slot in (_OPEN, _BYTES):
            return True
        if slot != _WITHIN or shape is None:
            continue
        if kind == "a" and (shape.items is None or _redactable(shape.items)):
            return True
        if kind == "o" and (not shape.members or any(_redactable(m) for m in shape.members.values())):
            return True
    return False


# -- paths ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Step:
    """One step of a path: a member (``key``), an element (``index``), any child (``wild``), or
    a member at any depth below (``descend`` with ``key``)."""

    key: str | None = None
    index: int | None = None
    wild: bool = False
    descend: bool = False


_NAME = re.compile(r"[^.\[\]'\"]+")


@dataclass(frozen=True, slots=True)
class RedactPath:
    """A parsed redaction path; ``text`` is as the person wrote it (reports name it so)."""

    text: str
    steps: tuple[_Step, ...]

    @classmethod
    def parse(cls, text: str) -> RedactPath:
        """Parse ``text``; raise ``RedactionError`` for a malformed path or one that can name
        only what the run's reading depends on."""
        if not text.strip():
            raise RedactionError("an empty redaction path")
        if not text.startswith("$"):
            if not _NAME.fullmatch(text):
                raise RedactionError(f"{text!r}: a bare member name has no '.', '[', ']' or quotes (or write a $ path)")
            return cls(text, (_Step(key=text, descend=True),))
        steps = _parse_steps(text)
        if not steps:
            raise RedactionError(f"{text!r}: '$' is the whole record; name a member inside it")
        if len(steps) > _MAX_STEPS:
            raise RedactionError(f"{text!r}: a path of more than {_MAX_STEPS} steps")
        if steps[0].wild or steps[0].index is not None:
            raise RedactionError(f"{text!r} names every member of the record itself; name the member")
        if not _redactable(_named_rule(steps)):
            raise RedactionError(
                f"{text!r} names a member of the record itself that its run is read by (its name, kind, ids, "
                "salt, flags, times or token counts); it is never redacted"
            )
        return cls(text, steps)


def _named_rule(steps: Sequence[_Step]) -> _Rule | None:
    """The rule of what a path names in a record, where the steps tell (None: an open value, or
    a path that goes on by ``..``, where only the walk can tell)."""
    rule: _Rule | None = _within(_RECORD)
    for step in steps:
        if rule is None or step.descend:
            return None
        kind = "o" if step.key is not None else "a"
        slot, shape = rule.get(kind, (_OPEN, None))
        if slot != _WITHIN or shape is None:
            return None if slot == _OPEN else {}
        rule = shape.members.get(step.key) if step.key is not None else shape.items
    return rule


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
            elif inner.isascii() and inner.isdigit():
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


# -- the result ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Redacted:
    """A record's bytes after redaction, and what it replaced."""

    data: bytes
    counts: Mapping[str, int] = field(default_factory=dict)
    """Values replaced, by the path (its text) that named them."""
    kept_in_name: tuple[str, ...] = ()
    """Paths that replaced a value the record's step name still holds (as one of its segments,
    such as an m-of-n decision's approver): names are keys, never rewritten."""


class _Tally:
    __slots__ = ("counts", "in_name")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.in_name: dict[str, None] = {}

    def merge(self, other: _Tally) -> None:
        self.counts.update(other.counts)
        self.in_name.update(other.in_name)


class _Broken(Exception):
    """Not JSON, from the character at ``at`` on."""

    def __init__(self, at: int, cut_short: bool = False) -> None:
        super().__init__(at)
        self.at = at
        self.cut_short = cut_short


# -- the redactor --------------------------------------------------------------------------------

_Edit = tuple[int, int, str]
"""The characters ``[start, end)`` of a text, and what replaces them."""
_States = frozenset[int]
"""Where each path stands at a value: ``path index << 8 | steps matched``."""


class _Frame:
    """An object or array being walked."""

    __slots__ = ("closing", "index", "shape", "states", "taken")

    def __init__(self, closing: str, states: _States, shape: _Shape | None, taken: int | None) -> None:
        self.closing = closing
        self.states = states
        self.shape = shape
        self.taken = taken
        """The path that named this value (``_WITHIN``): every open value inside is replaced."""
        self.index = 0


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: The C scanner, to skip a value no path can reach inside (NaN and Infinity are not JSON).
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(parse_constant=_no_constants).scan_once  # type: ignore[attr-defined]  # set by JSONDecoder.__init__, absent from typeshed
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_whitespace_run = re.compile(r"[ \t\n\r]*").match
_SURROGATES = re.compile("[\ud800-\udfff]")
_WS = frozenset(_WHITESPACE)
"""For the walk's hot path: ``text[i:i+1] in _WS`` is false at the end of the text too."""
#: Where JSON that prose quotes may begin: an object's first member (or its end), an array's
#: first value (prose's own braces and brackets, "{name}" or "[sic]", are passed over at once).
_OPENING = re.compile(r'\{\s*["}]|\[\s*[\[{"\d\-\]]')


def _skip_ws(text: str, i: int) -> int:
    if text[i : i + 1] in _WHITESPACE and i < len(text):
        match = _whitespace_run(text, i)
        assert match is not None  # the pattern matches the empty string
        return match.end()
    return i


class Redactor:
    """Applies a set of redaction paths to records' stored bytes."""

    def __init__(self, paths: Sequence[str]) -> None:
        """Raises ``RedactionError`` for a path that is malformed or can name only what the
        run's reading depends on."""
        self.paths = tuple(dict.fromkeys(RedactPath.parse(p) for p in paths))
        self._steps = tuple(path.steps for path in self.paths)
        self._start: _States = frozenset(p << 8 for p in range(len(self.paths)))
        self._final = frozenset(p << 8 | len(steps) for p, steps in enumerate(self._steps))
        # Bytes that hold none of the members the paths end on can hold nothing they name: those
        # are only checked to be JSON, by the C parser. A member spelled with escapes is found
        # wherever the bytes hold an escape that could spell it.
        self._needles: list[tuple[bytes, bool]] | None = []
        for steps in self._steps:
            last = steps[-1]
            if last.key is None:  # an element or any child: every record must be walked
                self._needles = None
                break
            self._needles.append((last.key.encode("utf-8", "surrogateescape"), _escapable(last.key)))
        # Memos of the walk, by the paths' states: a record's members repeat from record to record.
        self._advanced: dict[tuple[_States, str | int], _States] = {}
        self._named: dict[_States, int | None] = {}
        self._wanted: dict[_States, tuple[tuple[str, bool], ...] | None] = {}

    def __bool__(self) -> bool:
        return bool(self.paths)

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(p.text for p in self.paths)

    def redact(self, data: bytes, name: str = "") -> Redacted:
        """``data`` (the record stored under ``name``) with every value the paths name replaced
        by the marker, and how many values each path replaced. Bytes with nothing in them and a
        redaction tombstone (a hash and a time) come back as they are; bytes that are not JSON
        raise ``CorruptRecordError`` saying where, never quoting them."""
        if not self.paths:
            return Redacted(data)
        text = data.decode("utf-8", "surrogateescape")
        start = _skip_ws(text, 1 if text.startswith(_BOM) else 0)
        if start == len(text):
            return Redacted(data)
        try:
            if not self._might_match(data):
                self._check_end(text, self._skip(text, start))
                return Redacted(data)
            if data.lstrip(b" \t\n\r").startswith(_TOMBSTONE_PREFIX) and _is_tombstone(data):
                return Redacted(data)
            tally = _Tally()
            end, edits = self._walk(text, start, self._start, _within(_record_shape(name)), tally, name)
            self._check_end(text, end)
        except _Broken as broken:
            raise CorruptRecordError(_why(text, broken)) from None
        if not edits:
            return Redacted(data, tally.counts)
        out = _spliced(text, edits).encode("utf-8", "surrogateescape")
        return Redacted(out, tally.counts, tuple(tally.in_name))

    def redact_record(self, record: Record) -> Record:
        """``record`` as its redacted bytes decode (itself when nothing in it is redacted, or
        its bytes are not JSON)."""
        if not record.raw or record.tombstone is not None:
            return record
        try:
            redacted = self.redact(record.raw, record.name)
        except CorruptRecordError:
            return record
        if redacted.data == record.raw:
            return record
        try:
            return decode_record(redacted.data, record.name)
        except CorruptRecordError:  # it did not decode before either
            return dataclasses.replace(record, raw=redacted.data)

    def _might_match(self, data: bytes) -> bool:
        if self._needles is None:
            return True
        escaped = b"\\" in data
        return any(needle in data or (escaped and (spelled or b"\\u" in data)) for needle, spelled in self._needles)

    @staticmethod
    def _check_end(text: str, end: int) -> None:
        end = _skip_ws(text, end)
        if end != len(text):
            raise _Broken(end)

    # -- the walk: an explicit stack, so no depth of nesting is too deep --------------------------

    def _advance(self, states: _States, label: str | int) -> _States:
        """Where the paths stand at the child ``label`` (a member's name, an element's index)."""
        memo = self._advanced.get((states, label))
        if memo is None:
            if len(self._advanced) > _MEMO_SIZE:
                self._advanced.clear()
            memo = self._advanced[states, label] = self._advanced_afresh(states, label)
        return memo

    def _advanced_afresh(self, states: _States, label: str | int) -> _States:
        out: set[int] = set()
        for state in states:
            if state in self._final:
                continue
            step = self._steps[state >> 8][state & 0xFF]
            if step.descend:
                out.add(state)  # still looking, deeper
                if type(label) is str and label == step.key:
                    out.add(state + 1)
            elif step.wild:
                out.add(state + 1)
            elif step.key is not None:
                if type(label) is str and label == step.key:
                    out.add(state + 1)
            elif type(label) is int and label == step.index:
                out.add(state + 1)
        return frozenset(out)

    def _named_by(self, states: _States) -> int | None:
        """The first path (in the order given) that names the value these states stand at."""
        if states not in self._named:
            ends = [state >> 8 for state in states if state in self._final]
            self._named[states] = min(ends) if ends else None
        return self._named[states]

    def _wanted_by(self, states: _States) -> tuple[tuple[str, bool], ...] | None:
        """The member each path these states stand at must still meet below to name a value
        there (with whether an escape could spell it), or None where a path goes on by an
        element or any child, which every value may be."""
        if states not in self._wanted:
            wanted: list[tuple[str, bool]] | None = []
            for state in states:
                steps = self._steps[state >> 8]
                if (state & 0xFF) == len(steps):
                    continue
                key = steps[-1].key
                if key is None:
                    wanted = None
                    break
                assert wanted is not None
                wanted.append((key, _escapable(key)))
            self._wanted[states] = None if wanted is None else tuple(dict.fromkeys(wanted))
        return self._wanted[states]

    def _cannot_hold(self, text: str, i: int, states: _States) -> int:
        """Where the value at ``i`` ends, if nothing in it can be what the paths look for (none
        of the members they still need is in its text, nor an escape that could spell one); else
        -1, or -2 when it is nested deeper than the C scanner goes. The value is checked to be
        JSON, by the C scanner, once."""
        wanted = self._wanted_by(states)
        if wanted is None:
            return -1
        try:
            end = int(_scan(text, i)[1])
        except RecursionError:
            return -2
        except (StopIteration, ValueError):
            self._skip(text, i)  # raises, saying where
            raise
        if text.find("\\", i, end) != -1 and (text.find("\\u", i, end) != -1 or any(spelled for _, spelled in wanted)):
            return -1
        return -1 if any(text.find(key, i, end) != -1 for key, _ in wanted) else end

    def _skip(self, text: str, i: int) -> int:
        """The end of the value at ``i``, checked to be JSON."""
        try:
            return int(_scan(text, i)[1])
        except StopIteration as stop:
            raise _Broken(int(stop.value), cut_short=int(stop.value) >= len(text)) from None
        except json.JSONDecodeError as error:
            raise _Broken(error.pos, cut_short=error.pos >= len(text) or "Unterminated" in error.msg) from None
        except (ValueError, RecursionError):  # NaN or Infinity (no position said), or nested deeper
            return _validate(text, i)  # than the C scanner goes: checked without recursion, saying where

    def _walk(
        self, text: str, i: int, states: _States, rule: _Rule | None, tally: _Tally, name: str
    ) -> tuple[int, list[_Edit]]:
        """Walk the value at ``text[i]`` (states: where the paths stand at it; rule: how the
        record is read there, None for a payload); return where it ends and the edits."""
        edits: list[_Edit] = []
        stack: list[_Frame] = []
        taken: int | None = None
        probing = True
        """Whether to ask the C scanner if a value can hold what the paths look for: not once it
        has found the text nested deeper than it goes (each ask would scan that deep again)."""
        while True:
            # -- a value starts at i
            kind = _KINDS.get(text[i : i + 1])
            if kind is None:
                raise _Broken(i, cut_short=i >= len(text))
            slot, shape = _OPEN, None
            if rule is not None:
                slot, shape = rule.get(kind, (_KEEP if kind == "z" else _OPEN, None))
            named = taken if taken is not None else (self._named_by(states) if states and slot != _KEEP else None)
            frame: _Frame | None = None
            if named is not None and slot in (_OPEN, _BYTES):
                end = self._replace(text, i, kind, slot, named, tally, edits, name)
            elif named is not None and slot == _WITHIN:
                frame = _Frame("}" if kind == "o" else "]", frozenset(), shape, named)
            elif kind in "oa" and states and slot != _KEEP:
                # Not asked of the record itself: its bytes were found to hold what is looked for.
                end = self._cannot_hold(text, i, states) if probing and stack else -1
                if end < 0:
                    probing = probing and end == -1
                    frame = _Frame("}" if kind == "o" else "]", states, shape, None)
            elif kind == "s" and states and slot != _BYTES:
                # A kept string is looked into too: one that holds JSON, or prose quoting JSON, is
                # no name or time the reading can use, and it may hold what the paths name.
                end = self._string(text, i, states, tally, edits, name)
            else:
                end = self._skip(text, i)
            if frame is not None:
                j = i + 1
                if text[j : j + 1] in _WS:
                    j = _skip_ws(text, j)
                if text[j : j + 1] == frame.closing:
                    end = j + 1
                else:
                    stack.append(frame)
                    i, states, rule, taken = self._first_child(text, j, frame)
                    continue
            # -- the value ended at `end`: on to the next one, closing what it ends
            while True:
                if not stack:
                    return end, edits
                frame = stack[-1]
                j = end
                if text[j : j + 1] in _WS:
                    j = _skip_ws(text, j)
                separator = text[j : j + 1]
                if separator == ",":
                    frame.index += 1
                    j += 1
                    if text[j : j + 1] in _WS:
                        j = _skip_ws(text, j)
                    i, states, rule, taken = self._first_child(text, j, frame)
                    break
                if separator == frame.closing:
                    stack.pop()
                    end = j + 1
                    continue
                raise _Broken(j, cut_short=j >= len(text))

    def _first_child(self, text: str, i: int, frame: _Frame) -> tuple[int, _States, _Rule | None, int | None]:
        """The next child of ``frame`` starting at ``i`` (a member's name, or an element): where
        its value starts, the paths' states there, its rule, and the path that took it, if any."""
        label: str | int
        if frame.closing == "}":
            if text[i : i + 1] != '"':
                raise _Broken(i, cut_short=i >= len(text))
            try:
                key, i = scanstring(text, i + 1, True)
            except ValueError:
                raise _Broken(i, cut_short=True) from None
            if text[i : i + 1] in _WS:
                i = _skip_ws(text, i)
            if text[i : i + 1] != ":":
                raise _Broken(i, cut_short=i >= len(text))
            i += 1
            if text[i : i + 1] in _WS:
                i = _skip_ws(text, i)
            rule = frame.shape.members.get(key) if frame.shape is not None else None
            label = key
        else:
            label = frame.index
            rule = frame.shape.items if frame.shape is not None else None
        states = self._advance(frame.states, label) if frame.taken is None and frame.states else frozenset()
        return i, states, rule, frame.taken

    def _replace(
        self, text: str, i: int, kind: str, slot: int, path: int, tally: _Tally, edits: list[_Edit], name: str
    ) -> int:
        if kind == "s":
            try:
                value, end = scanstring(text, i + 1, True)
            except ValueError:
                raise _Broken(i, cut_short=True) from None
            if name and value and _segment_of(value, name):
                tally.in_name[self.paths[path].text] = None
        else:
            end = self._skip(text, i)
        edits.append((i, end, _MARKER_BASE64 if slot == _BYTES else _MARKER_JSON))
        tally.counts[self.paths[path].text] += 1
        return int(end)

    def _string(self, text: str, i: int, states: _States, tally: _Tally, edits: list[_Edit], name: str) -> int:
        """The string at ``i``, walked as the JSON it holds when it holds an object or array, or
        the JSON it quotes where it is prose."""
        try:
            value, end = scanstring(text, i + 1, True)
        except ValueError:
            raise _Broken(i, cut_short=True) from None
        if ("{" not in value and "[" not in value) or self._cannot_hold(text, i, states) >= 0:
            return int(end)
        start = _skip_ws(value, 1 if value.startswith(_BOM) else 0)
        inner = _Tally()
        try:
            # Recursion only from one string to a string inside it: each level escapes the one
            # inside again, doubling its backslashes, so a record holds a few dozen at most.
            if value[start : start + 1] not in ("{", "["):
                raise _Broken(start)
            inner_end, inner_edits = self._walk(value, start, states, None, inner, name)
            self._check_end(value, inner_end)
        except _Broken:
            inner_edits = self._quoted(value, states, inner, name)  # prose, or text that only looks like JSON
        if inner_edits:
            tally.merge(inner)
            edits.append((i, end, _restyled(text[i:end], value, _spliced(value, inner_edits))))
        return int(end)

    def _quoted(self, value: str, states: _States, tally: _Tally, name: str) -> list[_Edit]:
        """The edits of the JSON objects and arrays prose quotes (``the API said {"token": "…"}``),
        each walked as the string's own JSON would be; the text between them is kept."""
        edits: list[_Edit] = []
        at = 0
        while (found := _OPENING.search(value, at)) is not None:
            attempt = _Tally()
            try:
                stop, quoted = self._walk(value, found.start(), states, None, attempt, name)
            except _Broken:
                at = found.start() + 1
                continue
            tally.merge(attempt)
            edits += quoted
            at = stop
        return edits


def _escapable(key: str) -> bool:
    """Whether a short escape (``\\"``, ``\\\\``, ``\\/``, ``\\n``...) could spell a character of ``key``."""
    return any(c in '"\\/' or c < " " for c in key)


def _spliced(text: str, edits: Sequence[_Edit]) -> str:
    out, last = [], 0
    for begin, finish, replacement in edits:
        out.append(text[last:begin])
        out.append(replacement)
        last = finish
    out.append(text[last:])
    return "".join(out)


def _restyled(literal: str, before: str, after: str) -> str:
    """``after`` as a JSON string, written as ``literal`` (the string ``before``) was: with
    non-ASCII characters escaped if they were, and ``<``, ``>``, ``&`` if they were (as Go's
    HTML-escaping ``json.Marshal`` wrote them before v0.7); otherwise as the codec writes strings."""
    after = _SURROGATES.sub("\ufffd", after)
    if literal.isascii() and not before.isascii():
        written = json.encoder.encode_basestring_ascii(after)
    else:
        written = encode_string(after).decode()
    if any(c in before for c in "<>&") and not any(c in literal for c in "<>&"):
        written = written.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return str(written)


def _segment_of(value: str, name: str) -> bool:
    """Whether ``value`` is a whole segment of the step name (between ``:``, ``/`` or ``>``), as
    written or as a key encodes an id."""
    spellings = [value]
    if "%" in name or "~" in name:
        spellings.append(encode_id(value))
    for spelled in spellings:
        at = name.find(spelled)
        while at != -1:
            after = at + len(spelled)
            if (at == 0 or name[at - 1] in ":/>") and (after == len(name) or name[after] in ":/>"):
                return True
            at = name.find(spelled, at + 1)
    return False


def _is_tombstone(data: bytes) -> bool:
    try:
        return decode_record(data).tombstone is not None
    except CorruptRecordError:
        return False


def _validate(text: str, i: int) -> int:
    """The end of the JSON value at ``i``, checked without recursion (for nesting deeper than
    the C scanner goes)."""
    closings: list[str] = []
    while True:
        kind = _KINDS.get(text[i : i + 1])
        if kind is None:
            raise _Broken(i, cut_short=i >= len(text))
        if kind in "oa":
            closing = "}" if kind == "o" else "]"
            j = _skip_ws(text, i + 1)
            if text[j : j + 1] == closing:
                end = j + 1
            else:
                closings.append(closing)
                i = _member_value(text, j) if closing == "}" else j
                continue
        elif kind == "s":
            try:
                end = int(scanstring(text, i + 1, True)[1])
            except ValueError:
                raise _Broken(i, cut_short=True) from None
        elif kind == "n":
            number = _NUMBER.match(text, i)
            if number is None:
                raise _Broken(i)
            end = number.end()
        else:
            word = {"t": "true", "f": "false", "n": "null"}[text[i]]
            if not text.startswith(word, i):
                raise _Broken(i, cut_short=len(text) - i < len(word))
            end = i + len(word)
        while True:
            if not closings:
                return end
            j = _skip_ws(text, end)
            separator = text[j : j + 1]
            if separator == ",":
                j = _skip_ws(text, j + 1)
                i = _member_value(text, j) if closings[-1] == "}" else j
                break
            if separator == closings[-1]:
                closings.pop()
                end = j + 1
                continue
            raise _Broken(j, cut_short=j >= len(text))


def _member_value(text: str, i: int) -> int:
    """Where the value of the member whose name starts at ``i`` starts."""
    if text[i : i + 1] != '"':
        raise _Broken(i, cut_short=i >= len(text))
    try:
        i = int(scanstring(text, i + 1, True)[1])
    except ValueError:
        raise _Broken(i, cut_short=True) from None
    i = _skip_ws(text, i)
    if text[i : i + 1] != ":":
        raise _Broken(i, cut_short=i >= len(text))
    return _skip_ws(text, i + 1)


def _why(text: str, broken: _Broken) -> str:
    """Why the bytes are not JSON, by byte offset, never quoting them (they may be a secret)."""
    size = len(text.encode("utf-8", "surrogateescape"))
    at = len(text[: broken.at].encode("utf-8", "surrogateescape"))
    if broken.cut_short:
        return f"not JSON: cut short at byte {at} of {size}"
    return f"not JSON at byte {at} of {size}"


#: What ``opaque_values`` counts, by what it is: a part's member redaction cannot look inside.
_OPAQUE = (("image", "data", "image data (base64)"), ("reasoning", "redacted", "encrypted reasoning"))


def opaque_values(data: bytes) -> Counter[str]:
    """What ``data`` holds that redaction cannot look inside, by what it is: an image part's
    ``data`` (base64) and a reasoning part's encrypted ``redacted`` block, wherever a message
    part is (a model turn's, a ``run:start`` input's), unless the marker replaced them."""
    counts: Counter[str] = Counter()
    if b'"data"' not in data and b'"redacted"' not in data:
        return counts
    try:
        stack: list[Any] = [json.loads(data.decode("utf-8", "surrogateescape").lstrip(_BOM))]
    except (ValueError, RecursionError):
        return counts
    while stack:  # a stack of its own: a value nested deeper than Python recurses is no error here
        value = stack.pop()
        if isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, dict):
            for part_type, member, what in _OPAQUE:
                held = value.get(member)
                if (
                    value.get("type") == part_type
                    and isinstance(held, str)
                    and held not in ("", MARKER, _MARKER_BASE64[1:-1])
                ):
                    counts[what] += 1
            stack.extend(value.values())
    return counts
