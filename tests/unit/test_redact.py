"""Redaction replaces the values a path names in the stored bytes, wherever the record holds
them, and nothing else: what the run is read by is kept, and every record still decodes."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agenttui.errors import CorruptRecordError
from agenttui.journal import decode_record, encode_record
from agenttui.journal.codec import go_json
from agenttui.journal.redact import MARKER, RedactionError, Redactor, opaque_values
from tests.gocorpus import CASES

RESULT = (
    b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1",'
    b'"result":{"card_number":"4111 1111","n":1.50, "deep":[{"card_number":9},{"x":-0.0}],"h":"<b>\\u2028"},'
    b'"salt":"c2FsdA=="}'
)
MODEL = (
    b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":['
    b'{"text":"your card 4111","type":"text"},'
    b'{"args":{"card_number":"4111","q":[1,2]},"id":"c1","name":"charge","type":"tool_use"}]},'
    b'"usage":{"input_tokens":3},"salt":"c2FsdA=="}'
)
M = b'"[redacted]"'


def redacted(paths: list[str], data: bytes, name: str = "x") -> tuple[bytes, dict[str, int]]:
    out = Redactor(paths).redact(data, name)
    return out.data, dict(out.counts)


def test_a_member_anywhere_and_nothing_else_changes() -> None:
    out, counts = redacted(["card_number"], RESULT, "tool:c1")
    assert counts == {"card_number": 2}
    assert out == RESULT.replace(b'"4111 1111"', M).replace(b'"card_number":9', b'"card_number":"[redacted]"')
    out, counts = redacted(["card_number"], MODEL, "@llm/0")
    assert counts == {"card_number": 1} and b'"args":{"card_number":"[redacted]","q":[1,2]}' in out
    assert b"your card 4111" in out  # text is replaced only where a path names it


def test_json_paths_name_one_place() -> None:
    assert redacted(["$.result.card_number"], RESULT)[1] == {"$.result.card_number": 1}
    assert redacted(["$.result.deep[0].card_number"], RESULT)[1] == {"$.result.deep[0].card_number": 1}
    assert redacted(["$.result.deep[*]"], RESULT)[1] == {"$.result.deep[*]": 2}
    assert redacted(["$.result['n']"], RESULT)[0].count(b'"n":"[redacted]"') == 1
    assert redacted(["$.result..card_number"], RESULT)[1] == {"$.result..card_number": 2}
    assert redacted(["$.result"], RESULT)[0].startswith(
        b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":"[redacted]",'
    )
    assert redacted(["$.message.parts[0].text"], MODEL)[0].count(b'"text":"[redacted]"') == 1
    assert redacted(["$.message.parts[*].args"], MODEL)[0].count(b'"args":"[redacted]"') == 1
    assert redacted(["$.result.nothing"], RESULT) == (RESULT, {})


def test_a_member_however_it_is_spelled() -> None:
    escaped = RESULT.replace(b'"card_number":"4111', b'"card\\u005fnumber":"4111')
    assert redacted(["$.result.card_number"], escaped)[1] == {"$.result.card_number": 1}
    spaced = b'{"name":"x","kind":"value","result":{"token" : "s3cret", "other":\n"token"}}'
    assert redacted(["token"], spaced) == (spaced.replace(b'"s3cret"', M), {"token": 1})


def test_what_the_run_is_read_by_is_kept() -> None:
    for path in ("$.name", "$.kind", "$.salt", "$.usage", "$.usage.input_tokens", "$.tool_use_id", "$.claim",
                 "$.message.role", "$.message.parts[*].type", "$.message.parts[0].id", "$", "$.*", "$[0]",
                 "card.number", "", "$.result[", "$..*"):  # fmt: skip
        with pytest.raises(RedactionError):
            Redactor([path])
    # a bare name that is also a member of the record's own is looked for everywhere else
    out, counts = redacted(["name", "usage", "id", "type", "role"], MODEL, "@llm/0")
    assert out == MODEL and counts == {}
    assert redacted(["name"], b'{"name":"x","kind":"value","result":{"name":"Ada"}}') == (
        b'{"name":"x","kind":"value","result":{"name":"[redacted]"}}',
        {"name": 1},
    )
    # a member of the wrong type is not what the run is read by: a record that does not decode
    assert redacted(["usage"], b'{"name":"x","usage":"s3cret"}')[0] == b'{"name":"x","usage":"[redacted]"}'


def test_a_value_holding_what_is_kept_has_every_other_value_replaced() -> None:
    out, counts = redacted(["$.message"], MODEL, "@llm/0")
    assert counts == {"$.message": 2}
    assert (
        decode_record(out, "@llm/0").message
        == decode_record(
            MODEL.replace(b'"your card 4111"', M).replace(b'{"card_number":"4111","q":[1,2]}', M), "@llm/0"
        ).message
    )
    gate = b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":1,"approval":{"need":2,"approvers":["ann@x","bo@x"]}}'
    out, counts = redacted(["approvers"], gate, "tool:c1")
    assert out == gate.replace(b'["ann@x","bo@x"]', b'["[redacted]","[redacted]"]') and counts == {"approvers": 2}
    assert decode_record(out, "tool:c1").approval.need == 2  # type: ignore[union-attr]  # it has one


def test_the_payload_members_the_runtime_reads_are_kept() -> None:
    start = (
        b'{"name":"run:start","kind":"value","result":{"input":"hi Ada","kind":"agent","saga":true,'
        b'"tools":["charge"],"ext":{"agenttui":{"tools":[{"name":"charge","approval":{"single":true}}]},"x":{"name":"Ada"}}}}'
    )
    out, counts = redacted(["$.result", "name", "kind"], start, "run:start")
    assert json.loads(out)["result"] == {
        "input": MARKER, "kind": "agent", "saga": True, "tools": ["charge"],
        "ext": {"agenttui": {"tools": [{"name": "charge", "approval": {"single": True}}]}, "x": MARKER},
    }  # fmt: skip
    assert counts == {"$.result": 2}
    timer = b'{"name":"timer:t","kind":"value","result":"2099-01-15T10:30:00Z"}'
    assert redacted(["result"], timer, "timer:t") == (timer, {})
    tally = b'{"name":"approval-tally:c1","kind":"value","result":{"need":2,"approved":["ann","bo"],"by":"ann"}}'
    out, _ = redacted(["result"], tally, "approval-tally:c1")
    assert json.loads(out)["result"] == {"need": 2, "approved": [MARKER, MARKER], "by": MARKER}


def test_every_member_of_a_record_and_its_parts() -> None:
    header = b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev","host":"db-7","salt":"c2FsdA=="}'
    assert redacted(["host", "format"], header, "@journal") == (header.replace(b'"db-7"', M), {"host": 1})
    decision = b'{"name":"approval:c1","kind":"approval","tool_use_id":"c1","approved":true,"approver":"ann@x"}'
    assert redacted(["approver"], decision, "approval:c1")[0] == decision.replace(b'"ann@x"', M)
    turn = (
        b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"type":"image","url":"https://u/?k=1"},'
        b'{"data":"AAH/PA==","mime":"image/png","type":"image"},{"redacted":"BLOB","text":"","type":"reasoning"}],'
        b'"note":"n"},"usage":{"input_tokens":3,"note":"n"},"model":{"provider":"p","model":"m"},"raw_finish":"r"}'
    )
    out, counts = redacted(["url", "data", "redacted", "note", "model", "raw_finish"], turn, "@llm/0")
    assert counts == {"url": 1, "data": 1, "redacted": 1, "note": 2, "model": 2, "raw_finish": 1}
    record = decode_record(out, "@llm/0")
    assert [getattr(p, "url", None) or getattr(p, "data", None) or getattr(p, "redacted", None)
            for p in record.message.parts] == [MARKER, MARKER.encode(), MARKER]  # type: ignore[union-attr]  # fmt: skip
    assert (record.model.provider, record.model.model, record.usage.input_tokens) == (MARKER, MARKER, 3)  # type: ignore[union-attr]
    assert json.loads(out)["message"]["parts"][1]["data"] == base64.b64encode(MARKER.encode()).decode()


def test_nesting_deeper_than_python_recurses() -> None:
    depth = 30_000  # thirty times what the C scanner and Python recursion go to
    deep = b'{"name":"x","result":' + b'{"a":' * depth + b'{"token":"s3cret"}' + b"}" * depth + b"}"
    out = Redactor(["token"]).redact(deep, "x")
    assert out.data == deep.replace(b'"s3cret"', M) and out.counts == {"token": 1}
    # ...and bytes holding no member a path names are checked to be JSON at any depth too
    assert Redactor(["other"]).redact(deep, "x").data == deep
    with pytest.raises(CorruptRecordError):
        Redactor(["other"]).redact(deep[:-1], "x")


def test_json_held_in_a_string_is_looked_into_and_written_back_in_its_style() -> None:
    inner = {"auth": {"token": "s3cret"}, "city": "Zürich", "html": "<b>"}
    for ascii_only, indent in ((True, None), (False, None), (False, 2)):
        held = json.dumps(inner, ensure_ascii=ascii_only, indent=indent)
        record = json.dumps({"name": "x", "result": {"body": held}}, ensure_ascii=ascii_only).encode()
        out, counts = redacted(["token"], record)
        assert counts == {"token": 1} and b"s3cret" not in out
        expected = json.dumps({"name": "x", "result": {"body": held.replace('"s3cret"', M.decode())}},
                              ensure_ascii=ascii_only).encode()  # fmt: skip
        assert out == expected
    go_style = go_json({"name": "x", "result": {"body": json.dumps(inner).replace("<", "\\u003c")}})
    assert b"\\\\u003c" in go_style and redacted(["token"], go_style)[0] == go_style.replace(b"s3cret", b"[redacted]")
    # a string in a string in a string
    twice = json.dumps({"name": "x", "result": json.dumps({"body": json.dumps({"token": "s3cret"})})}).encode()
    out, counts = redacted(["token"], twice)
    assert counts == {"token": 1} and json.loads(json.loads(json.loads(out)["result"])["body"]) == {"token": MARKER}
    # a $ path goes into it as if it were its JSON; text that only looks like JSON is text
    assert redacted(["$.result.body.auth.token"], json.dumps({"result": {"body": json.dumps(inner)}}).encode())[1] == {
        "$.result.body.auth.token": 1
    }
    looks = b'{"name":"x","result":"{\\"token\\": no json"}'
    assert redacted(["token"], looks) == (looks, {})


def test_bytes_that_are_not_json_are_refused_saying_where_never_what() -> None:
    redactor = Redactor(["token"])
    for data, why in [
        (b'{"name":"x","result":{"token":"s3cret', "cut short at byte 30 of 37"),
        (b'{"name":"x","result":{"token":"s3cret"},}', "not JSON at byte 40 of 41"),
        (b'{"name":"x"} trailing', "not JSON at byte 13 of 21"),
        (b'{"name":"x","n":NaN}', "not JSON at byte 16 of 20"),
        (b"not json", "not JSON at byte 0 of 8"),
        (b'{"name":"x","t":"a\x01b"}', "not JSON"),
        (b'{"name":"x","t":\xff}', "not JSON at byte 16 of 18"),
    ]:
        with pytest.raises(CorruptRecordError) as refused:
            redactor.redact(data, "x")
        assert why in refused.value.message and b"s3cret" not in refused.value.message.encode()
    # bytes with nothing in them, a tombstone, and JSON that is no record are no error
    tombstone = b'{"redacted":{"leaf_hash":"ab","at_ms":1}}'
    for data in (b"", b" \n", tombstone, b"[1,2]", b'"text"'):
        assert redactor.redact(data, "x").data == data
    assert Redactor(["leaf_hash"]).redact(tombstone, "x").data == tombstone


def test_a_byte_order_mark_is_passed_over_and_kept() -> None:
    data = b'\xef\xbb\xbf{"name":"x","result":{"token":"s3cret"}}'
    assert redacted(["token"], data) == (data.replace(b'"s3cret"', M), {"token": 1})


def test_a_redacted_value_its_step_name_holds_is_reported() -> None:
    name = "approval:c1:ann@x:00ff"
    data = b'{"name":"approval:c1:ann@x:00ff","kind":"approval","approver":"ann@x"}'
    assert Redactor(["approver"]).redact(data, name).kept_in_name == ("approver",)
    short = b'{"name":"approval:c1","kind":"approval","approver":"a"}'  # "a" is in the name, not a segment of it
    assert Redactor(["approver"]).redact(short, "approval:c1").kept_in_name == ()


def test_what_redaction_cannot_look_inside() -> None:
    assert opaque_values(b'{"message":{"parts":[{"data":"AAH/","type":"image"},{"redacted":"B","type":"reasoning"}]}}') == {
        "image data (base64)": 1, "encrypted reasoning": 1,
    }  # fmt: skip
    assert opaque_values(b'{"result":{"input":{"parts":[{"data":"W3JlZGFjdGVkXQ==","type":"image"}]}}}') == {}
    assert opaque_values(b'{"result":{"input":{"parts":[{"data":"AAH/","type":"image"}]}}}') == {
        "image data (base64)": 1
    }


def test_every_go_record_still_decodes_and_keeps_what_it_is_read_by() -> None:
    redactor = Redactor(["result", "args", "text", "evidence", "approver", "input", "name", "kind", "approved"])
    for case in CASES:
        for name, data in case.entries():
            out = redactor.redact(data, name).data
            if data.startswith(b'{"redacted"'):
                assert out == data
                continue
            before, after = decode_record(data, name), decode_record(out, name)
            kept = ("name", "kind", "salt", "usage", "tool_use_id", "claim", "approved", "approver_alg", "signature",
                    "attempted_at", "finish", "format", "safety", "approval", "is_error")  # fmt: skip
            assert [getattr(after, m) for m in kept] == [getattr(before, m) for m in kept], name
            assert encode_record(after) == out  # still the canonical bytes, a fixed point
            if before.result is not None and not name.startswith(("run:start", "timer:", "approval-tally:")):
                assert after.result == M


def test_a_record_is_redacted_as_its_bytes() -> None:
    record = decode_record(RESULT, "tool:c1")
    again = Redactor(["card_number"]).redact_record(record)
    assert again.raw == Redactor(["card_number"]).redact(RESULT, "tool:c1").data and again.salt == record.salt
    assert Redactor(["elsewhere"]).redact_record(record) is record


# -- wherever a payload holds it --------------------------------------------------------------------

SECRET = "SECRET-7f3a9-never"
"""Longer than any text the strategies draw, so no generated value holds it by chance."""

_leaves = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
)
_keys = st.text(max_size=6) | st.sampled_from(["name", "kind", "type", "id", "result", "args", "text", "data", "url",
                                                "message", "parts", "tools", "ext", "agenttui", "approved", "need"])  # fmt: skip
_json = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
                     max_leaves=16)  # fmt: skip
_secret_values = st.sampled_from([SECRET, [SECRET, 1], {"k": SECRET}, {"token": SECRET}])


@st.composite
def _with_secret(draw: st.DrawFn) -> Any:
    """An object of arbitrary JSON with ``"token": <the secret>`` somewhere in it, perhaps in a
    string holding JSON (itself perhaps in another)."""
    root: dict[str, Any] = {"p": draw(_json)}
    holder: Any = root
    while True:  # down to a random container
        children = [c for c in (holder.values() if isinstance(holder, dict) else holder) if isinstance(c, dict | list)]
        if not children or draw(st.booleans()):
            break
        holder = draw(st.sampled_from(children))
    inserted: Any = {"token": draw(_secret_values)}
    for _ in range(draw(st.integers(0, 2))):  # held in a string: {"s": "<json>"}
        inserted = {"s": json.dumps(inserted, ensure_ascii=draw(st.booleans()))}
    if isinstance(holder, dict):
        holder["token" if "s" not in inserted else draw(_keys.filter(lambda k: k not in holder))] = (
            inserted["token"] if "s" not in inserted else inserted
        )
    else:
        holder.insert(draw(st.integers(0, len(holder))), inserted)
    return root


_PLACES = ["result", "evidence", "unknown", "header", "args", "text", "part", "usage", "approval", "message"]
_NAMES = ["tool:c1", "run:start", "approval-tally:c1", "timer:t", "@llm/0", "node:n"]


def _record(place: str, name: str, payload: Any) -> dict[str, Any]:
    record: dict[str, Any] = {"name": "@journal" if place == "header" else name, "kind": "value"}
    message = {"role": "assistant", "parts": [{"args": {}, "id": "c1", "name": "t", "type": "tool_use"}]}
    match place:
        case "result" | "evidence":
            record[place] = payload
        case "unknown" | "header":
            record["extra"] = payload
        case "args":
            message["parts"][0]["args"] = payload  # type: ignore[index]  # a list of dicts
            record["message"] = message
        case "text":
            message["parts"].append({"text": json.dumps(payload), "type": "text"})  # type: ignore[attr-defined]
            record["message"] = message
        case "part" | "message":
            (message["parts"][0] if place == "part" else message)["extra"] = payload  # type: ignore[index]
            record["message"] = message
        case "usage":
            record["usage"] = {"input_tokens": 3, "extra": payload}
        case "approval":
            record["approval"] = {"need": 1, "approvers": ["a", payload]}
    record["salt"] = base64.b64encode(b"s" * 32).decode()
    return record


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_with_secret(), st.sampled_from(_PLACES), st.sampled_from(_NAMES), st.sampled_from(["go", "ascii", "spaced"]))
def test_a_secret_anywhere_in_a_payload_never_survives_its_member_name(
    payload: Any, place: str, name: str, style: str
) -> None:
    record = _record(place, name, payload)
    data = {
        "go": go_json(record),
        "ascii": json.dumps(record).encode(),
        "spaced": json.dumps(record, indent=1, ensure_ascii=False).encode("utf-8", "surrogatepass"),
    }[style]
    assert SECRET.encode() in data
    out = Redactor(["token"]).redact(data, record["name"])
    assert SECRET.encode() not in out.data
    assert out.counts["token"] >= 1
    try:
        before = decode_record(data, record["name"])
    except CorruptRecordError:
        return
    after = decode_record(out.data, record["name"])
    assert (after.name, after.kind, after.salt, after.usage, after.approval) == (
        before.name, before.kind, before.salt, before.usage, before.approval,
    )  # fmt: skip


def test_a_value_in_json_that_prose_quotes_is_redacted_too() -> None:
    """A model that quotes a tool's JSON in its text (``the API said {"api_key": "sk-…"}``): the
    key named is found there too, and every other byte of the text is kept."""
    data = (
        b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"type":"text","text":'
        b'"The API said {\\"api_key\\": \\"sk-live-123\\", \\"ok\\": true}, then [1, {\\"api_key\\": \\"sk-2\\"}]."}]}}'
    )
    redacted = Redactor(["api_key"]).redact(data)
    assert b"sk-live-123" not in redacted.data and b"sk-2" not in redacted.data
    assert redacted.counts["api_key"] == 2
    assert redacted.data == data.replace(b"sk-live-123", b"[redacted]").replace(b"sk-2", b"[redacted]")
    prose = b'{"name":"x","kind":"value","result":"braces { that are not JSON [ at all"}'
    assert Redactor(["api_key"]).redact(prose).data == prose
