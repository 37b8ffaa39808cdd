"""RunView (one run as a viewer holds it: compact rows, records read back on demand, the voices of
its conversation) and conversation_at (state at step), in the library and through
`agenttui show --at N`."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

from agenttui.journal import Journal
from agenttui.journal.describe import kind_icon, summary
from agenttui.journal.record import Record, StepKind
from agenttui.runs.reading.view import (
    CONVERSATION_VOICES,
    SUMMARY_LIMIT,
    DecodedRecords,
    RunView,
    conversation_at,
    record_cost,
    speaks,
    tool_names,
    utterance,
)
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore


async def read(path: Path, run_id: str) -> list[tuple[int, Record]]:
    async with await SQLiteStore.open(path, read_only=True) as store:
        return [(entry.seq, record) async for entry, record in Journal(store).entries(run_id)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], capture_output=True, text=True, timeout=60, check=False
    )


async def run_ids(path: Path) -> list[str]:
    async with await SQLiteStore.open(path, read_only=True) as store:
        return [run_id async for run_id in store.runs()]


async def test_a_view_adds_each_record_once_however_reads_overlap(demo_db: Path) -> None:
    entries = await read(demo_db, "refund-a1002")
    records = [record for _, record in entries]
    view = RunView("refund-a1002")
    assert view.add_entries(entries[:6]) == records[:6]
    assert view.add_entries(entries[3:]) == records[6:]  # a tail racing the load
    assert [row.name for row in view.rows] == [record.name for record in records] and len(view) == len(records)
    assert view.last_seq == entries[-1][0]
    assert (
        view.tool_names
        == tool_names(records)
        == {"call_0_0": "lookup_order", "call_1_0": "refund_payment", "call_2_0": "send_email"}
    )
    assert view.model_turns == sum(record.kind == "model" for record in records) == 4
    names = view.tool_names
    view.clear()
    assert (list(view.rows), view.tool_names, view.last_seq, view.model_turns, len(view.decoded)) == ([], {}, -1, 0, 0)
    assert view.tool_names is names  # a widget holding the dict sees the view start again


async def test_each_row_holds_what_the_list_drew_from_the_record(demo_db: Path) -> None:
    """Every record of every demo run (an unreadable one included): the row's icon, summary and
    flags are what the journal list drew from the decoded record before rows existed."""
    for run_id in await run_ids(demo_db):
        records = [record for _, record in await read(demo_db, run_id)]
        view = RunView(run_id)
        view.add(records[:3])
        view.add(records[3:])
        names = tool_names(records)
        for row, record in zip(view.rows, records, strict=True):
            assert (row.name, row.kind, row.icon, row.summary, row.unreadable, row.size) == (
                record.name, record.kind, kind_icon(record), summary(record, names)[:SUMMARY_LIMIT], record.unreadable,
                len(record.raw),
            ), run_id  # fmt: skip
            assert row.failed == bool(
                record.unreadable or record.is_error or (record.kind == StepKind.APPROVAL and not record.approved)
            )
    damaged = RunView("lookup-a1001-damaged")
    damaged.add([record for _, record in await read(demo_db, "lookup-a1001-damaged")])
    assert [row.icon for row in damaged.rows if row.failed] == ["!"]


def test_a_row_keeps_a_summary_no_longer_than_a_list_shows() -> None:
    huge = Record("tool:call_0_0", StepKind.TOOL_RESULT, tool_use_id="call_0_0", result=b'"' + b"x" * 1_000_000 + b'"')
    view = RunView("r")
    view.add([huge])
    (row,) = view.rows
    assert len(row.summary) == SUMMARY_LIMIT and row.summary.startswith('call_0_0: "xxx')


async def test_records_read_back_from_the_store_are_the_records_loaded(demo_db: Path) -> None:
    """With no room to keep a record, every one is read back from the store, decoded as the
    load decoded it: an unreadable record stays unreadable, for the same reason."""
    async with await SQLiteStore.open(demo_db, read_only=True) as store:
        for run_id in await run_ids(demo_db):
            loaded = [(entry.seq, record) async for entry, record in Journal(store).entries(run_id)]
            view = RunView(run_id, decoded_budget=0)
            view.add_entries(loaded)
            assert len(view.decoded) == 0  # nothing was kept while the records arrived
            everything = range(len(view))
            assert view.cached(everything) is None
            back = await view.read(store, everything)
            assert back == [record for _, record in loaded]
            assert [(r.raw, r.unreadable) for r in back] == [(r.raw, r.unreadable) for _, r in loaded], run_id
            assert len(view.decoded) == 1 and view.cached([len(view) - 1]) == back[-1:]  # the last one read
        gone = RunView("refund-a1002", decoded_budget=0)
        gone.add_entries(await read(demo_db, "refund-a1002"))
        (record,) = await gone.read(MemStore(), [3])  # a store that no longer has the run
        assert record.name == "tool:call_0_0" and record.unreadable == "the store no longer holds this record"


async def test_a_short_run_is_read_once_and_a_long_one_within_the_budget(demo_db: Path) -> None:
    entries = await read(demo_db, "audit-bulk")
    kept = RunView("audit-bulk")
    kept.add_entries(entries)
    assert kept.cached(range(len(kept))) == [record for _, record in entries]  # under the default budget
    budget = sum(record_cost(record) for _, record in entries[:10])
    view = RunView("audit-bulk", decoded_budget=budget)
    view.add_entries(entries)
    assert view.cached(range(10)) is not None and view.cached([10]) is None  # the first ones, while there was room
    async with await SQLiteStore.open(demo_db, read_only=True) as store:
        for index in range(len(view)):
            await view.read(store, [index])
            assert view.decoded.size <= budget
        assert view.cached(range(len(view) - 5, len(view))) is not None  # the ones read last


def test_the_decoded_records_keep_the_last_read_whatever_its_size() -> None:
    small = Record("a", StepKind.VALUE, result=b"1", raw=b"x" * 300)
    large = dataclasses.replace(small, raw=b"x" * 5000)
    kept = DecodedRecords(1000)
    kept.offer(0, small)
    kept.offer(1, large)  # does not fit: offered records never push others out
    assert (kept.get(0), kept.get(1), kept.size) == (small, None, 300)
    kept.put(1, large)
    assert (kept.get(0), kept.get(1), kept.size) == (None, large, 5000)
    kept.put(2, small)
    assert (kept.get(1), kept.get(2), kept.size) == (None, small, 300)
    kept.put(2, small)  # again: counted once
    assert kept.size == 300 and len(kept) == 1


async def test_the_voices_are_the_records_that_speak_and_a_long_conversation_its_start_and_newest(
    demo_db: Path,
) -> None:
    for run_id in await run_ids(demo_db):
        records = [record for _, record in await read(demo_db, run_id)]
        names = tool_names(records)
        assert [speaks(r) for r in records] == [utterance(r, i, names) is not None for i, r in enumerate(records)]
        view = RunView(run_id)
        view.add(records)
        for index in range(len(records)):
            voices = view.voices(index)
            everyone = [u.index for u in conversation_at(records, index)]
            if len(everyone) <= CONVERSATION_VOICES + 1:
                assert voices.indices == everyone and voices.left_out == 0, (run_id, index)
            else:
                newest = everyone[-CONVERSATION_VOICES:]
                assert voices.indices == [everyone[0], *newest], (run_id, index)
                assert voices.left_out == len(everyone) - CONVERSATION_VOICES - 1
    bulk = RunView("audit-bulk")
    bulk.add([record for _, record in await read(demo_db, "audit-bulk")])
    assert bulk.voices(len(bulk) - 1).left_out > 0  # the demo's long run has more voices than are shown
    assert bulk.voices(0).indices == []  # the header says nothing


async def test_a_conversation_reads_back_no_more_than_its_budget_of_bytes() -> None:
    view = RunView("r")
    start = Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}', raw=b"s")
    results = [
        Record(f"tool:c{n}", StepKind.TOOL_RESULT, tool_use_id=f"c{n}", result=b"1", raw=b"x" * 100_000)
        for n in range(5)
    ]
    view.add([start, *results])
    assert view.voices(5).indices == [0, 4, 5]  # 256 kB: the newest two of 100 kB each
    assert view.voices(5).left_out == 3


async def test_the_conversation_as_it_stood_at_a_record(demo_db: Path) -> None:
    records = [record for _, record in await read(demo_db, "refund-a1002")]
    said = conversation_at(records, 5)
    assert [(u.index, u.speaker) for u in said] == [
        (1, "user"),
        (2, "assistant"),
        (3, "tool lookup_order"),
        (4, "assistant"),
        (5, "human"),
    ]
    assert "standing mat" in said[0].text and said[4].text == "approved call_1_0"
    assert said[3].message is not None and [c.name for c in said[3].message.tool_uses] == ["refund_payment"]
    assert "Refunded" not in repr(said)  # what comes after record 5 is not there yet
    assert [u.speaker for u in conversation_at(records, len(records) - 1)][-2:] == ["tool send_email", "assistant"]


def test_show_at_prints_the_conversation_and_refuses_a_record_out_of_range(demo_db: Path) -> None:
    shown = cli("show", str(demo_db), "refund-a1002", "--at", "5")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "as of record #5 (approval:call_1_0)"
    assert [line for line in lines if line.startswith("#")] == [
        "#1 user",
        "#2 assistant",
        "#3 tool lookup_order",
        "#4 assistant",
        "#5 human",
    ]
    assert "  → call refund_payment (call_1_0) " in shown.stdout and "Refunded" not in shown.stdout
    as_json = json.loads(cli("show", str(demo_db), "refund-a1002", "--at", "5", "--json").stdout)
    assert as_json["as_of"] == 5 and [v["speaker"] for v in as_json["conversation"]][-1] == "human"
    assert as_json["conversation"][1]["parts"][1] == {
        "type": "tool_use",
        "id": "call_0_0",
        "name": "lookup_order",
        "args": {"order_id": "A-1002"},
    }
    beyond = cli("show", str(demo_db), "refund-a1002", "--at", "99")
    assert (
        beyond.returncode == 2
        and beyond.stderr.strip() == "agenttui: --at 99: the run has 12 records, numbered 0 to 11"
    )
    assert not beyond.stdout


async def test_a_foreign_store_whose_seq_is_not_an_integer_reads_in_its_own_order(tmp_path: Path) -> None:
    """Another program's ``bide_steps`` may keep ``seq`` as text, a real or a blob (SQLite keeps
    any type in a column without one): the view, a tail reading on from it and a search up to it
    follow the store's own order (numbers, then text, then blobs) instead of raising TypeError."""
    import sqlite3
    from contextlib import closing

    from agenttui.journal import encode_record
    from agenttui.runs.reading.search import Needle, search_content

    path = tmp_path / "foreign.db"
    records = [Record(f"note:{n}", StepKind.VALUE, result=f'"n{n}"'.encode()) for n in range(5)]
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE bide_steps (seq, run_id, name, data)")
        conn.executemany(
            "INSERT INTO bide_steps VALUES (?, 'run', ?, ?)",
            [(seq, r.name, encode_record(r)) for seq, r in zip([2, 3.5, "10", "9", b"\x01"], records, strict=True)],
        )
    entries = await read(path, "run")
    assert [record.name for _, record in entries] == [r.name for r in records]
    view = RunView("run")
    assert view.add_entries(entries[:3]) == [record for _, record in entries[:3]]
    assert view.add_entries(entries) == [record for _, record in entries[3:]]  # an overlapping read adds each once
    assert len(view) == 5
    assert [seq for seq, _ in entries][-1] == view.last_seq
    text_ten = entries[2][0]  # "10", as the store handed it back
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert [entry.name async for entry in store.load("run", after=view.last_seq)] == []
        assert [entry.name async for entry in store.load("run", after=text_ten)] == ["note:3", "note:4"]
        pages = [page async for page in search_content(store, "run", Needle("n3"), upto_seq=text_ten)]
        assert [hit for page in pages for hit in page.hits] == []  # note:3 lies after "10"
