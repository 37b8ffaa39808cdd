"""Run summaries: what a run's status needs of its entries, gathered by the store in one pass.

The one place a store looks inside the bytes it keeps. A finished run's status needs only its
length, its model turns, its token count, its header and its first end marker; a store that
``IMPLEMENTS_SUMMARIES`` computes those on the database side, for a page of runs in one query, so
a store of 100,000 runs is judged without decoding a million records. ``summarize`` is the
reference every store's query is tested against (``tests/stores/test_summaries.py``).

A summary is only trusted when no entry is ``suspect``: an entry that may not decode (not a JSON
object, a name other than its row's, a member of the wrong type, a redaction tombstone, a damaged
row) sends the run to the exact rules, which decode it and say why. A store may be more cautious
than ``summarize`` (call an entry suspect that it trusts, to check less per entry on the database
side), never less: suspect only costs the run a slower, exact read.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from agenttui.stores.base import Entry

#: The members of a record's usage; each an integer when present (docs/journal-format.md). One of
#: 19 digits or more is left to the exact rules (SQLite's JSON would read it as a real).
USAGE_MEMBERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
#: How a redaction tombstone's bytes begin; its record is read by the exact rules.
TOMBSTONE_PREFIX = b'{"redacted":'


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run's entries, summed up by the store."""

    run_id: str
    steps: int
    turns: int
    """Entries whose record's ``kind`` is ``model`` (read only when no entry is ``suspect``)."""
    tokens: int
    """Every record's usage, summed (read only when no entry is ``suspect``)."""
    first: Entry
    """The first entry in commit order: a current journal's header."""
    end: Entry | None
    """The first end marker in commit order (of the names the caller gave), or None."""
    suspect: bool
    """Some entry may not decode: only the exact rules can say what the run is."""


def summarize(run_id: str, entries: Sequence[Entry], end_markers: Collection[str]) -> RunSummary | None:
    """The summary of a run whose entries are given in commit order (None for no entries)."""
    if not entries:
        return None
    turns = tokens = 0
    end = None
    suspect = False
    for entry in entries:
        if end is None and entry.name in end_markers:
            end = entry
        facts = _facts(entry)
        if facts is None:
            suspect = True
            continue
        is_model, usage = facts
        turns += is_model
        tokens += usage
    return RunSummary(run_id, len(entries), turns, tokens, entries[0], end, suspect)


def _facts(entry: Entry) -> tuple[bool, int] | None:
    """(is it a model record, its usage), or None when the entry is suspect."""
    if entry.damage or entry.data.startswith(TOMBSTONE_PREFIX):
        return None
    try:  # decoded as the journal's codec decodes it: bytes that are not UTF-8 stay as they are
        record = json.loads(entry.data.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict) or record.get("name") != entry.name:
        return None
    kind = record.get("kind")
    usage = record.get("usage")
    if (kind is not None and not isinstance(kind, str)) or (usage is not None and not isinstance(usage, dict)):
        return None
    counts = [(usage or {}).get(member) for member in USAGE_MEMBERS]
    if any(count is not None and (type(count) is not int or abs(count) >= 10**18) for count in counts):
        return None
    return kind == "model", sum(count or 0 for count in counts)
