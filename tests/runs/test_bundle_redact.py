"""``export --redact`` leaves no secret in the bundle file, wherever the record holds it.

Each case writes a run byte for byte as the Go SDK stores it (``tests.gocorpus``), with a secret
in one more place, exports it with redaction into a real SQLite bundle under tmp_path, and reads
the bundle's file back as raw bytes: the secret is in none of them (no row, no free page, no
journal beside it), the report counts what was replaced, and the run reads with the status and
replays to the verdict it did before.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from agenttui.demo.build import build_demo
from agenttui.journal import Journal, decode_record
from agenttui.journal.codec import encode_string
from agenttui.journal.redact import MARKER
from agenttui.replay.session import replay_verdict
from agenttui.runs.bundles import ExportReport, UndecodableRecordsError, export_jsonl, export_runs, read_manifest
from agenttui.runs.statuses.state import RunState
from agenttui.runs.statuses.status import list_statuses, run_status
from agenttui.stores.sqlite import SQLiteStore
from tests.gocorpus import (
    CASES,
    COMPLETE,
    DIGESTS,
    HEADER,
    SIGNATURE,
    WEATHER_TURN,
    call,
    final_turn,
    model,
    quorum_key,
    result,
    salt,
    start,
    text,
    write_corpus,
)
from tests.runs.test_bundle_cli import cli, one_line_error

SECRET = "sk-live-Qv7mZ2xSECRET"
"""A value no record holds but where a case puts it (long and odd enough never to occur by chance)."""

RUN = "go-secret"


def salted(body: str, run_id: str = RUN) -> tuple[str, bytes]:
    """A record's stored bytes as the SDK writes them: the body, then its salt, last."""
    name = json.loads(body)["name"]
    assert body.endswith("}")
    return name, f'{body[:-1]},"salt":"{salt(run_id, name)}"}}'.encode()


def weather(**replaced: str) -> list[tuple[str, bytes]]:
    """A complete read-only run (``go-weather``); ``replaced`` gives other bodies for some
    records, by role: ``header``, ``start``, ``turn``, ``result``, ``answer``."""
    bodies = {
        "header": HEADER,
        "start": start('"What is the weather in Paris?"', ',"kind":"agent"'),
        "turn": WEATHER_TURN,
        "result": result("toolu_01", '{"temp_c":21}', ',"safety":{"read_only":true}'),
        "answer": model(1, text("It is sunny."), f'"usage":{{}},"finish":"stop",{DIGESTS}'),
        "complete": COMPLETE,
    }
    return [salted(replaced.get(role, body)) for role, body in bodies.items()]


