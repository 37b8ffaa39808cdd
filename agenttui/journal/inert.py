"""Untrusted text made inert for a terminal: every view prints record content through these.

Model text, tool results and run ids may carry escape sequences, control characters or bidi
overrides. Apart from ``describe`` (which re-exports them, with the records' summaries), so that
a screen that shows only run ids imports no records (benchmarks/startup.py).
"""

from __future__ import annotations

import functools
import json
import re
import shlex
import unicodedata
from typing import Any

# C0 and C1 controls (tab and newline are handled by the caller's choice), DEL, the bidi
# embeddings, overrides and isolates that can reorder what a terminal shows, and the invisible
# characters (zero-width spaces and joiners, word joiner, soft hyphen, BOM) that make two
# different strings print alike.
_UNSAFE_CHARS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\xad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ud800-\udfff"
)
_UNSAFE = re.compile(f"[{_UNSAFE_CHARS}]")
# An id is one line whose every character counts: a tab or a newline in it is shown as an escape
# too, not as the space or the ⏎ that prose gets (which the id could hold literally).
_UNSAFE_IN_ID = re.compile(f"[\t\n{_UNSAFE_CHARS}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


@functools.cache
def _escape_like(unsafe: str) -> re.Pattern[str]:
    """The backslashes that would read as the start of an escape: before ``x`` and two hex
    digits, ``u`` and four, or a character ``unsafe`` (a character class) turns into an escape."""
    return re.compile(f"\\\\+(?=x[0-9a-fA-F]{{2}}|u[0-9a-fA-F]{{4}}|{unsafe})")


def _escaped(text: str, unsafe: re.Pattern[str]) -> str:
    """``text`` with each ``unsafe`` character shown as an escape (``\\x1b``, ``\\u202e``), and each
    backslash that would make the text read as one shown doubled (``\\\\x1b`` is the text
    ``\\x1b``, four characters): what shows as an escape is always a character escaped."""
    if "\\" in text:
        text = _escape_like(unsafe.pattern).sub(lambda run: run.group() * 2, text)
    return unsafe.sub(_visible, text)


def printable(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control and bidi character shown as an escape, never interpreted.

    Newlines and tabs are kept when ``multiline``; otherwise they become ``⏎`` and spaces. A
    backslash is shown as it is: values are mostly JSON text, where it starts JSON's own escapes
    (an id, which must never show as another, goes through ``printable_id``).
    """
    text = _UNSAFE.sub(_visible, text)
    if not multiline:
        text = text.replace("\r\n", "⏎").replace("\n", "⏎").replace("\r", "⏎").replace("\t", " ")
    else:
        text = text.replace("\r", "\\r")
    return text


#: In JSON text (``ensure_ascii=False``), a character ``printable`` shows escaped: raw, or as JSON
#: writes it (``\b``, ``\f``, ``\r``, ``\u0000``-``\u001f``, ``\u007f``).
_UNSAFE_IN_JSON_TEXT = re.compile(f"[{_UNSAFE_CHARS}]|\\\\[bfr]|\\\\u00[01]|\\\\u007f")


def printable_as_json(text: str) -> bool:
    """Whether every string JSON text decodes to is already as ``printable(..., multiline=True)``
    shows it: one pass over the text instead of one call a string. A text holding a backslash
    before ``b``, ``f`` or ``r`` may be answered False wrongly (a ``\\b``); never True wrongly."""
    return _UNSAFE_IN_JSON_TEXT.search(text) is None


# JSON escapes what JSON must; these are what a terminal could still act on, escaped as JSON allows.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def printable_id(text: str) -> str:
    """An id (a run id, a step name, a call id) made unambiguous, so two ids that differ are never
    shown alike: ``printable``, with tabs and newlines escaped too, a backslash that would read as
    the start of an escape doubled (``run\\x1b`` is ESC, ``run\\\\x1b`` the four characters), and
    letters of another script mixed into Latin ones (a Cyrillic ``а`` in ``refund-а1002``) shown
    as escapes."""
    if text.isascii() and text.isprintable() and "\\" not in text:  # most ids: nothing to show otherwise
        return text
    scripts = {_script(c) for c in text if c.isalpha()}
    if "LATIN" not in scripts or len(scripts) == 1:
        return _escaped(text, _UNSAFE_IN_ID)
    foreign = "".join(sorted(re.escape(c) for c in text if c.isalpha() and _script(c) != "LATIN"))
    return _escaped(text, re.compile(f"[\t\n{_UNSAFE_CHARS}{foreign}]"))


def _script(char: str) -> str:
    return unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]


# Made once: json.dumps with options builds a new encoder on every call (a CLI may write a
# million objects).
_ENCODERS = {indent: json.JSONEncoder(indent=indent, ensure_ascii=False) for indent in (None, 2)}


def safe_json(value: Any, *, indent: int | None = 2) -> str:
    """JSON text for a terminal or a pipe: readable Unicode, but no byte a terminal acts on."""
    encoder = _ENCODERS.get(indent) or json.JSONEncoder(indent=indent, ensure_ascii=False)
    return inert_json(encoder.encode(value))


def inert_json(text: str) -> str:
    """JSON text (as ``json`` writes it, Unicode readable) with each character a terminal acts on
    written as its escape: what ``safe_json`` writes of it. Text it made is left as it is, so
    many values' texts joined are made inert at once."""
    return _UNSAFE_IN_JSON.sub(_escape_in_json, text)


def _escape_in_json(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def shell_word(word: str) -> str:
    """``word`` for a POSIX shell command a person copies: quoted as ``shlex.quote`` does, or,
    where it holds a character ``printable`` shows escaped (a filter's or a run id's ESC), in the
    ANSI-C quoting of bash and zsh (``$'...'``), whose escapes are the characters themselves. The
    command then shows inert, and pasted, runs as it was built (an escape ``printable`` shows
    would be four other characters)."""
    if printable_id(word) == word:
        return shlex.quote(word)
    return "$'" + "".join(_ansi_c(char) for char in word) + "'"


def _ansi_c(char: str) -> str:
    if char in "\\'":
        return "\\" + char
    if printable_id(char) == char:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
