"""``agenttui export --otel FILE | --otlp URL`` as a person runs it: the file is OTLP JSON as the
OpenTelemetry protobuf schema reads it, the same bytes every time; a hostile store exports inert;
bad input and a failing endpoint are one line and an exit code, naming the runs already sent."""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from google.protobuf.json_format import MessageToDict, Parse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from agenttui.cli import main
from agenttui.journal.inert import _UNSAFE_CHARS
from agenttui.runs.telemetry import export
from tests.hardening.conftest import hostile_corpus  # noqa: F401  (a fixture)
from tests.hardening.hostile_corpus import CorpusStore
from tests.pg import free_port
from tests.processes import agenttui
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]")


def one_line_error(done: Any, code: int, words: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    assert done.stderr.startswith("agenttui: ") and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def parsed(line: str) -> ExportTraceServiceRequest:
    """A line as the OpenTelemetry protobuf schema reads it. OTLP JSON writes ids in hex where
    protobuf's JSON mapping writes bytes in base64: the one difference the OTLP spec names."""
    request = json.loads(line)
    for span in (s for rs in request["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]):
        for item in [span, *span.get("links", ())]:
            for key in ("traceId", "spanId", "parentSpanId"):
                if key in item:
                    assert re.fullmatch(r"[0-9a-f]{32}" if key == "traceId" else r"[0-9a-f]{16}", item[key])
                    item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return Parse(json.dumps(request), ExportTraceServiceRequest())


def test_the_file_is_otlp_json_the_same_bytes_every_time(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    done = agenttui("export", str(demo_db), "--where", "status!=fork", "--otel", str(first), "--content")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {first}: 17 traces, ")
    assert (
        agenttui("export", str(demo_db), "--where", "status!=fork", "--otel", str(second), "--content").returncode == 0
    )
    assert first.read_bytes() == second.read_bytes()
    lines = first.read_text().splitlines()
    assert len(lines) == 17
    for line in lines:
        request = parsed(line)
        assert request.resource_spans[0].scope_spans[0].schema_url == "https://opentelemetry.io/schemas/1.41.0"
        again = MessageToDict(request, use_integers_for_enums=True)
        assert len(again["resourceSpans"][0]["scopeSpans"][0]["spans"]) == len(
            json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        )
    # To standard output: the lines there, the report on standard error.
    piped = agenttui("export", str(demo_db), "refund-a1002", "--otel", "-", "--content")
    assert piped.returncode == 0 and piped.stderr.startswith("wrote standard output: 1 trace, ")
    assert piped.stdout == next(line + "\n" for line in lines if _root_run(line) == "refund-a1002")


def _root_run(line: str) -> str:
    span = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    return str(next(a["value"]["stringValue"] for a in span["attributes"] if a["key"] == "agenttui.run.id"))


def test_a_hostile_store_exports_inert(hostile_corpus: dict[str, CorpusStore], tmp_path: Path) -> None:  # noqa: F811
    """No control, bidi or invisible character in any name or value a backend's UI would render raw."""
    checked = 0
    for store in hostile_corpus.values():
        if not Path(store.url).exists() or store.name == "huge":
            continue
        out = tmp_path / f"{store.name}.jsonl"
        done = agenttui("export", store.url, *store.runs[:8], "--otel", str(out), "--content")
        assert "Traceback" not in done.stderr and not UNSAFE.search(done.stdout + done.stderr), done.stderr
        if done.returncode != 0:
            continue
        for line in out.read_text().splitlines():
            for text in strings(json.loads(line)):
                assert not UNSAFE.search(text), (store.name, text[:200])
                checked += 1
    assert checked > 1000


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([], "say where the runs go"),
        (["-o", "x.db", "--otel", "x.jsonl"], "-o and --otel: choose one"),
        (["-o", "x.db", "--content"], "--content goes with --otel or --otlp"),
        (["--otel", "x.jsonl", "--jsonl"], "--jsonl is a bundle's"),
        (["--otel", "x.jsonl", "--no-sub-runs"], "--no-sub-runs is a bundle's"),
        (["--otel", "x.jsonl", "--header", "a=b"], "--header goes with --otlp"),
        (["--otlp", "ftp://collector"], "--otlp takes an http:// or https:// URL"),
        (["--otlp", "http://127.0.0.1:9", "--header", "Authorization"], "--header takes NAME=VALUE"),
        (["--otel", "x.jsonl", "--at", "yesterday"], "--at takes an RFC 3339 time"),
        (["--otel", "x.jsonl", "--prices", "/dev/zero"], "--prices /dev/zero"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    demo_db: Path,  # noqa: F811
    tmp_path: Path,
    args: list[str],
    words: str,
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    done = agenttui("export", str(demo_db), "refund-a1002", *[a.replace("x.", f"{out}/x.") for a in args])
    one_line_error(done, 2, words)
    assert list(out.iterdir()) == []


def test_the_store_itself_is_never_the_trace_file(demo_db: Path) -> None:  # noqa: F811
    before = demo_db.read_bytes()
    one_line_error(agenttui("export", str(demo_db), "refund-a1002", "--otel", str(demo_db), "--force"), 2,
                   "is the store being read")  # fmt: skip
    assert demo_db.read_bytes() == before


def test_an_endpoint_nobody_answers_is_one_line(demo_db: Path) -> None:  # noqa: F811
    done = agenttui("export", str(demo_db), "refund-a1002", "--otlp", f"http://127.0.0.1:{free_port()}",
                    "--timeout", "1")  # fmt: skip
    one_line_error(done, 2, "OTLP export failed: http://127.0.0.1:")
    assert "0 runs sent before it, each whole, 1 not sent" in done.stderr


class Receiver(BaseHTTPRequestHandler):
    """An OTLP endpoint that takes ``takes`` requests, then refuses the rest (400, not retried)."""

    takes = 2
    seen: list[bytes] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append(body)
        ok = len(self.seen) <= self.takes
        self.send_response(200 if ok else 400)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"" if ok else b"bad batch \x1b[31m")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_endpoint_that_fails_midway_names_the_runs_sent(
    demo_db: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(export, "BATCH_SPANS", 1)  # a request a run
    Receiver.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        result = CliRunner().invoke(main, ["export", str(demo_db), "refund-a1002", "lookup-z0042", "refund-a1003-denied",
                                           "eligibility-a1004", "--otlp", url], env={"AGENTTUI_DEBUG": ""})  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.stderr and "\x1b" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[:2] == ["agenttui: sent refund-a1002", "agenttui: sent lookup-z0042"]
    assert lines[2].startswith(f"agenttui: OTLP export failed: {url}/v1/traces: ")
    assert lines[2].endswith("2 runs sent before it, each whole, 2 not sent")
    assert len(Receiver.seen) == 3


def test_without_the_opentelemetry_packages_the_export_says_how_to_get_them(
    demo_db: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        export, "otel_missing", lambda: "the OpenTelemetry packages are not installed: pip install 'agenttui[otel]'"
    )
    result = CliRunner().invoke(main, ["export", str(demo_db), "refund-a1002", "--otel", "-"])
    assert result.exit_code == 2
    assert result.stderr == "agenttui: the OpenTelemetry packages are not installed: pip install 'agenttui[otel]'\n"


async def test_many_runs_are_made_on_workers_into_the_same_bytes(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    """Past ``POOL_FROM_TREES`` runs the command makes the lines on worker processes: the file is
    byte for byte the one made on the command's own process."""
    from agenttui.runs.cost.lens import PriceBook
    from agenttui.stores import open_store

    store = await open_store(str(demo_db))
    try:
        copies = [f"copy-{n:03}-{run_id}" for n in range(8) for run_id in ("refund-a1002", "eligibility-a1004",
                  "refund-a1004-halted", "saga-a1003-rolled-back", "question-a1001", "audit-bulk", "lookup-z0042",
                  "refund-a1003-denied", "settlement-a1002", "refund-a1001-cancelled", "lookup-a1001-damaged",
                  "saga-a1003-cancelling", "refund-a1005", "refund-a1005-approved")]  # fmt: skip
        for copy in copies:
            original = copy.split("-", 2)[2]
            for source in [original, *[r async for r in store.runs(prefix=original + ">")]]:
                async for entry in store.load(source):
                    await store.insert(copy + source[len(original) :], entry.name, entry.data)
        assert len(copies) >= export.POOL_FROM_TREES
        alone = io.StringIO()
        await export.export_trace_file(store, sorted(copies), alone, export.TraceOptions(PriceBook(), content=True))
    finally:
        await store.close()
    out = tmp_path / "many.jsonl"
    done = agenttui("export", str(demo_db), "--filter", "copy-", "--otel", str(out), "--content")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out}: {len(copies)} traces, ")
    assert sorted(out.read_text().splitlines()) == sorted(alone.getvalue().splitlines())


def test_agent_goes_with_replay_and_a_bad_one_is_refused_first(demo_db: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "out"
    out.mkdir()
    one_line_error(agenttui("export", str(demo_db), "refund-a1002", "--otel", str(out / "x.jsonl"), "--agent",
                            "agenttui.demo.build:factory"), 2, "--agent goes with --replay")  # fmt: skip
    one_line_error(agenttui("export", str(demo_db), "refund-a1002", "-o", str(out / "x.db"), "--replay"), 2,
                   "--replay goes with --otel or --otlp")  # fmt: skip
    bad = agenttui(
        "export", str(demo_db), "refund-a1002", "--otel", str(out / "x.jsonl"), "--replay", "--agent", "nope:f"
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.startswith("agenttui: ")
    assert list(out.iterdir()) == []
    done = agenttui("export", str(demo_db), "refund-a1002", "--otel", str(out / "r.jsonl"), "--replay")
    assert done.returncode == 0, done.stderr
    assert '"agenttui.replay.verdict","value":{"stringValue":"matches"}' in (out / "r.jsonl").read_text()
