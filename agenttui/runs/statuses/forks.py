"""Saved what-if forks: the mark a saved fork carries, how a reader finds it, and the refusal to
drive or write to one.

A fork (``replay.fork``) is a replay with one output changed; once saved (``replay.save``) it is a
run like any other in the store, and nothing in its records would stop a recover pass or a person
from driving it for real. So a saved fork carries a mark in the one place the format keeps for a
writer's own data: its ``run:start``'s ``ext`` member ``"agenttui.fork"``, ``{"run_id": <the run
forked>, "at": <the step edited>}``, added to the recorded ``run:start`` with every other byte kept
(``marked_start``). A fork saved before the mark existed is known by its ``fork:origin`` record.
``docs/decisions.md`` ("What-if forks") says why, and what the Go SDK makes of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from agenttui.agent.runstart import RunStart
from agenttui.errors import AgentTuiError, CorruptRecordError
from agenttui.journal import keys
from agenttui.journal.codec import decode_json, encode_string, go_json, raw_members
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record, StepKind
from agenttui.stores.base import Store
from agenttui.stores.summary import FORK_EXT, FORK_EXT_BYTES
from agenttui.stores.summary import FORK_ORIGIN as FORK_ORIGIN  # the record's name, for its writer too


@dataclass(frozen=True, slots=True)
class ForkMark:
    """What makes a run a saved what-if fork, as its records say it."""

    of: str
    """The run it forks."""
    at: str
    """The step its edit replaced (``@llm/<n>``, ``tool:<c>``)."""
    outcome: str = ""
    """Where the fork ended when it was saved, in words (its ``fork:origin`` record's)."""
    live_from: str = ""
    """Its first turn that called a model (``@llm/<n>``), where it went live ("": none did)."""

    def describe(self) -> str:
        return f"what-if fork of {self.of} at {self.at}" + (f": {self.outcome}" if self.outcome else "")


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def fork_mark(by_name: Mapping[str, Record]) -> ForkMark | None:
    """The fork mark of a run whose records are given by name, or None for any other run. Pure.

    A run is a fork when its ``run:start`` (a value) holds the mark (``ext`` member
    ``"agenttui.fork"``, an object naming the run forked), found only where its bytes spell the
    member's name as the codec writes it, as a store's summary finds it
    (``stores.summary.may_mark_a_fork``); or, saved before the mark existed, when it holds a
    ``fork:origin`` value naming the run forked and the step edited.
    """
    origin = by_name.get(FORK_ORIGIN)
    said = _origin(origin) if origin is not None and origin.kind == StepKind.VALUE else None
    start = by_name.get(keys.RUN_START)
    if start is not None and start.kind == StepKind.VALUE and start.result and FORK_EXT_BYTES in start.result:
        marked = RunStart.decode(start.result).ext.get(FORK_EXT)
        if isinstance(marked, dict) and (of := _text(marked.get("run_id"))):
            return ForkMark(of, _text(marked.get("at")), *((said.outcome, said.live_from) if said else ("", "")))
    return said


def _origin(record: Record) -> ForkMark | None:
    """The mark a ``fork:origin`` record gives (``replay.save.origin_record`` writes it)."""
    try:
        value = decode_json(record.result)
    except ValueError:
        return None
    if not isinstance(value, dict) or not (of := _text(value.get("run_id"))) or not _text(value.get("at")):
        return None
    return ForkMark(of, value["at"], _text(value.get("outcome")), _text(value.get("live_from")))


async def read_fork_mark(store: Store, run_id: str) -> ForkMark | None:
    """The fork mark of ``run_id`` in ``store`` (two point reads), or None."""
    journal = Journal(store)
    found = {name: r for name in (keys.RUN_START, FORK_ORIGIN) if (r := await journal.get(run_id, name)) is not None}
    return fork_mark(found)


class ForkRefused(AgentTuiError):
    """A write to, or a drive of, a saved what-if fork: a fork is a record, never driven or written to."""

    title = "A what-if fork"

    def __init__(self, run_id: str, mark: ForkMark) -> None:
        super().__init__(
            f"run {run_id!r} is a what-if fork of {mark.of} (at {mark.at}): "
            "a fork is never driven or written to; nothing written"
        )
        self.run_id, self.mark = run_id, mark


async def refuse_a_fork(store: Store, run_id: str) -> None:
    """Raise ``ForkRefused`` when ``run_id`` is a saved fork (two point reads)."""
    if (mark := await read_fork_mark(store, run_id)) is not None:
        raise ForkRefused(run_id, mark)


def marked_start(payload: bytes, of: str, at: str) -> bytes:
    """A recorded ``run:start`` payload with the fork mark added: every member kept as recorded,
    ``ext`` written as the SDK writes its map (members sorted by name, each value as stored), the
    mark among them; ``ext`` goes last, where the SDK writes it, when the payload has none.

    Raises ``CorruptRecordError`` when the payload is not a JSON object.
    """
    members = raw_members(payload)
    ext = _ext_members(members.get("ext"))
    ext[FORK_EXT] = go_json({"run_id": of, "at": at})
    members["ext"] = b"{" + b",".join(encode_string(k) + b":" + ext[k] for k in sorted(ext)) + b"}"
    return b"{" + b",".join(encode_string(k) + b":" + v for k, v in members.items()) + b"}"


def _ext_members(raw: bytes | None) -> dict[str, bytes]:
    """The members of a recorded ``ext`` (none when it is absent, null or not an object, which the
    SDK could not have decoded into its map)."""
    if raw is None:
        return {}
    try:
        return raw_members(raw)
    except CorruptRecordError:
        return {}
