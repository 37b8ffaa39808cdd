"""``agenttui runs STORE --where EXPR`` as a real process, on a SQLite file of Go-shaped runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import write_corpus
from tests.processes import agenttui


@pytest.fixture
async def go_db(tmp_path: Path) -> Path:
    path = tmp_path / "go.db"
    async with await SQLiteStore.open(path) as store:
        await write_corpus(store)
    return path


def listed(*args: str) -> list[str]:
    done = agenttui("runs", *args, "--json")
    assert done.returncode == 0, done.stderr
    return [run["run_id"] for run in json.loads(done.stdout)]


def test_where_filters_the_listing(go_db: Path) -> None:
    assert listed(str(go_db), "--where", "status=halted") == ["go-halted", "go-voided-halted"]
    assert listed(str(go_db), "--where", "status=halted and tool=charge call!=toolu_05") == ["go-voided-halted"]
    assert listed(str(go_db), "--where", "id=go-v0*") == ["go-v07", "go-v08"]
    # With --status too: both must hold.
    assert listed(str(go_db), "--status", "complete", "--where", "legacy") == ["go-v07", "go-v08"]
    # The markers are from 2026-01-01: surely more than a day ago; a time nobody knows never matches.
    assert listed(str(go_db), "--where", "idle>1d") == ["go-halted", "go-voided-halted"]
    assert listed(str(go_db), "--where", "not idle>1d") == []
    text = agenttui("runs", str(go_db), "--where", "STATUS = halted")
    assert text.returncode == 0 and [line.split()[0] for line in text.stdout.splitlines()] == [
        "go-halted",
        "go-voided-halted",
    ]


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("stauts=halted", "at column 1: unknown field 'stauts' (did you mean 'status'?); fields:"),
        ("status=haltd", "at column 8: unknown status 'haltd' (did you mean 'halted'?)"),
        ("idle>2x", "at column 6: '2x' is not a duration"),
        ("(status=halted", "at column 15: expected ')' to close the '(' at column 1"),
        ("status=halted and", "at column 18: expected a condition after 'and'"),
        ("id='\x1b[31m", "at column 4: the quote ' is never closed"),
    ],
)
def test_a_bad_filter_is_one_line_and_exit_2(go_db: Path, expr: str, says: str) -> None:
    done = agenttui("runs", str(go_db), "--where", expr)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"agenttui: Bad filter: {says}"), done.stderr
    assert done.stderr.count("\n") == 1 and "\x1b" not in done.stderr and "Traceback" not in done.stderr


def test_a_bad_filter_is_refused_before_the_store_is_opened(tmp_path: Path) -> None:
    done = agenttui("runs", str(tmp_path / "missing.db"), "--where", "turns>abc")
    assert done.returncode == 2 and done.stderr.startswith("agenttui: Bad filter: at column 7: 'abc' is not a number")


def test_a_previews_command_pasted_runs_the_filter_it_previewed(go_db: Path) -> None:
    """A filter holding a control character: the "To apply" command shows it inert ($'\\x1b'),
    and pasted into a shell it gives agenttui the very same filter (an escape printed as text
    would be four other characters: another filter)."""
    import shlex
    import subprocess
    import sys

    where = "status=halted or id='run\x1b[2J'"
    preview = agenttui("cancel", str(go_db), "--where", where)
    assert preview.returncode == 0, preview.stderr
    command = preview.stdout.split("To apply:\n", 1)[1].strip()
    assert "\x1b" not in command and "$'" in command
    argv_of = f"{shlex.quote(sys.executable)} -c 'import sys, json; print(json.dumps(sys.argv[1:]))'"
    pasted = subprocess.run(
        ["bash", "-c", command.replace("agenttui", argv_of, 1)], check=True, capture_output=True, text=True
    )
    argv = json.loads(pasted.stdout)
    assert argv[:4] == ["cancel", str(go_db), "--where", where] and argv[-1] == "--yes"
