"""The store a replay drives into: the replayed loop's outputs land here, and the recording's
inputs are fed in as the loop reaches them.

A replay re-runs the agent loop; it must not re-decide what the loop never decided. People's
decisions, answers, signals, wake times, cancellations, limit amendments and spend are *inputs*:
each is taken from the recording and fed in once every output the recording holds before it has
been replayed, so a matching replay's journal lists its records in the recording's order.
``docs/decisions.md`` ("Replay") lists which records are which.
"""

from __future__ import annotations

import asyncio
import dataclasses
import operator
import os
from collections.abc import Awaitable, Callable, Sequence

from agenttui.journal import keys
from agenttui.journal.codec import decode_record, encode_header, encode_record
from agenttui.journal.journal import SALT_BYTES, Journal, decode_entry
from agenttui.journal.record import HEADER_NAME, Record, StepKind, with_members
from agenttui.stores.base import Entry, Inserted
from agenttui.stores.memory import MemStore


def is_replayed_output(record: Record) -> bool:
    """Whether the replayed loop writes this record itself (and so it is compared), rather than
    taking it from the recording as an input.

    The loop writes model turns, tool outcomes (except a result a person reconciled), attempt
    markers and the completion marker. Everything else a run holds was decided outside the loop.
    """
    name = record.name
    if name.startswith("@llm/"):
        return record.kind == StepKind.MODEL
    if name.startswith(keys.TOOL_PREFIX):
        return record.kind == StepKind.TOOL_RESULT and not record.reconciled
    if keys.is_tool_attempt_key(name):
        return record.kind == StepKind.ATTEMPT
    return name == keys.RUN_COMPLETE


class ReplayStore(MemStore):
    """A MemStore for one replay of ``run_id``, fed with ``recording``'s inputs as it goes.

    Attempt markers the loop writes take their claim and time from the recording (the replay's
    randomness and clock are pinned, as a deterministic replayer pins them), so a recorded
    ``not_started`` record, whose name holds the original claim, voids the replayed marker too.
    """

    turn_per_page = False
    """A replay's journal is read several times a run, a page or two each, by the replay itself:
    a turn of the event loop for each was 14 turns a run of ``benchmarks/replays.py``'s store
    (``ReplaySession.run_to_end`` lets the loop run others every few milliseconds instead)."""

    def __init__(self, run_id: str, recording: Sequence[Record]) -> None:
        super().__init__()
        self.run_id = run_id
        self._recording = list(recording)
        self._outputs = [is_replayed_output(r) for r in recording]
        self._at = {r.name: index for index, r in enumerate(recording)}
        """Where each record stands in the recording, by name."""
        self._cursor = 0
        """Every record before this index is in the store (fed, or written by the loop)."""
        self._held: dict[str, Record] = {}
        """The run's records as fed or written, by name: read back without decoding them again."""
        self.legacy = bool(recording) and not recording[0].is_header
        """The recording is headerless (before v0.9): the replay runs under a header of its own,
        which the loop needs and ``ReplaySession.replayed`` leaves out again."""

    async def feed_due(self) -> list[Record]:
        """Feed every input not yet in the store that no unreplayed output precedes; return them."""
        if self.legacy and self.run_id not in self._runs:
            await super().insert(self.run_id, HEADER_NAME, encode_header(os.urandom(SALT_BYTES)))
        fed: list[Record] = []
        while self._cursor < len(self._recording):
            record = self._recording[self._cursor]
            if not self._holds(record.name):
                if self._outputs[self._cursor]:
                    break
                await super().insert(self.run_id, record.name, record.raw)
                self._held[record.name] = record
                fed.append(record)
            self._cursor += 1
        return fed

    @property
    def untouched(self) -> bool:
        """Nothing fed or written yet: as it was made."""
        return not self._runs and self._cursor == 0

    def _holds(self, name: str) -> bool:
        """Whether the replayed run holds a record under ``name`` (``get``, without a coroutine
        made and awaited for each record fed: ``feed_due`` asks after every record written)."""
        run = self._runs.get(self.run_id)
        return run is not None and name in run.by_name

    def stop_feeding(self) -> None:
        """Feed nothing more: the loop has left the recording (a fork gone live), so the
        recording's later inputs (decisions, answers) answer another conversation."""
        self._cursor = len(self._recording)

    async def adopt_resolution(self, tool_use_id: str) -> bool:
        """Take the recording's remaining records of a halted call as inputs, and feed them.

        When the replayed loop halts on a call (an attempt with no outcome) that the recording
        goes on from, a person resolved it there (the SDK's ``ResolveHalt`` writes a new attempt
        marker and the result): those records were not the loop's. Returns whether any were fed.
        """
        adopted = False
        for index, record in enumerate(self._recording):
            mine = record.tool_use_id == tool_use_id and (
                record.kind == StepKind.TOOL_RESULT or keys.is_tool_attempt_key(record.name)
            )
            if mine and self._outputs[index] and not self._holds(record.name):
                self._outputs[index] = False
                adopted = True
        return adopted and bool(await self.feed_due())

    def recorded_output(self, name: str) -> Record | None:
        """The recording's record under ``name`` where the replayed loop writes it itself (an
        output, compared), else None."""
        index = self._at.get(name)
        return None if index is None or not self._outputs[index] else self._recording[index]

    def record_of(self, entry: Entry) -> Record:
        """The record of one of the run's entries: as it was fed or written, else decoded."""
        held = self.held(entry)
        return held if held is not None else decode_entry(entry)

    def held(self, entry: Entry) -> Record | None:
        """The record of one of the run's entries as it was fed or written, if it was."""
        held = self._held.get(entry.name)
        return held if held is not None and held.raw == entry.data else None

    def journal(self) -> Journal:
        """A journal for the replayed loop, which keeps what the loop writes (``record_of``)."""
        return _KeepingJournal(self)

    async def insert(self, run_id: str, name: str, data: bytes) -> Inserted:
        if run_id != self.run_id:
            return await super().insert(run_id, name, data)
        index = self._at.get(name)
        recorded = None if index is None else self._recording[index]
        if recorded is not None and recorded.kind == StepKind.ATTEMPT and keys.is_tool_attempt_key(name):
            data = _pinned_attempt(data, recorded)
        inserted = await super().insert(run_id, name, data)
        if inserted.won:
            await self.feed_due()
        return inserted


