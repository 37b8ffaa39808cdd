"""The ``run:start`` payload: the SDK's shape read whole, agenttui's policies under ``ext``, earlier builds read."""

from __future__ import annotations

import pytest

from agenttui.agent.runstart import RunStart
from agenttui.agent.tools import ToolSafety
from agenttui.journal.record import ImagePart, Message, TextPart

# A session turn as a Go service writes it: every member of the newest RunStart, in struct order.
GO_RUN_START = (
    b'{"input":"refund order A-1001","saga":true,"kind":"session_turn",'
    b'"session":{"id":"sess-9","turn":3,"key":"customer-42"},"flow":{"name":"refunds"},'
    b'"typed":{"mode":"tool","schema_digest":"ab12","schema":{"type":"object"}},'
    b'"settings":{"max_turns":12,"token_budget":50000,"system_prompt":"You are a support agent."},'
    b'"principal":{"on_behalf_of":"user-7"},"tools":["lookup_order","refund_payment"],'
    b'"ext":{"acme":{"trace":"t-1"}}}'
)

# What agenttui builds before this one wrote: the policy objects in the filter's place.
EARLIER_AGENTTUI_RUN_START = (
    b'{"input":"refund A-1001","kind":"agent","settings":{"max_turns":8},"tools":['
    b'{"name":"lookup_order","safety":{"read_only":true}},'
    b'{"name":"refund_payment","approval":{"single":true}},'
    b'{"name":"ask_customer","safety":{"idempotent":true,"idempotency_key":true},"interrupts":true}]}'
)

DESK_TOOLS = {
    "lookup_order": ToolSafety(read_only=True),
    "refund_payment": ToolSafety(needs_approval=True),
    "ask_customer": ToolSafety(idempotent=True, interrupts=True),
    "send_email": ToolSafety(),
}


def test_go_bytes_decode_whole() -> None:
    start = RunStart.decode(GO_RUN_START)
    assert start.input == Message.user("refund order A-1001")
    assert start.saga is True and start.kind == "session_turn"
    assert start.session == {"id": "sess-9", "turn": 3, "key": "customer-42"}
    assert start.flow == {"name": "refunds"}
    assert start.typed == {"mode": "tool", "schema_digest": "ab12", "schema": {"type": "object"}}
    assert start.settings == {"max_turns": 12, "token_budget": 50000, "system_prompt": "You are a support agent."}
    assert start.principal == {"on_behalf_of": "user-7"}
    assert start.tools == ("lookup_order", "refund_payment")
    assert start.ext == {"acme": {"trace": "t-1"}}
    assert start.raw == GO_RUN_START


def test_go_tools_carry_no_policy() -> None:
    start = RunStart.decode(GO_RUN_START)
    assert start.policies == {}
    assert start.policy("lookup_order") is None and start.policy("unknown") is None


def test_go_bytes_re_encode_as_they_were() -> None:
    assert RunStart.decode(GO_RUN_START).encode() == GO_RUN_START


def test_the_v0_8_shape_reads_as_a_legacy_agent_run() -> None:
    start = RunStart.decode(b'{"input":"hello","saga":true}')
    assert (start.input, start.kind, start.saga, start.tools, start.session) == (
        Message.user("hello"),
        "agent",
        True,
        (),
        None,
    )


def test_earlier_agenttui_bytes_read_with_their_policies() -> None:
    start = RunStart.decode(EARLIER_AGENTTUI_RUN_START)
    assert start.tools == ("lookup_order", "refund_payment", "ask_customer")
    assert start.settings == {"max_turns": 8}
    assert start.policy("lookup_order") == ToolSafety(read_only=True)
    assert start.policy("refund_payment") == ToolSafety(needs_approval=True)
    assert start.policy("ask_customer") == ToolSafety(idempotent=True, idempotency_key=True, interrupts=True)


def test_policies_encode_under_ext_and_no_filter_is_written() -> None:
    start = RunStart(
        Message.user("refund A-1001"), settings={"max_turns": 8, "system_prompt": "Be brief."}, policies=DESK_TOOLS
    )
    assert start.tools == ()  # no tool filter, as a Go loop without WithToolFilter writes
    assert start.encode() == (
        b'{"input":"refund A-1001","kind":"agent","settings":{"max_turns":8,"system_prompt":"Be brief."},'
        b'"ext":{"agenttui":{"tools":[{"name":"lookup_order","safety":{"read_only":true}},'
        b'{"name":"refund_payment","approval":{"single":true}},'
        b'{"name":"ask_customer","safety":{"idempotent":true},"interrupts":true},'
        b'{"name":"send_email"}]}}}'
    )


def test_new_bytes_read_back_equal() -> None:
    start = RunStart(Message.user("refund A-1001"), settings={"max_turns": 8}, policies=DESK_TOOLS)
    data = start.encode()
    again = RunStart.decode(data)
    assert again == start and again.encode() == data
    assert again.policy("send_email") == ToolSafety()  # declared with no flags: not the same as unknown


def test_names_and_policies_may_be_given_apart() -> None:
    start = RunStart(Message.user("x"), tools=("a", "b"), policies={"a": ToolSafety(read_only=True)})
    assert (
        start.encode()
        == b'{"input":"x","kind":"agent","tools":["a","b"],"ext":{"agenttui":{"tools":[{"name":"a","safety":{"read_only":true}}]}}}'
    )


def test_other_extensions_survive_beside_agenttui_s() -> None:
    data = (
        b'{"input":"x","kind":"agent","tools":["a"],'
        b'"ext":{"acme":[1,2],"agenttui":{"note":"kept","tools":[{"name":"a","interrupts":true}]}}}'
    )
    start = RunStart.decode(data)
    assert start.ext == {"acme": [1, 2], "agenttui": {"note": "kept"}}
    assert start.policy("a") == ToolSafety(interrupts=True)
    assert start.encode() == data


def test_an_input_message_round_trips() -> None:
    message = Message("user", (TextPart("see the photo"), ImagePart(mime="image/png", data=b"\x89PNG")))
    data = RunStart(message, tools=("a",)).encode()
    assert data.startswith(b'{"input":{"role":"user","parts":[')
    assert RunStart.decode(data).input == message


@pytest.mark.parametrize(
    "data",
    [
        None,
        b"",
        b"[1]",
        b'"x"',
        b"null",
        b'{"input":{"role":5},"tools":"abc","ext":{"agenttui":7},"session":[1],"settings":"x"}',
        b'{"input":3,"tools":[1,null,{"name":"a","safety":true,"approval":[]}],"ext":{"agenttui":{"tools":{"a":1}}}}',
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=["none", "empty", "array", "string", "null", "wrong types", "wrong entries", "deep"],
)
def test_hostile_payloads_read_without_raising(data: bytes | None) -> None:
    start = RunStart.decode(data)
    assert isinstance(start.input, Message) and all(isinstance(name, str) for name in start.tools)
