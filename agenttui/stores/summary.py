"""Run summaries: what a run's status needs of its entries, gathered by the store in one pass.

The one place a store looks inside the bytes it keeps. A finished run's status needs only its
length, its model turns, its token count, its header and its first end marker; a store that
``IMPLEMENTS_SUMMARIES`` computes those on the database side, for a page of runs in one query, so
a store of 100,000 runs is judged without decoding a million records. ``summarize`` is the
reference every store's query is tested against (``tests/stores/test_summaries.py``).

A summary is only trusted when no entry is ``suspect``: an entry that may not decode (not a JSON
object, a name other than its row's, a member of the wrong type, a redaction tombstone, a damaged
row) sends the run to the exact rules, which decode it and say why. An entry *shaped* as the codec
and the Go SDK write a record without usage (``shaped_kind``: its name and kind first, no
``message`` or ``usage`` next, its salt last) is trusted without a parse, so that a tool result
of a megabyte is not parsed to be summed up; what that does not check (damage in its middle, a
duplicate key) is found when the run is opened, by the exact rules (docs/decisions.md, "Run
summaries"). A store may be more cautious than ``summarize`` (call an entry suspect that it
trusts, or parse an entry it trusts by its shape, to check less per entry on the database side),
never less: suspect only costs the run a slower, exact read.

A look at every run of a large store sums them up in one pass over the journal in commit order
instead (``Store.sum_up_journal``, where ``IMPLEMENTS_JOURNAL_PASS``): pages of runs picked by id
read entries scattered across the whole file, one seek each (about half of a first open's time on
100,000 runs), where the pass reads each page of it once. The pass keeps a ``RunTally`` a run
(its counts and the seqs of its header and first end marker), and ``SummedJournal`` makes the
same ``RunSummary`` of it that ``summaries`` would have made when it ran.

A saved what-if fork reads as a fork whatever its end (``runs.forks``), so a summary also says
whether a run may be one (``forked``): its ``run:start`` holds the fork's mark as the codec writes
its name, or it holds a ``fork:origin`` record (what a fork saved before the mark carries). Such a
run is left to the exact rules, which say whether it is; a store may flag more runs, never fewer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agenttui.stores.base import Entry

if TYPE_CHECKING:
    from agenttui.stores.base import Store

#: The members of a record's usage; each an integer when present (docs/journal-format.md). One of
#: 19 digits or more is left to the exact rules (SQLite's JSON would read it as a real).
USAGE_MEMBERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
#: How a redaction tombstone's bytes begin; its record is read by the exact rules.
TOMBSTONE_PREFIX = b'{"redacted":'
#: How every record written since v0.7 ends, by the Go SDK or by agenttui's codec: its salt, 32
#: bytes in base64, is its last member. A record cut short cannot end so.
SALT_MEMBER = b',"salt":"'
SALT_CHARACTERS = 44
SALT_TAIL = len(SALT_MEMBER) + SALT_CHARACTERS + len(b'"}')
#: What may follow a shaped record's kind: its usage comes right after ``kind`` and ``message``
#: in the member order of the codec and the SDK, so a record with neither there has no usage.
USAGE_AHEAD = (b',"message":', b',"usage":')
#: The ``run:start`` record's name, and the member of its ``ext`` a saved what-if fork carries
#: (``runs.forks``), written as the codec writes a name: how a summary finds the mark unparsed.
RUN_START = "run:start"
FORK_EXT = "agenttui.fork"
FORK_EXT_BYTES = b'"agenttui.fork"'
#: The value record every saved fork holds, the only mark of one saved before ``FORK_EXT``.
FORK_ORIGIN = "fork:origin"
_KIND_TEXT = re.compile(rb'[A-Za-z0-9_]*"')
_SURROGATE = re.compile("[\ud800-\udfff]")
_LINE_SEPARATORS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029"})


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run's entries, summed up by the store."""

    run_id: str
    steps: int
    last_seq: int | None
    """The highest seq of its entries: with ``steps``, what says which entries were summed (an
    append-only journal only adds entries, each past the last). None where a seq is not a number
    (a foreign writer's table): such a run is never kept in a status index."""
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
    forked: bool = False
    """The run may be a saved what-if fork (``may_mark_a_fork``): only the exact rules can say."""


@dataclass(frozen=True, slots=True)
class RunTally:
    """What a pass over part of a journal summed up of one run's entries in it: a summary
    without its header's and end marker's bytes, only their seqs (a few dozen bytes a run)."""

    steps: int
    last_seq: int
    turns: int
    tokens: int
    suspect: bool
    forked: bool
    first_seq: int
    end_seq: int | None

    def then(self, later: RunTally) -> RunTally:
        """This tally and that of the run's entries later in the journal, as one."""
        return RunTally(
            self.steps + later.steps,
            later.last_seq,
            self.turns + later.turns,
            self.tokens + later.tokens,
            self.suspect or later.suspect,
            self.forked or later.forked,
            self.first_seq,
            later.end_seq if self.end_seq is None else self.end_seq,
        )


