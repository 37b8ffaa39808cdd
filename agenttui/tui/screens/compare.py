"""Two runs side by side: aligned by turn, the first difference selected, the tokens each turn spent."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.message import Message
from textual.widgets import Static

from agenttui.journal.describe import printable, printable_id
from agenttui.render.diff import DiffRow
from agenttui.replay.compare import Comparison, Side, TurnPair, compared_turns
from agenttui.runs.reading.view import tool_names
from agenttui.tui.layout import flow_parts, lines_of
from agenttui.tui.screens.base import VIEW_STYLES, StoreScreen
from agenttui.tui.widgets.compare_view import CompareLine, CompareView, compare_lines, tokens_text
from agenttui.tui.widgets.diff_view import diff_detail
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.key_footer import KeyFooter
from agenttui.tui.widgets.scrolling_pane import ScrollingPane
from agenttui.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:
    from agenttui.runs.cost.lens import Spend

TITLE_LINES = 2
"""The header's lines at most, once the parts that must show are in (they may take more)."""
BATCH_SECONDS = 0.1
"""Turns aligned after the first screenful are posted to the screen at most this often."""
SIDE_BY_SIDE_MIN = 120
"""Below this many columns the two runs share one column, interleaved: two halves of 80 columns
leave a record's name and what it holds too little room to tell one record from another."""


