"""Replay verdicts: one vocabulary for the CLI, the TUI and ``--json``.

A replay of a run either matches its recording to the end, matches up to where the recording
stops (the run paused, halted, stalled, was cancelled or is still in flight), diverged at one
record, or was refused before it started (the run is not something the agent loop re-drives).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass

from agenttui.agent.runstart import RunStart
from agenttui.journal import keys
from agenttui.journal.record import Record, StepKind, with_members
from agenttui.render.diff import DiffRow, RowState
from agenttui.replay.legacy import holds_no_input

#: The members of a model turn's record that name the request it answered, and what each is a
#: digest of. A replay never diffs them with the records: it reports a change as a ``RequestChange``.
REQUEST_DIGESTS = {"prompt_digest": "the prompt", "tools_digest": "the tool list"}


class VerdictKind(enum.StrEnum):
    MATCHES = "matches"
    """The replay reproduced the whole recording, to its end."""
    MATCHES_SO_FAR = "matches-so-far"
    """The replay reproduced the recording up to where the recording stops: the run is unfinished."""
    DIVERGED = "diverged"
    REFUSED = "refused"

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 0 for either match, 3 for a divergence, 2 for a refusal."""
        return {VerdictKind.DIVERGED: 3, VerdictKind.REFUSED: 2}.get(self, 0)


@dataclass(frozen=True, slots=True)
class Divergence:
    """The first record where the replay left the recording, with both sides."""

    index: int
    """The record's position: in the recording (as ``agenttui show`` numbers it), or, for a
    record only the replay wrote, in the replay's journal."""
    name: str
    state: RowState
    reason: str
    recorded: Record | None
    replayed: Record | None

    @classmethod
    def of(cls, row: DiffRow, reason: str = "") -> Divergence:
        index = row.left_index if row.left_index is not None else (row.right_index or 0)
        return cls(index, row.name, row.state, reason or row.reason, row.left, row.right)

    @property
    def where(self) -> str:
        side = "record" if self.recorded is not None else "replayed record"
        return f"{side} {self.index} ({self.name})"

    def kind(self) -> str:
        """What kind of difference it is, in words a person acts on: a different tool called or
        other arguments, another decision about a call, more or fewer turns, another ending."""
        recorded, replayed = self.recorded, self.replayed
        ends = set(keys.END_MARKERS)
        if recorded is not None and replayed is not None:
            if recorded.name in ends or replayed.name in ends:
                return f"the run ends differently: {recorded.name} in the recording, {replayed.name} now"
            if recorded.kind == StepKind.MODEL and replayed.kind == StepKind.MODEL:
                return (
                    _calls_differ(recorded, replayed)
                    or _request_changed(recorded, replayed)
                    or "the model turn differs"
                )
            call = recorded.tool_use_id or replayed.tool_use_id
            if recorded.kind == replayed.kind == StepKind.TOOL_RESULT:
                if replayed.is_error and not recorded.is_error:
                    return f"call {call} fails now where the recording has its result: {_first_line(replayed.result)}"
                if recorded.safety == replayed.safety:
                    return f"another tool result for call {call}: the tool's code answers differently"
            if StepKind.APPROVAL in (recorded.kind, replayed.kind) or recorded.safety != replayed.safety:
                return f"another decision about call {call} (its gate or safety)"
            return f"a different {recorded.kind} record"
        only = recorded if recorded is not None else replayed
        assert only is not None
        side = "the recording has" if recorded is not None else "the replay writes"
        if only.name in ends:
            return f"the run ends differently: {side} {only.name}, the other side does not"
        if only.kind == StepKind.MODEL:
            fewer = "fewer" if recorded is not None else "more"
            return f"{fewer} turns: {side} {only.name}, the other side does not"
        if only.kind in (StepKind.APPROVAL, StepKind.ATTEMPT):
            return f"another decision about call {only.tool_use_id}: {side} {only.name}, the other side does not"
        return f"{side} {only.name}, the other side does not"


@dataclass(frozen=True, slots=True)
class RequestChange:
    """A change a replay tolerates and reports: the agent's prompt or tool list is not the
    recording's (their digests differ), so recorded model outputs were served to a request the
    model never saw. What the code did with them is compared as ever; ``--strict`` fails on it."""

    member: str
    """``prompt_digest`` or ``tools_digest``."""
    turns: tuple[str, ...]
    """The model turns served to a changed request, in order."""
    first: Divergence
    """The first of them, both sides (what ``--strict`` shows)."""

    def words(self) -> str:
        count = len(self.turns)
        span = self.turns[0] if count == 1 else f"{self.turns[0]} to {self.turns[-1]}"
        outputs = "output" if count == 1 else "outputs"
        return (f"{REQUEST_DIGESTS[self.member]} changed since the recording: {count} recorded model {outputs}"
                f" served to a different request ({span})")  # fmt: skip


