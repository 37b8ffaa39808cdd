"""Statuses from run summaries equal the exact rules' statuses, on every store, for every run the
test suite builds (the demo, the Go corpus, damaged and leased runs), and finished runs are never
read whole when the store sums them up."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Sequence
from typing import Any

from agenttui.demo.build import build_demo
from agenttui.journal import Journal, Record, StepKind, keys
from agenttui.journal.record import Message, ToolUsePart, Usage
from agenttui.replay.fork import fork_run
from agenttui.replay.save import plan_save
from agenttui.runs.statuses.status import RunState, RunStatus, StatusTracker, _StandIn, run_status, statuses
from agenttui.stores.base import Store
from agenttui.stores.summary import RunSummary
from tests.conftest import StoreFactory
from tests.forks import HALTED, HALTED_REWORDED, reworded_lookup, save_as_before_the_mark, save_fork
from tests.gocorpus import write_corpus


def comparable(status: RunStatus) -> RunStatus:
    """A status without its lease row's seconds to expiry, which move between two reads."""
    return status._replace(lease=None)


#: Unfinished runs one of whose records has a second or an escaped ``kind`` key (which the codec
#: never writes) that SQLite's summary misreads (``test_keys_written_twice_or_escaped``): where it
#: vouches for them, a run's turns are the summary's, as a finished run's are, its state exact.
SQLITE_MISREAD_TURNS = {"open-second-kind": 2, "open-escaped-kind": 2}


def as_summed(status: RunStatus, store_kind: str) -> RunStatus:
    """The exact status of a run as one read with its summary's counts says it."""
    if store_kind == "sqlite" and status.run_id in SQLITE_MISREAD_TURNS:
        return status._replace(turns=SQLITE_MISREAD_TURNS[status.run_id])
    return status


async def write_odd_runs(store: Store) -> None:
    """Finished runs a summary must not be fooled by, and a finished run someone still leases."""
    journal = Journal(store)
    start = Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}')
    for run_id in ("renamed", "float-usage", "redacted", "not-json", "leased-done", "foreign-format"):
        await journal.append(run_id, start)
    await store.insert("renamed", "@llm/0", b'{"name":"@llm/1","kind":"model"}')
    await store.insert("float-usage", "@llm/0", b'{"name":"@llm/0","kind":"model","usage":{"input_tokens":1.5}}')
    await store.insert("redacted", "@llm/0", b'{"redacted":{"leaf_hash":"ab","at_ms":1}}')
    await store.insert("not-json", "@llm/0", b"\x00garbage")
    await store.insert("foreign-format", "@llm/0", b'{"name":"@llm/0","kind":"model","usage":{"input_tokens":3}}')
    for run_id in ("renamed", "float-usage", "redacted", "not-json", "leased-done"):
        await journal.append(run_id, Record(keys.RUN_COMPLETE, StepKind.VALUE))
    await store.insert("foreign-format", keys.RUN_COMPLETE, b'{"name":"run:complete","kind":"value"}')
    await store.insert("header-only-other", keys.HEADER, b'{"name":"@journal","kind":"header","format":"other.v9"}')
    await store.insert("header-only-other", keys.RUN_COMPLETE, b'{"name":"run:complete","kind":"value"}')
    await store.acquire_lease("leased-done", "worker-1#1", ttl=600)
    # Unfinished runs whose tool results and earlier turns stand in by their name and kind: where
    # the bytes' start does not tell the kind as the codec writes it, they are parsed.
    turn = b'{"name":"@llm/%d","kind":"model","message":{"role":"assistant","parts":[{"id":"c%d","name":"lookup","type":"tool_use"}]},"usage":{"input_tokens":%d}}'
    odd_results = {
        "open-plain": b'{"name":"tool:c0","kind":"tool_result","tool_use_id":"c0","result":{"kind":"x","usage":1}}',
        "open-second-kind": b'{"name":"tool:c0","kind":"tool_result","kind":"model"}',
        "open-escaped-kind": b'{"name":"tool:c0","kind":"tool_result","k\\u0069nd":"model"}',
        "open-tool-usage": b'{"name":"tool:c0","kind":"tool_result","usage":{"output_tokens":11}}',
        "open-spaces": b' { "name" : "tool:c0" , "kind" : "tool_result" } ',
        "open-tool-value": b'{"name":"tool:c0","kind":"value","result":{"approved":true}}',
        "open-tool-model": b'{"name":"tool:c0","kind":"model","usage":{"input_tokens":2}}',
        "open-kind-first": b'{"kind":"tool_result","name":"tool:c0","usage":{"input_tokens":4}}',
    }
    for run_id, result in odd_results.items():
        await journal.append(run_id, start)
        await store.insert(run_id, "@llm/0", turn % (0, 0, 5))
        await store.insert(run_id, "tool:c0", result)
        await store.insert(run_id, "@llm/1", turn % (1, 1, 7))
    # Model turns whose members are not in the codec's order: the earlier one is parsed, the
    # last decoded whole, as every last turn is.
    await journal.append("open-turns-reordered", start)
    await store.insert(
        "open-turns-reordered", "@llm/0", b'{"usage":{"output_tokens":3},"kind":"model","name":"@llm/0","message":null}'
    )
    await store.insert(
        "open-turns-reordered",
        "@llm/1",
        b'{"kind":"model","name":"@llm/1","message":{"role":"assistant","parts":[{"id":"c1","name":"lookup","type":"tool_use"}]},"usage":{"input_tokens":2}}',
    )
    # A sub-run's usage on its tool result, as the codec writes it (usage after the kind).
    await journal.append("open-subrun-usage", start)
    await journal.append("open-subrun-usage", model_turn(0, "c0", Usage(input_tokens=5)))
    await journal.append(
        "open-subrun-usage",
        Record("tool:c0", StepKind.TOOL_RESULT, tool_use_id="c0", result=b'"done"', usage=Usage(output_tokens=40)),
    )
    await journal.append("open-subrun-usage", model_turn(1, "c1", Usage(input_tokens=7, output_tokens=1)))