@pytest.fixture
async def source(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    store = await SQLiteStore.open(tmp_path / "source.db")
    yield store
    await store.close()


async def write(store: SQLiteStore, entries: Sequence[tuple[str, bytes]], run_id: str = RUN) -> None:
    for name, data in entries:
        assert (await store.insert(run_id, name, data)).won


def assert_no_secret_in(bundle: Path, secret: str = SECRET) -> None:
    """Not in the file's bytes (rows, free pages, the manifest), nor in any file beside it."""
    assert bundle.exists()
    assert secret.encode() not in bundle.read_bytes()
    conn = sqlite3.connect(f"file:{bundle}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA freelist_count").fetchone() == (0,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    finally:
        conn.close()
    beside = sorted(p.name for p in bundle.parent.iterdir() if p.name.startswith(bundle.name) or ".partial" in p.name)
    assert beside == [bundle.name]


def left_beside_the_source(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("source.db"))


async def export(
    source: SQLiteStore, bundle: Path, redact: Sequence[str], *, drop_undecodable: bool = False, force: bool = False
) -> ExportReport:
    report = await export_runs(source, [RUN], bundle, redact=redact, drop_undecodable=drop_undecodable, force=force)
    assert_no_secret_in(bundle)
    return report


async def reads_the_same(source: SQLiteStore, bundle_path: Path, *, replay: bool = True) -> list[tuple[str, bytes]]:
    """The bundle's run reads with the source's status and replays to its verdict; its entries."""
    bundle = await SQLiteStore.open(bundle_path, read_only=True)
    try:
        assert (await run_status(bundle, RUN)).state == (await run_status(source, RUN)).state
        if replay:
            (_, there), (_, here) = await replay_verdict(bundle, RUN), await replay_verdict(source, RUN)
            assert there.kind == here.kind, there.summary()
        return [(entry.name, entry.data) async for entry in bundle.load(RUN)]
    finally:
        await bundle.close()


def changed(before: Sequence[tuple[str, bytes]], after: Sequence[tuple[str, bytes]]) -> dict[str, bytes]:
    """The entries whose bytes the redaction changed, by name; every record still decodes as before."""
    assert [name for name, _ in before] == [name for name, _ in after]
    out = {}
    for (name, old), (_, new) in zip(before, after, strict=True):
        if old != new:
            out[name] = new
            try:
                original = decode_record(old, name)
            except Exception:
                continue
            redacted = decode_record(new, name)
            assert (redacted.name, redacted.kind, redacted.salt) == (original.name, original.kind, original.salt)
    return out


# -- where the secret was left ------------------------------------------------------------------


async def test_a_value_nested_500_levels_deep(source: SQLiteStore, tmp_path: Path) -> None:
    deep = '{"a":' * 500 + f'{{"token":"{SECRET}"}}' + "}" * 500
    entries = weather(result=result("toolu_01", deep, ',"safety":{"read_only":true}'))
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["token"])
    assert report.redactions == (("token", 1),) and report.runs[0].redacted == {"token": 1}
    after = await reads_the_same(source, tmp_path / "b.db")
    assert changed(entries, after) == {
        "tool:toolu_01": entries[3][1].replace(f'"{SECRET}"'.encode(), encode_string(MARKER))
    }


async def test_an_unknown_top_level_member(source: SQLiteStore, tmp_path: Path) -> None:
    entries = weather(
        result=result("toolu_01", '{"temp_c":21}', f',"safety":{{"read_only":true}},"api_key":"{SECRET}"')
    )
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["api_key"])
    assert report.redactions == (("api_key", 1),)
    after = await reads_the_same(source, tmp_path / "b.db")
    assert list(changed(entries, after)) == ["tool:toolu_01"]
    assert json.loads(dict(after)["tool:toolu_01"])["api_key"] == MARKER
    # ...and a $ path names it too
    report = await export(source, tmp_path / "c.db", ["$.api_key"])
    assert report.redactions == (("$.api_key", 1),)


async def test_the_journal_header(source: SQLiteStore, tmp_path: Path) -> None:
    header = HEADER[:-1] + f',"deploy_token":"{SECRET}"}}'
    entries = weather(header=header)
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["deploy_token", "format"])
    assert report.redactions == (("deploy_token", 1), ("format", 0))  # the header's format is kept
    after = await reads_the_same(source, tmp_path / "b.db")
    assert changed(entries, after) == {"@journal": entries[0][1].replace(f'"{SECRET}"'.encode(), encode_string(MARKER))}


async def test_the_approver(source: SQLiteStore, tmp_path: Path) -> None:
    """A single gate's decision names who approved it (as ``agenttui approve --approver`` and
    the SDK's ``Approve`` write it); its name does not."""
    approver = f"{SECRET}@example.com"
    entries = [
        salted(body)
        for body in (
            HEADER,
            start('"Charge order 8"', ',"kind":"agent"'),
            model(
                0,
                text("Charging.") + "," + call("toolu_03", "charge", '{"amount":1200}'),
                f'"usage":{{"input_tokens":140,"output_tokens":22}},"finish":"tool_use",{DIGESTS}',
            ),
            '{"name":"approval:toolu_03","kind":"approval","tool_use_id":"toolu_03","approved":true,'
            f'"approver":"{approver}"}}',
            result("toolu_03", '"charged"', ',"safety":{},"approval":{"single":true}'),
            final_turn(1, "Charged after approval."),
            COMPLETE,
        )
    ]
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["approver"])
    assert report.redactions == (("approver", 1),) and report.runs[0].kept_in_names == ()
    after = await reads_the_same(source, tmp_path / "b.db")
    assert list(changed(entries, after)) == ["approval:toolu_03"]
    assert decode_record(dict(after)["approval:toolu_03"], "approval:toolu_03").approver == MARKER


