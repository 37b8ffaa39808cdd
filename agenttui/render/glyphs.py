"""The characters a flowchart is drawn with: box-drawing Unicode, or plain ASCII for any terminal."""

from __future__ import annotations

from dataclasses import dataclass

from agenttui.render.cells import cell_width, cut, sanitize, wrap_words
from agenttui.render.flow import FAIL_MARK, OK_MARK


@dataclass(frozen=True, slots=True)
class BoxStyle:
    """The border of one kind of box; ``connector`` marks the spine leaving its bottom edge."""

    top_left: str
    top_right: str
    bottom_left: str
    bottom_right: str
    horizontal: str
    vertical: str
    connector: str


ROUNDED = BoxStyle("╭", "╮", "╰", "╯", "─", "│", "┬")
LIGHT = BoxStyle("┌", "┐", "└", "┘", "─", "│", "┬")
HEAVY = BoxStyle("┏", "┓", "┗", "┛", "━", "┃", "┯")
PLAIN = BoxStyle("+", "+", "+", "+", "-", "|", "+")
DASHED = BoxStyle("┌", "┐", "└", "┘", "╌", "╎", "┬")
HEAVY_DASHED = BoxStyle("┏", "┓", "┗", "┛", "╍", "╏", "┯")
DOTTED = BoxStyle("+", "+", "+", "+", ".", ":", "+")


@dataclass(frozen=True, slots=True)
class Glyphs:
    """Every character the renderer adds to the labels it is given."""

    ascii: bool
    rounded: BoxStyle
    """``user`` and ``done``."""
    light: BoxStyle
    heavy: BoxStyle
    """Failures: failed tool calls, denials, folds and sub-agents holding a failure."""
    dashed: BoxStyle
    """Where an unfinished run stands: a step not taken yet."""
    heavy_dashed: BoxStyle
    """Where a run halted: a call whose outcome is unknown."""
    arrow: str
    branch: str
    """A fan-out row's branch off the spine, with its arrow and the space before the label."""
    last_branch: str
    """The branch of the last row of a fan-out that nothing follows."""
    folded: str
    unfolded: str
    then: str
    times: str
    failures: str
    """Between a fold's count and its failure count."""
    ellipsis: str
    fail_mark: str
    ok_mark: str

    def fit(self, text: str, cells: int) -> str:
        """Run-data ``text`` made safe, in this character set, cut to ``cells`` (and never empty)."""
        shown = cut(self._shown(text), cells, self.ellipsis)
        # An empty box has no room for its connector; a label of nothing is shown as one blank.
        return shown if cell_width(shown) else " "

    def wrap(self, text: str, cells: int, lines: int) -> list[str]:
        """Run-data ``text`` made safe, in this character set, wrapped at words in at most
        ``lines`` lines of ``cells``, only the last one cut (``wrap_words``); never no line."""
        return wrap_words(self._shown(text), cells, lines, self.ellipsis) or [" "]

    def _shown(self, text: str) -> str:
        shown = sanitize(text, pictures=not self.ascii)
        if self.ascii:
            shown = shown.replace(FAIL_MARK, self.fail_mark).replace(OK_MARK, self.ok_mark)
        return shown


UNICODE = Glyphs(
    ascii=False, rounded=ROUNDED, light=LIGHT, heavy=HEAVY, dashed=DASHED, heavy_dashed=HEAVY_DASHED, arrow="▼", branch="├─▶ ",
    last_branch="└─▶ ", folded="▸", unfolded="▾", then="→", times="×", failures=" · ",
    ellipsis="…", fail_mark=FAIL_MARK, ok_mark=OK_MARK,
)  # fmt: skip
ASCII = Glyphs(
    ascii=True, rounded=PLAIN, light=PLAIN, heavy=PLAIN, dashed=DOTTED, heavy_dashed=DOTTED, arrow="v", branch="+-> ",
    last_branch="+-> ", folded=">", unfolded="v", then="->", times="x", failures=", ",
    ellipsis="...", fail_mark="x", ok_mark="v",
)  # fmt: skip


def glyphs_for(ascii: bool) -> Glyphs:
    return ASCII if ascii else UNICODE
