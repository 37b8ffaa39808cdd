"""Every write is permanent (the journal is append-only), so each is checked before it is made:
the right question, valid JSON, one of two exclusive options, a decision not already taken, a
file the demo made. Each refusal writes nothing and says why, with the exit code of its kind."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from agenttui.cli import main
from agenttui.runs.recovery.operations import (
    Answer,
    BadValue,
    Cancel,
    Decide,
    Operation,
    ReleaseLease,
    Resolve,
    parse_value,
)
from agenttui.stores.sqlite import SQLiteStore
from tests.processes import agenttui as cli


@pytest.fixture
def demo(demo_db: Path) -> Path:
    """A private copy of the demo store (every status in it), as the TUI tests use."""
    return demo_db


def journal(path: Path) -> list[tuple[str, str, bytes]]:
    """Every entry the file holds (a write-mode open may touch the file's bytes, never these)."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT run_id, name, data FROM bide_steps ORDER BY seq").fetchall()


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["answer", "question-a1001", "ask-call_9_9", "card"], 2, "waits on 'ask-call_1_0', not 'ask-call_9_9'"),
        (["answer", "refund-a1005", "ask-call_1_0", "card"], 2, "awaiting-approval: it waits on no question"),
        (["answer", "refund-a1001-stalled", "anything", "card"], 2, "stopped between steps with no call open"),
        (["answer", "question-a1001", "ask-call_1_0", "{card"], 2, "not valid JSON"),
        (["resolve", "refund-a1004-halted", "call_1_0", "--fired", "--result", "{bad"], 2, "not valid JSON"),
        (["resolve", "refund-a1004-halted", "call_1_0", "--fired", "--result", "sent"], 2, "not valid JSON"),
        (
            ["resolve", "refund-a1004-halted", "call_1_0", "--fired", "--not-fired"],
            2,
            "--fired or --not-fired, one of them",
        ),
        (["resolve", "refund-a1004-halted", "call_1_0"], 2, "--fired or --not-fired, one of them"),
        (
            ["resolve", "refund-a1004-halted", "call_1_0", "--not-fired", "--result", "1"],
            2,
            "a call that did not fire has no result",
        ),
        (["deny", "refund-a1002", "call_1_0"], 2, "ended with run:complete"),
        (["deny", "refund-a1005-approved", "call_1_0"], 4, "call call_1_0 was already approved by ops@example.com"),
        (["approve", "no-such-run", "call_1_0"], 1, "no run 'no-such-run'"),
        (["approve", "refund-a1005", "call_0_0"], 2, "(lookup_order) of run 'refund-a1005' already has its result"),
        (["deny", "question-a1001", "call_1_0"], 2, "asks a question: it awaits an answer, not an approval"),
        (
            ["resolve", "refund-a1004-halted", "call_1_0", "--fired"],
            2,
            "--fired needs the call's result: give it with --result JSON or --result-text TEXT",
        ),
        (["release", "no-such-run"], 1, "no run 'no-such-run'"),
        (["release", "no-such-run", "--force", "--yes"], 1, "no run 'no-such-run'"),
        (["cancel", "no-such-run"], 1, "no run 'no-such-run'"),
        (["answer", "no-such-run", "x", "1"], 1, "no run 'no-such-run'"),
        (["show", "no-such-run"], 1, "no run 'no-such-run'"),
        (["replay", "no-such-run"], 1, "no run 'no-such-run'"),
    ],
)
def test_a_bad_write_is_refused_and_nothing_is_written(demo: Path, args: list[str], code: int, says: str) -> None:
    before = journal(demo)
    command, run_id, *rest = args
    result = cli(command, str(demo), run_id, *rest)
    assert result.returncode == code and says in result.stderr, (result.returncode, result.stdout, result.stderr)
    assert journal(demo) == before


def test_a_result_given_as_text_is_recorded_as_a_string(demo: Path) -> None:
    result = cli("resolve", str(demo), "refund-a1004-halted", "call_1_0", "--fired", "--result-text", "{bad")
    assert result.returncode == 0, result.stderr
    shown = cli("show", str(demo), "refund-a1004-halted", "--json").stdout
    assert '"result": "{bad"' in shown and '"reconciled": true' in shown


