"""What the MCP server's tools read, in process: a kept run's byte scan finds the records each
record's own check would (``Needle.may_hold``), from any record on."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttui.demo.build import build_demo
from agenttui.journal import Record, StepKind, keys
from agenttui.journal.codec import go_json
from agenttui.journal.journal import Journal
from agenttui.mcp_server.reading import RunRecords
from agenttui.runs.reading.search import Needle
from agenttui.stores.sqlite import SQLiteStore


@pytest.mark.parametrize("query", ["lookup", "A-1004", "Ünïcode", "\\", "é", "x1b", "zzz-nowhere", '"'])
async def test_a_scan_of_the_bytes_finds_what_each_record_would(tmp_path: Path, query: str) -> None:
    async with await SQLiteStore.open(tmp_path / "demo.db") as store:
        await build_demo(store, bulk_turns=30)
        journal = Journal(store)
        for n, text in enumerate(["Ünïcode here", "escaped \\u00e9 and a \\\\ backslash", "\x1b[31mred"]):
            await journal.append("audit-bulk", Record(keys.tool_key(f"extra{n}"), StepKind.TOOL_RESULT,
                                                      tool_use_id=f"extra{n}", result=go_json(text)))  # fmt: skip
        kept = await RunRecords(store).run("audit-bulk")
        needle = Needle(query)
        for start, stop in [(0, len(kept.records)), (5, 40), (len(kept.records) - 3, len(kept.records))]:
            want = {at for at in range(start, stop) if needle.may_hold(kept.records[at].raw)}
            assert kept.may_hold(needle, start, stop) == want
