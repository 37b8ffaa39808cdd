"""What-if forks: a replay with one recorded output edited, on demo runs and Go-written runs, on
every store; the source store is never touched."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from agenttui.agent.events import AssistantTurn
from agenttui.agent.runstart import RunStart
from agenttui.agent.scripted import ScriptedModel, Turn
from agenttui.cli import main
from agenttui.demo.build import build_demo, factory
from agenttui.errors import ConfigError
from agenttui.journal import Journal
from agenttui.journal.record import Record, StepKind
from agenttui.replay.breakpoints import BadBreakpoint, parse_breakpoint, parse_breakpoints
from agenttui.replay.edit import BadEdit
from agenttui.replay.fork import ForkSession, fork_run, turn_sources
from agenttui.replay.save import FORK_ORIGIN, RunExists, plan_save
from agenttui.replay.session import ReplayState
from agenttui.runs.statuses.forks import marked_start
from agenttui.runs.statuses.status import RunState, run_status, status_of
from agenttui.stores.base import Store
from tests.conftest import StoreFactory
from tests.forks import (
    APPROVED,
    APPROVED_REWORDED,
    HALTED,
    HALTED_REWORDED,
    reworded_lookup,
    save_as_before_the_mark,
    save_fork,
)
from tests.gocorpus import write_corpus

#: The demo's agent, noting every refund and email it really makes in ``$AGENTTUI_EFFECTS``.
COUNTING = "tests.agent.counting_agent:factory"

RUN = "refund-a1002"
FINE = json.dumps({"order_id": "A-1002", "amount": 129.0, "item": "standing mat", "status": "delivered, no damage"})


def message(*parts: dict[str, object]) -> str:
    return json.dumps({"role": "assistant", "parts": list(parts)})


async def snapshot(store: Store) -> dict[str, list[tuple[int, str, bytes]]]:
    """Every row of every run: what "untouched" means on any store."""
    runs = [run_id async for run_id in store.runs()]
    return {run_id: [(e.seq, e.name, e.data) async for e in store.load(run_id)] for run_id in runs}


@pytest.fixture
async def demo(make_store: StoreFactory) -> Store:
    writer = await make_store()
    await build_demo(writer, bulk_turns=4)
    return await make_store(read_only=True)


async def calls_of(fork: ForkSession) -> list[tuple[str, str, bytes]]:
    return [(c.id, c.name, c.args or b"") for r in await fork.replayed() if r.message for c in r.message.tool_uses]


async def test_a_changed_tool_result_stops_where_the_recorded_turn_no_longer_fits(demo: Store) -> None:
    before = await snapshot(demo)
    fork = await fork_run(demo, RUN, "tool:call_0_0", FINE)
    assert fork.progress.state == ReplayState.DIVERGED and fork.exit_code == 3
    reason = fork.progress.reason
    assert reason.startswith(
        "the recording cannot answer @llm/1: turn 1 is asked after call_0_0 (lookup_order) returned"
    )
    assert "delivered, no damage" in reason and '"status":"damaged"' in reason
    assert [r.name for r in await fork.replayed()][-1] == "tool:call_0_0"  # the edit is in, the next turn is not
    assert await snapshot(demo) == before


async def test_a_reworded_turn_replays_to_the_end_with_the_same_tool_calls(demo: Store) -> None:
    original = await ForkSession.create(demo, RUN, "@llm/0", message())  # only to read the recording
    recorded_calls = [
        (c.id, c.name, c.args or b"") for r in original.original if r.message for c in r.message.tool_uses
    ]
    value = message({"type": "text", "text": "Looking order A-1002 up first."},
                    {"type": "tool_use", "id": "call_0_0", "name": "lookup_order", "args": {"order_id": "A-1002"}})  # fmt: skip
    fork = await fork_run(demo, RUN, "@llm/0", value)
    assert fork.progress.state == ReplayState.FINISHED and fork.exit_code == 0, fork.progress.reason
    assert await calls_of(fork) == recorded_calls
    assert turn_sources(fork, fork.progress.turn) == ["edit", "recording", "recording", "recording"]
    replayed = await fork.replayed()
    assert replayed[2].message is not None and replayed[2].message.text == "Looking order A-1002 up first."
    # The final answer reworded: the run ends on it.
    final = await fork_run(demo, RUN, "@llm/3", message({"type": "text", "text": "Refunded and emailed."}))
    assert final.progress.state == ReplayState.FINISHED and final.outcome() == "finished: Refunded and emailed."


async def test_a_turn_edited_to_make_no_call_ends_the_run_and_feeds_no_decision_of_the_old_one(demo: Store) -> None:
    fork = await fork_run(demo, RUN, "@llm/1", message({"type": "text", "text": "No refund: policy says no."}))
    assert fork.progress.state == ReplayState.FINISHED and fork.exit_code == 0
    names = [r.name for r in await fork.replayed()]
    assert names[-3:] == ["tool:call_0_0", "@llm/1", "run:complete"] and "approval:call_1_0" not in names
    assert fork.outcome() == "finished: No refund: policy says no."


async def test_a_fork_goes_live_with_a_scripted_model_and_completes(demo: Store) -> None:
    answer = "The mat arrived fine: no refund is due."
    setup = dataclasses.replace(factory(RUN), model=ScriptedModel([Turn("unused"), Turn(answer)]))
    fork = await fork_run(demo, RUN, "tool:call_0_0", FINE, setup, live=True)
    assert fork.progress.state == ReplayState.FINISHED and fork.exit_code == 0, fork.progress.reason
    assert fork.live_from == 1 and "cannot answer @llm/1" in fork.live_reason
    assert turn_sources(fork, fork.progress.turn) == ["recording", "live"]
    turns = [e for e in fork.progress.events if isinstance(e, AssistantTurn)]
    assert [t.live for t in turns] == [False, True] and turns[-1].message.text == answer
    replayed = await fork.replayed()
    assert replayed[-2].model is not None and replayed[-2].model.provider == "scripted"


async def test_going_live_needs_a_model(demo: Store) -> None:
    with pytest.raises(ConfigError, match="needs --agent"):
        await ForkSession.create(demo, RUN, "tool:call_0_0", FINE, live=True)


async def test_an_edited_call_the_recording_never_answered_stops_at_the_tool(demo: Store) -> None:
    value = message({"type": "tool_use", "id": "call_0_0", "name": "lookup_order", "args": {"order_id": "A-9999"}})
    fork = await fork_run(demo, RUN, "@llm/0", value)
    assert fork.progress.state == ReplayState.DIVERGED
    assert fork.progress.reason == (
        'the recording cannot answer tool:call_0_0: the edit calls lookup_order {"order_id":"A-9999"} (call_0_0); '
        'the recording holds the result of lookup_order {"order_id":"A-1002"} (call_0_0)'
    )
    fresh = await fork_run(demo, RUN, "@llm/0", message({"type": "tool_use", "id": "new", "name": "lookup_order"}))
    assert fresh.progress.reason.endswith("the recording never made that call")


@pytest.mark.parametrize(
    ("at", "value", "why"),
    [
        ("@llm/0", "{oops", "not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)"),
        ("@llm/0", '"text"', "a model turn is an object with role and parts, not a string"),
        ("@llm/0", message({"type": "image"}), "part 0: type is text, reasoning or tool_use, not 'image'"),
        ("@llm/0", message({"type": "tool_use", "id": "c", "name": "x", "args": [1]}),
         "part 0 (tool_use): args is an object of the call's arguments, not a list"),
        ("@llm/0", message({"type": "tool_use", "id": "", "name": "x"}), "part 0 (tool_use): id must be a non-empty string"),
        ("@llm/0", json.dumps({"role": "user", "parts": []}), "a model turn's role is assistant, not 'user'"),
        ("@llm/0", json.dumps({"message": {"parts": []}, "usage": {"input_tokens": -1}}),
         "usage: input_tokens is a count of tokens (a whole number, 0 or more), not -1"),
        ("run:start", "{}", "run:start (value) is not a model turn or a tool result: a fork edits those only"),
        ("@llm/9", "{}", "the run has no step '@llm/9' (its model turns: @llm/0 … @llm/3)"),
        ("approval:call_1_0", "{}", "approval:call_1_0 (approval) is not a model turn or a tool result: a fork edits those only"),
    ],
)  # fmt: skip
async def test_an_edit_is_checked_against_the_records_shape(demo: Store, at: str, value: str, why: str) -> None:
    with pytest.raises(BadEdit) as bad:
        await ForkSession.create(demo, RUN, at, value)
    assert bad.value.message == why


async def test_a_run_the_loop_cannot_re_drive_cannot_be_forked(demo: Store) -> None:
    with pytest.raises(BadEdit, match=r"cannot be forked: a saga that rolled back"):
        await ForkSession.create(demo, "saga-a1003-rolled-back", "@llm/0", message())


async def test_forks_of_go_written_runs(make_store: StoreFactory) -> None:
    writer = await make_store()
    await write_corpus(writer)
    corpus = await make_store(read_only=True)
    before = await snapshot(corpus)
    stopped = await fork_run(corpus, "go-weather", "tool:toolu_01", '{"temp_c":-5}')
    assert stopped.progress.state == ReplayState.DIVERGED
    assert stopped.progress.reason.startswith(
        'the recording cannot answer @llm/1: turn 1 is asked after toolu_01 (get_weather) returned {"temp_c":-5}'
    )
    reworded = await fork_run(corpus, "go-weather", "@llm/1", message({"type": "text", "text": "Sunny, 21°C."}))
    assert reworded.progress.state == ReplayState.FINISHED, reworded.progress.reason
    assert [r.name for r in await reworded.replayed()][-2:] == ["@llm/1", "run:complete"]
    assert await snapshot(corpus) == before


async def test_a_saved_fork_is_a_new_run_of_its_own(make_store: StoreFactory) -> None:
    store = await make_store()
    await build_demo(store, bulk_turns=4)
    before = await snapshot(store)
    fork = await fork_run(store, RUN, "@llm/3", message({"type": "text", "text": "Done."}))
    first = await plan_save(fork, store, where="the source store")
    assert first.run_id == f"{RUN}~fork-1" and "a new run refund-a1002~fork-1 in the source store" in first.will_write()
    assert first.command("demo.db").startswith("printf '%s' ") and "--at @llm/3 --set - --save" in first.command(
        "demo.db"
    )
    assert (await first.apply(store)).startswith("saved the fork as run refund-a1002~fork-1")
    with pytest.raises(RunExists):
        await first.apply(store)
    assert (await plan_save(fork, store, where="the source store")).run_id == f"{RUN}~fork-2"
    after = await snapshot(store)
    assert {k: v for k, v in after.items() if k != first.run_id} == before  # the source run is untouched
    saved = await Journal(store).history(first.run_id)
    assert saved[0].is_header and saved[-1].name == FORK_ORIGIN and saved[-1].kind == StepKind.VALUE
    origin = json.loads(saved[-1].result or b"{}")
    assert origin["run_id"] == RUN and origin["at"] == "@llm/3" and origin["live_from"] is None
    # The saved fork replays as any run does: it matches itself.
    from agenttui.replay.session import replay_verdict

    _, verdict = await replay_verdict(store, first.run_id)
    assert verdict.kind.value == "matches", verdict.summary()


# -- a saved fork is a record, never a run to drive ------------------------------------------------


async def test_a_fork_saved_at_the_first_turn_carries_no_attempt_marker_and_never_reads_halted(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    fork = await fork_run(store, HALTED, "@llm/0", HALTED_REWORDED)
    assert "attempt:tool:call_1_0" in [r.name for r in await fork.replayed()]  # the replay's stand-in wrote one
    plan = await plan_save(fork, store, where="the source store")
    assert plan.left_out == ("attempt:tool:call_1_0",) and plan.ended
    assert "left out, no side effect was attempted: attempt:tool:call_1_0" in plan.will_write()
    await plan.apply(store)
    saved = await Journal(store).history(plan.run_id)
    assert [r.name for r in saved][-3:] == ["approval:call_1_0", "run:cancelled", FORK_ORIGIN]
    assert not any(r.kind in (StepKind.ATTEMPT, StepKind.NOT_STARTED) for r in saved)
    status = await run_status(store, plan.run_id)
    assert (status.state, status.fork_of, status.tool_use_id) == (RunState.FORK, HALTED, "")
    assert status.detail.startswith(f"what-if fork of {HALTED} at @llm/0: paused: the recording ends here")
    # Its journal read as any run's (as a replay of it reads it) ends where the save ended it.
    assert status_of(plan.run_id, saved, forks=False).state == RunState.CANCELLED
    assert (await run_status(store, HALTED)).state == RunState.HALTED  # the run forked reads as before


async def test_the_mark_is_the_recorded_run_start_with_one_ext_member_added(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    await write_corpus(store)
    journal = Journal(store)
    for run_id, at, value, closing in (
        (RUN, "@llm/3", message({"type": "text", "text": "Done."}), b"}}"),  # agenttui's: its ext holds policies
        ("go-weather", "@llm/1", message({"type": "text", "text": "Sunny."}), b"}"),  # Go's: no ext
    ):
        recorded = await journal.get(run_id, "run:start")
        assert recorded is not None and recorded.result is not None and recorded.result.endswith(closing)
        fork = await fork_run(store, run_id, at, value)
        plan = await plan_save(fork, store, where="the source store")
        await plan.apply(store)
        saved = await journal.get(plan.run_id, "run:start")
        assert saved is not None and saved.result is not None
        mark = b'"agenttui.fork":{"run_id":"%s","at":"%s"}' % (run_id.encode(), at.encode())
        head = recorded.result[: -len(closing)]
        assert saved.result == (head + b"," + mark + b"}}" if closing == b"}}" else head + b',"ext":{' + mark + b"}}")
        assert RunStart.decode(saved.result).encode() == saved.result  # the codec's own bytes: a fixed point
        assert saved.salt != recorded.salt and plan.ended is False  # a finished fork needs no end of its own


MARK = b'{"run_id":"r","at":"@llm/0"}'


@pytest.mark.parametrize(
    ("recorded", "marked"),
    [
        (b'{"input":"go","saga":true}', b'{"input":"go","saga":true,"ext":{"agenttui.fork":%s}}'),
        # The SDK writes ext as a Go map: members sorted by name, each value as it was.
        (b'{"input":"go","ext":{"zeta":[1, 2],"audit.grant":"g"},"x":1}',
         b'{"input":"go","ext":{"agenttui.fork":%s,"audit.grant":"g","zeta":[1,2]},"x":1}'),
        (b'{"input":"go","ext":{"agenttui":{"tools":[]}}}', b'{"input":"go","ext":{"agenttui":{"tools":[]},"agenttui.fork":%s}}'),
        (b'{"input":"go","ext":null}', b'{"input":"go","ext":{"agenttui.fork":%s}}'),
        (b'{ "input" : "go", "ext":{"agenttui.fork":{"run_id":"the fork forked"}}}', b'{"input":"go","ext":{"agenttui.fork":%s}}'),
    ],
)  # fmt: skip
def test_marking_a_run_start_keeps_every_other_byte(recorded: bytes, marked: bytes) -> None:
    assert marked_start(recorded, "r", "@llm/0") == marked % MARK


async def test_a_fork_of_a_saved_fork_is_a_fork_of_that_fork(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    first = await save_fork(store, HALTED, HALTED_REWORDED)
    second = await save_fork(store, first, reworded_lookup("A-1004 again"))
    saved = await Journal(store).history(second)
    assert [r.name for r in saved].count(FORK_ORIGIN) == 1 and [r.name for r in saved].count("run:cancelled") == 1
    status = await run_status(store, second)
    assert (status.state, status.fork_of) == (RunState.FORK, first)


async def test_a_fork_saved_before_the_mark_reads_as_a_fork_by_its_origin(store: Store) -> None:
    await build_demo(store, bulk_turns=2)
    await save_as_before_the_mark(store, HALTED, HALTED_REWORDED, "old-fork")
    saved = await Journal(store).history("old-fork")
    assert [r.name for r in saved][-2:] == ["attempt:tool:call_1_0", FORK_ORIGIN]  # as saved then
    assert status_of("old-fork", saved, forks=False).state == RunState.HALTED  # what it read as then
    status = await run_status(store, "old-fork")
    assert (status.state, status.fork_of) == (RunState.FORK, HALTED)
    # A run holding a fork:origin that is not an origin (a user's step of that name) is no fork.
    await Journal(store).append("step-named-so", Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
    await Journal(store).append("step-named-so", Record(FORK_ORIGIN, StepKind.VALUE, result=b'"a value"'))
    assert (await run_status(store, "step-named-so")).state == RunState.STALLED


# -- breakpoints -------------------------------------------------------------------------------


def test_the_breakpoint_grammar() -> None:
    assert parse_breakpoint("tool:refund_payment").name == "refund_payment"
    call = parse_breakpoint("call:refund_payment amount=120 order_id=A-1002")
    assert call.kind == "call" and call.args == (("amount", 120), ("order_id", "A-1002"))
    assert parse_breakpoint("tokens>=1_000").tokens == 1000
    assert parse_breakpoint("kind:approval").name == "approval"
    assert parse_breakpoint("divergence").kind == "divergence"
    for bad, why in [
        ("tokens>5", "write tokens>=N"),
        ("kind:nope", "kind is one of"),
        ("call:x amount", "'amount' is not KEY=VALUE"),
        ("whatever", "is not one of tool:NAME, call:NAME K=V..., kind:KIND, divergence, tokens>=N"),
    ]:
        with pytest.raises(BadBreakpoint, match=why):
            parse_breakpoint(bad)


@pytest.mark.parametrize(
    ("until", "why"),
    [
        ("tool:refund_payment", "turn 1 calls refund_payment (call_1_0)"),
        ("call:refund_payment amount=129", "turn 1 calls refund_payment (call_1_0) with amount=129.0"),
        ("kind:approval", "wrote approval:call_1_0 (approval)"),
        ("tokens>=1000", "1,132 tokens so far"),
    ],
)
async def test_run_to_end_stops_at_a_breakpoint(demo: Store, until: str, why: str) -> None:
    fork = await ForkSession.create(demo, RUN, "tool:call_2_0", '{"message_id":"other"}')
    progress = await fork.run_to_end(breakpoints=parse_breakpoints([until, "tool:never_called"]))
    assert progress.breakpoint is not None and not fork.done
    assert (progress.breakpoint.turn, progress.breakpoint.why) == (1, why)
    assert (await fork.verdict()).stopped == "breakpoint"
    await fork.run_to_end()  # and on from there, to where the edit stops it
    assert fork.progress.state == ReplayState.DIVERGED
    assert fork.progress.reason.startswith("the recording cannot answer @llm/3")


async def test_a_breakpoint_holds_while_another_task_reads_the_replayed_journal(demo: Store) -> None:
    """The TUI's diff reads ``replayed`` between a turn and its check: the records that turn wrote
    are read once (both readers appended them) and still meet the breakpoint (they were missed,
    and the fork ran to its end)."""
    fork = await ForkSession.create(demo, RUN, "tool:call_2_0", '{"message_id":"other"}')
    reads = 0

    def read_between(turn: int) -> None:
        nonlocal reads

        async def read() -> None:
            nonlocal reads
            await fork.replayed()
            reads += 1

        asyncio.get_running_loop().create_task(read())

    progress = await fork.run_to_end(read_between, parse_breakpoints(["kind:approval"]))
    assert reads >= 1
    assert progress.breakpoint is not None
    assert (progress.breakpoint.turn, progress.breakpoint.why) == (1, "wrote approval:call_1_0 (approval)")
    names = [record.name for record in await fork.replayed()]
    assert len(names) == len(set(names))


async def test_a_divergence_breakpoint_passes_over_the_edit_and_stops_at_a_live_turn(demo: Store) -> None:
    reworded = await ForkSession.create(demo, RUN, "@llm/3", message({"type": "text", "text": "Done."}))
    assert (await reworded.run_to_end(breakpoints=parse_breakpoints(["divergence"]))).breakpoint is None
    assert reworded.progress.state == ReplayState.FINISHED
    setup = dataclasses.replace(factory(RUN), model=ScriptedModel([Turn("unused"), Turn("No refund.")]))
    live = await ForkSession.create(demo, RUN, "tool:call_0_0", FINE, setup, live=True)
    hit = (await live.run_to_end(breakpoints=parse_breakpoints(["divergence"]))).breakpoint
    assert hit is not None and (hit.turn, hit.why) == (1, "@llm/1 differs from the recording")


async def test_replay_until_stops_and_says_which(demo: Store) -> None:
    from agenttui.replay.session import replay_verdict

    session, verdict = await replay_verdict(demo, RUN, until=parse_breakpoints(["tool:send_email"]))
    assert session.progress.breakpoint is not None and session.progress.turn == 3
    assert verdict.summary() == (
        "matches the recording up to where it stops (breakpoint: tool:send_email: turn 2 calls send_email (call_2_0))"
    )


# -- the command line --------------------------------------------------------------------------


@pytest.fixture
def demo_db(tmp_path: Path) -> Path:
    import asyncio

    from agenttui.stores.sqlite import SQLiteStore

    path = tmp_path / "demo.db"

    async def build() -> None:
        store = await SQLiteStore.open(path)
        await build_demo(store, bulk_turns=4)
        await store.close()

    asyncio.run(build())
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def steps(path: Path) -> list[tuple[object, ...]]:
    """Every journal row of a SQLite store (its lease rows aside)."""
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT seq, run_id, name, data FROM bide_steps ORDER BY seq").fetchall()
    finally:
        conn.close()


def test_the_fork_command(demo_db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    before = digest(demo_db)
    stopped = runner.invoke(main, ["fork", str(demo_db), RUN, "--at", "tool:call_0_0", "--set", "-"], input=FINE)
    assert stopped.exit_code == 3, stopped.output
    assert stopped.output.splitlines()[1] == "replayed 1 turns (the recording has 4): turns 0 recording"
    assert "stopped: the recording cannot answer @llm/1" in stopped.output
    value = tmp_path / "answer.json"
    value.write_text(message({"type": "text", "text": "Done."}))
    into = tmp_path / "fork.db"
    args = ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", str(value), "--json", "--into", str(into)]
    done = runner.invoke(main, args)
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["state"] == "finished" and found["turn_sources"] == ["recording"] * 3 + ["edit"]
    # The header, 10 of the fork's 11 records (not the replay's attempt marker), its origin.
    assert found["saved"] == f"saved the fork as run {RUN} in {into}: wrote 12 records"
    assert not any(r["live"] for r in found["records"])
    again = runner.invoke(main, args)
    assert again.exit_code == 2 and "exists: nothing written (--force replaces it)" in again.output
    assert runner.invoke(main, [*args, "--force"]).exit_code == 0
    bad = runner.invoke(main, ["fork", str(demo_db), RUN, "--at", "@llm/3", "--set", str(value), "--until", "nope"])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1 and "Bad breakpoint" in bad.output
    assert digest(demo_db) == before  # a fork (even one saved elsewhere) never writes its source
    replayed = runner.invoke(main, ["replay", str(demo_db), RUN, "--until", "kind:approval"])
    assert replayed.exit_code == 0 and "stopped at breakpoint kind:approval after turn 1" in replayed.output


def test_a_saved_fork_lists_as_a_fork(demo_db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    into = tmp_path / "what-if.db"
    for where in (["--save", "--yes"], ["--into", str(into)]):
        saved = runner.invoke(main, ["fork", str(demo_db), HALTED, "--at", "@llm/0", "--set", "-", *where], input=HALTED_REWORDED)  # fmt: skip
        assert saved.exit_code == 0, saved.output
    for store, run_id in ((demo_db, f"{HALTED}~fork-1"), (into, HALTED)):
        listed = runner.invoke(main, ["runs", str(store)])
        assert listed.exit_code == 0, listed.output
        line = next(line for line in listed.output.splitlines() if line.startswith(f"{run_id} "))
        assert "⋔ fork" in line and f"what-if fork of {HALTED} at @llm/0: paused:" in line and "‼" not in line
        found = {run["run_id"]: run for run in json.loads(runner.invoke(main, ["runs", str(store), "--json"]).output)}
        assert (found[run_id]["status"], found[run_id]["fork_of"]) == ("fork", HALTED)
        only = runner.invoke(main, ["runs", str(store), "--status", "fork"]).output.splitlines()
        assert [line.split()[0] for line in only] == [run_id]
    assert found[run_id]["pending_call"] is None and len(found) == 1  # what-if.db holds the fork alone
    demo = {run["run_id"]: run for run in json.loads(runner.invoke(main, ["runs", str(demo_db), "--json"]).output)}
    assert demo[HALTED]["status"] == "halted" and demo[HALTED]["fork_of"] is None


def test_nothing_drives_or_writes_to_a_saved_fork(demo_db: Path, tmp_path: Path) -> None:
    import asyncio
    import os

    from agenttui.stores.sqlite import SQLiteStore

    async def save_both() -> None:
        store = await SQLiteStore.open(demo_db)
        try:
            await save_fork(store, APPROVED, APPROVED_REWORDED)
            await save_as_before_the_mark(store, APPROVED, APPROVED_REWORDED, "old-fork")
        finally:
            await store.close()

    asyncio.run(save_both())
    effects = tmp_path / "effects.log"
    os.environ["AGENTTUI_EFFECTS"] = str(effects)  # the counting agent notes each refund it makes
    runner = CliRunner()
    before = steps(demo_db)
    try:
        for run_id in (f"{APPROVED}~fork-1", "old-fork"):
            for args in (["redrive", str(demo_db), run_id, "--agent", COUNTING],
                         ["approve", str(demo_db), run_id, "call_1_0"], ["deny", str(demo_db), run_id, "call_1_0"],
                         ["resolve", str(demo_db), run_id, "call_1_0", "--not-fired"],
                         ["answer", str(demo_db), run_id, "ask-call_1_0", "yes"], ["cancel", str(demo_db), run_id]):  # fmt: skip
                refused = runner.invoke(main, args)
                assert refused.exit_code == 2, (args, refused.output)
                assert refused.output == (
                    f"agenttui: A what-if fork: run '{run_id}' is a what-if fork of {APPROVED} (at @llm/0): "
                    "a fork is never driven or written to; nothing written\n"
                )
    finally:
        del os.environ["AGENTTUI_EFFECTS"]
    assert not effects.exists() and steps(demo_db) == before  # each took the run's lease: the journal is as it was
