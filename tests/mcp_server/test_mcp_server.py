"""``agenttui mcp``: the server driven by the MCP SDK's own client over stdio, as a separate
process, on SQLite and PostgreSQL stores built by the runtime: every tool, paging, budgets,
writes refused without ``--allow-writes``, dry runs that write nothing, and one real approve
from two clients at once written exactly once."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from agenttui.demo.build import build_demo
from agenttui.journal import keys
from agenttui.stores import open_store
from tests.hardening.hostile_corpus import CorpusStore, build_postgres_schema
from tests.pg import PostgresCluster
from tests.processes import agenttui
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

READ_TOOLS = {
    "list_runs", "run_overview", "run_records", "read_record", "conversation", "replay", "fork_run", "compare_runs",
    "run_cost", "flowchart", "search",
}  # fmt: skip
WRITE_TOOLS = {"approve", "deny", "answer", "resolve", "cancel"}
#: What no string an agent reads may hold: a terminal acts on it (tab and newline are text).
TERMINAL_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

HALTED = "refund-a1004-halted"
AWAITING_APPROVAL = "refund-a1005"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def demo_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A demo store (a run in every status, written by the runtime) as a URL the server takes."""
    if request.param == "postgres":
        cluster: PostgresCluster = request.getfixturevalue("postgres_cluster")
        return await cluster.demo_schema("mcp", bulk_turns=40)
    url = str(tmp_path / "demo.db")
    store = await open_store(url)
    try:
        await build_demo(store, bulk_turns=40)
    finally:
        await store.close()
    return url


@asynccontextmanager
async def serving(url: str, *flags: str, errlog: Path | None = None) -> AsyncIterator[Client]:
    """The server as a process of its own, the SDK's client on its stdin and stdout."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "agenttui", "mcp", url, *flags], env=dict(os.environ)
    )
    with open(errlog or os.devnull, "w") as log:
        async with Client(stdio_client(params, errlog=log)) as client:
            yield client


def answer(result: CallToolResult) -> dict[str, Any]:
    """A tool's answer: its JSON text, the one thing it answers (no structured copy of it)."""
    assert not result.is_error, result.content
    assert len(result.content) == 1 and result.structured_content is None
    found: dict[str, Any] = json.loads(result.content[0].text)  # type: ignore[union-attr]
    return found


def error_of(result: CallToolResult) -> str:
    assert result.is_error
    return str(result.content[0].text)  # type: ignore[union-attr]


async def store_rows(url: str, run_id: str) -> list[tuple[str, bytes]]:
    store = await open_store(url, read_only=True, create=False)
    try:
        return [(entry.name, entry.data) async for entry in store.load(run_id)]
    finally:
        await store.close()


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