async def write_forks(store: Store) -> None:
    """Saved what-if forks, finished and not, saved by this build and before the fork mark; and
    runs a summary may take for forks that are none (a finished fork reads ``fork``, not complete)."""
    await save_fork(store, HALTED, HALTED_REWORDED)  # ended by its save: run:cancelled
    done = json.dumps({"role": "assistant", "parts": [{"type": "text", "text": "Done."}]})
    fork = await fork_run(store, "refund-a1002", "@llm/3", done)
    await (await plan_save(fork, store, where="the store")).apply(store)  # finished: run:complete
    await save_as_before_the_mark(store, "refund-a1002", reworded_lookup("A-1002"), "old-fork-finished")
    await save_as_before_the_mark(store, HALTED, HALTED_REWORDED, "old-fork-halted")
    journal = Journal(store)
    nested = b'{"input":"x","ext":{"other":{"agenttui.fork":{"run_id":"r","at":"@llm/0"}}}}'
    for run_id, start, step in (("mark-nested", nested, None), ("step-named-fork-origin", b'{"input":"x"}', b'"x"')):
        await journal.append(run_id, Record(keys.RUN_START, StepKind.VALUE, result=start))
        if step is not None:
            await journal.append(run_id, Record("fork:origin", StepKind.VALUE, result=step))
        await journal.append(run_id, Record(keys.RUN_COMPLETE, StepKind.VALUE))


def model_turn(n: int, call_id: str, usage: Usage) -> Record:
    """A model turn calling ``lookup`` once, as the agent loop journals it."""
    message = Message("assistant", (ToolUsePart(call_id, "lookup", b"{}"),))
    return Record(f"@llm/{n}", StepKind.MODEL, message=message, usage=usage)


async def test_summary_statuses_equal_the_exact_statuses(make_store: StoreFactory) -> None:
    writer = await make_store()
    await build_demo(writer, bulk_turns=12)
    await write_corpus(writer)
    await write_odd_runs(writer)
    await write_forks(writer)
    store = await make_store(read_only=True)
    run_ids = [run_id async for run_id in store.runs()]
    read_whole: list[str] = []

    async def exact(run_id: str) -> RunStatus:
        read_whole.append(run_id)
        return await run_status(store, run_id)

    summed = await statuses(store, run_ids, exact)
    expected = [comparable(await run_status(store, run_id)) for run_id in run_ids]
    assert [comparable(s) for s in summed] == expected
    # Without a reader of its own, a page's short unfinished runs are read whole in one go.
    summed_counts = [as_summed(status, make_store.kind) for status in expected]
    assert [comparable(s) for s in await statuses(store, run_ids)] == summed_counts
    # A tracker's first read of many runs reads them in one go too, and reads on from there.
    tracker = StatusTracker(store)
    assert [comparable(s) for s in await tracker.statuses(run_ids)] == summed_counts
    assert [comparable(s) for s in await tracker.statuses(run_ids)] == summed_counts
    finished = {s.run_id for s in summed if s.state in (RunState.COMPLETE, RunState.ABORTED, RunState.CANCELLED)}
    assert len(finished) > 20
    if store.IMPLEMENTS_SUMMARIES:
        # Only runs whose summary cannot decide are read whole: the unfinished, and the odd ones.
        odd = {"redacted", "go-redacted", "go-redacted-cancelled", "go-redacted-retried", "float-usage", "go-v08",
               "go-v07"}  # fmt: skip  # tombstones, a bad member, no header
        odd |= {"mark-nested", "step-named-fork-origin"}  # they may be forks: only the exact rules can say
        assert finished & set(read_whole) <= odd, sorted(finished & set(read_whole))
        assert {"leased-done", "foreign-format", "refund-a1002"} <= finished - set(read_whole)
    by_id = {s.run_id: s for s in summed}
    assert by_id["leased-done"].lease_holder == "worker-1#1" and by_id["leased-done"].state == RunState.COMPLETE
    assert by_id["renamed"].state == RunState.UNREADABLE and by_id["not-json"].state == RunState.UNREADABLE
    assert by_id["header-only-other"].state == RunState.UNREADABLE
    assert by_id["open-plain"].state == RunState.STALLED and by_id["open-plain"].tokens == 12
    assert by_id["open-tool-usage"].tokens == 23 and by_id["open-second-kind"].turns == 3
    assert by_id["open-subrun-usage"].tokens == 53 and by_id["open-subrun-usage"].turns == 2
    assert by_id["open-tool-model"].turns == 3 and by_id["open-kind-first"].tokens == 16
    assert by_id["open-turns-reordered"].tokens == 5 and by_id["open-turns-reordered"].turns == 2
    forks = {"refund-a1004-halted~fork-1", "refund-a1002~fork-1", "old-fork-finished", "old-fork-halted"}
    assert {s.run_id for s in summed if s.state == RunState.FORK} == forks
    assert by_id["mark-nested"].state == by_id["step-named-fork-origin"].state == RunState.COMPLETE


