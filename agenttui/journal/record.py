"""Journal records and their payloads: step kinds, messages, parts, usage (format sections 1-2)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

#: The format tag agenttui writes and the set it reads (section 1.5).
JOURNAL_FORMAT = "bide.journal.v1-dev"
SUPPORTED_FORMATS = frozenset({JOURNAL_FORMAT})
HEADER_NAME = "@journal"


class StepKind(enum.StrEnum):
    """The known step kinds. ``Record.kind`` is a plain str, so unknown kinds survive a read."""

    MODEL = "model"
    TOOL_RESULT = "tool_result"
    VALUE = "value"
    SIGNAL = "signal"
    APPROVAL = "approval"
    ATTEMPT = "attempt"
    SAGA_FAIL = "saga_fail"
    NOT_STARTED = "not_started"
    HEADER = "header"


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one model call; the three input counts are disjoint (section 2.3)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def __bool__(self) -> bool:
        return any((self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens))

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


# -- message parts (section 2.2) -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningPart:
    text: str
    signature: str = ""
    redacted: str = ""


@dataclass(frozen=True, slots=True)
class ToolUsePart:
    id: str
    name: str
    args: bytes | None = None
    """The call's arguments as raw JSON, kept byte for byte."""
    signature: str = ""


@dataclass(frozen=True, slots=True)
class ToolResultPart:
    tool_use_id: str
    result: bytes | None = None
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ImagePart:
    mime: str = ""
    data: bytes = b""
    url: str = ""


@dataclass(frozen=True, slots=True)
class UnknownPart:
    """A part whose ``type`` agenttui does not know; kept as its raw JSON so it re-encodes verbatim."""

    type: str
    raw: bytes


Part: TypeAlias = TextPart | ReasoningPart | ToolUsePart | ToolResultPart | ImagePart | UnknownPart


@dataclass(frozen=True, slots=True)
class Message:
    """A conversation message: a role and its parts (section 2.1)."""

    role: str
    parts: tuple[Part, ...] = ()

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", (TextPart(text),))

    @classmethod
    def assistant(cls, *parts: Part) -> Message:
        return cls("assistant", parts)

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_uses(self) -> tuple[ToolUsePart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolUsePart))


# -- other record members ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelInfo:
    provider: str = ""
    model: str = ""
    response_format: str = ""

    def __bool__(self) -> bool:
        return bool(self.provider or self.model or self.response_format)


@dataclass(frozen=True, slots=True)
class Safety:
    """A tool's declared safety, as recorded on its results (section 1.2, member 21)."""

    read_only: bool = False
    idempotent: bool = False

    def __bool__(self) -> bool:
        return self.read_only or self.idempotent


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """The approval gate a tool ran under: the single gate, or m-of-n approvers."""

    single: bool = False
    need: int = 0
    approvers: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.single or bool(self.need) or bool(self.approvers)


@dataclass(frozen=True, slots=True)
class Tombstone:
    """A redaction tombstone: the row's bytes were replaced (section 1.4)."""

    leaf_hash: str
    at_ms: int


@dataclass(frozen=True, slots=True)
class Record:
    """One journal record, every member of section 1.2 in encoding order.

    Members at their zero value are omitted when encoded, except ``usage``, ``discarded_usage``,
    ``model``, ``safety`` and ``approval``: pointers in Go, they are omitted only when None, and a
    zero one is written as ``{}``. ``result`` and ``evidence`` are raw JSON bytes, kept as
    stored. The last three attributes are not encoded: ``tombstone`` marks a redacted row,
    ``unreadable`` says why stored bytes could not be decoded, and ``raw`` holds the stored bytes
    a record was decoded from (authoritative for audit).
    """

    name: str
    kind: str
    message: Message | None = None
    usage: Usage | None = None
    discarded_usage: Usage | None = None
    finish: str = ""
    raw_finish: str = ""
    model: ModelInfo | None = None
    prompt_digest: str = ""
    tools_digest: str = ""
    tool_use_id: str = ""
    result: bytes | None = None
    is_error: bool = False
    approved: bool = False
    approver: str = ""
    approver_alg: str = ""
    signature: bytes = b""
    attempted_at: int = 0
    """Unix milliseconds."""
    reconciled: bool = False
    read_only: bool = False
    """v0.8 only (``safety`` replaced it): the tool result's call ran read-only."""
    outcome_unknown: bool = False
    safety: Safety | None = None
    approval: ApprovalPolicy | None = None
    evidence: bytes | None = None
    format: str = ""
    claim: str = ""
    salt: bytes = b""
    tombstone: Tombstone | None = field(default=None, compare=False)
    unreadable: str = field(default="", compare=False)
    raw: bytes = field(default=b"", compare=False, repr=False)

    @property
    def is_header(self) -> bool:
        return self.name == HEADER_NAME and self.kind == StepKind.HEADER


#: Every member of a record, in order (``with_members``).
_MEMBERS = tuple(member.name for member in fields(Record))


def with_members(record: Record, **changes: Any) -> Record:
    """``dataclasses.replace(record, **changes)`` in half its time, for the journal's hot paths
    (each record a run writes, each model turn a replay compares): ``replace`` looks every member
    up in ``fields()`` and passes it to ``__init__`` by keyword. A record has no
    ``__post_init__`` to run, so its members are copied as they are."""
    if not changes.keys() <= _MEMBER_SET:
        raise TypeError(f"a record has no member {sorted(changes.keys() - _MEMBER_SET)[0]!r}")
    copy = object.__new__(Record)
    set_member = object.__setattr__  # the way a frozen dataclass's own __init__ sets its members
    for member in _MEMBERS:
        set_member(copy, member, changes[member] if member in changes else getattr(record, member))
    return copy


_MEMBER_SET = frozenset(_MEMBERS)
