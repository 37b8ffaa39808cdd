"""The journal core: records, the canonical codec, step keys and the Journal facade.

Every name is imported when first asked for (``agenttui.lazy``), not with the package: the runs
list's first screen reads step keys and shows text made inert, and importing those must not
bring the records, the codec and the Journal with them (benchmarks/startup.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agenttui.lazy import lazy_names

if TYPE_CHECKING:
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

LAZY = {
    "codec": ("decode_json", "decode_record", "encode_header", "encode_record"),
    "journal": ("Journal", "RunJournal", "decode_entry"),
    "record": (
        "HEADER_NAME", "JOURNAL_FORMAT", "ApprovalPolicy", "ImagePart", "Message", "ModelInfo", "Part",
        "ReasoningPart", "Record", "Safety", "StepKind", "TextPart", "Tombstone", "ToolResultPart", "ToolUsePart",
        "UnknownPart", "Usage",
    ),
}  # fmt: skip
"""The modules imported when one of their names is first asked for, and those names."""

__all__ = [
    "HEADER_NAME", "JOURNAL_FORMAT", "ApprovalPolicy", "ImagePart", "Journal", "Message",
    "ModelInfo", "Part", "ReasoningPart", "Record", "RunJournal", "Safety", "StepKind", "TextPart",
    "Tombstone", "ToolResultPart", "ToolUsePart", "UnknownPart", "Usage", "decode_entry",
    "decode_json", "decode_record", "encode_header", "encode_record",
]  # fmt: skip

__getattr__ = lazy_names(__name__, LAZY)
