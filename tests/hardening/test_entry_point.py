"""One entry point runs every command: whatever escapes a command is one inert line on stderr and
an exit code from the table, never a traceback (one only with AGENTTUI_DEBUG=1, and inert too)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from agenttui.cli.app import EXIT_CODES, AgentTuiGroup
from agenttui.journal import Journal, Record, StepKind
from agenttui.stores.sqlite import SQLiteStore
from tests.processes import agenttui

# What a terminal could act on: C0 controls but newline, DEL, C1, bidi controls.
TERMINAL_ACTIVE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
OSC52 = "\x1b]52;c;cm0gLXJmIH4gIw==\x07"  # "rm -rf ~ #" onto the clipboard


def _group_raising(exc: BaseException) -> click.Group:
    @click.group(cls=AgentTuiGroup)
    def group() -> None:
        pass

    @group.command("boom")
    def boom() -> None:
        raise exc

    return group


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (ValueError(f"bad {OSC52} value"), 2),
        (UnboundLocalError("cannot access local variable 'fork'"), 2),
        (TypeError("'<' not supported between instances of 'str' and 'int'"), 2),
        (FileNotFoundError(2, "No such file or directory", f"/tmp/x{OSC52}.db"), 2),
        (asyncio.CancelledError(), 143),
        (KeyboardInterrupt(), 130),
    ],
)
def test_whatever_escapes_a_command_is_one_inert_line(exc: BaseException, code: int) -> None:
    result = CliRunner().invoke(_group_raising(exc), ["boom"], env={"AGENTTUI_DEBUG": ""})
    assert result.exit_code == code
    assert code in EXIT_CODES
    assert "Traceback" not in result.output
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agenttui: ")
    assert not TERMINAL_ACTIVE.search(result.output)


def test_debug_shows_the_traceback_inert() -> None:
    result = CliRunner().invoke(_group_raising(ValueError(OSC52)), ["boom"], env={"AGENTTUI_DEBUG": "1"})
    assert result.exit_code == 2
    assert "Traceback (most recent call last)" in result.output
    assert "ValueError" in result.output
    assert not TERMINAL_ACTIVE.search(result.output)


@pytest.fixture
def store_with_osc52(tmp_path: Path) -> Path:
    """A run whose model turn is not a record but holds an OSC 52 sequence, and a healthy run."""
    path = tmp_path / "s.db"

    async def build() -> None:
        store = await SQLiteStore.open(path)
        journal = Journal(store)
        await journal.append("run-1", Record("run:start", StepKind.VALUE, result=b'{"input":"hi"}'))
        await store.insert("run-1", "@llm/0", f'{{"name":"@llm/0","kind":"model{OSC52}"'.encode())
        await store.close()

    asyncio.run(build())
    return path


@pytest.mark.parametrize(
    ("args", "stdin", "code"),
    [
        (["nope", "--at", "@llm/0", "--set", "-"], '{"role":"assistant","content":[]}', 1),
        (["run-1", "--at", "@llm/0", "--set", "-"], "not json", 2),
        (["run-1", "--at", "tool:nothing", "--set", "-"], "1", 2),
        (["run-1", "--at", f"@llm/0{OSC52}", "--set", "-"], "1", 2),
        (["run-1", "--at", "@llm/0", "--set", "-"], '{"role":"assistant","content":[]}', 2),
    ],
    ids=["missing-run", "bad-json", "unknown-step", "hostile-step", "unreadable-run"],
)
def test_fork_fails_in_one_inert_line(store_with_osc52: Path, args: list[str], stdin: str, code: int) -> None:
    result = agenttui("fork", str(store_with_osc52), *args, stdin=stdin)
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("agenttui: ")
    assert not TERMINAL_ACTIVE.search(result.stdout + result.stderr)


@pytest.mark.parametrize(
    ("words", "says"),
    [
        (["mermiad", "STORE", "r"], "no such command 'mermiad' (did you mean 'mermaid'?)"),
        (["rnus", "STORE"], "no such command 'rnus' (did you mean 'runs'?)"),
        (
            ["zzz"],
            "no such command 'zzz' (agenttui --help lists them; a store is a path, a URL or a name the config file gives)",
        ),
        ([f"zz{OSC52}"], "no such command 'zz\\x1b]52;c;cm0gLXJmIH4gIw==\\x07'"),
    ],
)
def test_a_mistyped_command_is_named_with_the_closest(tmp_path: Path, words: list[str], says: str) -> None:
    """The default command (``agenttui STORE``) takes only a word that names a store: a typo is
    said to be one, not "unexpected extra argument" nor a missing file."""
    from agenttui.cli import main

    store = tmp_path / "journal.db"
    store.write_bytes(b"")
    result = CliRunner().invoke(main, [str(store) if w == "STORE" else w for w in words])
    assert result.exit_code == 2
    assert says in result.output and "extra argument" not in result.output
    assert not TERMINAL_ACTIVE.search(result.output)


def test_a_store_is_a_file_there_a_url_or_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agenttui.cli import main
    from agenttui.cli.app import names_a_store

    monkeypatch.chdir(tmp_path)
    (tmp_path / "journal").write_bytes(b"")
    assert all(map(names_a_store, ["journal", "memory:", "sqlite:///x.db", "postgresql://h/db", "x.db", "dir/x"]))
    assert not any(map(names_a_store, ["mermiad", "runz", "journals"]))
    missing = CliRunner().invoke(main, ["missing.db"])  # a path: the store is opened, and is not there
    assert missing.exit_code == 2 and "no such file" in missing.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["runs"], "agenttui: Missing argument 'STORE' (see agenttui runs --help)"),
        (["runs", "STORE", "--bogus"], "agenttui: No such option '--bogus' (see agenttui runs --help)"),
        (["--bogus"], "agenttui: No such option '--bogus' (see agenttui --help)"),
        (["replay", "STORE", "--jobs", "x"], "agenttui: Invalid value for '--jobs': 'x' is not a valid integer range"),
        (
            ["runs", "STORE", f"--{OSC52}"],
            "agenttui: No such option '--\\x1b]52;c;cm0gLXJmIH4gIw'",
        ),  # click cuts at '='
    ],
)
def test_a_usage_error_is_one_inert_line(tmp_path: Path, args: list[str], says: str) -> None:
    """As every error is (docs/reference/exit-codes.md: one line on stderr, exit 2), not click's four."""
    store = tmp_path / "journal.db"
    store.write_bytes(b"")
    result = agenttui(*[str(store) if arg == "STORE" else arg for arg in args])
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(says), result.stderr
    assert not TERMINAL_ACTIVE.search(result.stderr)
