"""Saving a fork: its journal written out as a new run, as an ``Operation`` a person confirms.

A fork lives in its scratch store until saved. ``SaveFork`` writes it into a store of the
person's choice, a new SQLite file or the source store under a new run id, only through the
journal's at-most-once insert and under the new run's lease, and never over a run that exists.

A saved fork is a record of what might have been, never a run to drive: its ``run:start`` carries
the fork mark (``runs.forks``), every reader reads it as a fork, and nothing drives or writes to
it. What the replay wrote as stand-ins is left out: its attempt markers (no side effect was ever
attempted) and the voids of them. An unfinished fork ends in ``run:cancelled``, which every
driver honours, the SDK's included; then the ``fork:origin`` value record says what it is a fork
of (``docs/decisions.md``, "What-if forks").
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from agenttui.errors import AgentTuiError
from agenttui.journal import keys
from agenttui.journal.codec import go_json
from agenttui.journal.inert import shell_word
from agenttui.journal.journal import Journal
from agenttui.journal.record import Record, StepKind
from agenttui.replay.fork import ForkSession
from agenttui.runs.recovery.lease import lease
from agenttui.runs.statuses.forks import FORK_ORIGIN as FORK_ORIGIN  # the value record a saved fork ends with
from agenttui.runs.statuses.forks import marked_start
from agenttui.stores.base import Store

#: What a replay writes as a stand-in for a side effect, left out of a saved fork: attempt
#: markers (the recorded tools served an outcome; nothing was attempted) and their voids.
STAND_IN_KINDS = frozenset({StepKind.ATTEMPT, StepKind.NOT_STARTED})

#: How many of the records ``will_write`` names one by one.
NAMED = 8


class RunExists(AgentTuiError):
    """The run a fork would be saved as already has records: nothing is written."""

    title = "Run exists"


def fork_run_id(run_id: str, n: int) -> str:
    """The ``n``-th fork of ``run_id`` in its own store: ``<run>~fork-<n>``."""
    return f"{run_id}~fork-{n}"


async def free_fork_id(store: Store, run_id: str) -> str:
    """The first ``<run>~fork-<n>`` (n = 1, 2, ...) with no records in ``store``."""
    journal = Journal(store)
    n = 1
    while await journal.format(fork_run_id(run_id, n)) is not None:
        n += 1
    return fork_run_id(run_id, n)


def origin_record(fork: ForkSession) -> Record:
    live_from = None if fork.live_from is None else f"@llm/{fork.live_from}"
    origin = {"run_id": fork.run_id, "at": fork.edit.name, "value": json.loads(fork.edit.value),
              "live_from": live_from, "outcome": fork.outcome()}  # fmt: skip
    if fork.edit.call_id:
        origin["is_error"] = fork.edit.edited.is_error
    return Record(FORK_ORIGIN, StepKind.VALUE, result=go_json(origin))


@dataclass(frozen=True)
class SaveFork:
    """Write ``records`` (a fork's journal, its origin last) as run ``run_id`` of a store."""

    fork_of: str
    edit_at: str
    edit_value: str
    is_error: bool | None
    records: tuple[Record, ...]
    run_id: str
    where: str
    """Where it goes, in words (the source store, or the file's path)."""
    into: str = ""
    """The SQLite file it goes into ("" for the source store)."""
    live_agent: str = ""
    """The ``--agent`` the fork could go live with ("" when it could not)."""
    until: str = ""
    """The breakpoint the fork stopped at, if it did."""
    left_out: tuple[str, ...] = ()
    """The replay's attempt markers (and voids) not written: no side effect was attempted."""
    ended: bool = False
    """The fork was unfinished: the save ends it with ``run:cancelled``, so no driver drives it."""

    @property
    def title(self) -> str:
        return f"Save the fork of run {self.fork_of} as run {self.run_id}"

    def will_write(self) -> str:
        kinds = Counter(r.kind for r in self.records)
        counted = ", ".join(f"{n} {kind}" for kind, n in kinds.most_common())
        lines = [f"a new run {self.run_id} in {self.where}: @journal and {len(self.records)} records ({counted})"]
        named = self.records if len(self.records) <= NAMED else (*self.records[: NAMED - 2], *self.records[-2:])
        for index, record in enumerate(named):
            if len(self.records) > NAMED and index == NAMED - 2:
                lines.append(f"  … {len(self.records) - NAMED} more")
            lines.append(f"  {record.name}  {record.kind}")
        lines.append("run:start is the recording's, marked a what-if fork: it reads as a fork and is never driven")
        if self.ended:
            lines.append("run:cancelled ends the unfinished fork for every driver, the Go SDK's too")
        if self.left_out:
            lines.append(f"left out, no side effect was attempted: {', '.join(self.left_out)}")
        lines.append("nothing else is written; the run forked is untouched")
        return "\n".join(lines)

    def command(self, store_url: str) -> str:
        words = ["agenttui", "fork", store_url, self.fork_of, "--at", self.edit_at, "--set", "-"]
        if self.is_error is not None:
            words.append("--error" if self.is_error else "--no-error")
        if self.live_agent:
            words += ["--agent", self.live_agent, "--live"]
        words += ["--until", self.until] if self.until else []
        words += ["--into", self.into] if self.into else ["--save"]
        return f"printf '%s' {shell_word(self.edit_value)} | " + " ".join(shell_word(w) for w in words)

    async def apply(self, store: Store) -> str:
        return await lease(store, self.run_id, lambda: self._write(store), ttl=30)

    async def _write(self, store: Store) -> str:
        journal = Journal(store)
        if await journal.format(self.run_id) is not None:
            raise RunExists(f"run {self.run_id!r} already exists in {self.where}: nothing written")
        for record in self.records:
            await journal.insert(self.run_id, record)
        return f"saved the fork as run {self.run_id} in {self.where}: wrote {len(self.records) + 1} records"


def saved_records(fork: ForkSession, replayed: list[Record]) -> tuple[list[Record], list[str], bool]:
    """What a saved fork holds of the fork's journal (its header aside, the store's own is
    written): ``run:start`` marked a fork, the replay's stand-in markers left out (and named), an
    unfinished fork ended in ``run:cancelled`` (and whether it was), its origin last."""
    records: list[Record] = []
    left_out: list[str] = []
    for record in replayed:
        if record.is_header or record.name == FORK_ORIGIN:  # a fork of a fork: its own origin is written last
            continue
        if record.kind in STAND_IN_KINDS:
            left_out.append(record.name)
            continue
        if record.name == keys.RUN_START and record.kind == StepKind.VALUE:
            marked = marked_start(record.result or b"{}", fork.run_id, fork.edit.name)
            records.append(Record(keys.RUN_START, StepKind.VALUE, result=marked))
        else:
            records.append(record)
    if not any(r.name == keys.RUN_START for r in records):
        raise AgentTuiError(f"the fork of run {fork.run_id!r} has no run:start to mark: nothing written")
    ended = keys.first_end_marker(r.name for r in records) is None
    if ended:
        reason = f"a what-if fork of {fork.run_id} at {fork.edit.name}, saved by agenttui: never to be driven"
        records.append(Record(keys.RUN_CANCELLED, StepKind.VALUE, result=go_json({"reason": reason})))
    records.append(origin_record(fork))
    return records, left_out, ended


async def plan_save(
    fork: ForkSession, target: Store, *, where: str, into: str = "", run_id: str = "", live_agent: str = ""
) -> SaveFork:
    """What saving ``fork`` into ``target`` writes (``saved_records``), as ``run_id`` or the
    first free ``<run>~fork-<n>``."""
    records, left_out, ended = saved_records(fork, await fork.replayed())
    hit = None if fork.done else fork.progress.breakpoint
    chosen = run_id or await free_fork_id(target, fork.run_id)
    is_error = fork.edit.edited.is_error if fork.edit.call_id and fork.edit.edited.is_error != fork.edit.original.is_error else None  # fmt: skip
    return SaveFork(
        fork.run_id, fork.edit.name, fork.edit.value, is_error, tuple(records), chosen, where, into,
        live_agent if fork.live_model is not None else "", "" if hit is None else hit.breakpoint.text,
        tuple(left_out), ended,
    )  # fmt: skip


FORK_FILE_FORMAT = "agenttui.fork.v1"
"""The ``format`` the manifest of a file holding a saved fork names (``stores.files``: a file
agenttui wrote, which it may replace when asked)."""


async def save_into_file(
    fork: ForkSession,
    path: str | os.PathLike[str],
    *,
    force: bool = False,
    protect: Iterable[str | os.PathLike[str] | None] = (),
    live_agent: str = "",
) -> str:
    """Save ``fork`` as run ``fork.run_id`` in a new SQLite file at ``path``, and say what was written.

    The file is written whole under a temporary name and moved into place, through the guarded
    file helper: never over a store in ``protect`` (the one forked) or a journal agenttui did not
    write, over another file only with ``force``. Raises what ``stores.files.check_replaceable`` does.
    """
    import asyncio

    from agenttui.stores.files import check_replaceable, partial_path, place_file, remove_own_file, write_manifest
    from agenttui.stores.sqlite import SQLiteStore

    target = await check_replaceable(path, force=force, protect=protect)
    partial = await asyncio.to_thread(partial_path, target)
    try:
        store = await SQLiteStore.open(partial)
        try:
            operation = await plan_save(
                fork, store, where=str(target), into=str(target), run_id=fork.run_id, live_agent=live_agent
            )
            done = await operation.apply(store)
        finally:
            await store.close()
        manifest = {"format": FORK_FILE_FORMAT, "fork_of": fork.run_id, "at": fork.edit.name}
        await asyncio.to_thread(write_manifest, partial, manifest)
        await check_replaceable(target, force=force, protect=protect)  # taken while the fork was written?
        await asyncio.to_thread(place_file, partial, target, force=force)
    except BaseException:
        remove_own_file(partial)
        raise
    return done
