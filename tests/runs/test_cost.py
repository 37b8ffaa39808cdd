"""The cost lens (``agenttui.runs.cost.lens``, ``agenttui cost``): tokens and money per turn, run, tool
and model, and what failed, retried, hedged and late requests wasted, against figures computed
by hand from a run written as the Go SDK writes it, and from runs agenttui's runtime wrote."""

from __future__ import annotations

import asyncio
import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import Usage as LibraryUsage
from genai_prices import calc_price

from agenttui.journal import keys
from agenttui.journal.record import ModelInfo, Usage
from agenttui.replay.verdict import VerdictKind
from agenttui.runs.cost.lens import PriceBook, RunCost, format_cost
from agenttui.runs.cost.reading import store_costs
from agenttui.runs.statuses.status import RunState
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import DIGESTS, GoRun, call, model, start, text
from tests.runs.test_bundle_cli import cli
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

SONNET = '"model":{"provider":"anthropic","model":"claude-sonnet-4"}'
HAIKU = '"model":{"provider":"anthropic","model":"claude-haiku-4"}'
MYSTERY = '"model":{"provider":"acme","model":"mystery-1"}'
#: Negotiated prices, dollars per million tokens: the figures below are computed from these.
PRICES = """
["anthropic/claude-sonnet-4"]
input = 3
output = 15
cache_read = 0.3
cache_write = 3.75

["claude-haiku-4"]
input = 1
output = 5
cache_read = 0.1
cache_write = 1.25
"""
RUN = "cost-go"
SUB = keys.sub_run_id(RUN, "toolu_a")


def go_runs() -> list[GoRun]:
    """A run as the Go SDK writes it: a budget, cache tokens, a hedged request's discarded usage,
    a failed request (``@spend/``) before a turn and a late one (``@spend-late/``) after it, a
    sub-run on another model, and a turn on a model no price is known for."""
    parent = [
        start('"Refund order 7"', ',"settings":{"token_budget":10000}'),
        model(0, text("Asking the specialist.") + "," + call("toolu_a", "specialist", '{"task":"check"}'),
              '"usage":{"input_tokens":1000,"output_tokens":200,"cache_read_tokens":4000,"cache_write_tokens":500},'
              f'"discarded_usage":{{"input_tokens":800}},"finish":"tool_use",{SONNET},{DIGESTS}'),
        '{"name":"tool:toolu_a","kind":"tool_result","tool_use_id":"toolu_a","result":"eligible",'
        '"usage":{"input_tokens":500,"output_tokens":100,"cache_read_tokens":1000}}',
        '{"name":"@spend/req_9","kind":"value","discarded_usage":{"input_tokens":1500}}',
        model(1, text("Refunding."), '"usage":{"input_tokens":2000,"output_tokens":100,"cache_read_tokens":5000},'
              f'"finish":"stop",{SONNET},{DIGESTS}'),
        '{"name":"@spend-late/req_10","kind":"value","discarded_usage":{"input_tokens":300,"output_tokens":50}}',
        model(2, text("Done."), f'"usage":{{"input_tokens":100,"output_tokens":10}},"finish":"stop",{MYSTERY}'),
        '{"name":"run:complete","kind":"value"}',
    ]  # fmt: skip
    child = [
        start('"check"'),
        model(0, text("Eligible."), '"usage":{"input_tokens":500,"output_tokens":100,"cache_read_tokens":1000},'
              f'"finish":"stop",{HAIKU}'),
        '{"name":"run:complete","kind":"value"}',
    ]  # fmt: skip
    # A case's status, verdict and labels are the corpus's business, not read here.
    return [GoRun(RUN, parent, RunState.COMPLETE, VerdictKind.MATCHES, []),
            GoRun(SUB, child, RunState.COMPLETE, VerdictKind.MATCHES, [])]  # fmt: skip


async def go_cost(tmp_path: Path) -> RunCost:
    store = MemStore()
    for run in go_runs():
        for name, data in run.entries():
            await store.insert(run.run_id, name, data)
    (tmp_path / "prices.toml").write_text(PRICES)
    (cost,) = [c async for c in store_costs(store, [RUN], PriceBook.load(tmp_path / "prices.toml"))]
    return cost


