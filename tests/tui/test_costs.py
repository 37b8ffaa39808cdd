"""The cost lens in the run view: the inspector shows what a model turn cost at its model's price,
the context it sent, and what its dropped requests wasted; a ``@spend`` record says where its
usage is counted. Prices are read in a thread once the run opens."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from agenttui.journal.record import Usage
from agenttui.runs.cost.lens import Spend, format_cost, money
from agenttui.stores.sqlite import SQLiteStore
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.inspector import RecordInspector
from agenttui.tui.widgets.runs_table import RunsHeader, RunsTable
from tests.gocorpus import model, text
from tests.runs.test_bundle_cli import cli
from tests.runs.test_cost import PRICES, RUN, go_runs
from tests.tui.conftest import settle, until
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


WIDE = (160, 40)


def row_text(app: AgentTuiApp, run_id: str) -> str:
    table = app.screen.query_one(RunsTable)
    index = next(i for i, row in enumerate(table.items) if row.run_id == run_id)
    return table.render_item(table.items[index], index, WIDE[0]).plain


def cli_costs(db: Path) -> dict[str, str]:
    """Each top-level run's cost as ``agenttui cost --by run`` reckons it, used and wasted together
    (``+?`` where part of it is not known: a model with no price, a record that could not be read)."""
    costs = {}
    for line in json.loads(cli("cost", str(db), "--by", "run", "--json").stdout)["lines"]:
        spent = Spend(Usage(1), Decimal(str(line["cost_usd"] + line["wasted_cost_usd"])),
                      unpriced=frozenset(line["unpriced_models"]))  # fmt: skip
        costs[line["run"]] = format_cost(spent) + ("+?" if line["unreadable"] and spent.priced else "")
    return costs


async def test_the_runs_list_shows_each_runs_cost_and_sorts_by_it(demo_db: Path) -> None:
    """Wide enough, a cost column: a top-level run's, its sub-runs rolled up (a sub-run's row
    shows none), as the command reckons it; ``$`` orders the runs by it, the largest first, and
    puts them back."""
    want = cli_costs(demo_db)
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        assert "COST" in str(screen.query_one(RunsHeader).render())
        for run_id, cost in want.items():
            assert f" {cost}  " in row_text(app, run_id), run_id
        total = json.loads(cli("cost", str(demo_db), "--json").stdout)["total"]
        partial = "+?" if total["unpriced_models"] or total["not_read_whole"] else ""
        spent = f"{money(total['cost_usd'] + total['wasted_cost_usd'])}{partial} spent"
        assert f"{spent}, {money(total['wasted_cost_usd'])} wasted" in shown(screen.query_one("#runs-counts"))
        listing = [row.run_id for row in screen.table.items]
        await pilot.press("dollar_sign")
        await settle(pilot)
        by_cost = [row.run_id for row in screen.table.items]
        amounts = [screen.model.costs[run_id].dollars for run_id in by_cost]
        assert amounts == sorted(amounts, reverse=True) and by_cost[0] == "audit-bulk"
        assert "by cost" in shown(screen.query_one("#runs-counts"))
        screen.model.toggle_fold("eligibility-a1004", True)
        screen._refresh_rows()
        sub_run = next(row for row in screen.table.items if row.depth)
        assert "$" not in row_text(app, sub_run.run_id).split(sub_run.run_id.rpartition(">")[2])[1]
        await pilot.press("dollar_sign")
        await settle(pilot)
        assert [row.run_id for row in screen.table.items if row.depth == 0] == listing


async def test_a_run_that_grows_is_costed_again(demo_db: Path) -> None:
    from agenttui.tui.messages import StoreChanged

    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        before = app.screen.model.costs["eligibility-a1004"]  # type: ignore[attr-defined]
        async with await SQLiteStore.open(demo_db) as writer:
            turn = model(9, text("more"), '"usage":{"input_tokens":1000000},"model":{"provider":"anthropic",'
                         '"model":"claude-sonnet-4-5"}')  # fmt: skip
            await writer.insert("eligibility-a1004", "@llm/9", turn.encode())
        app.screen.post_message(StoreChanged({"eligibility-a1004"}))  # what the change feed would send
        await until(pilot, lambda: app.screen.model.costs["eligibility-a1004"] != before, "the cost read again")  # type: ignore[attr-defined]
        await settle(pilot)
        assert app.screen.model.costs["eligibility-a1004"].dollars > before.dollars + 2  # type: ignore[attr-defined]


async def test_at_80_columns_no_cost_is_read(demo_db: Path) -> None:
    """The cost column gives way first, with the counts; no cost is read for a list that shows none."""
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        assert "COST" not in str(screen.query_one(RunsHeader).render()) and not screen.model.costs


async def test_open_prices_a_model_from_a_prices_file(tmp_path: Path) -> None:
    """``open --prices``: the Go-written run's unknown model priced by the file, as ``cost`` does."""
    db = tmp_path / "go.db"
    async with await SQLiteStore.open(db) as store:
        for run in go_runs():
            for name, data in run.entries():
                await store.insert(run.run_id, name, data)
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES + '\n["acme/mystery-1"]\ninput = 1\noutput = 1\n')
    app = AgentTuiApp(str(db), tail=False, prices_path=str(prices))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        # The hand-computed $0.019175 and $0.00855 wasted, and mystery-1's 110 tokens at $1 a million.
        assert " $0.0278  " in row_text(app, RUN)