class SummedJournal:
    """Every run of a journal summed up by one pass over it (``Store.sum_up_journal``): a
    drop-in for ``store.summaries`` on the pages of a look at every run.

    ``summaries`` makes each run's summary of its tally as the store's own query would have at
    the pass's end (a run written since is summed up as it was then: its summary says so, as any
    summary does, by the entries it counted); it reads the headers and end markers by seq, a
    page at a time. A run the pass did not meet (new since) is asked of the store."""

    def __init__(
        self,
        store: Store,
        end_markers: Collection[str],
        tallies: Mapping[str, RunTally],
        entries_at: Callable[[Sequence[int]], Awaitable[Mapping[int, Entry]]],
        last_seq: int | None,
    ) -> None:
        self.last_seq = last_seq
        """The last entry's seq when the pass began: it summed every entry up to it (None: none)."""
        self._store = store
        self._end_markers = end_markers
        self._tallies = tallies
        self._entries_at = entries_at

    def __len__(self) -> int:
        return len(self._tallies)

    def reached(self, seq: int) -> bool:
        """Whether the pass summed every entry up to ``seq`` up."""
        return self.last_seq is not None and seq <= self.last_seq

    async def summaries(self, run_ids: Sequence[str]) -> list[RunSummary]:
        """What ``store.summaries(run_ids, end_markers)`` says, as of the pass."""
        tallied = [(run_id, tally) for run_id in run_ids if (tally := self._tallies.get(run_id)) is not None]
        entries = await self._entries_at(
            [seq for _, t in tallied for seq in (t.first_seq, t.end_seq) if seq is not None]
        )
        summed, others = [], [run_id for run_id in run_ids if run_id not in self._tallies]
        for run_id, t in tallied:
            first, end = entries.get(t.first_seq), None if t.end_seq is None else entries.get(t.end_seq)
            if first is None or (t.end_seq is not None and end is None):  # gone since: the journal was cut back
                others.append(run_id)
                continue
            summed.append(RunSummary(run_id, t.steps, t.last_seq, t.turns, t.tokens, first, end, t.suspect, t.forked))
        if others:
            summed += await self._store.summaries(others, self._end_markers)
        return summed


def summarize(run_id: str, entries: Sequence[Entry], end_markers: Collection[str]) -> RunSummary | None:
    """The summary of a run whose entries are given in commit order (None for no entries)."""
    if not entries:
        return None
    turns = tokens = 0
    end = None
    suspect = forked = False
    for entry in entries:
        if end is None and entry.name in end_markers:
            end = entry
        forked = forked or may_mark_a_fork(entry)
        facts = _facts(entry)
        if facts is None:
            suspect = True
            continue
        is_model, usage = facts
        turns += is_model
        tokens += usage
    return RunSummary(run_id, len(entries), entries[-1].seq, turns, tokens, entries[0], end, suspect, forked)


def may_mark_a_fork(entry: Entry) -> bool:
    """Whether the entry may make its run a saved what-if fork: a ``fork:origin`` record, or a
    ``run:start`` whose bytes hold the fork's mark. The exact rules read the mark only where these
    bytes are (``runs.forks``), so no fork is missed; a damaged row's run is read whole anyway."""
    if entry.damage:
        return False
    return entry.name == FORK_ORIGIN or (entry.name == RUN_START and FORK_EXT_BYTES in entry.data)


def _facts(entry: Entry) -> tuple[bool, int] | None:
    """(is it a model record, its usage), or None when the entry is suspect."""
    if entry.damage:
        return None
    kind = shaped_kind(entry.data, entry.name)
    if kind is not None:
        return kind == b"model", 0
    if entry.data.startswith(TOMBSTONE_PREFIX):
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


def shaped_kind(data: bytes, name: str) -> bytes | None:
    """The kind text of a record of this name that is *shaped*, trusted without a parse; None
    for any other bytes (docs/decisions.md, "Run summaries").

    Shaped bytes begin as the codec writes a record named ``name`` whose kind is ASCII letters,
    digits and underscores (``{"name":<name>,"kind":"<kind>"``), go on with neither a
    ``message`` nor a ``usage`` (so the record has no usage), and end with a salt
    (``,"salt":"<44 characters>"}``)."""
    if data[-SALT_TAIL : -SALT_TAIL + len(SALT_MEMBER)] != SALT_MEMBER or not data.endswith(b'"}'):
        return None
    head = record_head(name)
    if head is None or not data.startswith(head):
        return None
    kind = _KIND_TEXT.match(data, len(head))
    if kind is None or data.startswith(USAGE_AHEAD, kind.end()):
        return None
    return data[len(head) : kind.end() - 1]


def record_head(name: str) -> bytes | None:
    """How the codec begins a record named ``name``, up to its kind's text
    (``{"name":<name>,"kind":"``); None for a name the codec cannot write as itself (a lone
    surrogate becomes U+FFFD).

    The name is a JSON string as ``codec.encode_string`` writes it (Go's encoder with HTML
    escaping off): the store sits below the journal's codec, so its three steps are repeated
    here, and ``tests/stores/test_summaries.py`` holds the two equal."""
    if name.isascii() and name.isprintable() and '"' not in name and "\\" not in name:
        return b'{"name":"' + name.encode() + b'","kind":"'  # a name the codec writes as it is
    if _SURROGATE.search(name):
        return None
    quoted = json.encoder.encode_basestring(name).translate(_LINE_SEPARATORS)
    return b'{"name":' + quoted.encode() + b',"kind":"'
