"""A store's cost from the tokens the status index keeps (``store_costs(turns=False)``,
``RunTokens``): equal to the cost made from every record, on every store, on a first and a
second look, after a run grows, when a kept figure lies, and where a price's tiers make only the
turns themselves priceable; and ``agenttui cost --by day``."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import NamedTuple

import pytest

from agenttui.journal import keys
from agenttui.journal.record import ModelInfo, Usage
from agenttui.runs.cost.lens import ModelTokens, PriceBook, RunCost, RunTokens, Spend
from agenttui.runs.cost.reading import SpendTally, store_costs, store_spend
from agenttui.runs.statuses import index as status_index
from agenttui.stores.base import Store
from agenttui.stores.sqlite import SQLiteStore
from tests.conftest import StoreFactory
from tests.gocorpus import DIGESTS, attempt, model, start, text, write_corpus
from tests.runs.test_bundle_cli import cli
from tests.runs.test_cost import PRICES, RUN, SONNET, go_runs
from tests.runs.test_status_index import CountingSQLiteStore, index_files


async def write_go_runs(store: Store) -> None:
    for run in go_runs():
        for name, data in run.entries():
            await store.insert(run.run_id, name, data)


class Summed(NamedTuple):
    """What a cost made from kept tokens says (all but each turn's and tool's spend)."""

    run_id: str
    own: Spend
    sub_runs: Spend
    by_model: dict[str, Spend]
    token_budget: int | None
    unreadable: str
    turn_count: int
    earliest_ms: int | None


def summed_view(cost: RunCost) -> Summed:
    return Summed(cost.run_id, cost.own, cost.sub_runs, dict(cost.by_model), cost.token_budget, cost.unreadable,
                  cost.turn_count, cost.earliest_ms)  # fmt: skip


async def both_ways(store: Store, prices: PriceBook) -> tuple[list[Summed], list[Summed]]:
    """Every root run's cost from its records, and from kept tokens."""
    exact = [summed_view(cost) async for cost in store_costs(store, None, prices)]
    summed = [summed_view(cost) async for cost in store_costs(store, None, prices, turns=False)]
    return exact, summed


@pytest.fixture
def prices(tmp_path: Path) -> PriceBook:
    (tmp_path / "prices.toml").write_text(PRICES)
    return PriceBook.load(tmp_path / "prices.toml")


async def test_kept_tokens_cost_what_the_records_do_on_every_store(make_store: StoreFactory, prices: PriceBook) -> None:
    """The Go-written run (cache tokens, hedged, failed and late requests, a sub-run, an unknown
    model, a budget) and the Go corpus's every kind of run, on a first look and a second."""
    store = await make_store()
    await write_go_runs(store)
    await write_corpus(store)
    exact, summed = await both_ways(store, prices)
    assert summed == exact
    again = await make_store(read_only=True)
    assert [summed_view(c) async for c in store_costs(again, None, prices, turns=False)] == exact
    (go,) = [cost for cost in exact if cost.run_id == RUN]
    assert go.own.cost == Decimal("0.018075") and go.sub_runs.cost == Decimal("0.0011")  # the hand-computed figures


async def test_a_second_look_reads_no_record_of_a_run_that_did_not_change(
    tmp_path: Path, private_cache: Path, prices: PriceBook
) -> None:
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await write_go_runs(store)
        await write_corpus(store)
        want = [summed_view(c) async for c in store_costs(store, None, prices, turns=False)]
    async with await CountingSQLiteStore.open(path, read_only=True) as reader:
        assert [summed_view(c) async for c in store_costs(reader, None, prices, turns=False)] == want
        read = reader.__dict__.get("loaded", []) + reader.__dict__.get("loaded_alone", [])
        # What is read again: a spot check's few, and runs whose records cannot be read (never kept).
        assert len(read) <= 3, read
    (index,) = index_files(private_cache)
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT count(*) FROM costs").fetchone()[0] >= len(want)


async def test_a_run_that_grew_is_costed_again(make_store: StoreFactory, prices: PriceBook) -> None:
    store = await make_store()
    await write_go_runs(store)
    [first] = [c async for c in store_costs(store, [RUN], prices, turns=False)]
    await store.insert(RUN, "@llm/3", model(3, text("More."), f'"usage":{{"input_tokens":1000}},{SONNET},{DIGESTS}')
                       .encode())  # fmt: skip
    [grown] = [c async for c in store_costs(await make_store(read_only=True), [RUN], prices, turns=False)]
    assert grown.own.cost - first.own.cost == Decimal("0.003") and grown.turn_count == first.turn_count + 1


