"""``agenttui replay SOURCE... --all | --where EXPR``: recorded runs as a regression suite,
replayed against the agent's code from stores, bundles and folders of bundles, with a line a
run, a summary, one JSON verdict a line, JUnit XML for CI, and the exit code of the worst."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.pg import PostgresCluster
from tests.runs.test_bundle_cli import CHANGED_AGENT, DEMO_AGENT, cli, one_line_error
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

COMPLETE_REFUNDS = "status=complete and id=refund-*"


def test_a_bundle_folder_replays_as_a_suite_and_a_change_fails_it(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    suite = tmp_path / "runs"
    suite.mkdir()
    assert cli("export", demo_db, "refund-a1002", "refund-a1003-denied", "-o", suite / "refunds.db").returncode == 0
    assert cli("export", demo_db, "lookup-z0042", "-o", suite / "lookups.db").returncode == 0
    (suite / "notes.txt").write_text("not a bundle: left alone")

    passing = cli("replay", suite, "--all", "--agent", DEMO_AGENT)
    assert passing.returncode == 0, passing.stdout + passing.stderr
    assert passing.stdout.splitlines() == [
        "✓ lookups.db::lookup-z0042  matches the recording to its end",
        "✓ refunds.db::refund-a1002  matches the recording to its end",
        "✓ refunds.db::refund-a1003-denied  matches the recording to its end",
        "3 runs replayed: 3 matches",
    ]

    report = tmp_path / "replays.xml"
    failing = cli("replay", suite, "--all", "--agent", CHANGED_AGENT, "--junit", report)
    assert failing.returncode == 3, failing.stdout + failing.stderr
    assert "✗ refunds.db::refund-a1002  diverged at record 3 (tool:call_0_0)" in failing.stdout
    assert failing.stdout.splitlines()[-1].startswith("3 runs replayed: 3 diverged; JUnit XML in ")
    cases = ET.parse(report).getroot()
    assert cases.get("tests") == "3" and cases.get("failures") == "3"
    failure = cases.find("testcase[@name='refund-a1002']/failure")
    assert failure is not None and "tool:call_0_0" in (failure.get("message") or "")
    assert "warehouse" in (failure.text or "")  # the two sides of the record, diffed


def test_a_filter_selects_the_runs_and_json_streams_a_verdict_each(demo_db: Path) -> None:  # noqa: F811
    done = cli("replay", demo_db, "--where", COMPLETE_REFUNDS, "--agent", CHANGED_AGENT, "--json")
    assert done.returncode == 3, done.stderr
    *verdicts, summary = [json.loads(line) for line in done.stdout.splitlines()]
    assert [v["run_id"] for v in verdicts] == ["refund-a1002", "refund-a1003-denied"]
    assert all(v["verdict"] == "diverged" and v["source"] == str(demo_db) for v in verdicts)
    assert verdicts[0]["divergence"]["step"] == "tool:call_0_0"
    assert summary == {"summary": "2 runs replayed: 2 diverged", "exit_code": 3}


def test_refusals_and_matches_give_the_worst_exit_code(demo_db: Path) -> None:  # noqa: F811
    every = cli("replay", demo_db, "--all")
    assert every.returncode == 2, every.stderr  # refused runs (a saga, a run never started), none diverged
    assert "⊘ demo.db::reply-a1006  refused: no run:start record" in every.stdout
    assert every.stdout.splitlines()[-1].endswith("4 refused")


def test_a_suite_refuses_what_it_cannot_do_in_one_line(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    one_line_error(cli("replay", demo_db, "--all", "--until", "divergence"), 2, "--until: one run's options")
    one_line_error(cli("replay", tmp_path / "missing", "--all"), 2, "no such file or folder")
    (tmp_path / "empty").mkdir()
    one_line_error(cli("replay", tmp_path / "empty", "--all"), 2, "a folder with no bundle in it")
    one_line_error(cli("replay", demo_db, "refund-a1002", "--junit", tmp_path / "r.xml"), 2, "--junit goes with")
    one_line_error(cli("replay", demo_db, "--where", "id=nothing-*"), 1, "no run to replay")
    one_line_error(cli("replay", demo_db, "--where", "stauts=x"), 2, "stauts")
    before = demo_db.read_bytes()
    one_line_error(cli("replay", demo_db, "--all", "--junit", demo_db), 2, str(demo_db))  # never over a store
    assert demo_db.read_bytes() == before


@pytest.mark.postgres
async def test_a_postgres_schema_is_a_source_too(postgres_cluster: PostgresCluster) -> None:
    url = await postgres_cluster.demo_schema("suite", bulk_turns=5)
    done = cli("replay", url, "--where", COMPLETE_REFUNDS, "--agent", DEMO_AGENT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "2 runs replayed: 2 matches"


@pytest.mark.parametrize(
    ("agent", "kind"),
    [
        ("renamed_tool", "call call_0_0 fails now where the recording has its result: unknown tool: lookup_order"),
        ("no_refund_gate", "another decision about call call_1_0: the replay writes attempt:tool:call_1_0"),
    ],
)
def test_a_change_to_the_agent_is_named_by_its_kind(demo_db: Path, agent: str, kind: str) -> None:  # noqa: F811
    """The team's changes: a tool renamed, an approval gate removed; each fails the suite, named."""
    where = "id=refund-a1002 or id=refund-a1005"
    done = cli("replay", demo_db, "--where", where, "--agent", f"tests.runs.regression_agents:{agent}")
    assert done.returncode == 3, done.stdout + done.stderr
    assert kind in done.stdout


def test_a_reworded_prompt_still_replays(demo_db: Path) -> None:  # noqa: F811
    """agenttui's runtime records no digest of the prompt (the Go SDK's do): the recorded turns
    are served as they were, and the runs replay as before."""
    done = cli("replay", demo_db, "--where", "id=refund-a1002", "--agent", "tests.runs.regression_agents:edited_prompt")
    assert done.returncode == 0 and "matches the recording to its end" in done.stdout, done.stdout
