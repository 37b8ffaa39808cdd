"""Lines a long run's panes keep packed give back what was put in."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenttui.journal import Journal
from agenttui.journal.record import Message, Record, StepKind, TextPart, Tombstone, ToolUsePart
from agenttui.replay.events import events_of
from agenttui.runs.reading.view import RunView
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.widgets.events_view import LINE_LIMIT, EventLines, RunEventLines, event_line


def test_event_lines_give_back_each_line_as_added() -> None:
    lines = [("turn", "assistant turn 0: hi → lookup"), ("tool", "tool lookup completed: {\"é\": 1}"),
             ("error", "tool pay failed: \ud800 lone surrogate"), ("delta", ""), ("finished", "finished: ok")]  # fmt: skip
    packed = EventLines(lines[:2])
    packed.extend(lines[2:])
    assert len(packed) == len(lines)
    assert list(packed) == lines
    assert packed[-1] == lines[-1] and packed[2] == lines[2]
    with pytest.raises(IndexError):
        packed[len(lines)]
    assert len(EventLines()) == 0 and list(EventLines()) == []


async def test_a_runs_event_lines_are_the_lines_of_its_events(demo_db: Path) -> None:
    """Every demo run, read in two batches: each line drawn from the rows is the line of the event."""
    async with await SQLiteStore.open(demo_db, read_only=True) as store:
        run_ids = [run_id async for run_id in store.runs()]
        for run_id in run_ids:
            records = await Journal(store).history(run_id)
            view = RunView(run_id)
            lines = RunEventLines(view.rows)
            for batch in (records[:5], records[5:]):
                before, turns = len(view), view.model_turns
                view.add(batch)
                lines.add_records(run_id, before, batch, turns, view.tool_names)
            expected = [(kind, text[:LINE_LIMIT]) for kind, text in map(event_line, events_of(run_id, records))]
            assert list(lines) == expected, run_id
            assert len(lines._kept) <= len(expected) // 4 + 1, run_id  # most lines come from the rows


def test_event_lines_drawn_from_rows_keep_what_the_rows_cut() -> None:
    long_text = "x" * 600
    records = [
        Record(
            "@llm/0", StepKind.MODEL, message=Message.assistant(TextPart(long_text), ToolUsePart("c1", "look", b"{}"))
        ),
        Record("tool:c1", StepKind.TOOL_RESULT, tool_use_id="c1", result=b'"' + b"y" * 600 + b'"'),
        Record("@llm/1", StepKind.MODEL, message=Message.assistant(ToolUsePart("c2", "pay", b"{}"))),
        Record("tool:c2", StepKind.TOOL_RESULT, tool_use_id="c2", result=b'{"no": 1}', is_error=True),
        Record("tool:c3", StepKind.TOOL_RESULT, tool_use_id="c3", result=None),
    ]
    view = RunView("r")
    view.add(records)
    lines = RunEventLines(view.rows)
    lines.add_records("r", 0, records, 0, view.tool_names)
    expected = [(kind, text[:LINE_LIMIT]) for kind, text in map(event_line, events_of("r", records))]
    assert list(lines) == expected


def test_event_lines_shaped_from_rows_are_the_lines_of_their_events() -> None:
    """Summaries that read two ways, flags, records without a message or that do not decode."""
    records = [
        Record("@llm/0", StepKind.MODEL, message=Message.assistant(TextPart("a → calls b\nmore"), ToolUsePart("c1", "x: y", b"{}"))),
        Record("tool:c1", StepKind.TOOL_RESULT, tool_use_id="c1", result=b'"ok: fine"', reconciled=True),
        Record("@llm/1", StepKind.MODEL, message=Message.assistant(TextPart("  "), ToolUsePart("c2", "pay", b"{}"),
                                                                   ToolUsePart("c3", "", b"{}"))),
        Record("tool:c2", StepKind.TOOL_RESULT, tool_use_id="c2", result=b"1", is_error=True, reconciled=True),
        Record("tool:c3", StepKind.TOOL_RESULT, tool_use_id="c3", result=b"2"),
        Record("@llm/2", StepKind.MODEL),
        Record("@llm/3", StepKind.MODEL, message=Message.assistant(TextPart("calls pay"))),
        Record("@llm/4", StepKind.MODEL, unreadable="bad bytes"),
        Record("tool:c4", StepKind.TOOL_RESULT, tool_use_id="c4", result=b"3", unreadable="bad bytes"),
        Record("@llm/5", StepKind.MODEL, message=Message.assistant(TextPart("gone")), tombstone=Tombstone("h", 1)),
        Record("tool:c5", StepKind.TOOL_RESULT, tool_use_id="c5", tombstone=Tombstone("h", 1)),
        Record("@llm/6", StepKind.MODEL, message=Message.assistant(TextPart("é" * 250), ToolUsePart("c6", "z", b"{}"))),
    ]  # fmt: skip
    view = RunView("r")
    lines = RunEventLines(view.rows)
    for batch in (records[:3], records[3:]):
        before, turns = len(view), view.model_turns
        view.add(batch)
        lines.add_records("r", before, batch, turns, view.tool_names)
    expected = [(kind, text[:LINE_LIMIT]) for kind, text in map(event_line, events_of("r", records))]
    assert list(lines) == expected
