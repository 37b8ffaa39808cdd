"""Two runs aligned by turn: runs written by the runtime and by the Go SDK, on every store."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agenttui.agent import Call
from agenttui.agent.scripted import Turn
from agenttui.demo.desk import demo_model, desk_agent
from agenttui.journal import Journal
from agenttui.journal.record import Record, StepKind, Usage
from agenttui.render.diff import RowState
from agenttui.replay.compare import Side, TurnPair, compare_runs, compare_sides, turn_numbers
from agenttui.runs.statuses.status import status_of
from agenttui.stores.base import Store
from agenttui.stores.memory import MemStore
from agenttui.stores.postgres import PostgresStore
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import CASES, write_corpus
from tests.pg import PostgresCluster

PROMPT = "Is A-1004 refundable? Tell the customer."
LOOKUP = Call("lookup_order", {"order_id": "A-1004"})
EMAIL = Call("send_email", {"to": "edsger@example.com", "subject": "Eligible"})


def script(*turns: tuple[str, list[Call]], tokens: dict[int, int] | None = None) -> list[Turn]:
    """Turns spending 100 input and 10 output tokens each, or ``tokens[n]`` output tokens in turn n."""
    return [
        Turn(text, calls, usage=Usage(input_tokens=100, output_tokens=(tokens or {}).get(n, 10)))
        for n, (text, calls) in enumerate(turns)
    ]


BASE = script(("Looking it up.", [LOOKUP]), ("Emailing.", [EMAIL]), ("A-1004 is eligible.", []))


async def run(store: Store, run_id: str, turns: list[Turn]) -> list[Record]:
    await desk_agent(demo_model(turns), store).run(run_id, PROMPT)
    return await Journal(store).history(run_id)


def differing(turn: TurnPair) -> list[tuple[str, RowState]]:
    return [(row.name, row.state) for row in turn.differing]


async def test_two_drives_of_one_script_are_the_same_turn_by_turn(store: Store) -> None:
    left, right = await run(store, "a", BASE), await run(store, "b", BASE)
    comparison = compare_runs(left, right)
    assert comparison.same and comparison.first_difference is None
    assert [turn.number for turn in comparison.turns] == [0, 1, 2, 3]
    assert comparison.left_turns == comparison.right_turns == 3
    assert comparison.token_delta == 0 and all(turn.token_delta == 0 for turn in comparison.turns)
    # Every record of both runs is on a row, in its own turn.
    assert sum(len(turn.rows) for turn in comparison.turns) == len(left) == len(right)


async def test_a_changed_answer_differs_in_its_turn_only(store: Store) -> None:
    changed = [*BASE[:2], dataclasses.replace(BASE[2], text="A-1004 is not eligible.")]
    comparison = compare_runs(await run(store, "a", BASE), await run(store, "b", changed))
    assert [turn.number for turn in comparison.differing_turns] == [3]
    first = comparison.first_difference
    assert first is not None and first.turn == 3 and first.row.name == "@llm/2"
    assert first.words("original", "fork") == "turn 3 · @llm/2: different model output"
    assert differing(comparison.turns[3]) == [("@llm/2", RowState.CHANGED)]


async def test_an_extra_tool_call_differs_in_the_turn_that_made_it(store: Store) -> None:
    more = [dataclasses.replace(BASE[0], calls=[LOOKUP, Call("lookup_order", {"order_id": "A-1001"})]), *BASE[1:]]
    comparison = compare_runs(await run(store, "a", BASE), await run(store, "b", more))
    assert [turn.number for turn in comparison.differing_turns] == [1]
    assert differing(comparison.turns[1]) == [("@llm/0", RowState.CHANGED), ("tool:call_0_1", RowState.EXTRA)]
    assert comparison.turns[1].differing[0].reason == "different tool call or arguments"
    first = comparison.first_difference
    assert first is not None and first.words("a", "b") == "turn 1 · @llm/0: different tool call or arguments"


async def test_runs_of_different_lengths_pair_turn_n_with_turn_n(store: Store) -> None:
    short = script(("Looking it up.", [LOOKUP]), ("A-1004 is eligible.", []))
    left, right = await run(store, "long", BASE), await run(store, "short", short)
    comparison = compare_runs(left, right)
    assert (comparison.left_turns, comparison.right_turns) == (3, 2)
    assert len(comparison.turns) == 4
    last = comparison.turns[3]
    assert last.right_usage is None and last.left_usage is not None
    assert differing(last) == [("@llm/2", RowState.MISSING), ("run:complete", RowState.MISSING)]
    # The short run ended a turn sooner: its end is in its own turn 2, not pulled into turn 3.
    assert ("run:complete", RowState.EXTRA) in differing(comparison.turns[2])
    first = comparison.first_difference
    assert first is not None and first.turn == 2
    assert compare_runs(right, left).first_difference is not None


async def test_token_deltas_per_turn_and_in_total(store: Store) -> None:
    left = await run(store, "a", BASE)
    right = await run(store, "b", script(*[(t.text, list(t.calls)) for t in BASE], tokens={1: 25, 2: 4}))
    comparison = compare_runs(left, right)
    assert [turn.token_delta for turn in comparison.turns] == [0, 0, 15, -6]
    assert [turn.left_tokens for turn in comparison.turns] == [0, 110, 110, 110]
    assert comparison.token_delta == 9
    # Totals count as a run's status counts its tokens.
    assert comparison.left_usage.total == status_of("a", left).tokens
    assert comparison.right_usage.total == status_of("b", right).tokens
    # Usage alone differs: the model records differ, and say so.
    assert [turn.number for turn in comparison.differing_turns] == [2, 3]


async def test_turn_numbers_start_at_zero_before_the_first_model_turn() -> None:
    records = [Record("@journal", StepKind.HEADER), Record("run:start", StepKind.VALUE)]
    records += [
        Record("@llm/0", StepKind.MODEL),
        Record("tool:c", StepKind.TOOL_RESULT),
        Record("@llm/1", StepKind.MODEL),
    ]
    assert turn_numbers(records) == [0, 0, 1, 1, 2]
    empty = compare_runs([], records)
    assert [turn.left_usage for turn in empty.turns] == [Usage(), None, None]
    assert empty.first_difference is not None and empty.first_difference.turn == 0


async def test_two_runs_in_two_stores(store: Store) -> None:
    """A fork lives in a scratch store: each side is read from its own."""
    scratch = MemStore()
    await run(store, "original", BASE)
    await run(scratch, "fork", [*BASE[:2], dataclasses.replace(BASE[2], text="Not eligible.")])
    comparison = await compare_sides(Side(store, "original", "original"), Side(scratch, "fork", "fork"))
    first = comparison.first_difference
    assert first is not None and first.turn == 3


async def test_markers_one_side_lacks_are_optional_when_asked(store: Store) -> None:
    """A fork replayed with recorded tools writes no attempt markers: not a difference, if asked."""
    await write_corpus(store)
    left = await Journal(store).history("go-charge")  # its charge ran under an attempt marker
    right = [r for r in left if r.kind != StepKind.ATTEMPT]
    assert any(r.kind == StepKind.ATTEMPT for r in left)
    assert not compare_runs(left, right).same
    assert compare_runs(left, right, markers_optional=True).same
    assert compare_runs(right, left, markers_optional=True).same


# -- runs the Go SDK wrote ---------------------------------------------------------------------


async def test_go_runs_a_denial_against_an_approval(store: Store) -> None:
    await write_corpus(store)
    comparison = await compare_sides(Side(store, "go-approved", "approved"), Side(store, "go-denied", "denied"))
    assert [turn.number for turn in comparison.turns] == [0, 1, 2]
    assert differing(comparison.turns[1]) == [
        ("approval:toolu_03", RowState.CHANGED),
        ("attempt:tool:toolu_03", RowState.MISSING),
        ("tool:toolu_03", RowState.CHANGED),
    ]
    first = comparison.first_difference
    assert first is not None and first.words("approved", "denied") == "turn 0 · run:start: different payload"
    assert comparison.turns[1].token_delta == 0 and comparison.token_delta == 0


async def test_a_go_run_against_its_copy_with_one_answer_changed(store: Store) -> None:
    """A Go-written run, copied into a scratch store byte for byte but for its last answer."""
    await write_corpus(store)
    scratch = MemStore()
    case = next(case for case in CASES if case.run_id == "go-weather")
    for name, data in case.entries():
        edited = data
        if name == "@llm/1":
            edited = data.replace(b"It is sunny.", b"It is raining.")
            edited = edited.replace(b'"usage":{}', b'"usage":{"output_tokens":7}')
        await scratch.insert("go-weather-fork", name, edited)
    comparison = await compare_sides(Side(store, "go-weather", "go"), Side(scratch, "go-weather-fork", "fork"))
    assert [turn.number for turn in comparison.differing_turns] == [2]
    assert differing(comparison.turns[2]) == [("@llm/1", RowState.CHANGED)]
    assert comparison.turns[2].token_delta == 7 and comparison.token_delta == 7
    # The rest is the Go run's bytes, copied: the same, row for row.
    assert all(row.state == RowState.SAME for turn in comparison.turns[:2] for row in turn.rows)


async def test_members_not_compared_are_left_out_on_both_sides(store: Store) -> None:
    """A replay of a Go run with recorded tools cannot write the SDK's digests: not a difference, if asked."""
    await write_corpus(store)
    recorded = await Journal(store).history("go-weather")
    replayed = [dataclasses.replace(r, prompt_digest="", tools_digest="") for r in recorded]
    assert not compare_runs(recorded, replayed).same
    assert compare_runs(recorded, replayed, not_compared=("prompt_digest", "tools_digest")).same