class _KeepingJournal(Journal):
    def __init__(self, store: ReplayStore) -> None:
        super().__init__(store)
        self._replay_store = store

    def _kept(self, entry: Entry) -> Record | None:
        return self._replay_store.held(entry)

    async def do(self, run_id: str, name: str, step: Callable[[], Awaitable[Record]]) -> Record:
        """``Journal.do`` in the caller's task, not a task of its own (a replay's steps were a
        third of its event loop's turns). Its shield is for a live run, whose step has happened
        once it began: a replay's step is served from the recording, so one cancelled before it
        was kept is served again, with no side effect, when the replay goes on."""
        key = (run_id, name)
        if run_id != self._replay_store.run_id or key in self._steps_in_flight:
            return await super().do(run_id, name, step)
        shared: asyncio.Future[Record] = asyncio.get_running_loop().create_future()
        self._steps_in_flight[key] = shared  # a caller arriving meanwhile waits for this one
        try:
            record = await self._run_step(run_id, name, step)
        except asyncio.CancelledError:
            shared.cancel()  # a waiter stops too: the replay it belongs to is being left
            raise
        except BaseException as exc:
            shared.set_exception(exc)
            shared.exception()  # retrieved: the caller raises it, and any waiter does too
            raise
        finally:
            del self._steps_in_flight[key]
        shared.set_result(record)
        return record

    async def insert(self, run_id: str, record: Record) -> tuple[Record, bool]:
        """A record equal to the recording's under its name (every compared member) is written
        as the recording's record, its bytes and salt included, not encoded again (a matching
        replay's records are: encoding them and copying each with a salt of its own was 7% of a
        replay's time); any other is encoded with a fresh salt, as a journal writes it, and so is
        one whose recorded record has no bytes (a fork's edit). Nothing writes a replay's journal
        anywhere as bytes: a saved fork is written record by record."""
        store = self._replay_store
        if run_id != store.run_id:
            return await super().insert(run_id, record)
        recorded = store.recorded_output(record.name)
        if recorded is not None and recorded.raw and _matched(record) == _matched(recorded):
            await self._ensure_header(run_id)
            inserted = await store.insert(run_id, record.name, recorded.raw)
            held, won = (recorded, True) if inserted.won else (self._record_of(inserted.entry), False)
        else:
            held, won = await super().insert(run_id, record)
        if won:
            store._held[record.name] = held
        return held, won


#: What two records are compared by, but their salts (a tuple, compared in C): a replayed record
#: matches the recording's when these are equal.
_matched = operator.attrgetter(*(f.name for f in dataclasses.fields(Record) if f.compare and f.name != "salt"))


def _pinned_attempt(data: bytes, recorded: Record) -> bytes:
    """An attempt marker's bytes with the recorded claim and time (the salt stays the replay's)."""
    mine = decode_record(data, recorded.name)
    return encode_record(with_members(mine, claim=recorded.claim, attempted_at=recorded.attempted_at))
