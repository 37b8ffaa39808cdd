"""Verdicts on runs a Go service wrote: status, Mermaid, replay and bytes, on every store.

The corpus (``tests/gocorpus.py``) is the SDK's own bytes. What agenttui reads in them is the
product: a wrong status or a replay that cries wolf on a healthy Go run is a bug.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agenttui.demo.build import build_demo
from agenttui.errors import ConfigError
from agenttui.journal import Journal, decode_record, encode_record
from agenttui.render import mermaid_of
from agenttui.replay.session import replay_verdict
from agenttui.replay.verdict import VerdictKind
from agenttui.runs.statuses.status import run_status
from agenttui.stores.base import Store
from tests.conftest import StoreFactory
from tests.gocorpus import CASES, mermaid, tombstone, write_corpus

IDS = [case.run_id for case in CASES]


@pytest.fixture
async def corpus(make_store: StoreFactory) -> Store:
    store = await make_store()
    await write_corpus(store)
    return await make_store(read_only=True)


async def test_every_case_reads_with_the_sdks_status(corpus: Store) -> None:
    statuses = {case.run_id: await run_status(corpus, case.run_id) for case in CASES}
    assert {run_id: s.state for run_id, s in statuses.items()} == {case.run_id: case.status for case in CASES}
    assert statuses["go-v08"].legacy and not statuses["go-weather"].legacy
    assert statuses["go-sleeping"].wake_at is not None and statuses["go-sleeping"].wake_at.utcoffset() is not None
    assert statuses["go-halted"].tool_use_id == "toolu_05" and statuses["go-halted"].tool_name == "charge"
    assert statuses["go-cancelled"].detail == "user asked"
    assert statuses["go-saga-aborted"].detail == "hotel full"


async def test_every_case_draws_the_sdks_mermaid(corpus: Store) -> None:
    for case in CASES:
        records = (await Journal(corpus).read(case.run_id)).records
        assert mermaid_of(records) == mermaid(case.labels), case.run_id


async def test_every_record_is_a_fixed_point_of_decode_and_encode(corpus: Store) -> None:
    for case in CASES:
        async for entry in corpus.load(case.run_id):
            assert encode_record(decode_record(entry.data, entry.name)) == entry.data, (case.run_id, entry.name)


async def test_every_case_replays_with_its_verdict(corpus: Store) -> None:
    verdicts = {}
    for case in CASES:
        _, verdict = await replay_verdict(corpus, case.run_id, input=case.input)
        verdicts[case.run_id] = verdict
    assert {run_id: v.kind for run_id, v in verdicts.items()} == {case.run_id: case.verdict for case in CASES}, {
        run_id: v.summary() for run_id, v in verdicts.items()
    }
    # The SDK's digests cannot be reproduced without its tool registry: named, never counted.
    assert verdicts["go-weather"].not_compared == ("prompt_digest", "tools_digest")
    assert verdicts["go-sleeping"].stopped == "sleeping" and verdicts["go-halted"].stopped == "halted"
    assert "flow" in verdicts["go-flow"].reason and "session" in verdicts["s1>@session"].reason
    assert (
        "rolled back" in verdicts["go-saga-aborted"].reason and "rolled back" in verdicts["go-saga-cancelling"].reason
    )
    assert all(
        v.exit_code == {VerdictKind.DIVERGED: 3, VerdictKind.REFUSED: 2}.get(v.kind, 0) for v in verdicts.values()
    )
    # A retry the next drive claimed, then died in: where the recording stops, as it stops.
    assert verdicts["go-voided-halted"].stopped == "halted"
    # A redacted result is fed as the store holds it, and the verdict says so.
    assert verdicts["go-redacted"].tombstones == ("tool:toolu_13",)
    assert "tool:toolu_13" in verdicts["go-redacted"].summary() and "redacted" in verdicts["go-redacted"].summary()
    assert verdicts["go-redacted-cancelled"].stopped == "cancelled"
    assert "tool:toolu_18" in verdicts["go-redacted-cancelled"].summary()
    assert verdicts["go-v07"].input_given and not verdicts["go-v08"].input_given
    assert not any(v.tombstones for run_id, v in verdicts.items() if "redacted" not in run_id)


async def test_a_journal_that_holds_no_input_is_refused_without_one(corpus: Store) -> None:
    _, verdict = await replay_verdict(corpus, "go-v07")
    assert verdict.kind == VerdictKind.REFUSED and "--input" in verdict.reason, verdict.reason


async def test_an_input_is_given_only_to_a_journal_that_holds_none(corpus: Store) -> None:
    with pytest.raises(ConfigError, match="run:start"):
        await replay_verdict(corpus, "go-v08", input="hi")


async def test_a_redacted_record_the_replay_cannot_feed_is_refused(make_store: StoreFactory) -> None:
    store = await make_store()
    case = next(c for c in CASES if c.run_id == "go-weather")
    for name, data in case.entries():
        bytes_ = data if name != "@llm/1" else tombstone(case.run_id, case.records[3]).encode()
        await store.insert(case.run_id, name, bytes_)
    _, verdict = await replay_verdict(store, case.run_id)
    assert verdict.kind == VerdictKind.REFUSED and "@llm/1" in verdict.reason, verdict.reason


async def test_a_replay_lists_records_in_the_recordings_order(corpus: Store) -> None:
    from agenttui.replay.session import ReplaySession

    for case in CASES:
        if case.run_id not in ("go-approved", "go-quorum", "go-asked", "go-limits-spend", "go-voided-retried",
                               "go-voided-halted", "go-resolved", "go-redacted", "go-redacted-cancelled",
                               "go-redacted-retried", "go-v07"):  # fmt: skip
            continue
        run_id = case.run_id
        session = await ReplaySession.open(corpus, run_id, input=case.input)
        await session.run_to_end()
        recorded = [r.name for r in session.recording]
        assert [r.name for r in await session.replayed()] == recorded, run_id


# -- what agenttui writes, a Go service can decode ---------------------------------------------------

_STRING_MEMBERS = {"name", "kind", "finish", "raw_finish", "prompt_digest", "tools_digest", "tool_use_id", "approver",
                   "approver_alg", "signature", "format", "claim", "salt"}  # fmt: skip
_BOOL_MEMBERS = {"is_error", "approved", "reconciled", "outcome_unknown"}
_USAGE_MEMBERS = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}


def go_decode_errors(data: bytes) -> list[str]:
    """What Go's ``json.Unmarshal`` into the SDK's ``Record`` (and, for ``run:start``, its
    ``RunStart``) would reject in these bytes: a member of the wrong JSON type."""
    record = json.loads(data)
    errors = []
    for key, value in record.items():
        if key in _STRING_MEMBERS and not isinstance(value, str):
            errors.append(f"{key} is not a string")
        elif key in _BOOL_MEMBERS and not isinstance(value, bool):
            errors.append(f"{key} is not a bool")
        elif key in ("usage", "discarded_usage") and not (isinstance(value, dict) and set(value) <= _USAGE_MEMBERS
                                                          and all(isinstance(v, int) for v in value.values())):  # fmt: skip
            errors.append(f"{key} is not a Usage")
        elif key == "attempted_at" and not isinstance(value, int):
            errors.append("attempted_at is not an int64")
        elif key == "message" and not (isinstance(value, dict) and isinstance(value.get("role"), str)
                                       and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in value.get("parts", []))):  # fmt: skip
            errors.append("message is not a Message")
    if record.get("name") == "run:start":
        errors += run_start_errors(record.get("result"))
    return errors


def run_start_errors(start: Any) -> list[str]:
    if not isinstance(start, dict):
        return ["run:start is not an object"]
    expected: dict[str, type | tuple[type, ...]] = {"input": (str, dict), "saga": bool, "kind": str, "session": dict, "flow": dict,
                                                    "typed": dict, "settings": dict, "principal": dict, "tools": list, "ext": dict}  # fmt: skip
    errors = [
        f"run:start {key} is a {type(value).__name__}"
        for key, value in start.items()
        if key in expected and not isinstance(value, expected[key])
    ]
    if not all(isinstance(name, str) for name in start.get("tools") or []):
        errors.append("run:start tools is not a []string (the SDK's tool filter)")
    settings = start.get("settings") or {}
    for key in ("max_turns", "token_budget"):
        if key in settings and not isinstance(settings[key], int):
            errors.append(f"settings.{key} is not an int")
    if "system_prompt" in settings and not isinstance(settings["system_prompt"], str):
        errors.append("settings.system_prompt is not a string")
    return errors


async def test_a_store_agenttui_wrote_decodes_under_the_sdks_types(store: Store) -> None:
    await build_demo(store, bulk_turns=3)
    checked = 0
    async for run_id in store.runs():
        async for entry in store.load(run_id):
            if entry.name == "@llm/1" and run_id == "lookup-a1001-damaged":
                continue  # the demo's damaged row, on purpose
            assert go_decode_errors(entry.data) == [], (run_id, entry.name, entry.data[:200])
            checked += 1
    assert checked > 50


def test_the_checker_catches_what_earlier_builds_wrote() -> None:
    earlier = b'{"name":"run:start","kind":"value","result":{"input":"x","kind":"agent","tools":[{"name":"refund_payment","approval":{"single":true}}]}}'
    assert go_decode_errors(earlier) == ["run:start tools is not a []string (the SDK's tool filter)"]


@pytest.mark.parametrize("run_id", IDS)
def test_each_case_is_valid_json_with_its_name_first(run_id: str) -> None:
    case = next(c for c in CASES if c.run_id == run_id)
    for name, data in case.entries():
        if name in case.tombstones:
            continue
        assert data.startswith(b'{"name":' + json.dumps(name).encode()) and json.loads(data)["name"] == name


async def test_show_json_keeps_what_the_record_holds(corpus: Store) -> None:
    from agenttui.journal.describe import record_json

    result = await Journal(corpus).get("go-charge", "tool:toolu_02")
    assert result is not None and record_json(result)["safety"] == {}  # the call ran as a side effect
    turn = await Journal(corpus).get("go-weather", "@llm/1")
    assert turn is not None and record_json(turn)["usage"] == {}


@pytest.fixture
async def go_db(tmp_path: Path) -> Path:
    from agenttui.stores.sqlite import SQLiteStore

    store = await SQLiteStore.open(tmp_path / "go.db")
    try:
        await write_corpus(store)
    finally:
        await store.close()
    return tmp_path / "go.db"


def test_the_cli_replays_a_redacted_result_and_names_it(go_db: Path) -> None:
    command = [sys.executable, "-m", "agenttui", "replay", str(go_db), "go-redacted"]
    shown = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "matches the recording to its end; redacted in the store, fed as recorded: tool:toolu_13" in shown.stdout
    found = json.loads(subprocess.run([*command, "--json"], check=False, capture_output=True, timeout=60).stdout)
    assert (found["verdict"], found["tombstones"], found["input_from"]) == ("matches", ["tool:toolu_13"], "journal")
