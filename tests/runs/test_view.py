"""RunView (one run as a viewer holds it) and conversation_at (state at step), in the library and
through `agenttui show --at N`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agenttui.journal import Journal
from agenttui.journal.record import Record
from agenttui.runs.view import RunView, conversation_at, tool_names
from agenttui.stores.sqlite import SQLiteStore


async def read(path: Path, run_id: str) -> list[tuple[int, Record]]:
    async with await SQLiteStore.open(path, read_only=True) as store:
        return [(entry.seq, record) async for entry, record in Journal(store).entries(run_id)]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], capture_output=True, text=True, timeout=60, check=False
    )


async def test_a_view_adds_each_record_once_however_reads_overlap(demo_db: Path) -> None:
    entries = await read(demo_db, "refund-a1002")
    view = RunView("refund-a1002")
    assert view.add_entries(entries[:6]) == [record for _, record in entries[:6]]
    assert view.add_entries(entries[3:]) == [record for _, record in entries[6:]]  # a tail racing the load
    assert view.records == [record for _, record in entries]
    assert view.last_seq == entries[-1][0]
    assert (
        view.tool_names
        == tool_names(view.records)
        == {"call_0_0": "lookup_order", "call_1_0": "refund_payment", "call_2_0": "send_email"}
    )
    assert view.model_turns == sum(record.kind == "model" for record in view.records) == 4
    names = view.tool_names
    view.clear()
    assert (view.records, view.tool_names, view.last_seq, view.model_turns) == ([], {}, -1, 0)
    assert view.tool_names is names  # a widget holding the dict sees the view start again


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