async def test_an_agent_finds_the_halted_run_forks_it_and_reads_a_verdict(demo_url: str) -> None:
    """The issue's session: find the halted run, read why, fork it with a different tool result,
    read the verdict; not a byte written to the store."""
    before = await store_rows(demo_url, HALTED)
    async with serving(demo_url) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert listed == READ_TOOLS  # read-only: no write tool is even listed
        halted = answer(await client.call_tool("list_runs", {"status": ["halted"]}))
        assert [run["run_id"] for run in halted["runs"]] == [HALTED]
        assert "did it fire?" in halted["runs"][0]["waits_on"]

        overview = answer(await client.call_tool("run_overview", {"run_id": HALTED}))
        assert overview["status"]["detail"] == "refund_payment (call_1_0): outcome unknown"
        assert overview["replay"]["verdict"] == "matches-so-far" and overview["replay"]["stopped"] == "halted"

        outline = answer(await client.call_tool("run_records", {"run_id": HALTED}))["outline"]
        lookup = next(row for row in outline if row["name"] == "tool:call_0_0")
        record = answer(await client.call_tool("read_record", {"run_id": HALTED, "record": "tool:call_0_0"}))
        assert record["index"] == lookup["index"] and record["record"]["result"]["status"] == "delivered"

        changed = {**record["record"]["result"], "status": "lost in transit"}
        fork = answer(
            await client.call_tool(
                "fork_run", {"run_id": HALTED, "at": "tool:call_0_0", "value_json": json.dumps(changed)}
            )
        )
        assert fork["written_to_store"] is False
        assert fork["fork"]["state"] == "diverged" and "cannot answer @llm/1" in fork["fork"]["outcome"]
        assert fork["against_recording"]["first_difference"]["step"] == "tool:call_0_0"
        assert fork["against_recording"]["first_difference"]["right"]["result"]["status"] == "lost in transit"

        said = answer(await client.call_tool("conversation", {"run_id": HALTED, "at": "tool:call_0_0"}))
        assert [voice["speaker"] for voice in said["conversation"]] == ["user", "assistant", "tool lookup_order"]
        verdict = answer(await client.call_tool("replay", {"run_id": HALTED}))
        assert verdict["verdict"] == "matches-so-far"
        compared = answer(await client.call_tool("compare_runs", {"run_a": "refund-a1002", "run_b": HALTED}))
        assert compared["same"] is False and compared["left"]["turns"] == 4
        # On claude-sonnet-4-5: 1,790 in, 600 cached, 282 out = $0.00978 (tests/runs/test_cost.py).
        spent = answer(await client.call_tool("run_cost", {"run_id": "refund-a1002"}))
        assert spent["total"]["cost_usd"] == 0.00978 and [t["step"] for t in spent["turns"]] == [
            "@llm/0",
            "@llm/1",
            "@llm/2",
            "@llm/3",
        ]
        assert list(spent["by_model"]) == ["anthropic/claude-sonnet-4-5"] and spent["prices"].startswith("genai-prices")
        mermaid = answer(await client.call_tool("flowchart", {"run_id": HALTED}))["text"]
        assert mermaid.startswith("flowchart") and "tool: lookup_order" in mermaid
        drawn = answer(await client.call_tool("flowchart", {"run_id": HALTED, "format": "ascii", "width": 60}))["text"]
        assert "halted on refund_payment" in drawn
        hits = answer(await client.call_tool("search", {"run_id": HALTED, "text": "MONITOR ARM"}))
        assert {hit["name"] for hit in hits["hits"]} >= {"run:start", "tool:call_0_0"} and hits["next_cursor"] is None
        first = answer(await client.call_tool("search", {"run_id": HALTED, "text": "MONITOR ARM", "limit": 1}))
        rest = answer(await client.call_tool("search", {"run_id": HALTED, "text": "MONITOR ARM",
                                                        "cursor": first["next_cursor"]}))  # fmt: skip
        assert first["hits"] + rest["hits"] == hits["hits"]

        attached = await client.read_resource(f"agenttui://runs/{HALTED}")
        resource = json.loads(attached.contents[0].text)  # type: ignore[union-attr]
        assert resource["status"]["status"] == "halted" and resource["records"] == len(outline)
    assert await store_rows(demo_url, HALTED) == before


async def test_pages_of_runs_and_records_cover_each_once(demo_url: str) -> None:
    store = await open_store(demo_url, read_only=True, create=False)
    try:
        everything = [run_id async for run_id in store.runs()]
    finally:
        await store.close()
    async with serving(demo_url) as client:
        seen: list[str] = []
        cursor = None
        while True:
            page = answer(await client.call_tool("list_runs", {"limit": 4, "cursor": cursor}))
            assert len(page["runs"]) <= 4
            seen += [run["run_id"] for run in page["runs"]]
            if (cursor := page["next_cursor"]) is None:
                break
        assert seen == everything

        rows: list[int] = []
        at: int | None = 0
        while at is not None:
            page = answer(await client.call_tool("run_records", {"run_id": "audit-bulk", "cursor": at, "limit": 7}))
            rows += [row["index"] for row in page["outline"]]
            at = page["next_cursor"]
        assert rows == list(range(page["records"]))

        filtered = answer(await client.call_tool("list_runs", {"where": "status=halted,awaiting-approval"}))
        assert {run["status"] for run in filtered["runs"]} == {"halted", "awaiting-approval"}
        assert "expected a value" in error_of(await client.call_tool("list_runs", {"where": "status="}))
        assert "not a cursor" in error_of(await client.call_tool("list_runs", {"cursor": "@@@"}))
        assert "no status 'done'" in error_of(await client.call_tool("list_runs", {"status": ["done"]}))