@pytest.mark.parametrize(
    ("command", "operation"),
    [
        ("approve", Decide("RUN_ID", "CALL", True)),
        ("deny", Decide("RUN_ID", "CALL", False)),
        ("answer", Answer("RUN_ID", "NAME", 1)),
        ("resolve", Resolve("RUN_ID", "CALL", True, 1)),
        ("resolve", Resolve("RUN_ID", "CALL", False)),
        ("cancel", Cancel("RUN_ID")),
        ("release", ReleaseLease("RUN_ID")),
    ],
)
def test_each_write_commands_help_names_what_it_writes(command: str, operation: Operation) -> None:
    """The help names the record the command's operation writes (what a confirmation shows), and
    claims no other: ``deny`` writes the decision alone, the denial comes with the next drive."""
    shown = " ".join(CliRunner().invoke(main, [command, "--help"]).output.split())
    name, kind = operation.will_write().split()[:2]
    written = "deletes its lease row" if name == "deletes" else kind if kind == "not_started" else name
    assert written in shown, (written, shown)
    if command == "deny":
        assert "the decision alone" in shown and "records the denial result too" not in shown


def test_deciding_twice_exits_4_naming_the_decision(demo: Path) -> None:
    assert cli("approve", str(demo), "refund-a1005", "call_1_0", "--approver", "ana").returncode == 0
    again = cli("deny", str(demo), "refund-a1005", "call_1_0")
    assert again.returncode == 4 and "call call_1_0 was already approved by ana" in again.stderr


def test_recover_exits_5_when_a_run_failed(demo: Path) -> None:
    result = cli("recover", str(demo), "--agent", "agenttui.demo.build:factory")
    assert result.returncode == 5 and "error lookup-a1001-damaged" in result.stdout, result.stdout + result.stderr


def test_demo_never_replaces_a_file_it_did_not_make(tmp_path: Path, demo: Path) -> None:
    precious = tmp_path / "orders.db"
    precious.write_bytes(b"a journal of real runs")
    refused = cli("demo", "--path", str(precious), "--no-tui", "--bulk-turns", "2")
    assert refused.returncode == 2 and "exists: nothing written (--force replaces it)" in refused.stderr
    assert precious.read_bytes() == b"a journal of real runs"
    assert cli("demo", "--path", str(demo), "--no-tui", "--bulk-turns", "2", "--fresh").returncode == 0  # its own demo
    assert cli("demo", "--path", str(precious), "--no-tui", "--bulk-turns", "2", "--force").returncode == 0


