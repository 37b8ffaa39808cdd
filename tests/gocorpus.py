"""Runs as the Go SDK (Bide) writes them, byte for byte: the corpus the verdict tests read.

Each record below is the literal JSON a Go service stores, written from the SDK's agent loop,
its encoder and the records its own tests hold (``docs/journal-format.md`` describes them):
member order, ``"usage":{}`` from a model that reports none, ``"safety":{}`` on every
side-effect result, the SDK's prompt and tool digests, claims, m-of-n decision keys, nanosecond
wake times with a host's offset. Only what the SDK draws at random is made up here: each salt
is derived from the run id and the step name, so the corpus is the same on every machine.

``CASES`` holds one run per case, with the status it reads as, the replay verdict, and the
labels of its Mermaid nodes in order.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field

from agenttui.replay.verdict import VerdictKind
from agenttui.runs.statuses.status import RunState
from agenttui.stores.base import Store

HEADER = '{"name":"@journal","kind":"header","format":"bide.journal.v1-dev"}'
# The SDK's digests (64 hex, SHA-256): of the system prompt "You are a helpful assistant.", and
# of the tool specs the request sent.
PROMPT_DIGEST = "32b633172872d7e170c6cefb32d2263fe09286c409a5e2e11a1bb9038cd16951"
TOOLS_DIGEST = "8aaf9da14dc00fa8e1e399860374e8ec40fdc00033155349ae4c492a5bbe561c"
MODEL = '"model":{"provider":"anthropic","model":"claude-sonnet-4"}'
DIGESTS = f'"prompt_digest":"{PROMPT_DIGEST}","tools_digest":"{TOOLS_DIGEST}"'
CLAIM_A = "5608d3daa98f802ac851ca33910d95c3"
CLAIM_B = "9c1185a5c5e9fc54612808977ee8f548"
DENIED = '"tool call denied by human"'


def salt(run_id: str, name: str) -> str:
    """A stand-in for the SDK's random 32-byte salt: 44 base64 characters, fixed per record."""
    return base64.b64encode(hashlib.sha256(f"{run_id}\x00{name}".encode()).digest()).decode()


def quorum_key(call: str, approver: str, approved: bool, alg: str, signature: bytes) -> str:
    """``approval:<id>:<approver>:<hex>``, the hex being SHA-256 over (approved byte, 4-byte
    big-endian length of alg, alg, signature), as the SDK's ``SubmitDecision`` names it."""
    digest = hashlib.sha256(bytes([approved]) + len(alg).to_bytes(4, "big") + alg.encode() + signature).hexdigest()
    return f"approval:{call}:{approver}:{digest}"


def start(input_json: str, extra: str = "") -> str:
    return '{"name":"run:start","kind":"value","result":{"input":' + input_json + extra + "}}"


def model(n: int, parts: str, tail: str) -> str:
    return f'{{"name":"@llm/{n}","kind":"model","message":{{"role":"assistant","parts":[{parts}]}},{tail}}}'


def call(call_id: str, name: str, args: str) -> str:
    return f'{{"args":{args},"id":"{call_id}","name":"{name}","type":"tool_use"}}'


def text(value: str) -> str:
    return f'{{"text":{json.dumps(value)},"type":"text"}}'


def result(call_id: str, value: str, tail: str = "") -> str:
    return f'{{"name":"tool:{call_id}","kind":"tool_result","tool_use_id":"{call_id}","result":{value}{tail}}}'


def attempt_key(call_id: str, generation: int = 0) -> str:
    return f"attempt:tool:{call_id}" if generation == 0 else f"attempt:retry:{generation}:tool:{call_id}"


def attempt(call_id: str, claim: str, generation: int = 0, at: int = 1767225600123) -> str:
    name = attempt_key(call_id, generation)
    return f'{{"name":"{name}","kind":"attempt","tool_use_id":"{call_id}","attempted_at":{at},"claim":"{claim}"}}'


def not_started(call_id: str, claim: str, generation: int = 0) -> str:
    """What a driver records when the attempt it claimed never called its effect (it was
    cancelled between the claim and the call): the marker's key, bound to its claim."""
    name = f"attempt:not-started:{claim}:{attempt_key(call_id, generation)}"
    return f'{{"name":"{name}","kind":"not_started","tool_use_id":"{call_id}","claim":"{claim}"}}'


