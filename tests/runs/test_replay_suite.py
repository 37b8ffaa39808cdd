"""``agenttui replay SOURCE... --all | --where EXPR``: recorded runs as a regression suite,
replayed against the agent's code from stores, bundles and folders of bundles, with a line a
run, a summary, one JSON verdict a line, JUnit XML for CI, and the exit code of the worst."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from agenttui.replay.session import RunRead
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


@pytest.mark.parametrize(("agent", "changed"), [("edited_prompt", "the prompt"), ("reworded_tool", "the tool list")])
def test_a_changed_request_is_tolerated_and_reported_and_strict_fails_on_it(
    demo_db: Path,  # noqa: F811
    agent: str,
    changed: str,
) -> None:
    """A reworded prompt or tool description changes what the model is sent, not what the code
    does with the recorded answers: the run passes, the change named; ``--strict`` fails it."""
    words = f"{changed} changed since the recording: 4 recorded model outputs served to a different request"
    args = ("replay", demo_db, "--where", "id=refund-a1002", "--agent", f"tests.runs.regression_agents:{agent}")
    tolerated = cli(*args)
    assert tolerated.returncode == 0, tolerated.stdout + tolerated.stderr
    assert (
        f"✓ demo.db::refund-a1002  matches the recording to its end; tolerated: {words} (@llm/0 to @llm/3)"
        in tolerated.stdout
    )
    verdict, _ = [json.loads(line) for line in cli(*args, "--json").stdout.splitlines()]
    member = "prompt_digest" if agent == "edited_prompt" else "tools_digest"
    assert [(c["member"], c["turns"][0]) for c in verdict["request_changes"]] == [(member, "@llm/0")]

    strict = cli(*args, "--strict", "--json")
    assert strict.returncode == 3, strict.stdout + strict.stderr
    verdict, summary = [json.loads(line) for line in strict.stdout.splitlines()]
    assert verdict["verdict"] == "diverged" and verdict["divergence"]["step"] == "@llm/0"
    assert verdict["divergence"]["kind"].startswith(f"{changed} changed: the recorded output was served to a request")
    assert verdict["request_changes"] == [] and summary["exit_code"] == 3
    one = cli("replay", demo_db, "refund-a1002", "--agent", f"tests.runs.regression_agents:{agent}", "--strict")
    assert one.returncode == 3 and f"{words} (@llm/0 to @llm/3) (--strict)" in one.stdout, one.stdout
    assert f'-  "{member}": "' in one.stdout  # both digests shown, diffed


def test_a_run_approved_and_not_yet_redriven_replays_up_to_its_call(demo_db: Path) -> None:  # noqa: F811
    """The recording stops at an approved call that no drive has attempted: the replay stops there
    too (no attempt marker of its own), and a removed gate is still told."""
    args = ("replay", demo_db, "refund-a1005-approved", "--agent")
    same = cli(*args, DEMO_AGENT)
    assert same.returncode == 0 and "matches the recording up to where it stops (ready:" in same.stdout, same.stdout
    ungated = cli(*args, "tests.runs.regression_agents:no_refund_gate")
    assert ungated.returncode == 3, ungated.stdout
    assert (
        "another decision about call call_1_0 (refund_payment): gated on a person's approval in the recording,"
        " ungated in your code"
    ) in ungated.stdout


async def test_a_suite_reads_each_page_of_runs_as_each_run_reads_itself(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    """``read_runs`` (three round trips a page) gives each run what ``RunRead.of`` reads of it
    alone: its entries, its root run's lease row, the source's manifest; and the verdicts match."""
    from agenttui.agent.factory import load_factory
    from agenttui.replay.session import read_runs
    from agenttui.replay.suite import replay_one, replay_suite
    from agenttui.stores import open_store

    bundle = tmp_path / "refunds.db"
    exported = cli("export", demo_db, "refund-a1002", "refund-a1005-approved", "-o", bundle, "--redact", "customer")
    assert exported.returncode == 0, exported.stderr
    writer = await open_store(str(demo_db))
    try:
        assert await writer.acquire_lease("refund-a1002", "a-worker", 600)
    finally:
        await writer.close()
    factory = load_factory(DEMO_AGENT)
    for source in (demo_db, bundle):
        store = await open_store(str(source), read_only=True, create=False)
        try:
            run_ids = [run_id async for run_id in store.runs()]
            paged = await read_runs(store, run_ids)
            assert sorted(paged) == sorted(run_ids)
            for run_id in run_ids:
                alone_read, page_read = await RunRead.of(store, run_id), paged[run_id]
                assert (page_read.entries, page_read.manifest) == (alone_read.entries, alone_read.manifest), run_id
                assert _lease_row(page_read) == _lease_row(alone_read), run_id
            alone = [(await replay_one(store, str(source), run_id, factory)).verdict for run_id in run_ids]
        finally:
            await store.close()
        in_suite = [replayed.verdict async for replayed in replay_suite([str(source)], factory)]
        assert in_suite == alone
    assert paged["refund-a1002"].manifest is not None  # the bundle's: its redaction applies to each run
    assert any(verdict.redacted for verdict in in_suite)


def _lease_row(read: RunRead) -> tuple[str, str, int] | None:
    """A lease row as read, its expiry in whole seconds (read a moment apart, it moved)."""
    lease = read.lease
    return None if lease is None else (lease.run_id, lease.holder, round(lease.expires_in))