async def test_every_answer_fits_its_budget_and_a_cut_value_reads_on(tmp_path: Path) -> None:
    """A tool result of 200 kB: cut in every answer to the budget, with a marker; read_record
    reads it whole, page by page."""
    url = str(tmp_path / "big.db")
    store = await open_store(url)
    try:
        await build_demo(store, bulk_turns=1)
        big = {"order_id": "A-1004", "notes": "x" * 200_000, "status": "delivered"}
        data = json.dumps({"name": "tool:big", "kind": "tool_result", "tool_use_id": "big", "result": big}).encode()
        await store.insert("audit-bulk", "tool:big", data)
    finally:
        await store.close()
    async with serving(url, "--budget", "4000") as client:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("run_records", {"run_id": "audit-bulk"}),
            ("read_record", {"run_id": "audit-bulk", "record": "tool:big"}),
            ("conversation", {"run_id": "audit-bulk"}),
            ("search", {"run_id": "audit-bulk", "text": "xxxx"}),
            ("list_runs", {"limit": 500}),
        ]
        for name, args in calls:
            result = await client.call_tool(name, args)
            text = result.content[0].text  # type: ignore[union-attr]
            assert len(text.encode()) <= 4000, (name, len(text.encode()))
        paged, offset = "", 0
        while True:
            page = answer(await client.call_tool("read_record", {"run_id": "audit-bulk", "record": "tool:big",
                                                               "offset": offset, "budget": 20_000}))  # fmt: skip
            paged += page["json_text"]
            if (offset := page["next_offset"]) is None:
                break
        assert json.loads(paged)["result"] == big
        small = await client.call_tool("read_record", {"run_id": "audit-bulk", "record": "tool:big", "budget": 1})
        assert len(small.content[0].text.encode()) <= 2000  # type: ignore[union-attr]  # the least budget


async def test_writes_are_refused_without_allow_writes_and_dry_runs_write_nothing(demo_url: str) -> None:
    before = await store_rows(demo_url, AWAITING_APPROVAL)
    async with serving(demo_url) as client:
        assert "approve" in error_of(
            await client.call_tool("approve", {"run_id": AWAITING_APPROVAL, "call": "call_1_0"})
        )
    async with serving(demo_url, "--allow-writes") as client:
        assert {tool.name for tool in (await client.list_tools()).tools} == READ_TOOLS | WRITE_TOOLS
        preview = answer(await client.call_tool("approve", {"run_id": AWAITING_APPROVAL, "call": "call_1_0"}))
        assert preview["dry_run"] is True and preview["written"] is None
        assert "approval:call_1_0" in preview["would_write"] and preview["command"].startswith("agenttui approve ")
        previews: list[tuple[str, dict[str, Any]]] = [
            ("deny", {"call": "call_1_0"}), ("cancel", {"reason": "no"}), ("answer", {"name": "q", "value_json": "1"}),
            ("resolve", {"call": "call_1_0", "fired": False}),
        ]  # fmt: skip
        for name, args in previews:
            assert answer(await client.call_tool(name, {"run_id": AWAITING_APPROVAL, **args}))["dry_run"] is True
        selected = answer(await client.call_tool("approve", {"where": "status=awaiting-approval"}))
        assert selected["dry_run"] is True and [run["run_id"] for run in selected["runs"]] == [AWAITING_APPROVAL]
        assert selected["command"].endswith("--yes")
        both = await client.call_tool("cancel", {"run_id": AWAITING_APPROVAL, "where": "status=stalled"})
        assert "one of them" in error_of(both)
        assert "no run matches" in error_of(await client.call_tool("cancel", {"where": "id=nothing-like-it"}))
    assert await store_rows(demo_url, AWAITING_APPROVAL) == before


