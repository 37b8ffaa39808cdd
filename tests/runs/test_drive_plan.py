"""What a drive does first, named before it runs: the calls it executes (tool, arguments, the
policy they run under, approved or not), where it stops, and that the rest is the model's; on the
demo's runs as the runtime wrote them, and on a factory that loosened the recorded policy."""

from __future__ import annotations

import pytest

from agenttui.demo.build import build_demo, factory
from agenttui.demo.desk import Effects
from agenttui.runs.recovery.operations import Redrive, read_drive_plan
from agenttui.runs.selection.batch import RedriveRuns, planned_selection, preview_lines, select, selection_json
from agenttui.runs.selection.where import parse_where
from agenttui.stores.base import Store
from tests.agent.loosening_agents import loosened


@pytest.fixture
async def demo(store: Store) -> Store:
    await build_demo(store, bulk_turns=2)
    return store


async def test_an_approved_refund_is_named_with_its_arguments_and_approver(demo: Store) -> None:
    plan = await read_drive_plan(demo, "refund-a1005-approved", factory)
    (call,) = plan.fires
    assert (call.tool_name, call.tool_use_id, call.runs, call.stops) == ("refund_payment", "call_1_0", True, False)
    assert call.arguments == '{"order_id":"A-1005","amount":64.1,"reason":"damaged in transit"}'
    assert call.policy == "side effects, not retry-safe, gated on approval"
    assert call.outcome == "RUNS, approved by ops@example.com: an attempt marker is written first"
    assert plan.summary() == "first: refund_payment (call_1_0) RUNS; then the model's turn @llm/2"
    assert "depends on its answers" in plan.then


@pytest.mark.parametrize(
    ("run_id", "summary"),
    [
        ("refund-a1005", "first: refund_payment (call_1_0) stops: awaits approval"),
        ("refund-a1004-halted", "first: refund_payment (call_1_0) stops: outcome unknown"),
        ("refund-a1001-stalled", "first: the model's turn @llm/1: your agent's model answers it;"),
        ("lookup-a1001-damaged", "first: nothing: the run holds an unreadable record (@llm/1)"),
    ],
)
async def test_a_drive_that_runs_nothing_says_where_it_stops(demo: Store, run_id: str, summary: str) -> None:
    plan = await read_drive_plan(demo, run_id, factory)
    assert plan.fires == () and plan.summary().startswith(summary)


async def test_the_plan_shows_the_recorded_policy_not_the_loosened_one(demo: Store) -> None:
    plan = await read_drive_plan(demo, "refund-a1005", lambda run_id: loosened(run_id, "ungated_read_only", Effects()))
    assert plan.calls[0].policy == "side effects, not retry-safe, gated on approval" and plan.fires == ()
    missing = await read_drive_plan(
        demo, "refund-a1005-approved", lambda run_id: loosened(run_id, "missing", Effects())
    )
    assert missing.calls[0].short == "unknown tool: not run" and missing.fires == ()


async def test_a_redrive_confirmation_names_its_first_calls(demo: Store) -> None:
    bare = Redrive("refund-a1005-approved", "agenttui.demo.build:factory", factory)
    shown = (await bare.planned(demo)).will_write()
    assert shown.splitlines()[0] == "First: refund_payment (call_1_0) RUNS; then the model's turn @llm/2"
    assert "  refund_payment (call_1_0) RUNS, approved by ops@example.com" in shown
    assert '    side effects, not retry-safe, gated on approval; arguments {"order_id":"A-1005"' in shown


async def test_a_bulk_redrive_preview_names_each_runs_first_calls(demo: Store) -> None:
    action = RedriveRuns("agenttui.demo.build:factory", factory)
    selection = await select(demo, action, where=parse_where("id=refund-a1005*"))
    selection = await planned_selection(demo, selection)
    lines = preview_lines(selection, "demo.db")
    assert any("refund-a1005-approved  First: refund_payment (call_1_0) RUNS" in line for line in lines), lines
    assert any("refund-a1005           First: refund_payment (call_1_0) stops" in line for line in lines), lines
    runs = {run["run_id"]: run["writes"] for run in selection_json(selection, "demo.db")["runs"]}
    assert runs["refund-a1005-approved"].startswith("First: refund_payment (call_1_0) RUNS")


async def test_a_recover_pass_names_the_runs_whose_drive_runs_a_tool_first(demo: Store) -> None:
    from agenttui.runs.recovery.operations import RecoverAll
    from agenttui.runs.recovery.recover import plan_recover

    shown = await RecoverAll("agenttui.demo.build:factory", factory, plan=await plan_recover(demo)).planned(demo)
    lines = shown.will_write().splitlines()
    assert "runs a tool first in 3 runs:" in lines, lines  # the refund, a question asked again, a settlement
    assert "  refund-a1005-approved: refund_payment (call_1_0) RUNS; then the model's turn @llm/2" in lines
