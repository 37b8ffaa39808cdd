"""The journal a replay's loop writes through (``replay.feed``): its steps run in the caller's
task, shared by callers that overlap, and kept as the loop wrote them."""

from __future__ import annotations

import asyncio

import pytest

from agenttui.journal import Record, StepKind
from agenttui.replay.feed import ReplayStore


def value(name: str, result: bytes = b"1") -> Record:
    return Record(name, StepKind.VALUE, result=result)


async def test_a_step_runs_in_the_callers_task_and_overlapping_callers_share_it() -> None:
    journal = ReplayStore("run-1", []).journal()
    calls, release = 0, asyncio.Event()

    async def step() -> Record:
        nonlocal calls
        calls += 1
        await release.wait()
        return value("slow")

    before = len(asyncio.all_tasks())
    waiting = [asyncio.create_task(journal.do("run-1", "slow", step)) for _ in range(5)]
    await asyncio.sleep(0)
    assert len(asyncio.all_tasks()) == before + 5  # the callers' own: no task of the step's
    release.set()
    results = await asyncio.gather(*waiting)
    assert calls == 1 and len({r.salt for r in results}) == 1
    assert await journal.do("run-1", "slow", step) == results[0] and calls == 1


async def test_a_step_cancelled_before_it_is_kept_runs_again_and_a_failure_reaches_every_caller() -> None:
    journal = ReplayStore("run-1", []).journal()
    started = asyncio.Event()

    async def stalled() -> Record:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    caller = asyncio.create_task(journal.do("run-1", "tool:call_1", stalled))
    await started.wait()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert await journal.get("run-1", "tool:call_1") is None  # nothing kept: served again below
    served = await journal.do("run-1", "tool:call_1", lambda: _at_once(value("tool:call_1", b'"served"')))
    assert served.result == b'"served"'

    async def failing() -> Record:
        await asyncio.sleep(0)
        raise RuntimeError("the agent's code failed")

    both = [asyncio.create_task(journal.do("run-1", "bad", failing)) for _ in range(2)]
    for outcome in await asyncio.gather(*both, return_exceptions=True):
        assert isinstance(outcome, RuntimeError)
    assert await journal.get("run-1", "bad") is None


async def _at_once(record: Record) -> Record:
    return record


async def test_a_record_equal_to_the_recordings_is_kept_as_the_recordings_record() -> None:
    from agenttui.journal.codec import decode_record, encode_record
    from agenttui.journal.record import Message, TextPart, Usage

    said = Record("@llm/0", StepKind.MODEL, message=Message("assistant", (TextPart("hello"),)), usage=Usage(3, 4))
    recorded = decode_record(encode_record(said, b"r" * 32), "@llm/0")
    store = ReplayStore("run-1", [recorded])
    journal = store.journal()

    kept = await journal.append("run-1", said)
    entry = await store.get("run-1", "@llm/0")
    assert kept is recorded and entry is not None and entry.data == recorded.raw  # bytes and salt
    assert await journal.get("run-1", "@llm/0") is recorded  # read back as kept, not decoded again

    # Bytes the codec would not write (an unknown member, spaces) that decode to the same record:
    # the replay keeps them, so what it wrote reads back as the recording did.
    spaced = encode_record(said, b"r" * 32).replace(b',"usage":', b', "extra": 1, "usage":')
    store = ReplayStore("run-1", [decode_record(spaced, "@llm/0")])
    kept = await store.journal().append("run-1", said)
    assert kept.raw == spaced and decode_record(kept.raw, "@llm/0") == kept

    # A recorded record with no bytes (a fork's edit, made in memory) is encoded, never written empty.
    edited = Record("@llm/0", StepKind.MODEL, message=Message("assistant", (TextPart("edited"),)))
    kept = await ReplayStore("run-1", [edited]).journal().append("run-1", edited)
    assert kept.raw == encode_record(edited, kept.salt) and decode_record(kept.raw, "@llm/0") == kept

    # A record that differs is encoded as a journal writes it, with a fresh salt.
    other = Record("@llm/1", StepKind.MODEL, message=Message("assistant", (TextPart("bye"),)))
    differs = (
        await ReplayStore("run-1", [decode_record(encode_record(other, b"r" * 32), "@llm/1")])
        .journal()
        .append("run-1", Record("@llm/1", StepKind.MODEL, message=Message("assistant", (TextPart("changed"),))))
    )
    assert differs.raw == encode_record(differs, differs.salt) and b"changed" in differs.raw
    assert differs.salt != b"r" * 32
