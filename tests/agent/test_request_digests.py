"""The request a model turn answered, as its record names it (``prompt_digest``, ``tools_digest``),
and what a replay makes of it: a change of prompt or tool list is tolerated and reported, never a
difference in a record; ``--strict`` fails on it; a recording that holds no digest says so."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from agenttui.agent.model import ToolSpec, request_digests
from agenttui.demo.build import factory as demo_factory
from agenttui.journal import Journal, StepKind
from agenttui.journal.codec import encode_record
from agenttui.replay.session import replay_verdict
from agenttui.replay.verdict import Verdict, VerdictKind
from agenttui.stores.memory import MemStore
from agenttui.stores.sqlite import SQLiteStore
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

LOOKUP = ToolSpec(
    "lookup_order", "Look an order up by id.", {"type": "object", "properties": {"order_id": {"type": "string"}}}
)
REFUND = ToolSpec("refund_payment", "Refund money.", {"type": "object", "properties": {"amount": {"type": "number"}}})


def test_the_digests_are_sha256_of_the_prompt_and_of_the_tool_list() -> None:
    prompt, tools = request_digests("You are the refund desk.", [LOOKUP, REFUND])
    assert prompt == hashlib.sha256(b"You are the refund desk.").hexdigest()
    listed = (
        b'[{"description":"Look an order up by id.","name":"lookup_order","parameters":{"properties":{"order_id":'
        b'{"type":"string"}},"type":"object"}},{"description":"Refund money.","name":"refund_payment","parameters":'
        b'{"properties":{"amount":{"type":"number"}},"type":"object"}}]'
    )
    assert tools == hashlib.sha256(listed).hexdigest()


def test_each_digest_moves_with_its_own_part_of_the_request_alone() -> None:
    prompt, tools = request_digests("You are the refund desk.", [LOOKUP, REFUND])
    reworded = request_digests("You are the refund desk. Be brief.", [LOOKUP, REFUND])
    assert reworded[0] != prompt and reworded[1] == tools
    described = request_digests(
        "You are the refund desk.", [dataclasses.replace(LOOKUP, description="Find it."), REFUND]
    )
    assert described == (prompt, described[1]) and described[1] != tools
    assert request_digests("You are the refund desk.", [REFUND, LOOKUP])[1] != tools  # the order the model is given


async def test_the_loop_records_both_on_every_model_turn(demo_db: Path) -> None:  # noqa: F811
    store = await SQLiteStore.open(demo_db)
    try:
        turns = [r for r in await Journal(store).history("refund-a1002") if r.kind == StepKind.MODEL]
    finally:
        await store.close()
    setup = demo_factory("refund-a1002")
    expected = request_digests(setup.system_prompt, [t.spec for t in setup.tools])
    assert len(turns) == 4 and {(r.prompt_digest, r.tools_digest) for r in turns} == {expected}


async def test_a_recording_without_digests_replays_and_says_it_cannot_tell(demo_db: Path) -> None:  # noqa: F811
    """A run recorded before agenttui wrote digests: nothing differs, and the verdict names what it could not judge."""
    source = await SQLiteStore.open(demo_db)
    try:
        history = await Journal(source).history("refund-a1002")
    finally:
        await source.close()
    older = MemStore()
    for record in history:
        stripped = dataclasses.replace(record, prompt_digest="", tools_digest="")
        await older.insert("refund-a1002", record.name, encode_record(stripped))
    _, verdict = await replay_verdict(older, "refund-a1002", demo_factory("refund-a1002"))
    assert verdict.kind == VerdictKind.MATCHES and verdict.request_changes == ()
    assert verdict.not_compared == ("prompt_digest", "tools_digest")
    assert verdict.strictly() == verdict


def test_strict_leaves_a_verdict_without_changes_as_it_is() -> None:
    for verdict in (
        Verdict(VerdictKind.MATCHES),
        Verdict(VerdictKind.DIVERGED, "x"),
        Verdict(VerdictKind.REFUSED, "y"),
    ):
        assert verdict.strictly() is verdict
