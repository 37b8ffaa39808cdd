"""Untrusted content is shown, never obeyed: escapes, controls, markup, bidi, huge and deep values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenttui.cli import main
from agenttui.errors import CorruptRecordError
from agenttui.journal import Journal, Message, Record, StepKind, TextPart, ToolUsePart, decode_record, encode_record
from agenttui.journal.describe import printable, record_json, safe_json, summary
from agenttui.render.ascii import render_text
from agenttui.render.flow import flow_steps
from agenttui.render.mermaid import for_terminal, mermaid_text
from agenttui.stores.sqlite import SQLiteStore

# What a terminal could act on: C0 controls but newline, DEL, C1 (CSI is 0x9b), bidi controls.
TERMINAL_ACTIVE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

HOSTILE_PIECES = [
    "\x1b[31mred\x1b[0m", "\x1b]8;;https://evil.example\x07link\x1b]8;;\x07", "\x9b2J", "\x07", "\r", "\x00",
    "[bold]b[/bold]", "[@click=app.quit]quit[/]", "[link=https://evil.example]x[/link]", "\u202eevil\u202c",
    "\u2066iso\u2069", "\u2028", "#", "&lt;", "<script>", "`", "\ufffd", "\ud800",
]  # fmt: skip
hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE_PIECES), st.text(max_size=8)), max_size=6).map("".join)


def hostile_run(text: str, tool_result: str, tool_name: str) -> list[Record]:
    args = json.dumps({"q": text}).encode()
    return [
        Record("@journal", StepKind.HEADER, format="bide.journal.v1-dev"),
        Record("run:start", StepKind.VALUE, result=json.dumps({"input": text}).encode()),
        Record("@llm/0", StepKind.MODEL, message=Message.assistant(TextPart(text), ToolUsePart("c1", tool_name, args))),
        Record(
            "tool:c1", StepKind.TOOL_RESULT, tool_use_id="c1", result=json.dumps(tool_result).encode(), is_error=True
        ),
        Record("@llm/1", StepKind.MODEL, message=Message.assistant(TextPart(text))),
        Record("run:complete", StepKind.VALUE),
    ]


@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_text, hostile_text, hostile_text)
def test_every_text_output_is_inert(text: str, tool_result: str, tool_name: str) -> None:
    # Round trip through the codec first: what a reader sees is what the store holds.
    records = [decode_record(encode_record(r)) for r in hostile_run(text, tool_result, tool_name)]
    outputs = [printable(summary(r, {"c1": tool_name})) for r in records]
    outputs += [safe_json([record_json(r) for r in records])]
    steps = flow_steps(records)
    outputs += [
        for_terminal(mermaid_text(steps)),
        render_text(steps, width=60),
        render_text(steps, width=60, ascii=True),
    ]
    for output in outputs:
        assert not TERMINAL_ACTIVE.search(output), repr(output)
    mermaid_labels = re.findall(r'\["(.*)"\]', mermaid_text(steps))
    assert all('"' not in label and "<" not in label for label in mermaid_labels)


async def _hostile_store(path: Path) -> None:
    store = await SQLiteStore.open(path)
    journal = Journal(store)
    evil = "".join(HOSTILE_PIECES)
    for run_id in ("evil-\x1b[2J\u202e-run", "[bold]run[/bold]"):
        for record in hostile_run(evil, evil, "tool\x1b[31m"):
            if record.name != "@journal":
                await journal.append(run_id, record)
    await store.close()


def test_the_cli_never_lets_an_escape_byte_through(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "evil.db"
    asyncio.run(_hostile_store(path))
    runner = CliRunner()
    run_ids = ["evil-\x1b[2J\u202e-run", "[bold]run[/bold]"]
    # recover quotes every run it could not drive (the demo's factory knows none of these).
    invocations = [
        ["runs", str(path)],
        ["runs", str(path), "--json"],
        ["recover", str(path), "--agent", "agenttui.demo.build:factory"],
    ]
    for run_id in run_ids:
        for view in (["show"], ["show", "--json"], ["events"], ["events", "--json"], ["mermaid"], ["mermaid", "--ascii"],
                     ["mermaid", "--ascii", "--plain"], ["replay"], ["replay", "--json"]):  # fmt: skip
            invocations.append([view[0], str(path), run_id, *view[1:]])
    for args in invocations:
        result = runner.invoke(main, args)
        # A replay of these hand-made runs may diverge (exit 3): their run:start is not the loop's.
        assert result.exit_code in ((0, 3) if args[0] == "replay" else (0,)), (args, result.output, result.exception)
        assert not TERMINAL_ACTIVE.search(result.output), (args, result.output)


def test_huge_and_deep_values_do_not_break_a_reader() -> None:
    deep = b"[" * 500 + b"]" * 500
    record = decode_record(b'{"name":"x","kind":"value","result":' + deep + b"}")
    assert record.result == deep and summary(record).startswith("[[[")
    # Deeper than any JSON reader goes (Go stops at 10,000): an unreadable record, not a crash.
    abyss = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(CorruptRecordError, match="not a journal record"):
        decode_record(b'{"name":"x","kind":"value","result":' + abyss + b"}")
    assert record_json(Record("x", "value", result=abyss))["result"].startswith("[[[")
    huge = "x" * 10_000_000
    line = printable(summary(Record("tool:c", StepKind.TOOL_RESULT, tool_use_id="c", result=json.dumps(huge).encode())))
    assert len(line) > 1_000  # the caller clips; nothing hangs or fails


# An OSC 52 sequence: a terminal that obeys it puts "rm -rf ~ #" into the clipboard.
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4gIw==\x07"


async def _store_whose_errors_quote_it(path: Path) -> None:
    from agenttui.demo.build import build_demo

    store = await SQLiteStore.open(path)
    try:
        await build_demo(store, bulk_turns=2)
        await store.acquire_lease("refund-a1005", f"worker{CLIPBOARD}\u202e#1", ttl=3600)
        journal = Journal(store)
        await journal.append("refund-a1001-stalled", Record("run:cancelled", StepKind.VALUE,
                                                            result=json.dumps({"reason": f"bye{CLIPBOARD}\x9b2J\u202e"}).encode()))  # fmt: skip
        await store.insert("refund-a1004-halted", f"@llm/9{CLIPBOARD}", b"\x00not a record")
    finally:
        await store.close()


def test_no_error_message_lets_an_escape_byte_through(tmp_path: Path) -> None:
    """Lease holders ("run is leased"), cancel reasons ("run ended") and record names ("unreadable
    journal") are the store's text: every command that can quote one shows it inert."""
    import asyncio
    import subprocess
    import sys

    path = tmp_path / "evil.db"
    asyncio.run(_store_whose_errors_quote_it(path))
    agent = ["--agent", "agenttui.demo.build:factory"]
    invocations = [
        ["approve", "refund-a1005", "call_1_0"], ["deny", "refund-a1005", "call_1_0"], ["cancel", "refund-a1005"],
        ["answer", "refund-a1005", "ask-call_1_0", "yes"], ["resolve", "refund-a1005", "call_1_0", "--not-fired"],
        ["release", "refund-a1005"], ["redrive", "refund-a1005", *agent],
        ["approve", "refund-a1001-stalled", "call_1_0"], ["cancel", "refund-a1001-stalled"], ["redrive", "refund-a1001-stalled", *agent],
        ["redrive", "refund-a1004-halted", *agent], ["resolve", "refund-a1004-halted", "call_1_0", "--not-fired"],
    ]  # fmt: skip
    quoted = 0
    for command, run_id, *rest in invocations:
        result = subprocess.run(
            [sys.executable, "-m", "agenttui", command, str(path), run_id, *rest],
            check=False,
            capture_output=True,
            timeout=60,
        )
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        assert result.returncode != 0, (command, run_id, output)
        assert not TERMINAL_ACTIVE.search(output), (command, run_id, output)
        quoted += "\\x1b]52" in output
    assert quoted >= 5  # the hostile text was there, shown as escapes
