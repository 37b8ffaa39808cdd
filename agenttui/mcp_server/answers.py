"""Answers an agent reads: every string inert, the whole within a byte budget.

An agent's context is small and its terminal is a terminal: a value read from a store reaches it
only through ``printable`` (every control, bidi and invisible character made visible, as every
view of the CLI and the TUI shows it), and an answer longer than the caller's budget has its
longest strings cut, each with a marker saying how much was cut and how to read the rest.
"""

from __future__ import annotations

import json
from typing import Any

from agenttui.journal.inert import printable, printable_as_json

#: The budget of an answer when the caller sets none: about 32 kB of JSON.
DEFAULT_BUDGET = 32_000
#: The least budget a caller may set: below it no page of anything fits.
LEAST_BUDGET = 2_000
#: A string cut to fit keeps at least this many characters.
_KEPT = 120
#: What a cut string's marker takes, about (the marker says how to read the rest).
_MARKER_ROOM = 160


def inert(value: Any) -> Any:
    """``value`` with every string, keys included, made printable (a run id, a tool result, an
    error message: anything from a store may hold escape sequences). Checked in one pass over
    its JSON first: most answers hold nothing to make printable, and are given back as they are."""
    if printable_as_json(json.dumps(value, ensure_ascii=False)):
        return value
    return _printable_everywhere(value)


def _printable_everywhere(value: Any) -> Any:
    if isinstance(value, str):
        return printable(value, multiline=True)
    if isinstance(value, dict):
        return {printable(str(key), multiline=True): _printable_everywhere(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_printable_everywhere(item) for item in value]
    return value


def size_of(value: Any) -> int:
    """The bytes of ``value`` as JSON (UTF-8), as the answer carries it."""
    return len(json.dumps(value, ensure_ascii=False).encode())


def fit(value: dict[str, Any], budget: int, *, read_more: str) -> dict[str, Any]:
    """``value`` (the caller's no longer: it may be changed in place) made inert and cut to
    ``budget`` bytes of JSON: its longest strings first, each
    ending in a marker (``read_more`` says how to read what was cut). An answer cut says so in
    ``cut``. Lists are not cut here: a paged answer takes as many items as fit (``take_fitting``)."""
    answer: dict[str, Any] = inert(value)
    excess = size_of(answer) - budget
    if excess <= 0:
        return answer
    answer["cut"] = f"the answer was cut to its budget of {budget:,} bytes: {read_more}"
    excess = size_of(answer) - budget
    strings = [(container, key) for container, key in _leaves(answer) if isinstance(container[key], str)]
    strings.sort(key=lambda at: len(at[0][at[1]]), reverse=True)
    for container, key in strings:  # the longest first, each cut once
        if excess <= 0:
            break
        text: str = container[key]
        keep = max(_KEPT, len(text) - excess - _MARKER_ROOM)
        if keep >= len(text):
            break  # the rest are as short as a cut string
        shortened = text[:keep] + f"…[cut: {len(text) - keep:,} more characters; {read_more}]"
        excess -= size_of(text) - size_of(shortened)  # what the answer shrank by, without making it again
        container[key] = shortened
    if (excess := size_of(answer) - budget) <= 0:
        return answer
    # Many short values: the answer's JSON text itself, cut.
    text = json.dumps(answer, ensure_ascii=False)
    keep = len(text)
    while True:  # escaped once more inside the answer, and a character may take more than a byte
        cut = {"cut": answer["cut"], "json_text": text[:keep] + "…"}
        over = size_of(cut) - budget
        if over <= 0 or keep == 0:
            return cut
        keep = max(0, keep - over // 2 - 1)


def take_fitting(items: list[Any], budget: int) -> list[Any]:
    """The first of ``items`` whose JSON fits ``budget`` bytes, at least one (as stored: made
    inert, a value may grow a little; ``fit`` cuts what then does not fit)."""
    if size_of(items) <= budget:  # most pages: one measure, not one an item
        return items
    taken: list[Any] = []
    used = 2
    for item in items:
        used += size_of(item) + 1
        if taken and used > budget:
            break
        taken.append(item)
    return taken


def _leaves(value: Any) -> list[tuple[Any, Any]]:
    """Every (container, key) holding a string or a list within ``value``."""
    found: list[tuple[Any, Any]] = []
    stack = [value]
    while stack:
        container = stack.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, item in items:
            if isinstance(item, str | list):
                found.append((container, key))
            if isinstance(item, dict | list):
                stack.append(item)
    return found
