"""The cost lens in the run view: the inspector shows what a model turn cost at its model's price,
the context it sent, and what its dropped requests wasted; a ``@spend`` record says where its
usage is counted. Prices are read in a thread once the run opens."""

from __future__ import annotations

from pathlib import Path

from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.widgets.inspector import RecordInspector
from tests.runs.test_cost import RUN, go_runs
from tests.tui.conftest import settle
from tests.tui.test_app import shown
from tests.tui.test_open_run import SIZE, open_run


async def inspected(db: Path, run_id: str, indices: list[int]) -> list[str]:
    app = AgentTuiApp(str(db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_run(pilot, run_id)
        await pilot.press("i")
        seen = []
        for index in indices:
            screen.journal_list.cursor = index
            await settle(pilot)
            seen.append(shown(screen.query_one("#inspector-content")))
        assert app.prices is not None and screen.query_one(RecordInspector)
        return seen


async def test_a_model_turn_shows_its_cost_and_context(demo_db: Path) -> None:
    start, turn = await inspected(demo_db, "eligibility-a1004", [1, 2])
    assert "cost" not in start  # run:start: no model turn
    assert "cost $0.0020 · context 380 tokens" in turn


async def test_wasted_spend_is_marked_on_the_turn_and_on_a_failed_request(tmp_path: Path) -> None:
    db = tmp_path / "go.db"
    store = await SQLiteStore.open(db)
    try:
        for run in go_runs():
            for name, data in run.entries():
                await store.insert(run.run_id, name, data)
    finally:
        await store.close()
    # The header, run:start, @llm/0 (a hedged request: 800 tokens at $3 a million), its result,
    # @spend/req_9, @llm/1, @spend-late/req_10, @llm/2 (a model no price is known for).
    turn, spend, unpriced = await inspected(db, RUN, [2, 4, 7])
    assert "cost $0.0091 · context 5,500 tokens" in turn
    assert "wasted 800 tokens, $0.0024 (dropped requests)" in turn
    assert "wasted 1,500 tokens: a dropped request's usage, counted on the turn that retried it" in spend
    assert "cost unknown · context 100 tokens · no price known for acme/mystery-1" in unpriced