async def test_kept_tokens_that_lie_are_caught_by_a_spot_check(
    tmp_path: Path, private_cache: Path, prices: PriceBook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change no validator sees (here a kept figure falsified in the file): the spot-checked run
    is costed from its records, and what the index keeps of costs is emptied."""
    path = tmp_path / "journal.db"
    async with await SQLiteStore.open(path) as store:
        await write_go_runs(store)
        want = [summed_view(c) async for c in store_costs(store, None, prices, turns=False)]
    (index,) = index_files(private_cache)
    with sqlite3.connect(index) as conn:
        (kept,) = conn.execute("SELECT tokens FROM costs WHERE run_id = ?", (RUN,)).fetchone()
        models, *rest = json.loads(kept)
        models[0][2] += 1_000_000  # a million input tokens more
        conn.execute("UPDATE costs SET tokens = ? WHERE run_id = ?", (json.dumps([models, *rest]), RUN))
    monkeypatch.setattr(status_index, "SPOT_SHARE", 1.0)
    async with await SQLiteStore.open(path, read_only=True) as store:
        assert [summed_view(c) async for c in store_costs(store, None, prices, turns=False)] == want
    with sqlite3.connect(index) as conn:
        assert conn.execute("SELECT count(*) FROM costs").fetchone()[0] == 0


async def test_a_tier_reached_is_priced_turn_by_turn(store: Store) -> None:
    """claude-sonnet-4-5's price has a tier from 200,000 input tokens: two turns of 150,000 sum
    past it, yet each pays the base price; one of 250,000 pays the tier's. Kept tokens give the
    figure the turns do either way."""
    sonnet45 = '"model":{"provider":"anthropic","model":"claude-sonnet-4-5"}'
    for run_id, sizes in [("below", [150_000, 150_000]), ("above", [150_000, 250_000])]:
        await store.insert(run_id, keys.RUN_START, start('"go"').encode())
        for n, size in enumerate(sizes):
            tail = f'"usage":{{"input_tokens":{size},"output_tokens":100}},{sonnet45}'
            await store.insert(run_id, f"@llm/{n}", model(n, text("ok"), tail).encode())
    library = PriceBook()
    exact, summed = await both_ways(store, library)
    assert summed == exact
    by_run = {cost.run_id: cost.own for cost in exact}
    each = library.cost(ModelInfo("anthropic", "claude-sonnet-4-5"), Usage(150_000, 100))
    assert each is not None and by_run["below"].cost == 2 * each
    assert by_run["above"].cost > by_run["below"].cost


async def test_random_runs_cost_the_same_summed_as_turn_by_turn(store: Store, prices: PriceBook) -> None:
    """Runs of random turns, models, dropped requests and sub-runs: kept tokens price as the turns do."""
    chooser = random.Random(7)
    chosen_models = [SONNET, '"model":{"provider":"anthropic","model":"claude-haiku-4"}', "", '"model":{"model":"x"}']
    for n in range(30):
        run_id = f"r{n:02}"
        for rid in (run_id, keys.sub_run_id(run_id, "c1"))[: chooser.randint(1, 2)]:
            await store.insert(rid, keys.RUN_START, start('"go"').encode())
            for turn in range(chooser.randint(0, 6)):
                kind = chooser.random()
                usage = ",".join(f'"{member}":{chooser.randint(0, 5000)}' for member in
                                 ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"))  # fmt: skip
                if kind < 0.2:
                    body = f'{{"name":"@spend/q{turn}","kind":"value","discarded_usage":{{{usage}}}}}'
                    await store.insert(rid, f"@spend/q{turn}", body.encode())
                elif kind < 0.35:
                    body = f'{{"name":"@spend-late/q{turn}","kind":"value","discarded_usage":{{{usage}}}}}'
                    await store.insert(rid, f"@spend-late/q{turn}", body.encode())
                else:
                    tail = f'"usage":{{{usage}}}' + ("," + m if (m := chooser.choice(chosen_models)) else "")
                    await store.insert(rid, f"@llm/{turn}", model(turn, text("t"), tail).encode())
    exact, summed = await both_ways(store, prices)
    assert summed == exact and len(exact) == 30


def test_cost_by_day_groups_runs_by_their_earliest_recorded_time(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"

    async def write() -> None:
        async with await SQLiteStore.open(path) as store:
            await write_go_runs(store)  # undated: no attempt
            for run_id, at in [("day-one", 1767225600123), ("day-two", 1767312000000)]:
                await store.insert(run_id, keys.RUN_START, start('"go"').encode())
                tail = f'"usage":{{"input_tokens":1000}},{SONNET}'
                await store.insert(run_id, "@llm/0", model(0, text("t"), tail).encode())
                await store.insert(run_id, "attempt:tool:c1", attempt("c1", "0" * 32, at=at).encode())

    asyncio.run(write())
    (tmp_path / "prices.toml").write_text(PRICES)
    out = cli("cost", str(path), "--by", "day", "--json", "--prices", str(tmp_path / "prices.toml"))
    assert out.returncode == 0, out.stderr
    lines = json.loads(out.stdout)["lines"]
    assert [(line["day"], line["runs"]) for line in lines] == [("2026-01-01", 1), ("2026-01-02", 1), ("undated", 1)]
    assert lines[0]["cost_usd"] == 0.003
    table = cli("cost", str(path), "--by", "day", "--prices", str(tmp_path / "prices.toml")).stdout
    assert "2026-01-02" in table and "$0.0030  " in table and "1 run\n" in table


def test_run_tokens_round_trip_through_their_json() -> None:
    tokens = RunTokens({("anthropic", "m"): ModelTokens(Usage(1, 2, 3, 4), Usage(5, 6, 7, 8), 9, 2),
                        ("", ""): ModelTokens(Usage(1), turns=1)}, Usage(0, 1), 100, 5)  # fmt: skip
    assert RunTokens.from_json(tokens.to_json()) == tokens


async def tallied(store: Store, prices: PriceBook, by: str) -> tuple[dict[str, Spend], Spend, int]:
    """A store's spend by model or day as ``agenttui cost`` sums it (``SpendTally``)."""
    summed, day = SpendTally(prices, by), ""
    async for spent in store_spend(store, None, prices):
        if spent.run_id == spent.root:
            day = str(spent.earliest_ms)
        summed.add(spent, day)
    lines, total = summed.spends()
    return lines, total, summed.runs


async def reckoned(store: Store, prices: PriceBook, by: str) -> tuple[dict[str, Spend], Spend, int]:
    """The same, from each run's cost made turn by turn."""
    lines: dict[str, Spend] = {}
    total, runs = Spend(), 0
    async for cost in store_costs(store, None, prices):
        named = cost.by_model if by == "model" else {str(cost.earliest_ms): cost.total}
        for name, spend in named.items():
            lines[name] = lines.get(name, Spend()) + spend
        total, runs = total + cost.total, runs + 1
    return lines, total, runs


@pytest.mark.parametrize("by", ["model", "day"])
async def test_spend_summed_by_model_or_day_is_what_the_turns_cost(store: Store, prices: PriceBook, by: str) -> None:
    """Tokens summed, then priced: the same figures as each turn priced, on the Go-written run
    (its sub-run's turns counted by model, and by its top-level run's day), the Go corpus, and
    turns past a price's tier (priced turn by turn)."""
    await write_go_runs(store)
    await write_corpus(store)
    sonnet45 = '"model":{"provider":"anthropic","model":"claude-sonnet-4-5"}'
    await store.insert("tiered", keys.RUN_START, start('"go"').encode())
    for n, size in enumerate([150_000, 250_000]):
        turn = model(n, text("ok"), f'"usage":{{"input_tokens":{size},"output_tokens":100}},{sonnet45}')
        await store.insert("tiered", f"@llm/{n}", turn.encode())
    await store.insert("tiered", "attempt:tool:c1", attempt("c1", "0" * 32).encode())
    want = await reckoned(store, prices, by)
    assert await tallied(store, prices, by) == want
    assert await tallied(store, prices, by) == want  # a second look, from what the index keeps
    assert want[1].cost > 0 and len(want[0]) >= 2