class CompareScreen(StoreScreen):
    """``left`` against ``right`` (each a run in its own store): ``n``/``N`` the next and previous
    difference, ``s`` only the turns that differ, ``v`` two columns or one.

    A fork opens it on its original: the records it holds in each ``Side`` (not read again), with
    ``markers_optional`` (a replay writes no attempt markers) and its session's ``not_compared``."""

    CSS_PATH = VIEW_STYLES

    @dataclass
    class TurnsCompared(Message):
        """The next turns of both runs, aligned; ``done`` with the last."""

        turns: list[TurnPair]
        done: bool = False

    AUTO_FOCUS = "#compare-view"
    BINDINGS = [
        Binding("escape", "back", "Back", id="compare.back"),
        Binding("n", "next_difference", "Next difference", id="compare.next"),
        Binding("N", "previous_difference", "Previous difference", id="compare.previous"),
        Binding("s", "toggle_same", "Differing turns only", id="compare.differing"),
        Binding("v", "toggle_layout", "Columns or interleaved", show=False, id="compare.layout"),
        Binding("y", "copy", "Copy step name", show=False, id="compare.copy"),
    ]

    def __init__(
        self, left: Side, right: Side, *, markers_optional: bool = False, not_compared: Collection[str] = ()
    ) -> None:
        super().__init__()
        self.left, self.right = left, right
        self.markers_optional = markers_optional
        """Attempt, approval and not-started markers on one side only are not differences (a fork
        replayed with recorded tools writes none)."""
        self.not_compared = tuple(not_compared)
        """Members of the model turns left out of the comparison (``compare_runs``)."""
        self.turns: list[TurnPair] = []
        """The turns aligned so far (all of them once ``done``)."""
        self.comparison: Comparison | None = None
        """Of the turns aligned so far."""
        self.done = False
        self._jumped = False
        """The cursor was taken to the first difference once: later batches leave it be."""
        self.differing_only = False
        """Identical turns folded away (``s``)."""
        self.interleaved: bool | None = None
        """One column or two, as asked (``v``); None: by the width (``SIDE_BY_SIDE_MIN``)."""
        self._detail_shown: tuple[int, int] | None = None
        self.costs: tuple[Spend, Spend] | None = None
        """What each run cost, its sub-runs rolled up: read once both are aligned."""

    def compose(self) -> ComposeResult:
        yield HeaderBar(id="compare-title")
        yield Static(id="compare-columns")
        yield CompareView(id="compare-view")
        with ScrollingPane(id="compare-detail-scroll"):
            yield Static(id="compare-detail")
        yield StatusBar(id="status-bar")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one(CompareView).empty_text = "Reading both runs…"
        self._title()
        self.compare()

    @work(exclusive=True, group="compare", exit_on_error=False)
    async def compare(self) -> None:
        """Align both runs turn by turn as they are read; post the first screenful at once, the
        first difference (and a screenful after it) as soon as it is aligned, the rest in batches.

        The first screenful and the first difference are painted before aligning on: records a
        side holds, or a store that answers without waiting, would otherwise keep the loop until
        the end."""
        batch: list[TurnPair] = []
        screen_lines = max(self.size.height, 1)
        # Lines aligned so far, and at how many to paint before going on: the first screenful,
        # then a screenful past the first difference, so that it shows with what follows it.
        lines, show_at, found = 0, screen_lines, False
        last_post = time.monotonic()
        turns = compared_turns(
            self.left, self.right, markers_optional=self.markers_optional, not_compared=self.not_compared
        )
        async for turn in turns:
            batch.append(turn)
            lines += len(turn.rows) + 1
            if not found and turn.differs:
                found, show_at = True, lines + screen_lines
            if lines >= show_at:
                show_at = 1 << 62
                self.post_message(CompareScreen.TurnsCompared(batch))
                batch = []
                painted = asyncio.Event()
                self.call_after_refresh(painted.set)
                await painted.wait()
                last_post = time.monotonic()
            elif time.monotonic() - last_post > BATCH_SECONDS:
                self.post_message(CompareScreen.TurnsCompared(batch))
                batch = []
                await asyncio.sleep(0)
                last_post = time.monotonic()
        self.post_message(CompareScreen.TurnsCompared(batch, done=True))

    def on_compare_screen_turns_compared(self, message: CompareScreen.TurnsCompared) -> None:
        known = len(self.turns)
        self.turns.extend(message.turns)
        self.done = message.done
        self.comparison = Comparison.of(self.turns)
        view = self.query_one(CompareView)
        for index, side in enumerate(("left", "right")):
            records = (getattr(row, side) for turn in message.turns for row in turn.rows)
            view.names[index].update(tool_names(record for record in records if record is not None))
        if known and not self.differing_only and view.interleaved == self.is_interleaved:
            new = compare_lines(message.turns, interleaved=self.is_interleaved, differing_only=False)
            view.add(new, first=self._first_row())
            self._title()
        else:
            self._show_lines()
        if not self._jumped and self._first_row() is not None:
            self._jumped = True
            if view.cursor == 0:  # not moved by then: the first difference is what one came for
                self.jump_to_first()
        if not known:
            self.moved()
        if message.done:
            self._read_costs()

    @work(exclusive=True, group="compare-costs", exit_on_error=False)
    async def _read_costs(self) -> None:
        """What each run cost (the prices read in a thread the first time), then the title says it.
        Without prices (the library fails to load) the title says tokens alone, as before."""
        from agenttui.runs.cost.reading import store_costs

        prices = await self.tui.read_prices()
        (left,) = [cost.total async for cost in store_costs(self.left.store, [self.left.run_id], prices)]
        (right,) = [cost.total async for cost in store_costs(self.right.store, [self.right.run_id], prices)]
        self.costs = (left, right)
        self._title()

    # -- showing -----------------------------------------------------------------------------

    @property
    def is_interleaved(self) -> bool:
        return self.interleaved if self.interleaved is not None else self.size.width < SIDE_BY_SIDE_MIN

    def _show_lines(self) -> None:
        """Lay the comparison out again (the layout or the fold changed), the cursor kept on its
        row, or its turn."""
        if self.comparison is None:
            return
        view = self.query_one(CompareView)
        was = view.current
        lines = compare_lines(self.turns, interleaved=self.is_interleaved, differing_only=self.differing_only)
        view.show(lines, first=self._first_row(), interleaved=self.is_interleaved)
        view.empty_text = "No records on either side." if self.done else "Reading both runs…"
        if was is not None:
            view.cursor = _nearest(lines, was)
        self._title()
        self._columns()

    def _columns(self) -> None:
        """Over two columns, which run each holds; interleaved, the signs say it (− left, + right)."""
        columns = self.query_one("#compare-columns", Static)
        view = self.query_one(CompareView)
        columns.display = self.comparison is not None
        left, right = self.left.label, self.right.label
        columns.update(
            Text(f"    − {printable(left)}   + {printable(right)}")
            if view.interleaved
            else view.column_labels(left, right)
        )

    def _first_row(self) -> DiffRow | None:
        first = self.comparison.first_difference if self.comparison is not None else None
        return None if first is None else first.row

    def jump_to_first(self) -> None:
        """The cursor on the first difference, a few lines of its turn above it in view."""
        view = self.query_one(CompareView)
        first = self._first_row()
        at = next((i for i, line in enumerate(view.items) if first is not None and line.row is first), 0)
        view.cursor = at
        view.scroll_to(y=max(0, at - 3), animate=False)

    def on_resize(self, event: Resize) -> None:
        chosen_by_width = self.comparison is not None and self.interleaved is None
        if chosen_by_width and self.query_one(CompareView).interleaved != self.is_interleaved:
            self._show_lines()
        else:
            self.call_after_refresh(self._columns)

    def _title(self) -> None:
        """The two runs, their tokens and where they first part, always; then, while the header
        stays within ``TITLE_LINES`` at this width, their turns, how many differ, and the tokens
        of the turn under the cursor (``HeaderBar`` wraps the parts, never cuts one)."""
        left, right = printable_id(self.left.label), printable_id(self.right.label)
        parts = [Text(f"compare {left} ⇄ {right}", style="bold")]
        optional: list[Text] = []
        comparison = self.comparison
        if not self.done:
            parts.append(Text(f"reading both runs… turn {len(self.turns):,}"))
        if comparison is not None:
            total = comparison.left_usage.total, comparison.right_usage.total
            parts.append(Text(f"tokens {total[0]:,} → {total[1]:,} ({comparison.token_delta:+,})"))
            first = comparison.first_difference
            if first is None:
                so_far = "" if self.done else " so far"
                parts.append(Text(f"✓ the same{so_far} (salts, claims and times aside)"))
            else:
                parts.append(Text(f"first: {printable(first.words(self.left.label, self.right.label))}", style="bold"))
                optional.append(Text(f"{len(comparison.differing_turns):,} of {len(comparison.turns):,} turns differ"))
            if self.costs is not None:
                from agenttui.runs.cost.lens import cost_change

                optional.append(Text(cost_change(*self.costs)))
            optional.append(Text(f"turns {comparison.left_turns:,} ⇄ {comparison.right_turns:,}"))
            line = self.query_one(CompareView).current
            if line is not None and not line.folded:
                optional.append(Text(f"this turn ({line.turn.number}): {line.turn.token_delta:+,} tokens"))
        width = max(1, self.size.width - 2)
        for part in optional:
            if lines_of(flow_parts([*parts, part], width)) > TITLE_LINES:
                break
            parts.append(part)
        self.query_one("#compare-title", HeaderBar).show(parts)

    @on(CompareView.CursorMoved, "#compare-view")
    def moved(self) -> None:
        line = self.query_one(CompareView).current
        self._title()
        if line is None:
            return
        shown = (line.turn.number, id(line.row))
        if shown == self._detail_shown:
            return
        self._detail_shown = shown
        self.query_one("#compare-detail", Static).update(self.detail(line))

    def detail(self, line: CompareLine) -> RenderableType:
        """The turn under the cursor: its tokens, then each differing record's payload diff, the
        one under the cursor first."""
        turn = line.turn
        if line.folded:
            return Text(f"{line.folded:,} turns from turn {turn.number} are the same on both sides", style="italic")
        heading = Text(f"turn {turn.number} · {tokens_text(turn)}", style="bold")
        differing = list(turn.differing)
        if line.row in differing:
            differing.remove(line.row)
            differing.insert(0, line.row)
        if not differing:
            return Group(heading, Text("the same on both sides (salts, claims and times aside)", style="italic"))
        labels = {"left_label": self.left.label, "right_label": self.right.label}
        return Group(heading, *(diff_detail(row, **labels) for row in differing))

    # -- actions -----------------------------------------------------------------------------

    def _difference_lines(self) -> list[int]:
        # A changed row drawn on two lines (interleaved) counts once: its first line.
        view = self.query_one(CompareView)
        return [i for i, line in enumerate(view.items) if line.differs and line.side != "right"]

    def action_next_difference(self) -> None:
        view = self.query_one(CompareView)
        at = next((i for i in self._difference_lines() if i > view.cursor), None)
        if at is None:
            self.notify("no difference after this one", timeout=2)
        else:
            view.cursor = at

    def action_previous_difference(self) -> None:
        view = self.query_one(CompareView)
        at = next((i for i in reversed(self._difference_lines()) if i < view.cursor), None)
        if at is None:
            self.notify("no difference before this one", timeout=2)
        else:
            view.cursor = at

    def action_toggle_same(self) -> None:
        self.differing_only = not self.differing_only
        self._show_lines()
        self.notify("differing turns only" if self.differing_only else "every turn", timeout=2)

    def action_toggle_layout(self) -> None:
        self.interleaved = not self.is_interleaved
        self._show_lines()

    @on(CompareView.Chosen, "#compare-view")
    def open_detail(self) -> None:
        """Enter on a line: the detail takes the keys (j/k scroll it; esc comes back)."""
        self.focus_now(self.query_one("#compare-detail-scroll"))

    def action_back(self) -> None:
        self.back_to(self.query_one(CompareView))

    def action_copy(self) -> None:
        line = self.query_one(CompareView).current
        name = None if line is None or line.row is None else line.row.name
        self.copy_step_name(name, "no record under the cursor (a turn's heading)")


def _nearest(lines: list[CompareLine], was: CompareLine) -> int:
    """Where ``was`` stands among ``lines``: the same row, else its turn's heading, else the
    heading or fold just before where its turn would be."""
    number, heading, before = was.turn.number, None, 0
    for index, line in enumerate(lines):
        if was.row is not None and line.row is was.row:
            return index
        if line.row is None and line.turn.number <= number:
            before = index
            if heading is None and line.turn.number == number and not line.folded:
                heading = index
    return heading if heading is not None else before
