"""The journal core: records, the canonical codec, step keys and the Journal facade."""

from agenttui.journal.codec import decode_json, decode_record, encode_header, encode_record
from agenttui.journal.journal import Journal, RunJournal, decode_entry
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

__all__ = [
    "HEADER_NAME", "JOURNAL_FORMAT", "ApprovalPolicy", "ImagePart", "Journal", "Message",
    "ModelInfo", "Part", "ReasoningPart", "Record", "RunJournal", "Safety", "StepKind", "TextPart",
    "Tombstone", "ToolResultPart", "ToolUsePart", "UnknownPart", "Usage", "decode_entry",
    "decode_json", "decode_record", "encode_header", "encode_record",
]  # fmt: skip