def test_open_refuses_a_prices_file_that_is_not_prices(tmp_path: Path, demo_db: Path) -> None:
    (tmp_path / "prices.toml").write_text("not toml at all")
    done = cli("open", str(demo_db), "--prices", str(tmp_path / "prices.toml"))
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not a TOML file" in done.stderr


async def test_the_cost_pane_shows_each_turn_its_context_and_what_was_wasted(tmp_path: Path) -> None:
    """``$`` in a run: the run's cost, its sub-runs apart and its budget, then a block a model
    turn with its cost, a bar of its context against the largest, and its dropped requests'
    waste marked on it (the Go-written run's hand-computed figures, with the prices file's)."""
    db = tmp_path / "go.db"
    async with await SQLiteStore.open(db) as store:
        for run in go_runs():
            for name, data in run.entries():
                await store.insert(run.run_id, name, data)
    (tmp_path / "prices.toml").write_text(PRICES)
    app = AgentTuiApp(str(db), tail=False, run_id=RUN, prices_path=str(tmp_path / "prices.toml"))
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        await pilot.press("dollar_sign")
        await settle(pilot)
        text = shown(app.screen.query_one("#cost-content"))
    assert "cost $0.0192+? · wasted $0.0086+? (2,650 tokens)" in text
    assert "own $0.0181+? · sub-runs $0.0011 (rolled up)" in text
    assert "budget 172% of 10,000 tokens" in text
    assert "@llm/0  $0.0091  ▲ wasted $0.0024 (800 tokens)" in text
    assert "@llm/1  $0.0090  ▲ wasted $0.0062 (1,850 tokens)" in text
    bars = [line.split("context")[0].strip() for line in text.splitlines() if "context" in line]
    assert bars[1] == "█" * 16 and len(bars[0]) < len(bars[1])  # 5,500 against the largest, 7,000


async def test_the_cost_column_prices_the_rows_on_screen_and_the_header_sums_the_store(tmp_path: Path) -> None:
    """On a store larger than the screen, the cost column reads the runs a person sees, a screen
    at a time (an idle list prices nothing more), and the header's total is the whole store's,
    as ``agenttui cost`` reckons it, summed from the status index."""
    db = tmp_path / "many.db"
    turn = model(1, text("done"), '"usage":{"input_tokens":1000,"output_tokens":10},'
                 '"model":{"provider":"anthropic","model":"claude-sonnet-4-5"}')  # fmt: skip
    async with await SQLiteStore.open(db) as store:
        for n in range(1500):
            await store.insert(f"run-{n:05}", "@llm/1", turn.encode())
    app = AgentTuiApp(str(db), tail=False)
    async with app.run_test(size=WIDE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen) and screen.model.pending == 0
        on_screen = screen.table.size.height
        assert 0 < len(screen.model.costs) <= on_screen  # the rows seen, not the 1,500
        assert f" spent by {len(screen.model.costs)} of 1,500 runs, $0.00 wasted" in shown(
            screen.query_one("#runs-counts")
        )
        await pilot.press("end")
        await until(pilot, lambda: "run-01499" in screen.model.costs, "the last screen's costs read")
        await settle(pilot)
        assert len(screen.model.costs) <= 2 * on_screen
        await pilot.press("dollar_sign")  # by cost: every run's read, once
        await settle(pilot)
        total = json.loads(cli("cost", str(db), "--json").stdout)["total"]
        assert total["runs"] == 1500 and len(screen.model.costs) == 1500
        spent = f"{money(total['cost_usd'] + total['wasted_cost_usd'])} spent"
        assert f"{spent}, $0.00 wasted" in shown(screen.query_one("#runs-counts"))