class StaleSummaries:
    """A store whose summaries were taken before its runs' last entries were committed."""

    def __init__(self, store: Store, summaries: list[RunSummary]) -> None:
        self.store = store
        self.stale = summaries

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def summaries(self, run_ids: Sequence[str], end_markers: Collection[str]) -> list[RunSummary]:
        return [summary for summary in self.stale if summary.run_id in run_ids]


async def test_entries_committed_after_the_summary_are_counted(make_store: StoreFactory) -> None:
    store = await make_store()
    journal = Journal(store)
    run_ids = ["extended", "extended-past-its-last-turn", "untouched"]
    gated = b'{"input":"x","ext":{"agenttui":{"tools":[{"name":"lookup","approval":{"single":true}}]}}}'
    for run_id in run_ids:
        await journal.append(run_id, Record(keys.RUN_START, StepKind.VALUE, result=gated))
        await journal.append(run_id, model_turn(0, "c0", Usage(input_tokens=5)))
        await journal.append(run_id, Record("tool:c0", StepKind.TOOL_RESULT, tool_use_id="c0", result=b"1"))
    if not store.IMPLEMENTS_SUMMARIES:
        return
    stale = await store.summaries(run_ids, keys.END_MARKERS)
    await journal.append("extended", Record("tool:c1", StepKind.TOOL_RESULT, tool_use_id="c1", usage=Usage(3)))
    await journal.append("extended-past-its-last-turn", model_turn(1, "c1", Usage(input_tokens=7, output_tokens=2)))
    summed = await statuses(StaleSummaries(store, stale), run_ids)  # type: ignore[arg-type]
    assert [comparable(s) for s in summed] == [comparable(await run_status(store, run_id)) for run_id in run_ids]
    assert [(s.steps, s.turns, s.tokens) for s in summed] == [(5, 1, 8), (5, 2, 14), (4, 1, 5)]
    assert summed[1].state == RunState.AWAITING_APPROVAL and summed[1].tool_use_id == "c1"


async def test_a_tracker_reads_on_from_a_summarys_counts(make_store: StoreFactory) -> None:
    """Records that stood in for a summary's carry no usage: a later read adds to its counts."""
    store = await make_store()
    journal = Journal(store)
    run_ids = ["first", "second"]
    for run_id in run_ids:
        await journal.append(run_id, Record(keys.RUN_START, StepKind.VALUE, result=b'{"input":"x"}'))
        await journal.append(run_id, model_turn(0, "c0", Usage(input_tokens=5)))
        await journal.append(run_id, Record("tool:c0", StepKind.TOOL_RESULT, tool_use_id="c0", usage=Usage(0, 9)))
        await journal.append(run_id, model_turn(1, "c1", Usage(input_tokens=7)))
    tracker = StatusTracker(store)
    assert [comparable(s) for s in await tracker.statuses(run_ids)] == [
        comparable(await run_status(store, run_id)) for run_id in run_ids
    ]
    await journal.append("first", Record("tool:c1", StepKind.TOOL_RESULT, tool_use_id="c1", result=b"2"))
    await journal.append("first", model_turn(2, "c2", Usage(input_tokens=11, cache_read_tokens=4)))
    again = await tracker.status("first")
    exact = await run_status(store, "first")
    assert comparable(again) == comparable(exact)
    assert (again.steps, again.turns, again.tokens) == (exact.steps, exact.turns, exact.tokens) == (7, 3, 36)


def test_a_stand_in_reads_as_the_record_of_its_name_and_kind() -> None:
    stand_in = _StandIn("tool:c0", StepKind.TOOL_RESULT)
    record = Record("tool:c0", StepKind.TOOL_RESULT)
    assert [getattr(stand_in, f.name) for f in dataclasses.fields(Record)] == [
        getattr(record, f.name) for f in dataclasses.fields(Record)
    ]