def without_request_digests(record: Record) -> Record:
    """A model turn with its request's digests blanked, as records are compared (``RequestChange``
    reports them apart); any other record as it is."""
    if record.kind != StepKind.MODEL or not (record.prompt_digest or record.tools_digest):
        return record
    return with_members(record, prompt_digest="", tools_digest="")


def request_changes(recording: Sequence[Record], replayed: Sequence[Record]) -> tuple[RequestChange, ...]:
    """The prompt and tool list changes between a recording and its replay: each member whose
    digest both sides of a model turn record, and differ on."""
    recorded_turns = {r.name: (index, r) for index, r in enumerate(recording) if r.kind == StepKind.MODEL}
    changed: dict[str, list[tuple[int, Record, Record]]] = {}
    for now in replayed:
        if now.kind != StepKind.MODEL or (found := recorded_turns.get(now.name)) is None:
            continue
        index, was = found
        for member in REQUEST_DIGESTS:
            if getattr(was, member) and getattr(now, member) and getattr(was, member) != getattr(now, member):
                changed.setdefault(member, []).append((index, was, now))
    return tuple(RequestChange(member, tuple(was.name for _, was, _ in turns), _first_change(member, *turns[0]))
                 for member, turns in changed.items())  # fmt: skip


def _first_change(member: str, index: int, recorded: Record, replayed: Record) -> Divergence:
    return Divergence(index, recorded.name, RowState.CHANGED, f"{REQUEST_DIGESTS[member]} changed", recorded, replayed)


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: VerdictKind
    reason: str = ""
    """Why it was refused, why it diverged, or what the unfinished recording waits on."""
    stopped: str = ""
    """For ``matches-so-far``: the recording's status where it stops (``awaiting-approval``,
    ``halted``, ``stalled``, ``cancelled``, ``in-flight`` ...)."""
    divergence: Divergence | None = None
    not_compared: tuple[str, ...] = ()
    """Members the replay cannot reproduce and so did not compare (named, never counted): the
    SDK's digests with recorded tools, and the paths a bundle redacted."""
    redacted: tuple[str, ...] = ()
    """Of ``not_compared``, the redaction paths of the bundle the recording comes from, which
    replaced values in this run (``agenttui export --redact``)."""
    served: tuple[str, ...] = ()
    """Your tools that are not read-only, served from the recording instead of running."""
    live: tuple[str, ...] = ()
    """Your tools that are not read-only and ran for real, as a person asked."""
    tombstones: tuple[str, ...] = ()
    """Tool results a redaction replaced in the store (tombstones): fed to the replayed loop as
    the store holds them, since no replay can reproduce what they said."""
    input_given: bool = False
    """The run's input was given to the replay: its journal, written before v0.8, holds none."""
    request_changes: tuple[RequestChange, ...] = ()
    """Tolerated, and reported: the prompt or the tool list is not the recording's."""

    @property
    def exit_code(self) -> int:
        return self.kind.exit_code

    @property
    def matches(self) -> bool:
        return self.kind in (VerdictKind.MATCHES, VerdictKind.MATCHES_SO_FAR)

    def strictly(self) -> Verdict:
        """This verdict under ``--strict``: a replay that matched fails on a changed prompt or tool
        list, at the first turn served to the changed request."""
        if not self.matches or not self.request_changes:
            return self
        changes = sorted(self.request_changes, key=lambda change: change.first.index)
        reason = "; ".join(change.words() for change in changes) + " (--strict)"
        return dataclasses.replace(self, kind=VerdictKind.DIVERGED, reason=reason, divergence=changes[0].first,
                                   stopped="", request_changes=())  # fmt: skip

    def summary(self) -> str:
        """One line saying what the replay found."""
        notes = f"; redacted in the store, fed as recorded: {', '.join(self.tombstones)}" if self.tombstones else ""
        notes += "".join(f"; tolerated: {change.words()}" for change in self.request_changes)
        match self.kind:
            case VerdictKind.MATCHES:
                return "matches the recording to its end" + notes
            case VerdictKind.MATCHES_SO_FAR:
                return (
                    f"matches the recording up to where it stops ({self.stopped}"
                    + (f": {self.reason})" if self.reason else ")")
                    + notes
                )
            case VerdictKind.DIVERGED:
                where = self.divergence.where if self.divergence else "the end"
                return f"diverged at {where}: {self.reason}{notes}"
        return f"refused: {self.reason}"