# -- the CLI -----------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[Store, str]]:
    """A store with the original, a same copy, a fork differing in its last answer: (store, its URL)."""
    if request.param == "sqlite":
        path = tmp_path / "runs.db"
        store: Store = await SQLiteStore.open(path)
        url = str(path)
    else:
        cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
        schema = "cmp_" + uuid.uuid4().hex[:10]
        store = await PostgresStore.open(cluster.dsn, schema=schema)
        url = f"{cluster.dsn}{'&' if '?' in cluster.dsn else '?'}schema={schema}"
    await run(store, "original", BASE)
    await run(store, "again", BASE)
    await run(store, "fork", [*BASE[:2], dataclasses.replace(BASE[2], text="A-1004 is not eligible.")])
    try:
        yield store, url
    finally:
        await store.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=120
    )


def test_cli_compare_exit_codes_and_first_difference(store_url: tuple[Store, str]) -> None:
    _, url = store_url
    same = cli("compare", url, "original", "again")
    assert same.returncode == 0, same.stderr
    assert same.stdout.splitlines()[0] == "original ⇄ again: the same"
    differ = cli("compare", url, "original", "fork")
    assert differ.returncode == 3, differ.stderr
    lines = differ.stdout.splitlines()
    assert lines[2].startswith("cost $0.")  # the difference in cost: test_cost.py
    assert lines[3] == "first difference: turn 3 · @llm/2: different model output"
    assert lines[4] == "1 of 4 turns differ:"
    assert lines[5].startswith("  turn    3  tokens 110 → 110 (+0)  @llm/2")
    assert '-        "text": "A-1004 is eligible."' in differ.stdout
    missing = cli("compare", url, "original", "nope")
    assert missing.returncode == 1 and "no run 'nope'" in missing.stderr


def test_cli_compare_json_and_another_store(store_url: tuple[Store, str], tmp_path: Path) -> None:
    _, url = store_url
    other = tmp_path / "fork.db"

    async def save_fork() -> None:
        saved = await SQLiteStore.open(other)
        try:
            await run(saved, "fork", [*BASE[:2], dataclasses.replace(BASE[2], text="No.")])
        finally:
            await saved.close()

    asyncio.run(save_fork())
    result = cli("compare", url, "original", "fork", "--other-store", str(other), "--json")
    assert result.returncode == 3, result.stderr
    found = json.loads(result.stdout)
    assert found["same"] is False and found["exit_code"] == 3
    assert found["first_difference"]["turn"] == 3 and found["first_difference"]["step"] == "@llm/2"
    assert found["first_difference"]["right"]["message"]["parts"][0]["text"] == "No."
    assert [turn["turn"] for turn in found["turns"]] == [0, 1, 2, 3]
    assert found["turns"][3]["differing"] == [
        {"step": "@llm/2", "state": "changed", "reason": "different model output"}
    ]
    assert (found["left"]["turns"], found["right"]["tokens"]) == (3, 330)
