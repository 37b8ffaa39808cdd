"""Legacy journals (the ``steps`` table of SDKs before v0.9): read with their real status, marked
legacy, replayed where there is a ``run:start`` to re-drive from, never written to.

The current Go SDK refuses these files outright, so agenttui is the only way to look at them.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

# SDK v0.7.0's own journal of run "order-1" (a side effect, finished), from its store test:
# headerless, the result under the raw tool-use id, no run:start.
V070_ORDER_1 = [
    b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"args":{},"id":"c1","name":"charge","type":"tool_use"}]},"usage":{},"salt":"mCApESbGjftukMDAtkPYaqiIGljQ42Sv2SH74L6F+HA="}',
    b'{"name":"attempt:c1","kind":"attempt","tool_use_id":"c1","attempted_at":1790746461444,"claim":"5608d3daa98f802ac851ca33910d95c3","salt":"wfNQU6UpZN8xXOf2h1oEx/I7phCBQJp8iRR4S26RLEY="}',
    b'{"name":"c1","kind":"tool_result","tool_use_id":"c1","result":"charged","salt":"p7HmBop+8IkzXoZhjF7nPLPyTqM8g+KQ0s14Hl6qJLw="}',
    b'{"name":"@llm/1","kind":"model","message":{"role":"assistant","parts":[{"text":"done","type":"text"}]},"usage":{},"salt":"FYkdumZelqPBoeXo4ndduNFE7g3dndWUo4Rzt0xjQJY="}',
    b'{"name":"run:complete","kind":"value","salt":"la2ayUqmpioz+dAcVITVLHXZyG44NJmYPP7SkctvK58="}',
]  # fmt: skip
# The same crash one step earlier: an attempt with no result, in v0.7's keys.
V070_HALTED = V070_ORDER_1[:2]
# v0.8: run:start ({"input","saga"}) and the tool:/attempt:tool: keys, still no header.
V080_RUN = [
    b'{"name":"run:start","kind":"value","result":{"input":"charge order 2","saga":false},"salt":"AAAA"}',
    b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"args":{"amount":5},"id":"c1","name":"charge","type":"tool_use"}]},"usage":{"input_tokens":10}}',
    b'{"name":"attempt:tool:c1","kind":"attempt","tool_use_id":"c1","attempted_at":1790746461444,"claim":"9c1185a5c5e9fc54612808977ee8f548"}',
    b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":"charged"}',
    b'{"name":"@llm/1","kind":"model","message":{"role":"assistant","parts":[{"text":"charged","type":"text"}]},"usage":{}}',
    b'{"name":"run:complete","kind":"value"}',
]  # fmt: skip


@pytest.fixture
def legacy_db(tmp_path: Path) -> Path:
    path = tmp_path / "v070.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE steps (run_id TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL,"
                     " data BLOB NOT NULL, PRIMARY KEY (run_id, name))")  # fmt: skip
        for run_id, rows in (("order-1", V070_ORDER_1), ("order-halted", V070_HALTED), ("order-2", V080_RUN)):
            conn.executemany(
                "INSERT INTO steps VALUES (?, ?, ?, ?)",
                [(run_id, seq, json.loads(data)["name"], data) for seq, data in enumerate(rows)],
            )
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenttui", *args], check=False, capture_output=True, text=True, timeout=60
    )


def test_legacy_runs_read_with_their_real_status(legacy_db: Path) -> None:
    listing = cli("runs", str(legacy_db), "--json")
    assert listing.returncode == 0, listing.stderr
    runs = {r["run_id"]: r for r in json.loads(listing.stdout)}
    assert {run_id: (r["status"], r["legacy"]) for run_id, r in runs.items()} == {
        "order-1": ("complete", True),
        "order-halted": ("halted", True),
        "order-2": ("complete", True),
    }
    assert runs["order-halted"]["pending_call"] == "c1" and runs["order-halted"]["pending_tool"] == "charge"
    assert "[legacy]" in cli("runs", str(legacy_db)).stdout


def test_a_v0_8_legacy_run_replays(legacy_db: Path) -> None:
    replayed = cli("replay", str(legacy_db), "order-2", "--json")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    found = json.loads(replayed.stdout)
    assert found["verdict"] == "matches" and found["input_from"] == "journal"


def test_a_v0_7_run_replays_with_the_input_given_and_says_so(legacy_db: Path) -> None:
    replayed = cli("replay", str(legacy_db), "order-1", "--input", "charge order 1")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "input from --input, the journal has none" in replayed.stdout
    assert "matches the recording to its end" in replayed.stdout
    as_json = json.loads(cli("replay", str(legacy_db), "order-1", "--input", "charge order 1", "--json").stdout)
    assert (as_json["verdict"], as_json["input_from"], as_json["turns"]) == ("matches", "--input", 2)
    # The same crash one step earlier stops where the recording stops: at its attempt.
    halted = json.loads(cli("replay", str(legacy_db), "order-halted", "--input", "charge order 1", "--json").stdout)
    assert (halted["verdict"], halted["stopped"]) == ("matches-so-far", "halted"), halted


def test_a_v0_7_run_without_an_input_is_refused_naming_the_option(legacy_db: Path) -> None:
    refused = cli("replay", str(legacy_db), "order-1")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "refused:" in refused.stdout and "no input" in refused.stdout and "--input" in refused.stdout


def test_an_input_for_a_run_that_records_its_own_is_an_error(legacy_db: Path) -> None:
    given = cli("replay", str(legacy_db), "order-2", "--input", "charge order 2")
    assert given.returncode == 2 and given.stdout == "", given.stdout
    assert "records its own input (run:start)" in given.stderr and "Traceback" not in given.stderr


def test_legacy_runs_show_and_draw(legacy_db: Path) -> None:
    shown = cli("show", str(legacy_db), "order-1")
    assert shown.returncode == 0 and "c1" in shown.stdout
    drawn = cli("mermaid", str(legacy_db), "order-1")
    assert drawn.returncode == 0 and 'n1["tool: charge"]' in drawn.stdout, drawn.stdout


def test_v0_8_s_read_only_member_survives_decode_and_encode() -> None:
    from agenttui.journal import decode_record, encode_record

    data = b'{"name":"tool:c2","kind":"tool_result","tool_use_id":"c2","result":{"ok":true},"reconciled":true,"read_only":true,"evidence":{"by":"ops"},"salt":"AAAA"}'
    record = decode_record(data, "tool:c2")
    assert record.read_only and encode_record(record) == data


async def test_a_v0_7_gated_call_whose_id_needs_escaping_replays_under_the_loops_keys() -> None:
    from agenttui.replay.session import replay_verdict
    from agenttui.stores.memory import MemStore
    from tests.gocorpus import salt

    # v0.7 keys: the decision under approval:<raw id>, the marker attempt:<raw id>, the result
    # under the raw id; the loop writes approval:call%7C7, attempt:tool:call%7C7, tool:call%7C7.
    records = [
        '{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"args":{"amount":5},"id":"call|7","name":"refund","type":"tool_use"}]},"usage":{"input_tokens":12}}',
        '{"name":"approval:call|7","kind":"approval","tool_use_id":"call|7","approved":true}',
        '{"name":"attempt:call|7","kind":"attempt","tool_use_id":"call|7","attempted_at":1790746461444,"claim":"5608d3daa98f802ac851ca33910d95c3"}',
        '{"name":"call|7","kind":"tool_result","tool_use_id":"call|7","result":"refunded"}',
        '{"name":"@llm/1","kind":"model","message":{"role":"assistant","parts":[{"text":"Refunded.","type":"text"}]},"usage":{}}',
        '{"name":"run:complete","kind":"value"}',
    ]  # fmt: skip
    store = MemStore()
    for body in records:
        name = json.loads(body)["name"]
        await store.insert("refund-7", name, f'{body[:-1]},"salt":"{salt("refund-7", name)}"}}'.encode())
    session, verdict = await replay_verdict(store, "refund-7", input="refund order 7")
    assert verdict.kind.value == "matches" and verdict.input_given, verdict.summary()
    assert [r.name for r in await session.replayed()] == [json.loads(body)["name"] for body in records]
    loop_keys = {entry.name async for entry in session.store.load("refund-7")}
    assert {"approval:call%7C7", "attempt:tool:call%7C7", "tool:call%7C7"} <= loop_keys