def test_no_traceback_from_a_bad_url_a_full_disk_or_a_narrow_encoding(demo: Path) -> None:
    import os

    broken_url = cli("runs", "postgresql://u:secret@[::1/db")
    assert broken_url.returncode == 2 and "Traceback" not in broken_url.stderr and "secret" not in broken_url.stderr
    with open("/dev/full", "w") as full:
        no_room = subprocess.run(
            [sys.executable, "-m", "agenttui", "runs", str(demo)],
            check=False,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert (
        no_room.returncode == 2 and no_room.stderr == "agenttui: cannot write the output: No space left on device\n"
    ), no_room.stderr
    latin = subprocess.run([sys.executable, "-m", "agenttui", "runs", str(demo)], check=False, capture_output=True, timeout=60,
                           env=os.environ | {"PYTHONIOENCODING": "latin-1"})  # fmt: skip
    assert latin.returncode == 0 and b"\\u2713 complete" in latin.stdout, latin.stderr


def test_runs_streams_its_lines_and_its_json(demo: Path) -> None:
    import json

    lines = cli("runs", str(demo)).stdout.splitlines()
    assert len(lines) == 18 and lines[0].startswith("audit-bulk") and "✓ complete" in lines[0]
    listed = json.loads(cli("runs", str(demo), "--json").stdout)
    assert len(listed) == 18 and listed[0]["run_id"] == "audit-bulk"
    assert (
        json.loads(cli("runs", str(demo), "--json", "--status", "aborted").stdout)[0]["run_id"]
        == "saga-a1003-rolled-back"
    )
    assert json.loads(cli("runs", str(demo), "--json", "--status", "in-flight", "--status", "cancelled").stdout) != []


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stopped_command_releases_its_lease(demo: Path, stop: str) -> None:
    import signal
    import time

    def leases() -> list[tuple[str, str]]:
        with sqlite3.connect(f"file:{demo}?mode=ro", uri=True) as conn:
            return conn.execute(
                "SELECT run_id, holder FROM bide_leases WHERE run_id = 'refund-a1001-stalled'"
            ).fetchall()

    driving = subprocess.Popen([sys.executable, "-m", "agenttui", "redrive", str(demo), "refund-a1001-stalled", "--agent", "tests.agent.slow_agent:factory"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 30
    while not leases():  # the drive has its lease, and waits on its slow model
        assert driving.poll() is None and time.monotonic() < deadline, driving.communicate()
        time.sleep(0.05)
    driving.send_signal(getattr(signal, stop))
    _, stderr = driving.communicate(timeout=30)
    assert driving.returncode == (130 if stop == "SIGINT" else 143), stderr
    assert leases() == []  # released on the way out, not left to lapse


def test_a_lease_stamped_a_year_ahead_can_be_broken_by_force(demo: Path) -> None:
    async def stamp() -> None:
        store = await SQLiteStore.open(demo)
        try:
            assert await store.acquire_lease("refund-a1005", "fast-clock-host#1", ttl=365 * 86400)
        finally:
            await store.close()

    asyncio.run(stamp())
    held = cli("approve", str(demo), "refund-a1005", "call_1_0")
    assert (
        held.returncode == 2
        and "fast-clock-host#1 (lease for 365 days more; if that driver is gone, release --force breaks it)"
        in held.stderr
    )
    assert cli("release", str(demo), "refund-a1005").returncode == 2  # not lapsed: a plain release refuses
    unasked = cli("release", str(demo), "refund-a1005", "--force")
    assert unasked.returncode == 2 and "confirm at a terminal, or add --yes" in unasked.stderr
    broken = cli("release", str(demo), "refund-a1005", "--force", "--yes")
    assert broken.returncode == 0 and "broke the lease of fast-clock-host#1 (expires in 365 days)" in broken.stdout
    assert cli("approve", str(demo), "refund-a1005", "call_1_0").returncode == 0


def test_text_that_json_refuses_for_any_reason_is_a_bad_value() -> None:
    """Not only syntax: an integer past Python's conversion limit is refused as JSON too."""
    with pytest.raises(BadValue, match=r"^not valid JSON \(Expecting"):
        parse_value("{bad", json_only=False)
    with pytest.raises(BadValue, match=r"^not valid JSON \(Exceeds the limit"):
        parse_value("1" * 5000, json_only=True)


def journal_mode(path: Path) -> str:
    """The file's own word (its header's write version): a command must not have changed it."""
    return {1: "rollback journal", 2: "wal"}[path.read_bytes()[18]]


def test_a_refused_write_leaves_a_rollback_journal_store_as_it_was(demo: Path) -> None:
    """A store another writer keeps in rollback-journal mode: a command that writes nothing (refused)
    changes nothing of the file, its mode included; the first write puts it in WAL, as the SDK does."""
    with sqlite3.connect(demo) as conn:
        conn.execute("PRAGMA journal_mode = DELETE").fetchall()
    assert journal_mode(demo) == "rollback journal"
    for args in (["approve", "refund-a1002", "call_1_0"], ["answer", "refund-a1001-stalled", "x", "1"],
                 ["cancel", "no-such-run"], ["release", "refund-a1002"]):  # fmt: skip
        cli(args[0], str(demo), *args[1:])  # each refused, or with nothing to do
    assert journal_mode(demo) == "rollback journal"  # a lease was taken and let go: its mode kept
    assert cli("approve", str(demo), "refund-a1005", "call_1_0").returncode == 0
    assert journal_mode(demo) == "wal"
