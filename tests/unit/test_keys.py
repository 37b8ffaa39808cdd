"""Step keys and run ids (format section 3)."""

from __future__ import annotations

import hashlib

from agenttui.journal import keys


def test_encode_id_passes_safe_bytes_and_escapes_the_rest() -> None:
    assert keys.encode_id("toolu_01AbC-9.x") == "toolu_01AbC-9.x"
    assert keys.encode_id("a/b c>é") == "a%2Fb%20c%3E%C3%A9"


def test_encode_id_hashes_long_ids() -> None:
    raw = "/" * 33  # 99 escaped bytes
    assert keys.encode_id(raw) == "~" + hashlib.sha256(raw.encode()).hexdigest()
    assert keys.encode_id("/" * 32) == "%2F" * 32  # exactly 96: kept


def test_key_builders() -> None:
    assert keys.llm_key(3) == "@llm/3"
    assert keys.tool_key("c/1") == "tool:c%2F1"
    assert keys.attempt_key("c1") == "attempt:tool:c1"
    assert keys.retry_attempt_key(2, "c1") == "attempt:retry:2:tool:c1"
    assert keys.step_attempt_key("fetch") == "attempt:step:fetch"
    assert keys.step_attempt_key("fetch", 1) == "attempt:retry:1:step:fetch"
    assert keys.not_started_key("ab" * 16, "attempt:tool:c1") == f"attempt:not-started:{'ab' * 16}:attempt:tool:c1"
    assert keys.approval_key("c1") == "approval:c1"
    assert keys.approval_tally_key("c1") == "approval-tally:c1"
    assert keys.run_limits_key(0) == "run:limits:0"
    assert keys.timer_key("wake") == "timer:wake"
    assert keys.interrupt_key("q") == "interrupt:q"
    assert keys.signal_key("s") == "signal:s"
    assert keys.chan_key("inbox", "k1") == "chan:5:inbox:k1"
    assert keys.chanack_key("inbox", "k1") == "chanack:5:inbox:k1"
    assert keys.spend_key("r1") == "@spend/r1" and keys.spend_late_key("r1") == "@spend-late/r1"
    assert keys.await_timeout_key("a") == "await-timeout:a" and keys.await_resolved_key("a") == "await-resolved:a"


def test_approver_decision_key_hashes_the_decision() -> None:
    digest = hashlib.sha256(b"\x01" + (7).to_bytes(4, "big") + b"ed25519" + b"sig").hexdigest()
    assert keys.approver_decision_key("c1", "ann", True, "ed25519", b"sig") == f"approval:c1:ann:{digest}"


def test_first_end_marker_decides() -> None:
    assert keys.first_end_marker(["run:start", "@llm/0", "run:cancelled", "run:complete"]) == "run:cancelled"
    assert keys.first_end_marker(["run:start", "run:cancel-requested"]) is None


def test_reserved_prefixes() -> None:
    assert keys.is_reserved("run:start") and keys.is_reserved("@llm/0") and keys.is_reserved("turn/1")
    assert not keys.is_reserved("fetch-prices")


def test_run_ids() -> None:
    child = keys.sub_run_id("order-1", "toolu/9")
    assert child == "order-1>toolu%2F9"
    assert keys.is_sub_run(child) and not keys.is_session_run(child)
    assert keys.parent_run_id(child) == "order-1" and keys.parent_run_id("order-1") is None
    assert keys.step_sub_run_id(child, "fan out") == "order-1>toolu%2F9>step:fan%20out"
    assert keys.is_session_run("chat>@session") and not keys.is_sub_run("chat>@turn/3")
    assert keys.root_run_id("order-1>c1>c2") == "order-1"
    assert keys.root_run_id("chat>@turn/3>c1") == "chat>@turn/3"
    assert not keys.is_sub_run("order-1")
