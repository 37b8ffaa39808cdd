"""Journals written before v0.8, replayed: their keys as the loop writes them, and back again.

Before v0.8 a run recorded no ``run:start`` (so no input) and kept a call's result under its raw
tool-use id (``c1``), its attempt marker under ``attempt:<id>`` and its decision under
``approval:<id>`` (journal format, section 3.4). The agent loop writes the newest keys
(``tool:<enc id>``, ``attempt:tool:<enc id>``, ``approval:<enc id>``), so a replay of such a
journal feeds the loop the recording under the loop's keys, and reads what the loop wrote back
under the recording's, where the two are compared.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from agenttui.journal import keys
from agenttui.journal.codec import encode_record
from agenttui.journal.record import Record, StepKind


def holds_no_input(recording: Sequence[Record]) -> bool:
    """Whether the run's journal was written before v0.8: headerless, with no ``run:start``, so
    a replay must be given the input the run started with."""
    return (
        bool(recording)
        and not recording[0].is_header
        and not recording[0].unreadable
        and all(r.name != keys.RUN_START for r in recording)
    )


@dataclass(frozen=True)
class LegacyKeys:
    """The recording's raw-id keys and the loop's keys for the same records (empty for a journal
    written since v0.8, whose keys are the loop's)."""

    to_loop: dict[str, str] = field(default_factory=dict)
    to_recording: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, recording: Sequence[Record]) -> LegacyKeys:
        if not holds_no_input(recording):
            return cls()
        calls = {
            call.id
            for r in recording
            if r.kind == StepKind.MODEL and r.message is not None
            for call in r.message.tool_uses
        }
        to_loop: dict[str, str] = {}
        for record in recording:
            name = record.name
            prefix, _, rest = name.partition(":")
            if name in calls:
                to_loop[name] = keys.tool_key(name)
            elif prefix == "attempt" and rest in calls:
                to_loop[name] = keys.attempt_key(rest)
            elif prefix == "approval" and rest in calls:
                to_loop[name] = keys.approval_key(rest)
        to_loop = {old: new for old, new in to_loop.items() if old != new}
        return cls(to_loop, {new: old for old, new in to_loop.items()})

    def __bool__(self) -> bool:
        return bool(self.to_loop)

    def for_loop(self, records: Sequence[Record]) -> list[Record]:
        """``records`` under the keys the loop reads and writes."""
        return [_renamed(r, self.to_loop[r.name]) if r.name in self.to_loop else r for r in records]

    def as_recorded(self, record: Record) -> Record:
        """A record the loop wrote, under the recording's key for it."""
        name = self.to_recording.get(record.name)
        return record if name is None else _renamed(record, name)


def _renamed(record: Record, name: str) -> Record:
    """``record`` under another key, its bytes re-encoded to say so (a tombstone names nothing)."""
    renamed = dataclasses.replace(record, name=name)
    if record.tombstone is not None:
        return renamed
    return dataclasses.replace(renamed, raw=encode_record(renamed))