def tombstone(run_id: str, body: str, at_ms: int = 1767312000000) -> str:
    """The bytes a redaction leaves in place of a record: its audit leaf hash (RFC 6962,
    SHA-256 over 0x00 and the stored bytes, salt included) and when it was redacted."""
    name = json.loads(body)["name"]
    stored = f'{body[:-1]},"salt":"{salt(run_id, name)}"}}'.encode()
    leaf_hash = hashlib.sha256(b"\x00" + stored).hexdigest()
    return f'{{"redacted":{{"leaf_hash":"{leaf_hash}","at_ms":{at_ms}}}}}'


COMPLETE = '{"name":"run:complete","kind":"value"}'
WEATHER_TURN = model(0, text("Let me check.") + "," + call("toolu_01", "get_weather", '{"city":"Paris"}'),
                     f'"usage":{{"input_tokens":120,"output_tokens":30}},"finish":"tool_use","raw_finish":"tool_use",{MODEL},{DIGESTS}')  # fmt: skip


def final_turn(n: int, answer: str) -> str:
    return model(
        n, text(answer), f'"usage":{{"input_tokens":210,"output_tokens":12}},"finish":"stop",{MODEL},{DIGESTS}'
    )


def charge_turn(call_id: str) -> str:
    return model(0, text("Charging the card.") + "," + call(call_id, "charge", '{"amount":1200}'),
                 f'"usage":{{"input_tokens":140,"output_tokens":22}},"finish":"tool_use",{MODEL},{DIGESTS}')  # fmt: skip


@dataclass(frozen=True)
class GoRun:
    """One case: its records (JSON without the salt) and what agenttui must read in them."""

    run_id: str
    records: list[str]
    status: RunState
    verdict: VerdictKind
    labels: list[str]
    """The Mermaid nodes, in order, between ``start([user])`` and ``done([done])``."""
    what: str = ""
    header: bool = True
    tombstones: dict[str, str] = field(default_factory=dict)
    """Step names whose stored bytes are a redaction tombstone instead of the record."""
    input: str | None = None
    """The run's input, for a journal that records none (before v0.8): what a replay is given."""

    def entries(self) -> list[tuple[str, bytes]]:
        """(name, stored bytes) in journal order, each record salted as the SDK salts it."""
        out = []
        for body in ([HEADER] if self.header else []) + self.records:
            name = json.loads(body)["name"]
            if name in self.tombstones:
                out.append((name, self.tombstones[name].encode()))
                continue
            assert body.endswith("}")
            out.append((name, f'{body[:-1]},"salt":"{salt(self.run_id, name)}"}}'.encode()))
        return out


L_START, L_DONE, L_LLM = "step: run:start", "step: run:complete", "LLM"
REDACTED_LOOKUP = result("toolu_18", '{"pan":"4242424242424242"}', ',"safety":{"read_only":true}')
SIGNATURE = b"\x01\x02sig"