async def test_an_approver_its_step_name_holds_is_reported(source: SQLiteStore, tmp_path: Path) -> None:
    """An m-of-n decision's step name holds its approver's id (``approval:<c>:<approver>:<hash>``):
    names are keys and are never rewritten, so the report says the value is still there."""
    case = next(case for case in CASES if case.run_id == "go-quorum")
    await write(source, case.entries())
    report = await export_runs(source, [RUN], tmp_path / "b.db", redact=["approver"])
    (run,) = report.runs
    assert run.redacted == {"approver": 2}
    alice = quorum_key("toolu_04", "alice", True, "ed25519", SIGNATURE)
    assert (alice, "approver") in run.kept_in_names and len(run.kept_in_names) == 2
    bundle = await SQLiteStore.open(tmp_path / "b.db", read_only=True)
    try:
        manifest = await read_manifest(bundle)
        assert manifest is not None and manifest.runs[0].kept_in_names == run.kept_in_names
        assert (await run_status(bundle, RUN)).state == case.status
        _, verdict = await replay_verdict(bundle, RUN)
        assert verdict.kind == case.verdict
    finally:
        await bundle.close()


async def test_an_image_parts_url(source: SQLiteStore, tmp_path: Path) -> None:
    image = f'{{"type":"image","url":"https://files.example/cat.png?sig={SECRET}"}}'
    data = '{"data":"AAH/PA==","mime":"image/png","type":"image"}'
    turn = model(0, text("Let me check.") + "," + image + "," + data + "," + call("toolu_01", "get_weather", "{}"),
                 f'"usage":{{"input_tokens":120,"output_tokens":30}},"finish":"tool_use",{DIGESTS}')  # fmt: skip
    entries = weather(turn=turn)
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["url"])
    assert report.redactions == (("url", 1),)
    assert report.runs[0].opaque == {"image data (base64)": 1}  # what it could not look inside
    after = await reads_the_same(source, tmp_path / "b.db")
    assert list(changed(entries, after)) == ["@llm/0"]
    parts = decode_record(dict(after)["@llm/0"], "@llm/0").message.parts  # type: ignore[union-attr]  # a model turn
    assert [getattr(part, "url", None) for part in parts] == [None, MARKER, "", None]
    # Naming the image's data replaces it with the marker's bytes: the part still decodes.
    report = await export(source, tmp_path / "c.db", ["url", "data"])
    assert report.redactions == (("url", 1), ("data", 1)) and report.runs[0].opaque == {}
    parts = decode_record(dict(await reads_the_same(source, tmp_path / "c.db"))["@llm/0"], "@llm/0").message.parts  # type: ignore[union-attr]
    assert getattr(parts[2], "data", None) == MARKER.encode()


