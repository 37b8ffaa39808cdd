"""A replay never fires a side effect unasked: your tools that are not read-only are served from
the recording; running one for real takes an explicit option and a confirmation naming it."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from agenttui.agent.factory import AgentSetup
from agenttui.demo.build import build_demo, factory
from agenttui.demo.desk import Effects, desk_tools
from agenttui.journal import Journal
from agenttui.replay.session import replay_verdict
from agenttui.replay.verdict import VerdictKind
from agenttui.stores.base import Store
from agenttui.stores.sqlite import SQLiteStore
from tests.processes import agenttui
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

SIDE_EFFECTS = ("refund_payment", "send_email", "wait_for_settlement", "refunds_specialist")


def counted(run_id: str, effects: Effects) -> AgentSetup:
    return replace(factory(run_id), tools=desk_tools(effects))


@pytest.fixture
async def demo(store: Store) -> Store:
    await build_demo(store, bulk_turns=2)
    return store


async def test_your_agent_replays_without_firing_a_side_effect(demo: Store) -> None:
    effects = Effects()
    for run_id, expected in (("refund-a1002", VerdictKind.MATCHES), ("refund-a1004-halted", VerdictKind.MATCHES_SO_FAR),
                             ("refund-a1003-denied", VerdictKind.MATCHES), ("eligibility-a1004", VerdictKind.MATCHES)):  # fmt: skip
        session, verdict = await replay_verdict(demo, run_id, counted(run_id, effects))
        assert verdict.kind == expected, (run_id, verdict.summary())
        assert verdict.served == SIDE_EFFECTS and verdict.live == ()
        assert session.mode == "refund_desk tools (your code, side effects served)"
    assert effects.refunds == [] and effects.emails == []  # the halted refund did not fire again either


async def test_a_live_tool_runs_for_real_once_and_only_into_the_replay(demo: Store) -> None:
    effects = Effects()
    before = [e.name async for e in demo.load("refund-a1002")]
    _, verdict = await replay_verdict(
        demo, "refund-a1002", counted("refund-a1002", effects), live_tools=["refund_payment"]
    )
    assert effects.refunds == [("A-1002", 129.0)] and effects.emails == []  # the email stays served
    assert verdict.live == ("refund_payment",) and "refund_payment" not in verdict.served
    assert verdict.kind == VerdictKind.MATCHES  # the demo's refund returns what it returned then
    assert [e.name async for e in demo.load("refund-a1002")] == before  # the source is never written


# -- the command line --------------------------------------------------------------------------


@pytest.fixture
def demo_file(demo_db: Path) -> Path:  # noqa: F811  (the fixture imported above)
    """A private copy of the demo store, as the TUI tests use."""
    return demo_db


def cli(*args: str, effects: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return agenttui(*args, stdin=stdin, env={"AGENTTUI_EFFECTS": str(effects)})


COUNTING = "tests.agent.counting_agent:factory"


def test_the_cli_serves_side_effects_and_asks_before_running_one(demo_file: Path, tmp_path: Path) -> None:
    effects = tmp_path / "effects.log"
    served = cli("replay", str(demo_file), "refund-a1004-halted", "--agent", COUNTING, effects=effects)
    assert served.returncode == 0, served.stdout + served.stderr
    assert "served from the recording, not run (not read-only): refund_payment, send_email" in served.stdout
    assert not effects.exists()
    # Without a terminal to ask at, running one for real needs --yes; a tool it does not know, or
    # one that is read-only anyway, is a usage error. Nothing runs in any of them.
    for args, why in [(["--live-tool", "refund_payment"], "confirm at a terminal, or add --yes"),
                      (["--live-tool", "refund"], "your agent has no tool 'refund'"),
                      (["--live-tool", "lookup_order", "--yes"], "lookup_order is read-only")]:  # fmt: skip
        refused = cli(
            "replay", str(demo_file), "refund-a1004-halted", "--agent", COUNTING, *args, effects=effects, stdin=""
        )
        assert refused.returncode == 2 and why in refused.stderr, refused.stderr
    assert not effects.exists()
    live = cli(
        "replay",
        str(demo_file),
        "refund-a1004-halted",
        "--agent",
        COUNTING,
        "--live-tool",
        "refund_payment",
        "--yes",
        effects=effects,
    )
    assert live.returncode == 3, live.stdout + live.stderr  # the halted refund really ran this time: it diverges
    assert "ran for real, side effects and all: refund_payment" in live.stdout
    assert effects.read_text() == "refund A-1004 240.0\n"


async def test_the_source_is_untouched_by_a_live_replay(demo_file: Path, tmp_path: Path) -> None:
    before = demo_file.read_bytes()
    cli(
        "replay",
        str(demo_file),
        "refund-a1002",
        "--agent",
        COUNTING,
        "--live-tool",
        "refund_payment",
        "--yes",
        effects=tmp_path / "e.log",
    )
    assert demo_file.read_bytes() == before
    store = await SQLiteStore.open(demo_file, read_only=True)
    try:
        assert [r.name for r in await Journal(store).history("refund-a1002")][-1] == "run:complete"
    finally:
        await store.close()