async def test_a_go_run_costs_what_its_hand_computed_figures_say(tmp_path: Path) -> None:
    cost = await go_cost(tmp_path)
    t0, t1, t2 = cost.turns
    # @llm/0: 1000×3 + 200×15 + 4000×0.3 + 500×3.75 = 9,075 µ$; its hedged request 800×3 = 2,400 µ$.
    assert (t0.spend.cost, t0.spend.wasted_cost, t0.context, t0.tools) == (
        Decimal("0.009075"),
        Decimal("0.0024"),
        5500,
        ("specialist",),
    )
    # @llm/1: 2000×3 + 100×15 + 5000×0.3 = 9,000 µ$; wasted: the failed request before it
    # (1500×3 = 4,500 µ$) and the late one after it (300×3 + 50×15 = 1,650 µ$).
    assert (t1.spend.cost, t1.spend.wasted, t1.spend.wasted_cost) == (
        Decimal("0.009"),
        Usage(1800, 50),
        Decimal("0.00615"),
    )
    # @llm/2: a model with no price is named, never costed at zero.
    assert t2.model == "acme/mystery-1" and t2.spend.unpriced == {"acme/mystery-1"} and t2.spend.cost == 0
    assert format_cost(t2.spend) == "unknown"
    assert (cost.own.cost, cost.own.wasted_cost) == (Decimal("0.018075"), Decimal("0.00855"))
    assert format_cost(cost.own) == "$0.0181+?"
    # The sub-run on haiku, rolled up and shown apart: 500×1 + 100×5 + 1000×0.1 = 1,100 µ$.
    assert cost.sub_runs.cost == Decimal("0.0011") and cost.sub_runs.usage == Usage(500, 100, 1000)
    assert cost.total.cost == Decimal("0.019175")
    assert {name: spend.cost for name, spend in cost.by_model.items()} == {
        "anthropic/claude-sonnet-4": Decimal("0.018075"), "anthropic/claude-haiku-4": Decimal("0.0011"),
        "acme/mystery-1": Decimal(0),
    }  # fmt: skip
    # The specialist: the turn that called it, and the sub-run its call started.
    assert cost.by_tool["specialist"].cost == Decimal("0.009075") + Decimal("0.0011")
    # Budget: 12,910 tokens used, 2,650 wasted, 1,600 in the sub-run, of 10,000.
    assert cost.token_budget == 10000 and cost.budget_used == pytest.approx(1.716)


def test_flat_and_tiered_prices_cost_what_the_library_says() -> None:
    """The library's own figure for each model, cache tokens included (its input count holds them)."""
    book = PriceBook()
    for name, usage in [
        ("claude-sonnet-4", Usage(1000, 200, 4000, 500)),
        ("claude-haiku-4-5", Usage(1000, 200, 4000, 500)),
        ("claude-sonnet-4-5", Usage(1000, 200, 4000, 500)),  # tiered: below the first tier
        ("claude-sonnet-4-5", Usage(150_000, 200, 60_000, 500)),  # and above it
    ]:
        counted = LibraryUsage(input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
                               output_tokens=usage.output_tokens, cache_read_tokens=usage.cache_read_tokens,
                               cache_write_tokens=usage.cache_write_tokens)  # fmt: skip
        expected = calc_price(counted, name, provider_id="anthropic").total_price
        assert book.cost(ModelInfo("anthropic", name), usage) == expected, name
    assert book.cost(ModelInfo("acme", "mystery-1"), Usage(1, 1)) is None
    assert book.cost(None, Usage(1, 1)) is None and book.cost(None, Usage()) == 0


async def test_agenttui_runs_cost_by_their_models_with_the_sub_run_apart(demo_db: Path) -> None:  # noqa: F811
    store = await SQLiteStore.open(demo_db)
    try:
        (cost,) = [c async for c in store_costs(store, ["eligibility-a1004"], PriceBook())]
    finally:
        await store.close()
    # The desk on claude-sonnet-4-5 ($3 / $15 / $0.30 a million): 380 in, 60 out; 425 in, 200 cached, 67 out.
    assert [t.spend.cost for t in cost.turns] == [Decimal("0.00204"), Decimal("0.00234")]
    # The specialist on claude-haiku-4-5 ($1 / $5 / $0.10): 805 in, 200 cached, 127 out.
    assert cost.sub_runs.cost == Decimal("0.00146") and set(cost.by_model) == {
        "anthropic/claude-sonnet-4-5", "anthropic/claude-haiku-4-5"
    }  # fmt: skip