async def test_json_held_in_a_string(source: SQLiteStore, tmp_path: Path) -> None:
    held = json.dumps({"auth": {"token": SECRET}, "city": "Paris é"}, ensure_ascii=False)  # a string of JSON
    payload = json.dumps({"body": held, "status": 200}, separators=(",", ":"))  # é written \\u00e9, as Python does
    entries = weather(result=result("toolu_01", payload, ',"safety":{"read_only":true}'))
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["token"])
    assert report.redactions == (("token", 1),)
    after = await reads_the_same(source, tmp_path / "b.db")
    stored = dict(after)["tool:toolu_01"]
    body = json.loads(stored)["result"]["body"]
    assert json.loads(body) == {"auth": {"token": MARKER}, "city": "Paris é"}
    # re-encoded as a string in the style it was written in: its non-ASCII still escaped
    assert b"Paris \\u00e9" in stored and "é".encode() not in stored
    assert stored == entries[3][1].replace(f'\\"{SECRET}\\"'.encode(), b'\\"[redacted]\\"')
    # a path goes into it too, as if the string were its JSON
    report = await export(source, tmp_path / "c.db", ["$.result.body.auth"])
    assert report.redactions == (("$.result.body.auth", 1),)


async def test_a_record_with_a_byte_order_mark(source: SQLiteStore, tmp_path: Path) -> None:
    """A BOM before the record: neither Go nor agenttui decode it (the run reads unreadable),
    but the JSON after it does, so its values are redacted and the BOM is kept."""
    name, data = salted(result("toolu_01", f'{{"token":"{SECRET}"}}', ',"safety":{"read_only":true}'))
    entries = weather()
    entries[3] = (name, b"\xef\xbb\xbf" + data)
    await write(source, entries)
    report = await export(source, tmp_path / "b.db", ["token"])
    assert report.redactions == (("token", 1),) and report.dropped == ()
    after = await reads_the_same(source, tmp_path / "b.db", replay=False)
    assert changed(entries, after) == {name: entries[3][1].replace(f'"{SECRET}"'.encode(), encode_string(MARKER))}


# -- records it cannot decode --------------------------------------------------------------------


