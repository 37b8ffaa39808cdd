"""Redaction replaces the values a path names in the stored bytes, and nothing else."""

from __future__ import annotations

import pytest

from agenttui.journal import decode_record, encode_record
from agenttui.journal.redact import MARKER, RedactionError, Redactor
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


def redacted(paths: list[str], data: bytes) -> tuple[bytes, dict[str, int]]:
    out, counts = Redactor(paths).redact(data)
    return out, dict(counts)


def test_a_member_anywhere_in_a_payload_and_nothing_else_changes() -> None:
    out, counts = redacted(["card_number"], RESULT)
    assert counts == {"card_number": 2}
    assert out == RESULT.replace(b'"4111 1111"', b'"[redacted]"').replace(
        b'"card_number":9', b'"card_number":"[redacted]"'
    )
    out, counts = redacted(["card_number"], MODEL)
    assert counts == {"card_number": 1} and b'"args":{"card_number":"[redacted]","q":[1,2]}' in out
    assert b"your card 4111" in out  # text is a payload only where a path names it


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


def test_a_key_spelled_with_an_escape_is_found() -> None:
    data = RESULT.replace(b'"card_number":"4111', b'"card\\u005fnumber":"4111')
    assert redacted(["$.result.card_number"], data)[1] == {"$.result.card_number": 1}


def test_only_payloads_are_redacted() -> None:
    for path in ("$.name", "$.kind", "$.salt", "$.usage", "$.usage.input_tokens", "$.tool_use_id", "$", "$.message",
                 "$.*", "card.number", "", "$.result[", "$..*"):  # fmt: skip
        with pytest.raises(RedactionError):
            Redactor([path])
    # a member name that is also a record member is only looked for in payloads
    out, counts = redacted(["name", "usage"], MODEL)
    assert out == MODEL and counts == {}
    assert redacted(["name"], b'{"name":"x","kind":"value","result":{"name":"Ada"}}')[0] == (
        b'{"name":"x","kind":"value","result":{"name":"[redacted]"}}'
    )


def test_bytes_that_hold_no_record_are_left_as_they_are() -> None:
    tombstone = b'{"redacted":{"leaf_hash":"ab","at_ms":1}}'
    for data in (b"", b"not json", b'{"name":"x","result":{"card_number":', b"[1,2]", tombstone):
        assert Redactor(["card_number"]).redact(data) == (data, {})


def test_every_go_record_still_decodes_and_keeps_its_other_members() -> None:
    redactor = Redactor(["result", "args", "text", "evidence"])
    for case in CASES:
        for name, data in case.entries():
            out, _ = redactor.redact(data)
            if data.startswith(b'{"redacted"'):
                assert out == data
                continue
            before, after = decode_record(data, name), decode_record(out, name)
            assert (after.name, after.kind, after.salt, after.usage, after.tool_use_id, after.claim) == (
                before.name, before.kind, before.salt, before.usage, before.tool_use_id, before.claim,
            )  # fmt: skip
            assert encode_record(after) == out  # still the canonical bytes, a fixed point
            if before.result is not None:
                assert after.result == b'"' + MARKER.encode() + b'"'


def test_a_record_is_redacted_as_its_bytes() -> None:
    record = decode_record(RESULT, "tool:c1")
    again = Redactor(["card_number"]).redact_record(record)
    assert again.raw == Redactor(["card_number"]).redact(RESULT)[0] and again.salt == record.salt
    assert Redactor(["elsewhere"]).redact_record(record) is record