async def test_a_filter_selects_runs_for_one_write_each(demo_url: str, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    async with serving(demo_url, "--allow-writes", errlog=log) as client:
        done = answer(await client.call_tool("cancel", {"where": "status=stalled", "reason": "by the agent",
                                                        "dry_run": False}))  # fmt: skip
        assert done["summary"]["done"] == 1 and done["runs"][0]["run_id"] == "refund-a1001-stalled"
        now = answer(await client.call_tool("list_runs", {"where": "id=refund-a1001-stalled"}))["runs"][0]
        assert now["status"] == "cancelled" and now["detail"] == "by the agent"
    assert "cancel refund-a1001-stalled: done" in log.read_text()


async def test_a_real_approve_from_two_clients_at_once_is_written_once(demo_url: str, tmp_path: Path) -> None:
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    async with (
        serving(demo_url, "--allow-writes", errlog=logs[0]) as first,
        serving(demo_url, "--allow-writes", errlog=logs[1]) as second,
    ):
        args = {"run_id": AWAITING_APPROVAL, "call": "call_1_0", "approver": "agent", "dry_run": False}
        results = await asyncio.gather(first.call_tool("approve", args), second.call_tool("approve", args))
    written = [r for r in results if not r.is_error and answer(r).get("written")]
    assert len(written) == 1, [r.content for r in results]
    assert sum(name == "approval:call_1_0" for name, _ in await store_rows(demo_url, AWAITING_APPROVAL)) == 1
    told = "".join(log.read_text() for log in logs)
    assert "wrote approval:call_1_0" in told and "Traceback" not in told


async def hostile_answers(url: str, corpus: CorpusStore, log: Path) -> list[CallToolResult]:
    """Every tool called on a hostile store's telling runs and on a run it does not hold."""
    async with serving(url, errlog=log) as client:
        results = [await client.call_tool("list_runs", {"limit": 50})]
        for run_id in [*corpus.runs[:3], "no-such-run\x1b]52;c;eA==\x07"]:
            step = corpus.steps.get(run_id, keys.llm_key(0))
            calls: list[tuple[str, dict[str, Any]]] = [
                ("run_overview", {}), ("run_records", {}), ("read_record", {"record": step}),
                ("read_record", {"record": "1"}), ("conversation", {}), ("replay", {}),
                ("fork_run", {"at": step, "value_json": '"what if \\u001b[2J"'}), ("flowchart", {}),
                ("flowchart", {"format": "ascii"}), ("search", {"text": "\x1b"}), ("run_cost", {}),
            ]  # fmt: skip
            for tool, args in calls:
                results.append(await client.call_tool(tool, {"run_id": run_id, **args}))
            results.append(await client.call_tool("compare_runs", {"run_a": run_id, "run_b": corpus.runs[0]}))
        results.append(await client.call_tool("approve", {"run_id": corpus.runs[0], "call": "c"}))  # not listed
    return results


def assert_inert(results: list[CallToolResult], where: str) -> None:
    for result in results:
        for text in [*strings(result.structured_content), *(c.text for c in result.content)]:  # type: ignore[union-attr]
            assert not TERMINAL_ACTIVE.search(text), (where, text[:200])


async def test_a_hostile_store_reaches_the_agent_inert(hostile_corpus: dict[str, CorpusStore], tmp_path: Path) -> None:
    """Escape sequences, bidi overrides, huge values, damaged rows and indexes, another program's
    tables: every string of every answer is inert, every failure one line, nothing written,
    nothing on stderr but the server's own lines."""
    for name in ("escapes", "damaged-index", "foreign", "huge"):
        copy = tmp_path / f"{name}.db"
        copy.write_bytes(Path(hostile_corpus[name].url).read_bytes())
        before = copy.read_bytes()
        log = tmp_path / f"{name}.log"
        assert_inert(await hostile_answers(str(copy), hostile_corpus[name], log), name)
        assert copy.read_bytes() == before
        assert "Traceback" not in log.read_text()


@pytest.mark.postgres
async def test_a_hostile_postgres_schema_reaches_the_agent_inert(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    corpus = await build_postgres_schema(postgres_cluster.dsn, "mcp_hostile_" + uuid.uuid4().hex[:8])
    before = {run_id: await store_rows(corpus.url, run_id) for run_id in corpus.runs}
    log = tmp_path / "postgres.log"
    assert_inert(await hostile_answers(corpus.url, corpus, log), "postgres")
    assert {run_id: await store_rows(corpus.url, run_id) for run_id in corpus.runs} == before
    assert "Traceback" not in log.read_text()


def test_the_command_refuses_what_it_cannot_serve(tmp_path: Path) -> None:
    missing = agenttui("mcp", str(tmp_path / "missing.db"))
    assert missing.returncode == 2 and missing.stdout == "" and missing.stderr.count("\n") == 1
    demo = tmp_path / "store.db"
    assert agenttui("demo", "--path", str(demo), "--no-tui", "--bulk-turns", "1").returncode == 0
    agent = agenttui("mcp", str(demo), "--agent", "agenttui.demo.build:factory")
    assert agent.returncode == 2 and "--allow-writes" in agent.stderr
    assert agenttui("mcp", str(demo), "--budget", "10").returncode == 2


async def test_a_redrive_names_its_first_calls_and_the_recorded_gate_holds(
    demo_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent's redrive, with a factory that dropped the refund's gate: its dry run names the
    approved refund it would run, and the real drive of the run awaiting approval refunds nothing."""
    effects = tmp_path / "effects.log"
    monkeypatch.setenv("AGENTTUI_EFFECTS", str(effects))
    loosened = "tests.agent.loosening_agents:ungated_read_only"
    async with serving(demo_url, "--allow-writes", "--agent", loosened) as client:
        preview = answer(await client.call_tool("redrive", {"run_id": "refund-a1005-approved"}))
        assert preview["dry_run"] is True and not effects.exists()
        assert preview["would_write"].startswith("First: refund_payment (call_1_0) RUNS")
        ran = "refund_payment (call_1_0) RUNS, approved by ops@example.com: an attempt marker"
        assert ran in preview["would_write"]
        selected = answer(await client.call_tool("redrive", {"where": "id=refund-a1005*"}))
        writes = {run["run_id"]: run["writes"] for run in selected["runs"]}
        assert writes[AWAITING_APPROVAL] == "First: refund_payment (call_1_0) stops: awaits approval"
        driven = answer(await client.call_tool("redrive", {"run_id": AWAITING_APPROVAL, "dry_run": False}))
        assert "paused again" in driven["written"]
    assert not effects.exists()  # no refund was sent
    assert keys.tool_key("call_1_0") not in dict(await store_rows(demo_url, AWAITING_APPROVAL))


async def test_no_answer_hands_the_agent_the_store_password(demo_url: str) -> None:
    """A dry run's command names the store as the CLI shows it: the password masked."""
    password = urlsplit(demo_url).password
    async with serving(demo_url, "--allow-writes", "--agent", "agenttui.demo.build:factory") as client:
        answers = [
            answer(await client.call_tool(tool, args))
            for tool, args in [
                ("approve", {"run_id": AWAITING_APPROVAL, "call": "call_1_0"}),
                ("approve", {"where": "status=awaiting-approval"}),
                ("redrive", {"run_id": "refund-a1005-approved"}),
                ("redrive", {"where": "status=ready"}),
                ("cancel", {"run_id": AWAITING_APPROVAL}),
            ]
        ]
    for given in answers:
        assert given["command"].startswith("agenttui ")
        if password is not None:  # PostgreSQL's URL has one; a SQLite file's has none
            assert "***" in given["command"] and password not in json.dumps(given)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_stops_the_server_while_its_client_keeps_stdin_open(demo_db: Path, stop: int) -> None:  # noqa: F811  (the fixture imported above)
    """The transport reads stdin in a thread nothing cancels: the server ends all the same, within
    3 s, with the signal's exit code and one line saying why."""
    server = subprocess.Popen(
        [sys.executable, "-m", "agenttui", "mcp", str(demo_db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write((json.dumps(initialize) + "\n").encode())
        server.stdin.flush()
        assert b'"id":1' in server.stdout.readline()  # serving, stdin still open
        started = time.monotonic()
        server.send_signal(stop)
        code = server.wait(timeout=10)
        assert time.monotonic() - started < 3.0
        assert code == (130 if stop == signal.SIGINT else 143)
        assert server.stderr is not None and server.stderr.read().decode().count("\n") == 1
    finally:
        server.kill()
        server.wait()


async def test_resolve_records_any_json_result(demo_url: str) -> None:
    """A fired call's result as JSON text: an object, an array, null (the SDK parsed such text
    given for a parameter typed other than str, refusing the object and taking null for none)."""
    from agenttui.journal import Journal, decode_json

    async with serving(demo_url, "--allow-writes") as client:
        for given, shown in [('{"refund_id": "rf_1"}', '"refund_id":"rf_1"'), ("[1, 2]", "[1,2]"), ("null", "null")]:
            args = {"run_id": HALTED, "call": "call_1_0", "fired": True, "result_json": given}
            preview = answer(await client.call_tool("resolve", args))
            assert preview["dry_run"] is True and shown in preview["would_write"].replace(" ", ""), preview
        done = answer(
            await client.call_tool("resolve", {**args, "result_json": '{"refund_id": "rf_1"}', "dry_run": False})
        )
        assert "wrote tool:call_1_0" in done["written"]
    store = await open_store(demo_url, read_only=True, create=False)
    try:
        record = await Journal(store).get(HALTED, keys.tool_key("call_1_0"))
    finally:
        await store.close()
    assert record is not None and decode_json(record.result) == {"refund_id": "rf_1"}


async def test_a_long_runs_cost_comes_a_page_of_turns_at_a_time(demo_url: str) -> None:
    """audit-bulk's 40 turns under a small budget: every answer is whole JSON (never cut mid-turn),
    and next_cursor reads on until every turn was given once."""
    async with serving(demo_url) as client:
        steps: list[str] = []
        cursor: int | None = 0
        while cursor is not None:
            page = answer(
                await client.call_tool("run_cost", {"run_id": "audit-bulk", "cursor": cursor, "budget": 4000})
            )
            assert "json_text" not in page and page["turns"], page
            steps += [turn["step"] for turn in page["turns"]]
            cursor = page["next_cursor"]
        assert page["turn_count"] == len(steps) > 20 and len(set(steps)) == len(steps)


async def test_the_run_list_spends_no_bytes_on_what_a_run_has_not(demo_url: str) -> None:
    async with serving(demo_url) as client:
        runs = answer(await client.call_tool("list_runs", {"limit": 50}))["runs"]
    values = [value for run in runs for value in run.values()]
    assert runs and not [value for value in values if value is None or value is False or value == ""]
    halted = next(run for run in runs if run["run_id"] == HALTED)
    assert halted["pending_tool"] == "refund_payment" and "lease_holder" not in halted


async def test_a_run_listed_with_an_escaped_id_is_read_through_its_run_ref(
    hostile_corpus: dict[str, CorpusStore], tmp_path: Path
) -> None:
    """A run id with control characters shows escaped, which names no run: list_runs gives its
    run_ref, which every tool takes in its place (inert: base64 of the id's bytes)."""
    copy = tmp_path / "escapes.db"
    copy.write_bytes(Path(hostile_corpus["escapes"].url).read_bytes())
    long_id = "x" * 4_894
    store = await open_store(str(copy), create=False)
    try:
        for entry in [entry async for entry in store.load("absurd-figures")]:
            await store.insert(long_id, entry.name, entry.data)
    finally:
        await store.close()
    async with serving(str(copy), "--allow-writes") as client:
        runs = answer(await client.call_tool("list_runs", {"limit": 50}))["runs"]
        escaped = [run for run in runs if "run_ref" in run]
        assert escaped and all(run["run_ref"].startswith("ref:") for run in escaped)
        assert all("run_ref" not in run for run in runs if run["run_id"] in ("deep-nesting", "absurd-figures"))
        for run in escaped:
            overview = answer(await client.call_tool("run_overview", {"run_id": run["run_ref"], "replay": False}))
            assert overview["status"]["run_id"] == run["run_id"]  # the same run, shown escaped
            preview = answer(await client.call_tool("cancel", {"run_id": run["run_ref"]}))
            assert preview["dry_run"] is True or "already" in json.dumps(preview)
        assert "not a run_ref this server gave" in error_of(
            await client.call_tool("run_overview", {"run_id": "ref:%%"})
        )
        read = await client.read_resource(
            f"agenttui://runs/{long_id}",
        )
        assert len(json.dumps(read.model_dump(mode="json"), ensure_ascii=False).encode()) <= 32_000  # its budget