def damaged(entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    name, data = salted(result("toolu_01", f'{{"token":"{SECRET}","n":1}}', ',"safety":{"read_only":true}'))
    entries[3] = (name, data.replace(b'"n":1', b'"n":1,,'))
    return entries


def truncated(entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    name, data = salted(result("toolu_01", f'{{"token":"{SECRET}","n":1}}', ',"safety":{"read_only":true}'))
    entries[3] = (name, data[: data.index(SECRET.encode()) + len(SECRET) + 3])
    return entries


@pytest.mark.parametrize("spoil", [damaged, truncated])
async def test_a_record_that_does_not_decode_is_refused_or_dropped(
    source: SQLiteStore, tmp_path: Path, spoil: object
) -> None:
    assert callable(spoil)
    entries = spoil(weather())
    await write(source, entries)
    with pytest.raises(UndecodableRecordsError) as refused:
        await export_runs(source, [RUN], tmp_path / "b.db", redact=["token"])
    assert f"{RUN!r} step 'tool:toolu_01'" in refused.value.message
    assert "--drop-undecodable" in refused.value.message and SECRET not in refused.value.message
    assert [(r.run_id, r.name) for r in refused.value.records] == [(RUN, "tool:toolu_01")]
    assert left_beside_the_source(tmp_path) == []  # nothing written, nothing left
    report = await export(source, tmp_path / "b.db", ["token"], drop_undecodable=True)
    assert [(r.run_id, r.name) for r in report.dropped] == [(RUN, "tool:toolu_01")]
    assert report.runs[0].records == len(entries) - 1 and report.redactions == (("token", 0),)
    bundle = await SQLiteStore.open(tmp_path / "b.db", read_only=True)
    try:
        assert [e.name async for e in bundle.load(RUN)] == [n for n, _ in entries if n != "tool:toolu_01"]
        manifest = await read_manifest(bundle)
        assert manifest is not None and [(r.run_id, r.name) for r in manifest.runs[0].dropped] == [
            (RUN, "tool:toolu_01")
        ]
    finally:
        await bundle.close()


async def test_json_lines_refuse_and_drop_the_same(source: SQLiteStore, tmp_path: Path) -> None:
    await write(source, truncated(weather()))
    with pytest.raises(UndecodableRecordsError):
        await export_jsonl(source, [RUN], tmp_path / "r.jsonl", redact=["token"])
    assert left_beside_the_source(tmp_path) == []
    report = await export_jsonl(source, [RUN], tmp_path / "r.jsonl", redact=["token"], drop_undecodable=True)
    assert [r.name for r in report.dropped] == ["tool:toolu_01"]
    assert SECRET.encode() not in (tmp_path / "r.jsonl").read_bytes()


async def test_a_bundle_written_over_one_that_held_the_secret_keeps_none_of_it(
    source: SQLiteStore, tmp_path: Path
) -> None:
    entries = weather(result=result("toolu_01", f'{{"token":"{SECRET}"}}', ',"safety":{"read_only":true}'))
    await write(source, entries)
    await export_runs(source, [RUN], tmp_path / "b.db")
    assert SECRET.encode() in (tmp_path / "b.db").read_bytes()
    await export(source, tmp_path / "b.db", ["token"], force=True)


# -- what redaction keeps -----------------------------------------------------------------------


async def test_every_go_run_reads_and_replays_the_same_redacted_by_member_names(
    source: SQLiteStore, tmp_path: Path
) -> None:
    """Names that are also the record's own members, and whole payloads: what the run's
    status and replay read (its names, kinds, ids, counts, the run's policies, a timer's wake
    time, a tally's count) is kept; salts are kept, and every record still decodes."""
    await write_corpus(source)
    ids = [case.run_id for case in CASES]
    names = ["result", "args", "text", "evidence", "approver", "name", "kind", "input", "approved", "need", "url"]
    report = await export_runs(source, ids, tmp_path / "b.db", sub_runs=False, redact=names)
    assert dict(report.redactions)["result"] > 0 and dict(report.redactions)["approver"] == 2
    bundle = await SQLiteStore.open(tmp_path / "b.db", read_only=True)
    try:
        for case in CASES:
            before = [(e.name, e.data) async for e in source.load(case.run_id)]
            after = [(e.name, e.data) async for e in bundle.load(case.run_id)]
            changed(before, after)
            assert (await run_status(bundle, case.run_id)).state == case.status, case.run_id
            _, verdict = await replay_verdict(bundle, case.run_id, input=case.input)
            assert verdict.kind == case.verdict, (case.run_id, verdict.summary())
            records = (await Journal(bundle).read(case.run_id)).records
            assert not any(r.unreadable for r in records if r.tombstone is None), case.run_id
        listed = {status.run_id: status.state async for status in list_statuses(bundle)}  # from run summaries
        assert listed == {case.run_id: case.status for case in CASES}
    finally:
        await bundle.close()


async def test_every_demo_run_reads_and_replays_the_same_redacted(source: SQLiteStore, tmp_path: Path) -> None:
    """Runs agenttui wrote: its tool policies in ``run:start``, decisions by a named approver,
    answers, sub-agents, a halt; and one damaged record, left out."""
    await build_demo(source, bulk_turns=2)
    ids = [run_id async for run_id in source.runs() if ">" not in run_id]
    names = ["customer", "name", "kind", "approver", "text", "args", "input", "order_id", "reason", "safety",
             "approval", "interrupts", "tools", "item"]  # fmt: skip
    report = await export_runs(source, ids, tmp_path / "b.db", redact=names, drop_undecodable=True)
    assert [(r.run_id, r.name) for r in report.dropped] == [("lookup-a1001-damaged", "@llm/1")]
    assert dict(report.redactions)["approver"] >= 3
    bundle = await SQLiteStore.open(tmp_path / "b.db", read_only=True)
    try:
        before = {status.run_id: status async for status in list_statuses(source)}
        after = {status.run_id: status async for status in list_statuses(bundle)}
        assert before.keys() == after.keys()
        for run_id, status in before.items():
            if run_id.startswith("lookup-a1001-damaged"):
                continue
            # a bundle holds no lease: a run driven at the source reads as it stands without one
            expected = RunState.STALLED if status.state == RunState.IN_FLIGHT else status.state
            assert after[run_id].state == expected, run_id
            assert (await run_status(bundle, run_id)).state == expected, run_id
            (_, there), (_, here) = await replay_verdict(bundle, run_id), await replay_verdict(source, run_id)
            assert there.kind == here.kind, (run_id, there.summary())
            changed(
                [(e.name, e.data) async for e in source.load(run_id)],
                [(e.name, e.data) async for e in bundle.load(run_id)],
            )
    finally:
        await bundle.close()


# -- the command ---------------------------------------------------------------------------------


def test_the_command_refuses_or_leaves_out_what_it_cannot_redact(tmp_path: Path) -> None:
    async def build() -> None:
        store = await SQLiteStore.open(tmp_path / "source.db")
        await write(store, truncated(weather()))
        await store.close()

    asyncio.run(build())
    source, out = tmp_path / "source.db", tmp_path / "b.db"
    refused = cli("export", source, RUN, "-o", out, "--redact", "token")
    one_line_error(
        refused, 2, f"cannot be redacted, so nothing was written: run {RUN!r} step 'tool:toolu_01' (not JSON"
    )
    assert "--drop-undecodable" in refused.stderr and SECRET not in refused.stderr + refused.stdout
    assert not out.exists()
    one_line_error(cli("export", source, RUN, "-o", out, "--drop-undecodable"), 2, "it goes with --redact")
    dropped = cli("export", source, RUN, "-o", out, "--redact", "token", "--drop-undecodable")
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout.splitlines()[-2:] == [
        "left out 1 record that cannot be redacted (not JSON):",
        f"  {RUN}  tool:toolu_01: not JSON: cut short at byte 112 of 113",
    ]
    assert f"  {RUN}  5 records" in dropped.stdout and SECRET not in dropped.stdout
    assert_no_secret_in(out)
    lines = cli("export", source, RUN, "--jsonl", "-o", "-", "--redact", "token", "--drop-undecodable")
    assert lines.returncode == 0 and len(lines.stdout.splitlines()) == 5 and SECRET not in lines.stdout
    assert "left out 1 record" in lines.stderr


def test_the_command_says_what_it_could_not_look_inside(tmp_path: Path) -> None:
    quorum = next(case for case in CASES if case.run_id == "go-quorum")
    multimodal = next(case for case in CASES if case.run_id == "go-multimodal")

    async def build() -> None:
        store = await SQLiteStore.open(tmp_path / "source.db")
        await write(store, quorum.entries(), quorum.run_id)
        await write(store, multimodal.entries(), multimodal.run_id)
        await store.close()

    asyncio.run(build())
    done = cli("export", tmp_path / "source.db", "go-quorum", "go-multimodal", "-o", tmp_path / "b.db",
               "--redact", "approver")  # fmt: skip
    assert done.returncode == 0, done.stderr
    alice = quorum_key("toolu_04", "alice", True, "ed25519", SIGNATURE)
    bob = quorum_key("toolu_04", "bob", True, "ed25519+ml-dsa-65", SIGNATURE + b"!")
    assert done.stdout.splitlines()[-5:] == [
        "redacted approver: 2 values",
        "not looked inside: 1 encrypted reasoning, 1 image data (base64) (a path naming them replaces them whole)",
        "still in step names (names are never rewritten):",
        f"  go-quorum  {alice}: a value approver replaced",
        f"  go-quorum  {bob}: a value approver replaced",
    ]


def test_a_bundle_from_an_earlier_build_replays_with_the_paths_that_still_parse() -> None:
    from agenttui.runs.bundles import BundleManifest

    manifest = BundleManifest.of_rows({"redactions": json.dumps([{"path": "card_number", "values": 2},
                                                                 {"path": "$.message.parts[*].id", "values": 0}])})  # fmt: skip
    assert manifest.redactor().texts == ("card_number",)
