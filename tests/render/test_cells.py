"""Terminal cells: widths, safe labels, cutting to fit."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agenttui.render import cell_width, cut, sanitize
from agenttui.render.cells import clip_words, was_cut, wrap_words
from agenttui.render.rows import Role, Row, Span, clip_row


@pytest.mark.parametrize(
    ("text", "cells"),
    [("", 0), ("LLM", 3), ("✗✓", 2), ("…→×·", 4), ("中文", 4), ("ｗ", 2), ("e\u0301", 1), ("a\u200bb", 2), ("😀", 2)],
)
def test_cell_width(text: str, cells: int) -> None:
    assert cell_width(text) == cells


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain", "plain"),
        ("\x1b[31mred", "␛[31mred"),
        ("a\x00b\x7f", "a␀b␡"),
        ("line\nbreak\ttab", "line␊break␉tab"),
        ("\x9bcsi", "\\x9bcsi"),
        ("\u202egnp.exe", "\\u202egnp.exe"),
        ("\u2066iso\u2069", "\\u2066iso\\u2069"),
        ("sep\u2028", "sep\\u2028"),
        ("lone\udcff", "lone\ufffd"),
        ("中✗é", "中✗é"),
    ],
)
def test_sanitize_shows_what_must_not_reach_a_terminal(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown


def test_sanitize_without_pictures_is_ascii_escapes() -> None:
    assert sanitize("\x1b\x7f\x9b", pictures=False) == "\\x1b\\x7f\\x9b"


@given(st.text(st.characters(codec=None)))
def test_sanitized_text_holds_no_control_or_bidi_character(text: str) -> None:
    shown = sanitize(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert not any(c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029" for c in shown)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in shown)


@pytest.mark.parametrize(
    ("text", "cells", "out"),
    [
        ("tool: search", 12, "tool: search"),
        ("tool: search", 11, "tool: sear…"),
        ("中文字", 5, "中文…"),
        ("中文字", 4, "中…"),
        ("abc", 0, ""),
        ("abcdef", 2, "a…"),
    ],
)
def test_cut(text: str, cells: int, out: str) -> None:
    assert cut(text, cells) == out


@given(st.text(), st.integers(0, 30))
def test_cut_always_fits(text: str, cells: int) -> None:
    shown = cut(sanitize(text), cells)
    assert cell_width(shown) <= cells
    assert cut(shown, cells) == shown


def test_clip_row_cuts_across_spans() -> None:
    row = Row(Span("│ ", Role.BORDER), Span("中文", Role.LABEL), Span(" │", Role.BORDER))
    assert clip_row(row, 4) == Row(Span("│ ", Role.BORDER), Span("中", Role.LABEL))
    assert clip_row(row, 8) is row


def test_details_are_cut_after_a_word() -> None:
    assert clip_words("refund_payment (call_1_0) awaits approval", 34) == "refund_payment (call_1_0) awaits…"
    assert clip_words("leased by refund-worker-2-4242#8c1d5e7f9a0b", 20) == "leased by refund-wo…"  # a long token
    assert clip_words("short", 34) == "short"
    assert clip_words("refund_payment awaits approval", 20, "...") == "refund_payment..."
    assert clip_words("返金を承認待ち 注文", 9) == "返金を承…"  # wide characters: never half of one


def test_an_explanation_wraps_at_words_and_only_its_last_line_is_cut() -> None:
    text = "halted on refund_payment: outcome unknown, the call may have fired; resolve it by hand"
    assert wrap_words(text, 30, 5) == ["halted on refund_payment:", "outcome unknown, the call may", "have fired; resolve it by hand"]  # fmt: skip
    assert wrap_words(text, 30, 2) == ["halted on refund_payment:", "outcome unknown, the call may…"]
    assert wrap_words("x" * 12 + " y", 5, 2) == ["xxxxx", "xxxx…"]  # a word longer than a line: cut in it
    assert was_cut(text, 30, 2) and not was_cut(text, 30, 3)
