"""Terminal cells: how wide text is on screen, run data made safe to print, and text cut to fit:
names cut at a cell (``cut``), explanations at words (``clip_words``, ``wrap_words``)."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Format characters terminals draw as nothing (zero-width space and joiners, word joiner, BOM).
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff")


@lru_cache(maxsize=8192)
def char_width(char: str) -> int:
    """Cells one character takes: 2 for East Asian wide and full-width, 0 for combining marks."""
    if char in _ZERO_WIDTH or unicodedata.category(char) in ("Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Cells ``text`` takes in a terminal. Meant for printable text: run ``sanitize`` first."""
    if text.isascii():
        return len(text)
    return sum(map(char_width, text))


# What a record may hold that must never reach a terminal raw: C0 and C1 controls and DEL (escape
# sequences), line and paragraph separators (a label is one line), bidi embeddings, overrides and
# isolates (text that reads differently from what it is), lone surrogates (cannot be encoded).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_DEL_PICTURE = "\u2421"  # ␡
_C0_PICTURES = 0x2400  # ␀ is U+2400, ␛ U+241B: the Control Pictures block mirrors C0


def _escape(char: str, pictures: bool) -> str:
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    if pictures and code < 0x20:
        return chr(_C0_PICTURES + code)
    if pictures and code == 0x7F:
        return _DEL_PICTURE
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def sanitize(text: str, *, pictures: bool = True) -> str:
    """``text`` with every unsafe character shown as a visible stand-in.

    C0 controls and DEL become control pictures (``\\x1b`` → ``␛``), or with ``pictures`` off the
    ASCII escape ``\\x1b``; C1 controls, separators and bidi controls become ``\\x9b``/``\\u202e``
    escapes; a lone surrogate becomes U+FFFD.
    """
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(lambda m: _escape(m.group(), pictures), text)


def cut(text: str, cells: int, ellipsis: str = "\u2026") -> str:
    """``text`` if it fits in ``cells``, else its longest prefix that fits with ``ellipsis`` after it.

    A wide character is never split: the result may then be a cell narrower than ``cells``.
    """
    if cell_width(text) <= cells:
        return text
    room = cells - cell_width(ellipsis)
    if room < 0:
        return cut(ellipsis, cells, "")
    used = 0
    end = 0
    for end, char in enumerate(text):  # noqa: B007  (read after the loop: where it broke)
        used += char_width(char)
        if used > room:
            break
    return text[:end] + ellipsis


def fit_start(text: str, cells: int) -> str:
    """The longest start of ``text`` that fits in ``cells``."""
    if text.isascii():
        return text[: max(cells, 0)]
    used = 0
    for index, char in enumerate(text):
        used += char_width(char)
        if used > cells:
            return text[:index]
    return text


def clip_words(text: str, cells: int, ellipsis: str = "\u2026") -> str:
    """``text`` in at most ``cells``, cut after a whole word where one ends in the last third of
    the room ("refund_payment (call_1_0) awaits…"), else in the word (a long token)."""
    if cell_width(text) <= cells:
        return text
    room = cells - cell_width(ellipsis)
    if room < 1:
        return cut(ellipsis, cells, "")
    start = fit_start(text, room)
    at_word_end = text[len(start)] == " " or start.endswith(" ")
    word_end = len(start.rstrip()) if at_word_end else start.rfind(" ")
    if word_end >= (2 * len(start)) // 3:
        start = start[:word_end]
    return start.rstrip(" ,·:;(") + ellipsis


def wrap_words(text: str, cells: int, lines: int, ellipsis: str = "\u2026") -> list[str]:
    """An explanation in at most ``lines`` lines of ``cells``: wrapped at word boundaries (a word
    longer than a line is cut into pieces), only the last line cut (``clip_words``) when more
    remains. The one rule for long explanations: whatever is cut, the start reads whole."""
    cells, lines = max(cells, 1), max(lines, 1)
    out: list[str] = []
    rest = " ".join(text.split())
    while rest and len(out) < lines - 1:
        if cell_width(rest) <= cells:
            out.append(rest)
            return out
        start = fit_start(rest, cells)
        cut_at = len(start) if rest[len(start)] == " " else start.rfind(" ")
        if cut_at <= 0:  # one word longer than the line: it is cut where the line ends
            cut_at = len(start)
        out.append(rest[:cut_at].rstrip())
        rest = rest[cut_at:].lstrip()
    if rest:
        out.append(clip_words(rest, cells, ellipsis))
    return out


def was_cut(text: str, cells: int, lines: int) -> bool:
    """Whether ``wrap_words`` leaves part of ``text`` out."""
    return " ".join(wrap_words(text, cells, lines)) != " ".join(text.split())


_EIGHTHS = " ▏▎▍▌▋▊▉"


def meter(value: int, most: int, cells: int) -> str:
    """A bar of ``value`` against ``most``, ``most`` filling ``cells`` cells, in eighths of a cell
    (a value above nothing shows at least an eighth)."""
    if value <= 0 or most <= 0:
        return ""
    eighths = max(1, round(min(value, most) / most * cells * 8))
    full, part = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[part] if part else "")
