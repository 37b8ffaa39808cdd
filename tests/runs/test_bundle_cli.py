"""``agenttui export`` / ``import`` from the command line, and the CI workflow docs/guide/ci.md describes:
export the runs that matter, keep the bundle, replay it with your agent on every change.

The bundles are built here, under tmp_path, from the demo store: none is committed.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.pg import PostgresCluster
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

DEMO_AGENT = "agenttui.demo.build:factory"
CHANGED_AGENT = "tests.tui.changed_agent:factory"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *map(str, args)], check=False, capture_output=True, text=True, timeout=120
    )


def one_line_error(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stderr.startswith("agenttui: ") and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_regression_replays_in_ci(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    """docs/guide/ci.md, "Regression replays in CI", step by step."""
    bundles = tmp_path / "regressions"
    bundles.mkdir()
    # 1. Export the runs that matter (a refund, the halted one, one with a sub-agent).
    exported = cli("export", demo_db, "refund-a1002", "refund-a1004-halted", "eligibility-a1004",
                   "-o", bundles / "refunds.db", "--redact", "customer")  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.startswith(f"wrote {bundles / 'refunds.db'}: 4 runs, ")
    assert "redacted customer: " in exported.stdout
    assert sorted(p.name for p in bundles.iterdir()) == ["refunds.db"]  # one file, nothing beside it
    # 2. In CI, replay each with today's agent: exit 0 while it behaves as it did.
    for run_id, verdict in [("refund-a1002", "matches the recording to its end"),
                            ("refund-a1004-halted", "matches the recording up to where it stops (halted"),
                            ("eligibility-a1004", "matches the recording to its end")]:  # fmt: skip
        replayed = cli("replay", bundles / "refunds.db", run_id, "--agent", DEMO_AGENT)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert verdict in replayed.stdout
    replayed = cli("replay", bundles / "refunds.db", "refund-a1002", "--agent", DEMO_AGENT, "--json")
    assert json.loads(replayed.stdout)["redacted"] == ["customer"]
    assert (
        "not compared: customer (redacted when the bundle was exported)"
        in cli("replay", bundles / "refunds.db", "refund-a1002", "--agent", DEMO_AGENT).stdout
    )
    # 3. A change that alters what the agent does fails the build: exit 3, the divergence shown.
    changed = cli("replay", bundles / "refunds.db", "refund-a1002", "--agent", CHANGED_AGENT)
    assert changed.returncode == 3 and "diverged at record 3 (tool:call_0_0)" in changed.stdout, changed.stdout
    # Every view opens the bundle like any store.
    assert cli("show", bundles / "refunds.db", "refund-a1002").returncode == 0
    assert cli("events", bundles / "refunds.db", "refund-a1002").returncode == 0
    assert cli("mermaid", bundles / "refunds.db", "eligibility-a1004", "--ascii").returncode == 0
    runs = json.loads(cli("runs", bundles / "refunds.db", "--json").stdout)
    assert [r["run_id"] for r in runs] == [
        "eligibility-a1004", "eligibility-a1004>call_0_0", "refund-a1002", "refund-a1004-halted",
    ]  # fmt: skip


def test_export_refuses_bad_input_in_one_line(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "b.db"
    one_line_error(cli("export", demo_db, "no-such-run", "-o", out), 1, "no run 'no-such-run'")
    one_line_error(
        cli("export", demo_db, "refund-a1002", "-o", out, "--redact", "$.salt"),
        2,
        "names a member of the record itself",
    )
    one_line_error(cli("export", demo_db, "-o", out), 2, "name a run to export")
    one_line_error(cli("export", demo_db, "refund-a1002", "--status", "halted", "-o", out), 2, "not both")
    one_line_error(cli("export", demo_db, "--filter", "zzz-nothing", "-o", out), 1, "no run matches --filter")
    one_line_error(cli("export", demo_db, "refund-a1002", "-o", "-"), 2, "only --jsonl")
    one_line_error(cli("export", tmp_path / "missing.db", "refund-a1002", "-o", out), 2, "no such file")
    assert not out.exists()
    assert cli("export", demo_db, "refund-a1002", "-o", out).returncode == 0
    one_line_error(
        cli("export", demo_db, "refund-a1002", "-o", out), 2, "exists: nothing written (--force replaces it)"
    )
    assert cli("export", demo_db, "refund-a1002", "-o", out, "--force").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.db", "demo.db"]


def test_many_runs_by_status_and_json_lines(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    halted = cli("export", demo_db, "--status", "halted", "--status", "awaiting-approval", "-o", tmp_path / "h.db")
    assert halted.returncode == 0, halted.stderr
    assert "refund-a1004-halted" in halted.stdout and "refund-a1005 " in halted.stdout
    lines = cli("export", demo_db, "--filter", "a1004", "--jsonl", "-o", "-", "--no-sub-runs")
    assert lines.returncode == 0, lines.stderr
    rows = [json.loads(line) for line in lines.stdout.splitlines()]
    assert {r["run_id"] for r in rows} == {"eligibility-a1004", "eligibility-a1004>call_0_0", "refund-a1004-halted"}
    assert rows[0] == {
        "run_id": rows[0]["run_id"],
        "index": 0,
        "name": "@journal",
        "kind": "header",
        "format": "bide.journal.v1-dev",
    }
    assert lines.stderr.startswith("wrote standard output: 3 runs")  # the report keeps out of the data


def test_import_refuses_conflicts_and_skips_what_is_there(
    demo_db: Path,  # noqa: F811
    tmp_path: Path,
    postgres_cluster: PostgresCluster,
) -> None:
    plain, redacted = tmp_path / "plain.db", tmp_path / "redacted.db"
    assert cli("export", demo_db, "refund-a1002", "refund-a1005", "-o", plain).returncode == 0
    assert cli("export", demo_db, "refund-a1002", "-o", redacted, "--redact", "customer").returncode == 0
    target = f"{postgres_cluster.dsn}?schema=i_{uuid.uuid4().hex[:12]}"
    one_line_error(cli("import", plain, target), 2, "")  # the schema does not exist, and nothing makes it
    first = cli("import", redacted, target, "--create")
    assert first.returncode == 0, first.stderr
    assert "imported: refund-a1002  12 of 12 records written" in first.stdout
    assert "the runs carry redacted values (customer)" in first.stdout
    refused = cli("import", plain, target)
    assert refused.returncode == 6, refused.stdout + refused.stderr
    assert "refused refund-a1002: its record 3 (tool:call_0_0) holds other bytes" in refused.stderr
    assert "nothing was written" in refused.stderr and "Traceback" not in refused.stderr
    listed = json.loads(cli("runs", target, "--json").stdout)
    assert [r["run_id"] for r in listed] == ["refund-a1002"]  # refund-a1005 was not written either
    again = cli("import", redacted, target)
    assert "skipped (already there, identical): refund-a1002  0 of 12 records written" in again.stdout
    renamed = cli("import", plain, target, "--prefix", "prod/")
    assert renamed.returncode == 0, renamed.stderr
    assert "imported: refund-a1002 as prod/refund-a1002" in renamed.stdout
    one_line_error(cli("import", plain, target, "--prefix", "a>b"), 2, "cannot hold '>'")
    # ...and back out of PostgreSQL into a bundle that replays.
    back = tmp_path / "back.db"
    assert cli("export", target, "prod/refund-a1002", "-o", back).returncode == 0
    assert cli("replay", back, "prod/refund-a1002").returncode == 0
    conn = sqlite3.connect(back)
    (source,) = conn.execute("SELECT value FROM agenttui_bundle WHERE key = 'source'").fetchone()
    conn.close()
    assert source.startswith("postgresql://") and postgres_cluster.password not in source  # a bundle keeps no secret


@pytest.mark.parametrize("create", [False, True])
def test_import_into_a_new_sqlite_file_only_when_asked(demo_db: Path, tmp_path: Path, create: bool) -> None:  # noqa: F811
    bundle = tmp_path / "b.db"
    assert cli("export", demo_db, "refund-a1002", "-o", bundle).returncode == 0
    target = tmp_path / "new.db"
    done = cli("import", bundle, target, *(["--create"] if create else []))
    if create:
        assert done.returncode == 0 and target.exists(), done.stderr
    else:
        # The store is named as missing, and the way to make it is given.
        one_line_error(done, 2, "no such file: the store does not exist; --create makes it")
        assert not target.exists()