def test_the_command_prints_runs_turns_models_and_tools_with_totals(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    runs = cli("cost", demo_db)
    assert runs.returncode == 0, runs.stderr
    lines = runs.stdout.splitlines()
    assert lines[0].split()[:3] == ["run", "turns", "input"]
    assert any(line.startswith("eligibility-a1004") and "sub-runs $0.0015" in line for line in lines)
    assert lines[-3].startswith("total") and "17 runs" in lines[-3]
    assert lines[-2] == "prices: genai-prices " + lines[-2].rpartition(" ")[2]
    assert "no price known for turns that name no model" in lines[-1]  # the Go-written saga's turns

    turns = cli("cost", demo_db, "eligibility-a1004")
    assert [line.split()[0] for line in turns.stdout.splitlines()[:5]] == [
        "turn",
        "@llm/0",
        "@llm/1",
        "sub-runs",
        "total",
    ]
    assert "calls refunds_specialist" in turns.stdout.splitlines()[1]

    by_model = json.loads(cli("cost", demo_db, "--by", "model", "--where", "status=complete", "--json").stdout)
    assert by_model["by"] == "model" and by_model["lines"][0]["model"] == "anthropic/claude-sonnet-4-5"
    assert by_model["total"]["runs"] == 5  # complete root runs: the specialist's run is rolled up into its parent

    (tmp_path / "prices.toml").write_text('["claude-sonnet-4-5"]\ninput = 0\noutput = 0\n')
    free = json.loads(cli("cost", demo_db, "refund-a1002", "--prices", tmp_path / "prices.toml", "--json").stdout)
    assert free["total"]["cost_usd"] == 0 and free["prices"].endswith(f"overridden by {tmp_path / 'prices.toml'}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("no-such-run",), "no-such-run"),
        (("--by", "turn"), "--by turn takes one RUN_ID"),
        (("refund-a1002", "--where", "status=complete"), "give RUN_ID or --where, not both"),
        (("--prices", "/nonexistent/prices.toml"), "--prices /nonexistent/prices.toml"),
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(demo_db: Path, args: tuple[str, ...], message: str) -> None:  # noqa: F811
    done = cli("cost", demo_db, *args)
    assert done.returncode != 0 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_prices_file_that_is_not_prices_is_refused(tmp_path: Path, demo_db: Path) -> None:  # noqa: F811
    (tmp_path / "bad.toml").write_text('["x"]\ninput = "cheap"\n')
    done = cli("cost", demo_db, "--prices", tmp_path / "bad.toml")
    assert done.returncode == 2 and "not a number" in done.stderr, done.stderr


def test_compare_gives_the_difference_in_cost(demo_db: Path) -> None:  # noqa: F811
    """On claude-sonnet-4-5: 1,790 in, 600 cached, 282 out = $0.00978; 1,305, 200, 167 = $0.00648."""
    done = cli("compare", demo_db, "refund-a1002", "refund-a1003-denied")
    assert done.stdout.splitlines()[2].startswith("cost $0.0098 → $0.0065 (-$0.0033) (prices: genai-prices "), (
        done.stdout
    )
    cost = json.loads(cli("compare", demo_db, "refund-a1002", "refund-a1003-denied", "--json").stdout)["cost"]
    assert (cost["left"]["cost_usd"], cost["right"]["cost_usd"]) == (0.00978, 0.00648)


async def test_a_model_turn_that_cannot_be_read_is_said_not_left_out_silently() -> None:
    store = MemStore()
    await store.insert("broken", "@llm/0", b'{"name":"@llm/0","kind":"model","usage":{"input_tok')
    (cost,) = [c async for c in store_costs(store, ["broken"], PriceBook())]
    assert cost.turns == () and cost.unreadable == "record @llm/0 could not be read: its spend is not counted"


@pytest.mark.parametrize(
    ("table", "said"),
    [
        ('["x"]\ninput = nan\n', "not a number of dollars, 0 or more"),
        ('["x"]\ninput = inf\n', "not a number of dollars, 0 or more"),
        ('["x"]\ninput = -1.5\n', "not a number of dollars, 0 or more"),
    ],
)
def test_a_price_that_is_no_amount_of_dollars_is_refused(tmp_path: Path, demo_db: Path, table: str, said: str) -> None:  # noqa: F811
    (tmp_path / "prices.toml").write_text(table)
    done = cli("cost", demo_db, "--prices", tmp_path / "prices.toml", "--json")
    assert done.returncode == 2 and said in done.stderr and done.stdout == "", done.stderr


def test_prices_are_read_only_from_a_regular_file(tmp_path: Path, demo_db: Path) -> None:  # noqa: F811
    """A device reads without end (/dev/zero), a FIFO waits for a writer: both refused at once."""
    fifo = tmp_path / "prices.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        done = cli("cost", demo_db, "--prices", path)
        assert done.returncode == 2 and "not a regular file" in done.stderr, done.stderr
    big = tmp_path / "big.toml"
    big.write_bytes(b"# " + b"x" * 2_000_000 + b"\n")
    assert "larger than 1,000,000 bytes" in cli("cost", demo_db, "--prices", big).stderr


def test_absurd_token_counts_cost_a_figure_not_an_error(tmp_path: Path) -> None:
    """A turn of 2^64 input tokens: its run costs what it says, in JSON a number, and no run is lost."""
    from tests.hardening.hostile_corpus import R_ABSURD, build_escapes

    store = tmp_path / "escapes.db"
    asyncio.run(build_escapes(store))
    done = cli("cost", store, "--by", "run", "--json")
    assert done.returncode == 0, done.stderr
    lines = json.loads(done.stdout, parse_constant=pytest.fail)["lines"]  # strict JSON: no NaN, no Infinity
    absurd = next(line for line in lines if line["run"] == R_ABSURD)
    assert absurd["input_tokens"] == 2**64 + 1 and absurd["cost_usd"] > 1e24
    assert len(lines) > 1  # every other run costed beside it


async def test_a_negative_token_count_is_said_not_summed() -> None:
    """A count below zero is a writer's bug: summed, it would hide the turns beside it."""
    store = MemStore()
    turn = b'{"name":"@llm/0","kind":"model","usage":{"input_tokens":-5000,"output_tokens":10},"finish":"stop"}'
    await store.insert("negative", "@llm/0", turn)
    (cost,) = [c async for c in store_costs(store, ["negative"], PriceBook())]
    assert cost.unreadable == "record @llm/0 holds a negative token count: its spend is not counted"