def refusal_reason(run_id: str, recording: Sequence[Record], *, input_given: bool = False) -> str:
    """Why this run is not one the agent loop can re-drive, or "" when it is.

    Refused: a session journal, a run holding an unreadable record or a redacted one other than
    a tool result, a run with no ``run:start`` (unless it was written before v0.8 and
    ``input_given``), a flow run, and a saga being (or already) rolled back.
    """
    if keys.is_session_journal(run_id):
        return "a session journal: it records a conversation's turns, not an agent loop to re-drive"
    results = fed_results(recording)
    for index, record in enumerate(recording):
        if record.unreadable:
            return f"record {index} ({record.name}) is unreadable: {record.unreadable}"
        if record.tombstone is not None and record.name not in results:
            return (
                f"record {index} ({record.name}) was redacted: only a tool result's redaction can be fed"
                " to the replay as it stands, so the run cannot be re-driven"
            )
    start = next((r for r in recording if r.name == keys.RUN_START), None)
    if start is None:
        if not holds_no_input(recording) or not any(r.kind == StepKind.MODEL for r in recording):
            return "no run:start record: the run never started, so there is no input to re-drive"
        if not input_given:
            return (
                "the journal was written before v0.8 and holds no input (no run:start): "
                "give the run's input with --input to replay it"
            )
    elif RunStart.decode(start.result).kind == "flow":
        return "a flow run: its steps are a plan's nodes, not an agent loop's turns"
    names = {r.name for r in recording}
    if keys.RUN_ABORTED in names:
        return "a saga that rolled back (run:aborted): replay does not run compensations"
    if keys.RUN_CANCEL_REQUESTED in names:
        return "a saga being rolled back (run:cancel-requested): replay does not run compensations"
    if any(r.kind == StepKind.SAGA_FAIL for r in recording):
        return "a saga whose step failed (saga_fail), which rolls it back: replay does not run compensations"
    return ""


def fed_results(recording: Sequence[Record]) -> tuple[str, ...]:
    """The tool results a redaction replaced (tombstones), which a replay feeds to the loop as
    the store holds them: their names, in journal order. A tombstone keeps only its name, so a
    result is known by its key (``tool:<c>``, or the raw call id of a journal before v0.8)."""
    if all(r.tombstone is None for r in recording):
        return ()  # nearly every run: nothing redacted, no call ids to gather
    raw_ids = holds_no_input(recording)
    calls = {
        call.id for r in recording if r.kind == StepKind.MODEL and r.message is not None for call in r.message.tool_uses
    }
    return tuple(
        r.name
        for r in recording
        if r.tombstone is not None and (r.name.startswith(keys.TOOL_PREFIX) or (raw_ids and r.name in calls))
    )


def _calls_differ(recorded: Record, replayed: Record) -> str:
    """How the calls two model turns ask for differ ("" when they do not): another tool, or other
    arguments (the first keys that differ)."""
    import json

    def calls(record: Record) -> list[tuple[str, bytes | None]]:
        return [(call.name, call.args) for call in record.message.tool_uses] if record.message else []

    before, after = calls(recorded), calls(replayed)
    if [name for name, _ in before] != [name for name, _ in after]:
        return (f"a different tool called: {', '.join(n for n, _ in after) or 'none'} where the recording called"
                f" {', '.join(n for n, _ in before) or 'none'}")  # fmt: skip
    for (name, old), (_, new) in zip(before, after, strict=True):
        if old != new:
            try:
                was, now = json.loads(old or b"null"), json.loads(new or b"null")
            except ValueError:
                return f"other arguments to {name}"
            if isinstance(was, dict) and isinstance(now, dict):
                changed = [f"{k}: {was.get(k)!r} → {now.get(k)!r}" for k in sorted(was.keys() | now.keys())
                           if was.get(k) != now.get(k)]  # fmt: skip
                return f"other arguments to {name}: {'; '.join(changed[:3])}"
            return f"other arguments to {name}"
    return ""


def _request_changed(recorded: Record, replayed: Record) -> str:
    """Which of the request's digests two model turns differ on, in words ("" when none)."""
    changed = [what for member, what in REQUEST_DIGESTS.items()
               if getattr(recorded, member) and getattr(replayed, member) and getattr(recorded, member) != getattr(replayed, member)]  # fmt: skip
    if not changed:
        return ""
    return f"{' and '.join(changed)} changed: the recorded output was served to a request the model never saw"


def _first_line(raw: bytes | None) -> str:
    """A raw JSON value's first line, as text (a string unquoted), at most 120 characters."""
    import json

    try:
        value = json.loads(raw or b"null")
    except ValueError:
        value = (raw or b"").decode("utf-8", "replace")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return (text.splitlines() or [""])[0][:120]