CASES: list[GoRun] = [
    GoRun(
        "go-weather",
        [
            start('"What is the weather in Paris?"', ',"kind":"agent"'),
            WEATHER_TURN,
            result("toolu_01", '{"temp_c":21}', ',"safety":{"read_only":true}'),
            model(1, text("It is sunny."), f'"usage":{{}},"finish":"stop",{DIGESTS}'),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: get_weather", L_LLM, L_DONE],
        "a read-only call; a model that reports no usage",
    ),
    GoRun(
        "go-charge",
        [
            start(
                '"Charge order 7"',
                ',"kind":"agent","settings":{"max_turns":5,"system_prompt":"You are a helpful assistant."}',
            ),
            charge_turn("toolu_02"),
            attempt("toolu_02", CLAIM_A),
            result("toolu_02", '"charged"', ',"safety":{}'),
            final_turn(1, "Charged."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: charge", L_LLM, L_DONE],
        "a side effect under an attempt marker",
    ),
    GoRun(
        "go-approved",
        [
            start('"Charge order 8"', ',"kind":"agent"'),
            charge_turn("toolu_03"),
            '{"name":"approval:toolu_03","kind":"approval","tool_use_id":"toolu_03","approved":true}',
            attempt("toolu_03", CLAIM_A),
            result("toolu_03", '"charged"', ',"safety":{},"approval":{"single":true}'),
            final_turn(1, "Charged after approval."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "approved ✓", "tool: charge", L_LLM, L_DONE],
        "a single-gate approval",
    ),
    GoRun(
        "go-denied",
        [
            start('"Charge order 9"', ',"kind":"agent"'),
            charge_turn("toolu_03"),
            '{"name":"approval:toolu_03","kind":"approval","tool_use_id":"toolu_03"}',
            result("toolu_03", DENIED, ',"is_error":true,"safety":{},"approval":{"single":true}'),
            final_turn(1, "A reviewer declined the charge."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "denied ✗", "tool: charge ✗", L_LLM, L_DONE],
        "a denial the next drive recorded",
    ),
    GoRun(
        "go-awaiting-approval",
        [
            start('"Charge order 10"', ',"kind":"agent"'),
            charge_turn("toolu_03"),
        ],
        RunState.STALLED,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM],
        "a gate the journal cannot show: no decision yet",
    ),
    GoRun(
        "go-approved-not-driven",
        [
            start('"Charge order 11"', ',"kind":"agent"'),
            charge_turn("toolu_03"),
            '{"name":"approval:toolu_03","kind":"approval","tool_use_id":"toolu_03","approved":true}',
        ],
        RunState.READY,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM, "approved ✓"],
        "approved, not driven since",
    ),
    GoRun(
        "go-quorum",
        [
            start('"Wire the refund"', ',"kind":"agent"'),
            model(
                0,
                call("toolu_04", "wire_funds", '{"to":"acct-9","cents":50000}'),
                f'"usage":{{"input_tokens":90,"output_tokens":18}},"finish":"tool_use",{DIGESTS}',
            ),
            '{"name":"%s","kind":"approval","tool_use_id":"toolu_04","approved":true,"approver":"alice","approver_alg":"ed25519","signature":"%s"}'
            % (quorum_key("toolu_04", "alice", True, "ed25519", SIGNATURE), base64.b64encode(SIGNATURE).decode()),
            '{"name":"%s","kind":"approval","tool_use_id":"toolu_04","approved":true,"approver":"bob","approver_alg":"ed25519+ml-dsa-65","signature":"%s"}'
            % (
                quorum_key("toolu_04", "bob", True, "ed25519+ml-dsa-65", SIGNATURE + b"!"),
                base64.b64encode(SIGNATURE + b"!").decode(),
            ),
            '{"name":"approval-tally:toolu_04","kind":"value","result":{"need":2,"approvers":["alice","bob","carol"],"approved":2,"denied":0,'
            '"approved_by":["alice","bob"],"pending":["carol"],"records":["%s","%s"]}}'
            % (
                quorum_key("toolu_04", "alice", True, "ed25519", SIGNATURE),
                quorum_key("toolu_04", "bob", True, "ed25519+ml-dsa-65", SIGNATURE + b"!"),
            ),
            attempt("toolu_04", CLAIM_A),
            result(
                "toolu_04", '{"wire":"w-77"}', ',"safety":{},"approval":{"need":2,"approvers":["alice","bob","carol"]}'
            ),
            final_turn(1, "Wired."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [
            L_START,
            L_LLM,
            "approved ✓",
            "approved ✓",
            "step: approval-tally:toolu_04",
            "tool: wire_funds",
            L_LLM,
            L_DONE,
        ],
        "a 2-of-3 approval",
    ),
    GoRun(
        "go-halted",
        [
            start('"Charge order 12"', ',"kind":"agent"'),
            charge_turn("toolu_05"),
            attempt("toolu_05", CLAIM_A),
        ],
        RunState.HALTED,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM],
        "attempted, outcome unknown",
    ),
    GoRun(
        "go-voided-retried",
        [
            start('"Charge order 13"', ',"kind":"agent"'),
            charge_turn("toolu_05"),
            attempt("toolu_05", CLAIM_A),
            not_started("toolu_05", CLAIM_A),
            attempt("toolu_05", CLAIM_B, generation=1, at=1767225700456),
            result("toolu_05", '"charged"', ',"safety":{}'),
            final_turn(1, "Charged on the second attempt."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: charge", L_LLM, L_DONE],
        "an attempt voided, then retried",
    ),
    GoRun(
        "go-voided-halted",
        [
            start('"Charge order 17"', ',"kind":"agent"'),
            charge_turn("toolu_17"),
            attempt("toolu_17", CLAIM_A),
            not_started("toolu_17", CLAIM_A),
            attempt("toolu_17", CLAIM_B, generation=1, at=1767225700456),
        ],
        RunState.HALTED,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM],
        "an attempt voided, then retried by the next drive, whose process died: outcome unknown",
    ),
    GoRun(
        "go-resolved",
        [
            start('"Charge order 14"', ',"kind":"agent"'),
            charge_turn("toolu_06"),
            attempt("toolu_06", CLAIM_A),
            attempt("toolu_06", CLAIM_B, generation=1, at=1767229200000),
            result(
                "toolu_06", '"charged (operator-confirmed)"', ',"reconciled":true,"evidence":{"provider_id":"ch_123"}'
            ),
            final_turn(1, "The operator confirmed the charge."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: charge", L_LLM, L_DONE],
        "a halt resolved by ResolveHalt, with evidence",
    ),
    GoRun(
        "go-resolved-bare",
        [
            start('"Charge order 15"', ',"kind":"agent"'),
            charge_turn("toolu_06"),
            attempt("toolu_06", CLAIM_A),
            attempt("toolu_06", CLAIM_B, generation=1, at=1767229200000),
            result("toolu_06", '"charged"'),
            final_turn(1, "Charged, as the operator says."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: charge", L_LLM, L_DONE],
        "a halt resolved by ResolveHalt, no evidence",
    ),
    GoRun(
        "go-asked",
        [
            start('"Ship it"', ',"kind":"agent"'),
            model(
                0,
                call("toolu_07", "confirm_address", '{"order":"A-7"}'),
                f'"usage":{{"input_tokens":60,"output_tokens":9}},"finish":"tool_use",{DIGESTS}',
            ),
            '{"name":"interrupt:confirm-address","kind":"value","result":{"ok":true}}',
            result("toolu_07", '{"confirmed":true}', ',"safety":{"read_only":true}'),
            final_turn(1, "Shipping to the confirmed address."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "step: interrupt:confirm-address", "tool: confirm_address", L_LLM, L_DONE],
        "an interrupt, answered",
    ),
    GoRun(
        "go-answered-not-driven",
        [
            start('"Ship it"', ',"kind":"agent"'),
            model(
                0,
                call("toolu_07", "confirm_address", '{"order":"A-8"}'),
                f'"usage":{{"input_tokens":60,"output_tokens":9}},"finish":"tool_use",{DIGESTS}',
            ),
            '{"name":"interrupt:confirm-address","kind":"value","result":{"ok":true}}',
        ],
        RunState.READY,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM, "step: interrupt:confirm-address"],
        "answered, not driven since",
    ),
    GoRun(
        "go-sleeping",
        [
            start('"Wait for settlement"', ',"kind":"agent"'),
            model(
                0, call("toolu_08", "wait_settlement", '{"hours":36}'), f'"usage":{{}},"finish":"tool_use",{DIGESTS}'
            ),
            '{"name":"timer:settle","kind":"value","result":"2099-01-15T10:30:00.123456789+02:00"}',
        ],
        RunState.SLEEPING,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM, "step: timer:settle"],
        "a wake time with nanoseconds and an offset",
    ),
    GoRun(
        "go-slept",
        [
            start('"Wait for settlement"', ',"kind":"agent"'),
            model(0, call("toolu_08", "wait_settlement", '{"hours":1}'), f'"usage":{{}},"finish":"tool_use",{DIGESTS}'),
            '{"name":"timer:settle","kind":"value","result":"2026-01-15T08:30:00.5-05:00"}',
            result("toolu_08", '"settled"', ',"safety":{"idempotent":true}'),
            final_turn(1, "Settled."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "step: timer:settle", "tool: wait_settlement", L_LLM, L_DONE],
        "a sleep, woken",
    ),
    GoRun(
        "go-cancelled",
        [
            start('"Charge order 16"', ',"kind":"agent"'),
            charge_turn("toolu_09"),
            '{"name":"run:cancelled","kind":"value","result":{"reason":"user asked"}}',
        ],
        RunState.CANCELLED,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM, "step: run:cancelled"],
        "cancelled while it waited",
    ),
    GoRun(
        "go-limits-spend",
        [
            start('"Summarise the ledger"', ',"kind":"agent","settings":{"max_turns":5,"token_budget":10000}'),
            '{"name":"@spend/0f3c2a9e5b7d4c1e8a6b2d9f0e1c3a5b","kind":"value","discarded_usage":{"input_tokens":800,"output_tokens":3}}',
            '{"name":"run:limits:0","kind":"value","result":{"max_turns":8}}',
            model(
                0,
                text("The ledger balances."),
                f'"usage":{{"input_tokens":820,"output_tokens":40,"cache_read_tokens":400}},"discarded_usage":{{"input_tokens":120}},"finish":"stop",{MODEL}',
            ),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, "step: @spend/0f3c2a9e5b7d4c1e8a6b2d9f0e1c3a5b", "step: run:limits:0", L_LLM, L_DONE],
        "a failed request's spend, a limit amended",
    ),
    GoRun(
        "go-saga",
        [
            start('"Book a trip"', ',"saga":true,"kind":"agent"'),
            model(
                0,
                call("toolu_10", "book_hotel", '{"city":"Lisbon"}'),
                f'"usage":{{"input_tokens":70,"output_tokens":11}},"finish":"tool_use",{DIGESTS}',
            ),
            result("toolu_10", '{"booking":"H-1"}', ',"safety":{"idempotent":true}'),
            final_turn(1, "Booked."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: book_hotel", L_LLM, L_DONE],
        "a saga that completed",
    ),
    GoRun(
        "go-saga-aborted",
        [
            start('"Book a trip"', ',"saga":true,"kind":"agent"'),
            model(
                0,
                call("toolu_11", "book_hotel", '{"city":"Porto"}'),
                f'"usage":{{"input_tokens":70,"output_tokens":11}},"finish":"tool_use",{DIGESTS}',
            ),
            attempt("toolu_11", CLAIM_A),
            '{"name":"tool:toolu_11","kind":"saga_fail","tool_use_id":"toolu_11","result":"hotel full","safety":{}}',
            '{"name":"run:aborted","kind":"value","result":"hotel full"}',
        ],
        RunState.ABORTED,
        VerdictKind.REFUSED,
        [L_START, L_LLM, "step: run:aborted"],
        "a saga rolled back",
    ),
    GoRun(
        "go-saga-cancelling",
        [
            start('"Book a trip"', ',"saga":true,"kind":"agent"'),
            model(
                0,
                call("toolu_10", "book_hotel", '{"city":"Faro"}'),
                f'"usage":{{"input_tokens":70,"output_tokens":11}},"finish":"tool_use",{DIGESTS}',
            ),
            result("toolu_10", '{"booking":"H-2"}', ',"safety":{"idempotent":true}'),
            '{"name":"run:cancel-requested","kind":"value","result":{"reason":"changed plans"}}',
        ],
        RunState.CANCELLING,
        VerdictKind.REFUSED,
        [L_START, L_LLM, "tool: book_hotel", "step: run:cancel-requested"],
        "a saga asked to roll back",
    ),
    GoRun(
        "go-parent",
        [
            start('"Plan my trip"', ',"kind":"agent"'),
            model(
                0,
                call("toolu_12", "research", '{"task":"Find flights"}'),
                f'"usage":{{"input_tokens":50,"output_tokens":10}},"finish":"tool_use",{DIGESTS}',
            ),
            '{"name":"tool:toolu_12","kind":"tool_result","usage":{"input_tokens":40,"output_tokens":8},"tool_use_id":"toolu_12",'
            '"result":"Found 3 flights.","safety":{"idempotent":true}}',
            final_turn(1, "Three flights fit."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: research", L_LLM, L_DONE],
        "a sub-agent call",
    ),
    GoRun(
        "go-parent>toolu_12",
        [
            start('"Find flights"', ',"kind":"agent"'),
            model(0, text("Found 3 flights."), '"usage":{"input_tokens":40,"output_tokens":8},"finish":"stop"'),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, L_DONE],
        "the sub-agent's own run",
    ),
    GoRun(
        "s1>@session",
        [
            '{"name":"start/0","kind":"value","result":{"input":"hi","run_id":"s1>@turn/0","claim":"%s"}}' % CLAIM_A,
            '{"name":"from/s1>@turn/0","kind":"value","result":{"turns":0,"digest":""}}',
            '{"name":"turn/0","kind":"value","result":{"input":"hi","answer":{"role":"assistant","parts":[{"text":"Hello!","type":"text"}]},"run_id":"s1>@turn/0","claim":"%s"}}'
            % CLAIM_A,
        ],
        RunState.NOT_STARTED,
        VerdictKind.REFUSED,
        ["step: start/0", "step: from/s1>@turn/0", "step: turn/0"],
        "a session's journal",
    ),
    GoRun(
        "s1>@turn/0",
        [
            start('"hi"', ',"kind":"session_turn","session":{"id":"s1","turn":0}'),
            model(0, text("Hello!"), '"usage":{"input_tokens":5,"output_tokens":2},"finish":"stop"'),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, L_DONE],
        "a session's turn",
    ),
    GoRun(
        "go-flow",
        [
            start('"{\\"order\\":\\"A-1\\"}"', ',"kind":"flow","flow":{"name":"triage"}'),
            '{"name":"flow:digest","kind":"value","result":"3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046dea"}',
            '{"name":"node:classify","kind":"value","result":{"label":"refund"}}',
            '{"name":"switch:route","kind":"value","result":"refund"}',
            '{"name":"node:refund","kind":"value","result":{"ok":true}}',
            '{"name":"run:complete","kind":"value","result":{"flow":"triage","output":{"ok":true}}}',
        ],
        RunState.COMPLETE,
        VerdictKind.REFUSED,
        [L_START, "step: flow:digest", "step: node:classify", "step: switch:route", "step: node:refund", L_DONE],
        "a plan flow",
    ),
    GoRun(
        "go-signal-only",
        [
            '{"name":"signal:approve-shipping","kind":"signal","result":{"by":"ops"}}',
        ],
        RunState.NOT_STARTED,
        VerdictKind.REFUSED,
        [],
        "a signal sent before its run started",
    ),
    GoRun(
        "go-redacted",
        [
            start('"Look up my card"', ',"kind":"agent"'),
            model(
                0, call("toolu_13", "card_lookup", '{"last4":"4242"}'), f'"usage":{{}},"finish":"tool_use",{DIGESTS}'
            ),
            result("toolu_13", '{"pan":"4242424242424242"}', ',"safety":{"read_only":true}'),
            final_turn(1, "Found your card."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, L_LLM, L_DONE],
        "a finished run with a redacted result",
        tombstones={
            "tool:toolu_13": '{"redacted":{"leaf_hash":"9d3ee1a4bb0f0f8df1f55a6ab0e49c3c52e61d8c10b7e8a0e5bde5ddc6e1d85f","at_ms":1}}'
        },
    ),
    GoRun(
        "go-redacted-cancelled",
        [
            start('"Refund my last order"', ',"kind":"agent"'),
            model(
                0, call("toolu_18", "card_lookup", '{"last4":"4242"}'), f'"usage":{{}},"finish":"tool_use",{DIGESTS}'
            ),
            REDACTED_LOOKUP,
            model(
                1,
                call("toolu_19", "refund", '{"order":"A-9","amount":1200}'),
                f'"usage":{{"input_tokens":180,"output_tokens":20}},"finish":"tool_use",{DIGESTS}',
            ),
            '{"name":"run:cancelled","kind":"value","result":{"reason":"the customer called"}}',
        ],
        RunState.CANCELLED,
        VerdictKind.MATCHES_SO_FAR,
        [L_START, L_LLM, L_LLM, "step: run:cancelled"],
        "cancelled after a result that was later redacted",
        tombstones={"tool:toolu_18": tombstone("go-redacted-cancelled", REDACTED_LOOKUP)},
    ),
    GoRun(
        "go-redacted-retried",
        [
            start('"Charge the card on file"', ',"kind":"agent"'),
            model(
                0, call("toolu_18", "card_lookup", '{"last4":"4242"}'), f'"usage":{{}},"finish":"tool_use",{DIGESTS}'
            ),
            REDACTED_LOOKUP,
            model(
                1,
                call("toolu_21", "charge", '{"amount":1200}'),
                f'"usage":{{"input_tokens":150,"output_tokens":18}},"finish":"tool_use",{DIGESTS}',
            ),
            attempt("toolu_21", CLAIM_A),
            not_started("toolu_21", CLAIM_A),
            attempt("toolu_21", CLAIM_B, generation=1, at=1767225700456),
            result("toolu_21", '"charged"', ',"safety":{}'),
            final_turn(2, "Charged the card on file."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, L_LLM, "tool: charge", L_LLM, L_DONE],
        "a redacted result, then an attempt voided and retried by a second drive",
        tombstones={"tool:toolu_18": tombstone("go-redacted-retried", REDACTED_LOOKUP)},
    ),
    GoRun(
        "go-multimodal",
        [
            start(
                '{"role":"user","parts":[{"text":"What is this?","type":"text"},{"data":"iVBORw0K","mime":"image/png","type":"image"}]}',
                ',"kind":"agent"',
            ),
            model(
                0,
                '{"signature":"EqQBCkYIAxgCIkA","text":"A small PNG header.","type":"reasoning"},{"redacted":"ENCRYPTED-BLOB","text":"","type":"reasoning"},'
                + text("It is the start of a PNG file.")
                + ',{"args":{"n":1.50,"e":1e20},"id":"toolu_14","name":"describe","signature":"c2lnbmF0dXJl","type":"tool_use"}',
                f'"usage":{{"input_tokens":300,"output_tokens":25,"cache_write_tokens":200}},"finish":"tool_use",{MODEL}',
            ),
            result("toolu_14", '{"h":"<b>&\\u2028","n":[1e20,-0.0,9007199254740993]}', ',"safety":{"read_only":true}'),
            model(1, text("A PNG image."), '"usage":{"input_tokens":310,"output_tokens":4},"finish":"stop"'),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: describe", L_LLM, L_DONE],
        "image input, reasoning parts, a Gemini signature, raw numbers",
    ),
    GoRun(
        "go-parallel",
        [
            start('"Weather in two cities"', ',"kind":"agent"'),
            model(
                0,
                call("toolu_15", "get_weather", '{"city":"Oslo"}')
                + ","
                + call("toolu_16", "get_weather", '{"city":"Rome"}'),
                f'"usage":{{"input_tokens":100,"output_tokens":20}},"finish":"tool_use",{DIGESTS}',
            ),
            result("toolu_16", '{"temp_c":24}', ',"safety":{"read_only":true}'),
            result("toolu_15", '{"temp_c":3}', ',"safety":{"read_only":true}'),
            final_turn(1, "Cold in Oslo, warm in Rome."),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, "tool: get_weather", "tool: get_weather", L_LLM, L_DONE],
        "two calls at once, their results in completion order",
    ),
    GoRun(
        "go-v08",
        [
            '{"name":"run:start","kind":"value","result":{"input":"hi","saga":false}}',
            '{"name":"@llm/0","kind":"model","message":{"role":"assistant","parts":[{"text":"Hello.","type":"text"}]},"usage":{}}',
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_START, L_LLM, L_DONE],
        "a headerless v0.8 journal (legacy)",
        header=False,
    ),
    GoRun(
        "go-v07",
        [
            model(
                0,
                text("Charging the card.") + "," + call("toolu_20", "charge", '{"amount":1200}'),
                '"usage":{"input_tokens":140,"output_tokens":22}',
            ),
            '{"name":"attempt:toolu_20","kind":"attempt","tool_use_id":"toolu_20","attempted_at":1767225600123,"claim":"%s"}'
            % CLAIM_A,
            '{"name":"toolu_20","kind":"tool_result","tool_use_id":"toolu_20","result":"charged"}',
            model(1, text("Charged."), '"usage":{"input_tokens":210,"output_tokens":12}'),
            COMPLETE,
        ],
        RunState.COMPLETE,
        VerdictKind.MATCHES,
        [L_LLM, "tool: charge", L_LLM, L_DONE],
        "a v0.7 journal: no run:start, the result and attempt under the raw call id",
        header=False,
        input="Charge order 20",
    ),
]


async def write_corpus(store: Store) -> None:
    """Insert every case's entries into ``store``, in journal order, exactly as stored bytes."""
    for case in CASES:
        for name, data in case.entries():
            inserted = await store.insert(case.run_id, name, data)
            assert inserted.won, (case.run_id, name)


def mermaid(labels: list[str]) -> str:
    """The SDK's ``RenderMermaid`` text of a chain with these labels (quoted, none needs entities)."""
    lines = ["flowchart TD", "  start([user])"]
    prev = "start"
    for i, label in enumerate(labels):
        lines += [f'  n{i}["{label}"]', f"  {prev} --> n{i}"]
        prev = f"n{i}"
    return "\n".join([*lines, f"  {prev} --> done([done])"]) + "\n"
