"""A run's recorded policy is the floor: whoever drives a run, with whatever factory, a tool its
``run:start`` gated never runs without its decision, and one it recorded as not retry-safe never
runs again over an attempt of unknown outcome. Every driver (the loop itself, a single re-drive,
a bulk re-drive, recover) on every store, counting the refunds really sent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agenttui.agent.pauses import PendingApproval, ResumeHalt
from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import ToolSafety
from agenttui.demo.build import build_demo
from agenttui.demo.desk import Effects
from agenttui.journal import Journal, keys
from agenttui.runs.recovery.operations import RecoverAll, Redrive
from agenttui.runs.selection.batch import RedriveRuns, apply_selection, select
from agenttui.runs.selection.where import parse_where
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import run_status
from agenttui.stores.base import Store
from tests.agent.loosening_agents import LOOSENINGS, loosened
from tests.processes import agenttui
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

AWAITING_APPROVAL = "refund-a1005"
HALTED = "refund-a1004-halted"
APPROVED = "refund-a1005-approved"


@pytest.fixture
async def demo(store: Store) -> Store:
    await build_demo(store, bulk_turns=2)
    return store


# -- the policy: the stricter of the two ----------------------------------------------------------


@pytest.mark.parametrize(
    ("yours", "recorded", "gated", "retry_safe", "read_only"),
    [
        (ToolSafety(), ToolSafety(needs_approval=True), True, False, False),
        (ToolSafety(idempotent=True), ToolSafety(), False, False, False),
        (ToolSafety(read_only=True), ToolSafety(idempotent=True), False, True, False),
        (ToolSafety(idempotency_key=True), ToolSafety(read_only=True), False, True, False),
        (ToolSafety(read_only=True), ToolSafety(read_only=True, needs_approval=True), True, True, True),
        (ToolSafety(needs_approval=True), ToolSafety(read_only=True), True, False, False),
    ],
)
def test_a_policy_is_made_as_strict_as_the_recorded_one(
    yours: ToolSafety, recorded: ToolSafety, gated: bool, retry_safe: bool, read_only: bool
) -> None:
    floor = yours.at_least(recorded)
    assert (floor.needs_approval, floor.retry_safe, floor.read_only) == (gated, retry_safe, read_only)


def test_a_policy_as_strict_as_the_recorded_one_is_kept_whole() -> None:
    tally = ToolSafety(needs_approval=True, approval_tally=True, idempotency_key=True, interrupts=True)
    assert tally.at_least(ToolSafety(needs_approval=True, idempotent=True)) is tally  # its m-of-n gate, its key
    assert tally.at_least(None) is tally  # a Go service's run records no policy: yours holds


# -- every driver, every loosening, every store ---------------------------------------------------

Driver = Callable[[Store, str, Callable[[str], object]], Awaitable[object]]


async def by_the_loop(store: Store, run_id: str, factory: Callable[[str], object]) -> object:
    start = await Journal(store).get(run_id, keys.RUN_START)
    assert start is not None
    try:
        return await factory(run_id).agent(store).run(run_id, RunStart.decode(start.result).input)  # type: ignore[attr-defined]  # an AgentSetup
    except (PendingApproval, ResumeHalt) as pause:
        return pause


async def by_redrive(store: Store, run_id: str, factory: Callable[[str], object]) -> object:
    return await Redrive(run_id, "tests.agent.loosening_agents:any", factory).apply(store)  # type: ignore[arg-type]  # an AgentFactory


async def by_bulk_redrive(store: Store, run_id: str, factory: Callable[[str], object]) -> object:
    action = RedriveRuns("tests.agent.loosening_agents:any", factory)  # type: ignore[arg-type]  # an AgentFactory
    selection = await select(store, action, where=parse_where(f"id={run_id}"))
    return [outcome async for outcome in apply_selection(store, selection)]


DRIVERS: dict[str, Driver] = {"loop": by_the_loop, "redrive": by_redrive, "bulk": by_bulk_redrive}


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("kind", LOOSENINGS)
async def test_a_gate_the_run_recorded_holds_whatever_the_factory_says(demo: Store, kind: str, driver: str) -> None:
    effects = Effects()
    await DRIVERS[driver](demo, AWAITING_APPROVAL, lambda run_id: loosened(run_id, kind, effects))
    assert effects.refunds == []
    assert (await run_status(demo, AWAITING_APPROVAL)).state == RunState.AWAITING_APPROVAL
    assert await Journal(demo).get(AWAITING_APPROVAL, keys.tool_key("call_1_0")) is None  # nothing settled it


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("kind", LOOSENINGS)
async def test_a_call_of_unknown_outcome_is_not_run_again_whatever_the_factory_says(
    demo: Store, kind: str, driver: str
) -> None:
    effects = Effects()
    await DRIVERS[driver](demo, HALTED, lambda run_id: loosened(run_id, kind, effects))
    assert effects.refunds == []
    assert (await run_status(demo, HALTED)).state == RunState.HALTED


@pytest.mark.parametrize("kind", LOOSENINGS)
async def test_recover_fires_only_the_refund_a_person_approved(demo: Store, kind: str) -> None:
    effects = Effects()
    report = await RecoverAll("tests.agent.loosening_agents:any", lambda run_id: loosened(run_id, kind, effects)).run(
        demo
    )
    expected = [] if LOOSENINGS[kind] is None else [("A-1005", 64.1)]  # the approved run's refund, once
    assert effects.refunds == expected, report
    assert (await run_status(demo, AWAITING_APPROVAL)).state == RunState.AWAITING_APPROVAL
    assert (await run_status(demo, HALTED)).state == RunState.HALTED


@pytest.mark.parametrize("kind", ["ungated_read_only", "gated_read_only", "ungated_keyed"])
async def test_an_approved_call_runs_once_behind_the_attempt_marker_the_run_recorded_it_needs(
    demo: Store, kind: str
) -> None:
    """Your code calls the refund retry-safe: the run recorded it is not, so it gets its marker
    (a crash now halts it rather than refunding twice)."""
    effects = Effects()
    await by_the_loop(demo, APPROVED, lambda run_id: loosened(run_id, kind, effects))
    assert effects.refunds == [("A-1005", 64.1)]
    assert await Journal(demo).get(APPROVED, keys.attempt_key("call_1_0")) is not None
    assert (await run_status(demo, APPROVED)).state == RunState.COMPLETE


# -- the command line: a process of its own, effects counted in a file ----------------------------


def test_the_cli_drivers_name_what_they_run_and_hold_the_recorded_gate(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811  (the fixture imported above)
    effects = tmp_path / "effects.log"
    env = {"AGENTTUI_EFFECTS": str(effects)}
    loose = "tests.agent.loosening_agents:ungated_read_only"
    store = str(demo_db)
    one = agenttui("redrive", store, AWAITING_APPROVAL, "--agent", loose, env=env)
    assert one.returncode == 0, one.stderr
    assert one.stdout.startswith("First: refund_payment (call_1_0) stops: awaits approval\n"), one.stdout
    assert "re-driven; paused again" in one.stdout
    preview = agenttui("redrive", store, "--where", "id=refund-a1005*", "--agent", loose, env=env)
    assert "refund-a1005-approved  First: refund_payment (call_1_0) RUNS" in preview.stdout, preview.stdout
    bulk = agenttui("redrive", store, "--where", f"id={AWAITING_APPROVAL}", "--agent", loose, "--yes", env=env)
    assert bulk.returncode == 0, bulk.stdout + bulk.stderr
    everything = agenttui("recover", store, "--agent", loose, env=env)
    assert everything.returncode == 5, everything.stdout  # the damaged run is a genuine error
    assert effects.read_text().splitlines() == ["refund A-1005 64.1"]  # the approved run's, once


async def test_the_tuis_redrive_names_where_it_stops_and_the_recorded_gate_holds(
    demo_db: Path,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agenttui.stores.sqlite import SQLiteStore
    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.dialogs import ChoiceDialog, ConfirmDialog
    from agenttui.tui.screens.runs import RunsScreen
    from tests.tui.conftest import screen_of, settle, until, wait_for_screen

    effects = tmp_path / "effects.log"
    monkeypatch.setenv("AGENTTUI_EFFECTS", str(effects))
    app = AgentTuiApp(str(demo_db), tail=False, agent_spec="tests.agent.loosening_agents:ungated_read_only")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        runs = screen_of(app, RunsScreen)
        runs.table.cursor = next(i for i, row in enumerate(runs.table.items) if row.run_id == AWAITING_APPROVAL)
        await pilot.press("o")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("down", "down", "enter")  # approve, deny, then: re-drive with your agent
        await wait_for_screen(pilot, ConfirmDialog)
        shown = screen_of(app, ConfirmDialog)._will_write
        assert shown.startswith("First: refund_payment (call_1_0) stops: awaits approval"), shown
        await pilot.press("w")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmDialog), "the re-drive")
        await settle(pilot)
    assert not effects.exists()
    async with await SQLiteStore.open(demo_db, read_only=True) as store:
        assert await Journal(store).get(AWAITING_APPROVAL, keys.tool_key("call_1_0")) is None


async def test_a_replay_serves_a_tool_your_code_calls_read_only_where_the_run_recorded_it_is_not(
    demo: Store,
) -> None:
    """A replay runs your read-only tools for real: a factory that calls the refund read-only
    would have refunded during a replay. The run's recorded policy decides what runs."""
    from agenttui.replay.session import replay_verdict

    effects = Effects()
    _, verdict = await replay_verdict(demo, "refund-a1002", loosened("refund-a1002", "ungated_read_only", effects))
    assert effects.refunds == [] and "refund_payment" in verdict.served
