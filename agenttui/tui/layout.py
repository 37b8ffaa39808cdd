"""Fitting text to a terminal's width by priority: ids cut in the middle, explanations wrapped at
words (only their last line cut), header parts that wrap between parts (never inside one), and the
longest run of items, most important first, that fits."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len
from rich.text import Text

from agenttui.render.cells import fit_start, wrap_words

ELLIPSIS = "…"


def middle_truncate(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, its middle given way: ``run-abc…xyz``. Both ends of an
    id tell runs apart (a prefix names the kind, a suffix the instance), so both stay."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    room = width - 1
    head, tail = fit_start(text, (room + 1) // 2), _fit_end(text, room // 2)
    return head + ELLIPSIS + tail


SEPARATORS = "/-_:.>@#"
"""Characters an id's parts are joined with: a shared prefix or suffix is elided to one of them."""


def shared_ends(ids: Iterable[str], prefix: str | None, suffix: str | None) -> tuple[str, str]:
    """The prefix and suffix every id of ``ids`` shares with the others and with ``prefix`` and
    ``suffix`` (those of the ids seen before; None for none): measured as ids are listed, once
    each, so a store's 100,000 runs are never walked again."""
    for run_id in ids:
        if prefix is None or suffix is None:
            prefix, suffix = run_id, run_id
            continue
        # Most ids keep both (C-speed checks): 100,000 ids take about 20 ms, not 350.
        if not run_id.startswith(prefix):
            prefix = _common_start(prefix, run_id)
        if not run_id.endswith(suffix):
            suffix = _common_start(suffix[::-1], run_id[::-1])[::-1]
    if prefix is None or suffix is None:
        return "", ""
    return prefix, suffix


def elide_shared(text: str, width: int, prefix: str, suffix: str) -> str:
    """``text`` (an id) in ``width`` cells: first without the prefix and suffix all listed ids
    share (they tell no run apart), then cut in the middle (``middle_truncate``)."""
    if cell_len(text) <= width:
        return text
    if text == prefix:  # one id alone shares all of itself: only its middle gives way
        return middle_truncate(text, width)
    # What is elided is whole parts: ``tenant-acme/`` of ``tenant-acme/refund-a1002``.
    head = prefix[: _last_separator(prefix) + 1]
    if head and text.startswith(head) and len(head) < len(text):
        text = ELLIPSIS + text[len(head) :]
    tail_at = _first_separator(suffix)
    tail = suffix[tail_at:] if tail_at >= 0 else ""
    if cell_len(text) > width and tail and text.endswith(tail) and len(tail) < len(text) - 1:
        text = text[: len(text) - len(tail)] + ELLIPSIS
    return middle_truncate(text, width)


def _common_start(one: str, other: str) -> str:
    for index, (a, b) in enumerate(zip(one, other, strict=False)):
        if a != b:
            return one[:index]
    return one if len(one) <= len(other) else other


def _last_separator(text: str) -> int:
    return max(text.rfind(sep) for sep in SEPARATORS)


def _first_separator(text: str) -> int:
    found = [at for sep in SEPARATORS if (at := text.find(sep)) >= 0]
    return min(found, default=-1)


#: Lines a header part that explains (a reason, a verdict) may take before its last line is cut.
EXPLANATION_LINES = 3
#: Words that make a part an explanation (wrapped at words); fewer ("run <id>") is a name, cut in
#: the middle, so both ends of a long id stay.
EXPLANATION_WORDS = 3


def flow_parts(parts: Iterable[Text], width: int, *, separator: str = "   ") -> Text:
    """Parts of a header on as many lines as they need: each part goes on the line it fits,
    else starts the next line, so a part is never split between lines. One longer than a whole
    line is an explanation wrapped at words on lines of its own (``wrap_words``), or, a name (a
    very long run id and its label), cut in the middle; either keeps its style."""
    out = Text(no_wrap=False, overflow="fold")
    used = 0
    for given in parts:
        if not given.plain:
            continue
        if given.cell_len > width and len(given.plain.split()) >= EXPLANATION_WORDS:
            wrapped = wrap_words(given.plain, width, EXPLANATION_LINES)
            if used:
                out.append("\n")
            out.append(Text("\n".join(wrapped), style=given.style))
            used = cell_len(wrapped[-1])
            continue
        part = given if given.cell_len <= width else Text(middle_truncate(given.plain, width), style=given.style)
        size = part.cell_len
        if used and used + len(separator) + size > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(separator)
            used += len(separator)
        out.append_text(part)
        used += size
    return out


def lines_of(text: Text) -> int:
    """How many lines ``flow_parts`` made."""
    return text.plain.count("\n") + 1


def fit_in_order(widths: Sequence[int], width: int, *, always: int = 0) -> int:
    """How many of ``widths`` (most important first) fit in ``width`` together: the first
    ``always`` count whatever room is left, and the rest stop at the first that does not fit, so a
    less important item never shows where a more important one was left out."""
    used, count = 0, 0
    for index, size in enumerate(widths):
        if index >= always and used + size > width:
            break
        used += size
        count += 1
    return count


def _fit_end(text: str, width: int) -> str:
    if width <= 0:
        return ""
    used = 0
    for index in range(len(text) - 1, -1, -1):
        used += cell_len(text[index])
        if used > width:
            return text[index + 1 :]
    return text
