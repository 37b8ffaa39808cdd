"""``export --sample N``: a suite's runs spread over statuses and the tools they wait on, the same
every time (``runs.bundle.sampled``)."""

from __future__ import annotations

from pathlib import Path

from agenttui.runs.bundles.export import sampled
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import RunStatus
from tests.runs.test_bundle_cli import cli
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)


def statuses() -> list[RunStatus]:
    complete = [RunStatus(f"ok-{n:04d}", RunState.COMPLETE) for n in range(1000)]
    halted = [RunStatus(f"halt-{n}", RunState.HALTED, tool_name="refund") for n in range(3)]
    asking = [RunStatus(f"ask-{n}", RunState.AWAITING_APPROVAL, tool_name=t) for n, t in enumerate(["refund", "email"])]
    return complete + halted + asking


def test_every_group_has_a_run_before_any_has_two_and_the_common_path_first() -> None:
    picked = sampled(statuses(), 4)
    assert picked == sorted(["ok-0500", "halt-1", "ask-0", "ask-1"])
    assert sampled(statuses(), 1) == ["ok-0500"]  # the largest group first


def test_a_group_is_taken_evenly_through_and_the_sample_is_the_same_every_time() -> None:
    picked = sampled(statuses(), 14)
    ok = [run for run in picked if run.startswith("ok-")]
    assert len(picked) == 14 and {"halt-0", "halt-1", "halt-2", "ask-0", "ask-1"} <= set(picked)
    assert ok == ["ok-0055", "ok-0166", "ok-0277", "ok-0388", "ok-0500", "ok-0611", "ok-0722", "ok-0833", "ok-0944"]
    assert sampled(statuses(), 14) == picked and sampled(statuses(), 5000) == sorted(s.run_id for s in statuses())


def test_export_sample_writes_a_suite(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    done = cli("export", demo_db, "--where", "status=complete", "--sample", "2", "-o", tmp_path / "suite.db")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {tmp_path / 'suite.db'}: ")
    runs = [line.split()[0] for line in cli("runs", tmp_path / "suite.db").stdout.splitlines()]
    assert runs == ["eligibility-a1004", "eligibility-a1004>call_0_0", "refund-a1002"]  # its sub-run travels with it
