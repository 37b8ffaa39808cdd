"""The canonical codec: the SDK's golden bytes, fixed points, tolerant decoding."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agenttui.errors import CorruptRecordError
from agenttui.journal import (
    ApprovalPolicy,
    ImagePart,
    Message,
    ModelInfo,
    ReasoningPart,
    Record,
    Safety,
    TextPart,
    ToolResultPart,
    ToolUsePart,
    Usage,
    decode_record,
    encode_header,
    encode_record,
)
from agenttui.journal.codec import compact_raw, decode_outline

# Section 7 of the format reference, as the stored bytes hold them.
GOLDEN_MODEL = (
    b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":['
    b'{"text":"a <b> & c\\u2028d\\u0000 bad\xef\xbf\xbdutf8","type":"text"},'
    b'{"args":{"q":"a<b && c>d","n":1.50},"id":"c1","name":"t","type":"tool_use"},'
    b'{"data":"AAH/PA==","mime":"image/png","type":"image"}]}}'
)
GOLDEN_TOOL_RESULT = (
    b'{"name":"c1","kind":"tool_result","tool_use_id":"c1",'
    b'"result":{"h":"<b>\\u2028\\u2029\xff","n":[1e20,-0.0,9007199254740993]}}'
)


def test_golden_model_record_encodes_byte_for_byte() -> None:
    record = Record(
        "@llm/0",
        "model",
        message=Message.assistant(
            TextPart("a <b> & c\u2028d\x00 bad\ufffdutf8"),
            ToolUsePart("c1", "t", args=b'{"q":"a<b && c>d","n":1.50}'),
            ImagePart(mime="image/png", data=b"\x00\x01\xff<"),
        ),
    )
    assert encode_record(record) == GOLDEN_MODEL


def test_golden_model_record_decodes() -> None:
    record = decode_record(GOLDEN_MODEL)
    assert record.message is not None
    text, tool_use, image = record.message.parts
    assert text == TextPart("a <b> & c\u2028d\x00 bad\ufffdutf8")
    assert tool_use == ToolUsePart("c1", "t", args=b'{"q":"a<b && c>d","n":1.50}')
    assert image == ImagePart(mime="image/png", data=b"\x00\x01\xff<")


@pytest.mark.parametrize("golden", [GOLDEN_MODEL, GOLDEN_TOOL_RESULT], ids=["model", "tool_result"])
def test_golden_bytes_are_a_fixed_point(golden: bytes) -> None:
    assert encode_record(decode_record(golden)) == golden


def test_raw_result_keeps_escapes_numbers_and_invalid_utf8() -> None:
    record = decode_record(GOLDEN_TOOL_RESULT)
    assert record.result == b'{"h":"<b>\\u2028\\u2029\xff","n":[1e20,-0.0,9007199254740993]}'


def test_string_members_escape_line_separators_not_html() -> None:
    data = encode_record(Record("x", "value", tool_use_id='<&>\u2028\u2029"\\\n\t\b\f\x7f'))
    assert data == b'{"name":"x","kind":"value","tool_use_id":"<&>\\u2028\\u2029\\"\\\\\\n\\t\\b\\f\x7f"}'


def test_invalid_utf8_in_a_string_member_decodes_to_one_replacement_per_byte() -> None:
    record = decode_record(b'{"name":"x","kind":"value","tool_use_id":"a\xff\xfeb\\ud800"}')
    assert record.tool_use_id == "a\ufffd\ufffdb\ufffd"


def test_every_member_in_the_fixed_order() -> None:
    record = Record(
        name="n", kind="k", message=Message("assistant"), usage=Usage(1, 2, 3, 4),
        discarded_usage=Usage(output_tokens=5), finish="stop", raw_finish="end_turn",
        model=ModelInfo("anthropic", "claude"), prompt_digest="pd", tools_digest="td",
        tool_use_id="c1", result=b"1", is_error=True, approved=True, approver="ann",
        approver_alg="ed25519", signature=b"\x01", attempted_at=1767225600000, reconciled=True,
        outcome_unknown=True, safety=Safety(read_only=True, idempotent=True),
        approval=ApprovalPolicy(need=2, approvers=("a", "b")), evidence=b'{"k":1}',
        format="f", claim="0" * 32, salt=b"\x00" * 32,
    )  # fmt: skip
    expected = (
        b'{"name":"n","kind":"k","message":{"role":"assistant"},'
        b'"usage":{"input_tokens":1,"output_tokens":2,"cache_read_tokens":3,"cache_write_tokens":4},'
        b'"discarded_usage":{"output_tokens":5},"finish":"stop","raw_finish":"end_turn",'
        b'"model":{"provider":"anthropic","model":"claude"},"prompt_digest":"pd","tools_digest":"td",'
        b'"tool_use_id":"c1","result":1,"is_error":true,"approved":true,"approver":"ann",'
        b'"approver_alg":"ed25519","signature":"AQ==","attempted_at":1767225600000,"reconciled":true,'
        b'"outcome_unknown":true,"safety":{"read_only":true,"idempotent":true},'
        b'"approval":{"need":2,"approvers":["a","b"]},"evidence":{"k":1},"format":"f",'
        b'"claim":"00000000000000000000000000000000",'
        b'"salt":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}'
    )
    assert encode_record(record) == expected
    assert decode_record(expected) == record


def test_parts_sort_their_members() -> None:
    message = Message.assistant(
        ReasoningPart("think", signature="sig", redacted="enc"),
        ToolResultPart("c1", result=b'"ok"', is_error=True),
        ToolUsePart("c2", "search", args=b'{"z":1,"a":2}', signature="gs"),
    )
    data = encode_record(Record("@llm/0", "model", message=message))
    assert data == (
        b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":['
        b'{"redacted":"enc","signature":"sig","text":"think","type":"reasoning"},'
        b'{"is_error":true,"result":"ok","tool_use_id":"c1","type":"tool_result"},'
        b'{"args":{"z":1,"a":2},"id":"c2","name":"search","signature":"gs","type":"tool_use"}]}}'
    )
    assert decode_record(data).message == message


def test_raw_values_lose_only_insignificant_whitespace() -> None:
    assert compact_raw(b' { "a" : [ 1 , "x y" ] }\n') == b'{"a":[1,"x y"]}'
    with pytest.raises(CorruptRecordError):
        compact_raw(b"{nope")


def test_header_has_the_exact_prefix() -> None:
    data = encode_header(b"\x01" * 32)
    prefix = b'{"name":"@journal","kind":"header","format":"bide.journal.v1-dev","salt":"'
    assert data.startswith(prefix) and data.endswith(b'"}')
    assert len(data) == len(prefix) + 44 + 2


def test_unknown_members_and_kinds_survive() -> None:
    record = decode_record(b'{"name":"x","kind":"future_kind","gone_member":true,"new":{"a":[1]},"result":2}')
    assert record.kind == "future_kind" and record.result == b"2"
    assert encode_record(record) == b'{"name":"x","kind":"future_kind","result":2}'


def test_approval_reads_leniently() -> None:
    record = decode_record(
        b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":"1",'
        b'"approval":{"need":1,"approvers":["a"],"expires_unix":5}}'
    )
    assert record.approval == ApprovalPolicy(need=1, approvers=("a",))
    assert decode_record(b'{"name":"x","kind":"k","approval":{"single":true,"need":3}}').approval == ApprovalPolicy(
        single=True
    )
    assert encode_record(Record("x", "k", approval=ApprovalPolicy(single=True))).endswith(
        b'"approval":{"single":true}}'
    )


# Go writes a pointer to a zero struct as {}: a model that reports no usage, every side-effect
# tool's result (its safety has no flag set), a hedge that cost nothing.
GO_EMPTY_MEMBERS = [
    (
        b'{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"text":"hi","type":"text"}]},'
        b'"usage":{},"discarded_usage":{},"finish":"stop","model":{},"salt":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}'
    ),
    (
        b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":"sent","safety":{},'
        b'"salt":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}'
    ),
    b'{"name":"tool:c2","kind":"tool_result","usage":{},"tool_use_id":"c2","result":1,"safety":{},"approval":{}}',
    b'{"name":"@spend/s1","kind":"value","discarded_usage":{}}',
]


@pytest.mark.parametrize("data", GO_EMPTY_MEMBERS, ids=["model", "side-effect result", "tool result", "spend"])
def test_empty_struct_members_are_a_fixed_point(data: bytes) -> None:
    assert encode_record(decode_record(data)) == data


def test_an_empty_struct_member_decodes_as_a_zero_instance() -> None:
    model = decode_record(GO_EMPTY_MEMBERS[0])
    assert (model.usage, model.discarded_usage, model.model) == (Usage(), Usage(), ModelInfo())
    result = decode_record(GO_EMPTY_MEMBERS[2])
    assert (result.safety, result.approval) == (Safety(), ApprovalPolicy())
    assert not result.usage and result.usage is not None  # a zero usage still adds nothing to a sum


def test_a_struct_member_is_omitted_only_when_none() -> None:
    assert encode_record(Record("x", "k")) == b'{"name":"x","kind":"k"}'
    assert (
        encode_record(Record("x", "k", usage=Usage(), safety=Safety()))
        == b'{"name":"x","kind":"k","usage":{},"safety":{}}'
    )
    assert decode_record(b'{"name":"x","kind":"k","usage":null,"safety":null}') == Record("x", "k")


def test_tombstone_decodes_with_the_row_name() -> None:
    record = decode_record(b'{"redacted":{"leaf_hash":"ab12","at_ms":5}}', "tool:c1")
    assert record.name == "tool:c1" and record.tombstone is not None and record.tombstone.leaf_hash == "ab12"
    assert encode_record(record) == b'{"redacted":{"leaf_hash":"ab12","at_ms":5}}'


def test_a_tombstone_lookalike_with_extra_members_is_not_one() -> None:
    with pytest.raises(CorruptRecordError):
        decode_record(b'{"redacted":{"leaf_hash":"ab","at_ms":5,"x":1}}', "n")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[1]",
        b'{"kind":"value"}',
        b'{"name":"x","kind":"value"} trailing',
        b'{"name":1}',
        b'{"name":"x","is_error":"yes"}',
    ],
)
def test_bad_bytes_are_corrupt_records(data: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        decode_record(data)


def test_a_record_stored_under_another_name_is_refused() -> None:
    with pytest.raises(CorruptRecordError, match="stored as"):
        decode_record(b'{"name":"tool:a","kind":"tool_result"}', "tool:b")


# -- property: encode -> decode -> encode is identical ------------------------------------------

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def raw_json(draw: st.DrawFn) -> bytes:
    import json

    return json.dumps(draw(json_values), ensure_ascii=draw(st.booleans())).encode()


texts = st.text(max_size=30)
parts = st.one_of(
    st.builds(TextPart, texts),
    st.builds(ReasoningPart, texts, texts, texts),
    st.builds(ToolUsePart, texts, texts, st.one_of(st.none(), raw_json()), texts),
    st.builds(ToolResultPart, texts, st.one_of(st.none(), raw_json()), st.booleans()),
    st.builds(ImagePart, texts, st.binary(max_size=20), texts),
)
usages = st.one_of(st.none(), st.builds(Usage, *(st.integers(0, 10**9) for _ in range(4))))
records = st.builds(
    Record,
    name=texts,
    kind=st.sampled_from(["model", "tool_result", "value", "approval", "attempt", "header", "x"]),
    message=st.one_of(
        st.none(), st.builds(Message, st.sampled_from(["assistant", "user"]), st.lists(parts, max_size=4).map(tuple))
    ),
    usage=usages,
    discarded_usage=usages,
    finish=texts,
    model=st.one_of(st.none(), st.builds(ModelInfo, texts, texts, texts)),
    tool_use_id=texts,
    result=st.one_of(st.none(), raw_json()),
    is_error=st.booleans(),
    approved=st.booleans(),
    signature=st.binary(max_size=16),
    attempted_at=st.integers(0, 2**62),
    safety=st.one_of(st.none(), st.builds(Safety, st.booleans(), st.booleans())),
    approval=st.one_of(
        st.none(), st.builds(ApprovalPolicy, st.booleans(), st.integers(0, 5), st.lists(texts, max_size=3).map(tuple))
    ),
    evidence=st.one_of(st.none(), raw_json()),
    claim=texts,
    salt=st.binary(min_size=32, max_size=32),
)


@settings(max_examples=500, deadline=None)
@given(records)
def test_encode_decode_encode_is_identical(record: Record) -> None:
    once = encode_record(record)
    assert encode_record(decode_record(once)) == once


# -- property: the parsed reading of canonical bytes is the walked reading ----------------------

#: Ways to spell a record's bytes otherwise: each decodes as the walk reads it, or not at all.
RESPELLINGS = {
    "as written": lambda data: data,
    "a space after a colon": lambda data: data.replace(b'":', b'": ', 1),
    "a name twice": lambda data: data[:-1] + b',"name":"again"}',
    "an escaped slash": lambda data: data.replace(b"/", b"\\/", 1),
    "ASCII escapes": lambda data: data.decode("utf-8", "surrogateescape").encode("ascii", "backslashreplace"),
    "another number spelling": lambda data: data.replace(b'_tokens":', b'_tokens":1e', 1),
    "a wrong type": lambda data: data.replace(b'"role":"', b'"role":["', 1),
}


def walked(data: bytes) -> Record | None:
    """What the walk alone makes of ``data`` (None: not a record)."""
    from agenttui.journal.codec import _walked_members

    try:
        return Record(**{"kind": "", **_walked_members(data.decode("utf-8", "surrogateescape"), None)}, raw=data)
    except (CorruptRecordError, TypeError):
        return None


@settings(max_examples=400, deadline=None)
@given(records, st.sampled_from(sorted(RESPELLINGS)))
def test_canonical_bytes_read_by_the_parser_are_read_as_the_walk_reads_them(record: Record, respelling: str) -> None:
    from agenttui.journal.codec import _canonical_members

    data = RESPELLINGS[respelling](encode_record(record))
    expected = walked(data)
    parsed = _canonical_members(data.decode("utf-8", "surrogateescape"))  # whatever the record's length
    if parsed is not None:
        assert expected is not None and Record(**{"kind": "", **parsed}, raw=data) == expected
        assert (parsed.get("result"), parsed.get("evidence")) == (expected.result, expected.evidence)
    try:
        got = decode_record(data)
    except CorruptRecordError:
        assert expected is None
        return
    assert got == expected and (got.result, got.evidence, got.message) == (
        expected.result,
        expected.evidence,
        expected.message,
    )


def test_the_codecs_own_bytes_are_read_by_the_parser() -> None:
    from agenttui.journal.codec import _canonical_members

    text = GOLDEN_MODEL.decode("utf-8", "surrogateescape")
    assert _canonical_members(text) is None  # its raw args keep "1.50": the codec does not write that
    said = Record(
        "@llm/0",
        "model",
        message=Message("assistant", (TextPart("a <b>\u2028 é"), ToolUsePart("c1", "t", b'{"q":"\\n \xc3\xa9"}'))),
        usage=Usage(3, 4),
        salt=b"s" * 32,
    )
    data = encode_record(said)
    members = _canonical_members(data.decode())
    assert members is not None and Record(**members, raw=data) == said == decode_record(data)
    assert members["message"].parts[1].args == b'{"q":"\\n \xc3\xa9"}'
    escaped = encode_record(
        dataclasses.replace(said, message=Message("assistant", (ToolUsePart("c1", "t", b'"\\u00e9"'),)))
    )
    assert _canonical_members(escaped.decode()) is None  # an escape the codec would not write: walked
    assert decode_record(escaped).message == Message("assistant", (ToolUsePart("c1", "t", b'"\\u00e9"'),))


# -- property: Go's bytes with struct members absent, empty or set are a fixed point -------------

struct_members = {
    "usage": [b"{}", b'{"input_tokens":7}', b'{"output_tokens":1,"cache_write_tokens":2}'],
    "discarded_usage": [b"{}", b'{"cache_read_tokens":3}'],
    "model": [b"{}", b'{"provider":"p"}', b'{"model":"m","response_format":"json"}'],
    "safety": [b"{}", b'{"read_only":true}', b'{"idempotent":true}', b'{"read_only":true,"idempotent":true}'],
    "approval": [b"{}", b'{"single":true}', b'{"need":2,"approvers":["a","b"]}'],
}


@st.composite
def go_records_with_struct_members(draw: st.DrawFn) -> bytes:
    member = {key: draw(st.one_of(st.none(), st.sampled_from(forms))) for key, forms in struct_members.items()}
    out = b'{"name":"n","kind":"tool_result"'
    for key in ("usage", "discarded_usage"):
        if (form := member[key]) is not None:
            out += b',"' + key.encode() + b'":' + form
    out += b',"finish":"stop"' if draw(st.booleans()) else b""
    if member["model"] is not None:
        out += b',"model":' + member["model"]
    out += b',"tool_use_id":"c1","result":"r"'
    for key in ("safety", "approval"):
        if (form := member[key]) is not None:
            out += b',"' + key.encode() + b'":' + form
    return out + b"}"


@given(go_records_with_struct_members())
def test_go_struct_members_survive_decode_encode(data: bytes) -> None:
    record = decode_record(data)
    assert encode_record(record) == data
    for key in struct_members:
        assert (getattr(record, key) is None) == (b'"' + key.encode() + b'":' not in data)


OUTLINED = [
    b'{"name":"tool:c1","kind":"tool_result","tool_use_id":"c1","result":{"rows":[1,2,3]}}',
    b'{"name":"tool:c1","kind":"tool_result","result":"' + b"x" * 200_000 + b'"}',
    b'{"name":"tool:c1","kind":"model","usage":{"input_tokens":3,"output_tokens":4}}',
    b'{"name":"tool:c1","kind":"tool_result","result":{"kind":"model"}}',  # a second "kind", nested
    b'{"name":"tool:c1","kind":"tool_result","kind":"model"}',  # the codec reads the last
    b'{"name":"tool:c1","kind":"tool_result","k\\u0069nd":"model"}',  # an escaped key
    b'{"name":"tool:c1","kind":"tool_result","usage":{"input_tokens":5}}',
    b'{"name":"tool:c1","kind":"tool_result","result":{"usage":{"input_tokens":5}}}',
    b'{"name":"tool:c1","kind":"tool_result","usage":{"input_tokens":1.5}}',
    b'{"name":"tool:c1","kind":"tool_result","usage":{"input_tokens":true}}',
    b' { "name" : "tool:c1" , "kind" : "model" , "usage" : { "output_tokens" : 9 } } ',
    b'{"name":"tool:c1","kind":null}',
    b'{"name":"tool:c1"}',
    b'{"name":"tool:c1","kind":7}',
    b'{"name":"other","kind":"model"}',
    b'{"kind":"model"}',
    b'{"name":"tool:c1","kind":"tool_r\\u0065sult"}',
    b'{"name":"tool:c1","kind":"caf\xc3\xa9 \xff"}',  # not UTF-8, cleaned as the codec cleans it
    b'["name","tool:c1"]',
]


@pytest.mark.parametrize("data", OUTLINED)
def test_an_outline_reads_name_kind_and_usage_as_the_codec_does(data: bytes) -> None:
    outline = decode_outline(data, "tool:c1")
    try:
        record = decode_record(data, "tool:c1")
    except CorruptRecordError:
        assert outline is None
        return
    if outline is not None:  # None only costs the caller a decode
        assert (outline.name, outline.kind, outline.usage) == (record.name, record.kind, record.usage)


def test_a_tool_result_as_the_codec_writes_it_is_outlined_from_its_start() -> None:
    """No parse: the payload may be a megabyte (a payload that is not JSON shows it is never read)."""
    outline = decode_outline(b'{"name":"tool:c1","kind":"tool_result","result":{' + b"]" * 1000 + b"}", "tool:c1")
    assert outline is not None and (outline.kind, outline.usage) == ("tool_result", None)
    for data in OUTLINED[:3]:
        assert decode_outline(data, "tool:c1") is not None
