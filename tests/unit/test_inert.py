"""In an id, what shows as an escape is a character escaped: a run id ending in ESC and one
ending in the four characters ``\\x1b`` never look alike, in ``agenttui runs`` or the TUI's list."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from agenttui.journal.inert import printable, printable_as_json, printable_id
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.runs_table import label_width
from tests.hardening.test_hostile_tui import app_over, shown_in
from tests.tui.conftest import settle

ESCAPE = re.compile(r"(\\+)(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})?")
#: Characters that make shown text ambiguous when handled carelessly: backslashes, the letters and
#: digits of escapes, controls, tab and newline, a Cyrillic letter among Latin ones, the ⏎ mark.
TRICKY = st.text(st.sampled_from(["\\", "x", "u", "1", "b", "0", "4", "3", "a", "\x1b", "\t", "\n", "\u202e",
                                  "а", "⏎", " ", "e", "X", "B"]), max_size=12)  # fmt: skip


def read_back(shown: str) -> str:
    """The text ``shown`` stands for: a run of backslashes before ``x``/``u`` and hex digits is
    halved, and when it is odd the last one starts an escape; any other backslash is itself."""

    def one(match: re.Match[str]) -> str:
        run, escape = match.group(1), match.group(2)
        if escape is None:
            return run
        literal = "\\" * (len(run) // 2)
        return literal + (chr(int(escape[1:], 16)) if len(run) % 2 else escape)

    return ESCAPE.sub(one, shown)


def test_an_escape_and_its_spelling_show_apart() -> None:
    assert printable_id("run\x1b") == r"run\x1b"
    assert printable_id("run\\x1b") == r"run\\x1b"
    assert printable_id("run\\\x1b") == r"run\\\x1b"
    assert printable_id(r"C:\Users\x\new") == r"C:\Users\x\new"  # a backslash before no escape stays one
    assert printable_id("tab\there\n") == r"tab\x09here\x0a"  # not a space and a ⏎, which an id may hold
    # Values are mostly JSON text, whose backslashes are JSON's own escapes: shown as they are.
    assert printable('{"text":"\\u001b[31m"}') == r'{"text":"\u001b[31m"}'


@given(TRICKY)
def test_an_id_reads_back_as_itself(text: str) -> None:
    """Two ids that differ never show alike: what ``printable_id`` shows reads back to the id."""
    shown = printable_id(text)
    assert shown.isprintable() and read_back(shown) == text


def test_the_runs_list_tells_them_apart(tmp_path: Path) -> None:
    path = tmp_path / "ids.db"
    ids = ["run\x1b", "run\\x1b"]

    async def build() -> None:
        store = await SQLiteStore.open(path)
        try:
            for run_id in ids:
                await store.insert(
                    run_id, "@journal", b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"}'
                )
        finally:
            await store.close()

    import asyncio

    asyncio.run(build())
    listed = subprocess.run(
        [sys.executable, "-m", "agenttui", "runs", str(path)], capture_output=True, text=True, check=True
    )
    shown = [line.split()[0] for line in listed.stdout.splitlines()]
    assert shown == [r"run\x1b", r"run\\x1b"] or shown == [r"run\\x1b", r"run\x1b"]
    assert [label_width(run_id) for run_id in ids] == [2 + len(r"run\x1b"), 2 + len(r"run\\x1b")]


async def test_the_tuis_list_tells_them_apart(tmp_path: Path) -> None:
    path = tmp_path / "ids.db"
    store = await SQLiteStore.open(path)
    try:
        for run_id in ("run\x1b", "run\\x1b"):
            await store.insert(
                run_id, "@journal", b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"}'
            )
    finally:
        await store.close()
    app = app_over(path)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        lines = [line.split()[0] for line in shown_in(app, screen.table).splitlines() if line.strip()]
        assert r"run\x1b" in lines and r"run\\x1b" in lines, lines


@given(st.text(), st.text())
def test_json_said_printable_holds_only_printable_strings(key: str, value: str) -> None:
    """``printable_as_json`` never answers True for JSON holding a string ``printable`` changes
    (the MCP server then gives the answer as it is)."""
    text = json.dumps({key: [value, {"nested": value}]}, ensure_ascii=False)
    if printable_as_json(text):
        assert printable(key, multiline=True) == key and printable(value, multiline=True) == value


def test_json_of_plain_text_is_printable_as_it_is() -> None:
    assert printable_as_json(json.dumps({"run_id": "refund-a1002", "detail": "tab\there\nand a newline é ✓"}))
    for unsafe in ("\x1b[31m", "\r", "\x00", "\x7f", "\x9b", "\u202e", "\u200b", "\ufeff"):
        assert not printable_as_json(json.dumps({"detail": f"a{unsafe}b"}, ensure_ascii=False))
