"""The help screen: every key of the screen below it, as bound, grouped by what it does."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from agenttui.runs.statuses.state import RunState
from agenttui.tui.keymap import key_of
from agenttui.tui.screens.base import AppModal
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.scrolling_pane import ScrollingPane

#: The help's groups of a screen's keys, by what they do, in the order shown; the app's keys
#: come after them, and last whatever no group names: moving about a list or a pane.
GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    ("Find and filter", frozenset({
        "runs.filter", "runs.filter-done", "runs.clear-filter", "runs.status-filter", "runs.open-view", "runs.save-view",
        "runs.sort-cost", "run.search", "run.next-hit", "run.previous-hit", "run.jump", "compare.next",
        "compare.previous", "compare.differing",
    })),
    ("Act on runs (each asks first)", frozenset({
        "runs.operate", "runs.approve", "runs.deny", "runs.recover-all", "run.operate", "run.approve", "run.deny",
    })),
    ("Mark and compare", frozenset({"runs.mark", "runs.mark-shown", "runs.clear-marks", "runs.diff", "runs.compare"})),
    ("Replay", frozenset({
        "run.replay", "run.replay-agent", "run.replay-live", "replay.next", "replay.end", "replay.previous",
        "replay.jump", "replay.jump-done", "replay.jump-cancel", "replay.until", "replay.fork", "replay.save-fork",
        "replay.compare",
    })),
    ("Panes", frozenset({
        "run.inspector", "run.conversation", "run.events", "run.flowchart", "run.cost", "run.toggle-panes",
        "replay.events", "replay.diff", "replay.flowchart", "inspector.raw", "run.expand", "run.follow",
        "compare.layout", "flow.fold", "screen.explain",
    })),
    ("Copy and export", frozenset({
        "runs.copy", "run.copy", "replay.copy", "diff.copy", "compare.copy", "runs.export", "run.export",
    })),
    ("Screens and stores", frozenset({
        "run.back", "replay.back", "diff.back", "compare.back", "runs.switch-store", "runs.reload",
    })),
    ("This app", frozenset({"app.help", "app.quit", "app.theme"})),
)  # fmt: skip
MOVING_ABOUT = "Moving about"


def binding_table(screen: Screen[Any]) -> RenderableType:
    """The bindings active on ``screen`` (focused widget, screen, app), one row per action with
    every key it has as bound and what it does: a screen's grouped (``GROUPS``), a dialog's its
    own first, then its focused widget's."""
    rows: dict[tuple[str, str], tuple[str, list[str]]] = {}
    actives = list(screen.active_bindings.values())
    if isinstance(screen, ModalScreen):  # a dialog's own keys first, then its focused widget's
        actives.sort(key=lambda active: active.node is not screen)
    for active in actives:
        binding = active.binding
        row = rows.setdefault((binding.action, binding.description), (binding.id or "", []))
        label = screen.app.get_key_display(binding)
        if label not in row[1]:
            row[1].append(label)
    grouped: dict[str, list[tuple[str, str]]] = {}
    for (action, description), (binding_id, keys) in rows.items():
        group = "" if isinstance(screen, ModalScreen) else _group_of(binding_id)
        grouped.setdefault(group, []).append((" ".join(keys), _what_it_does(binding_id, description or action)))
    width = max((cell_len(keys) for listed in grouped.values() for keys, _ in listed), default=1)
    order = ["", *(title for title, _ in GROUPS), MOVING_ABOUT]
    parts: list[RenderableType] = []
    for group in sorted(grouped, key=order.index):
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("keys", no_wrap=True, width=max(width, 5), style="bold")
        table.add_column("does")
        for shown, does in grouped[group]:
            table.add_row(Text(shown), Text(does))
        if parts:
            parts.append(Text(""))
        if group:
            parts.append(Text(group, style="underline"))
        parts.append(table)
    return Group(*parts)


def _group_of(binding_id: str) -> str:
    return next((title for title, ids in GROUPS if binding_id in ids), MOVING_ABOUT)


def _what_it_does(binding_id: str, description: str) -> str:
    """A screen's binding: its palette title's words (not its screen's name); moving about: its
    footer's word (the palette's titles of those are the journal's: "First record")."""
    from agenttui.tui.commands import TITLES

    title = TITLES.get(binding_id)
    return title.partition(": ")[2] if title and _group_of(binding_id) != MOVING_ABOUT else description


def status_legend() -> list[Text]:
    """Each run status's icon and word, as the runs list shows them (icons alone when narrow): parts
    of a ``HeaderBar``, so a line breaks between statuses, never between an icon and its word."""
    return [Text("Statuses", style="bold"), *(Text(f"{state.icon} {state.value}") for state in RunState)]


class HelpScreen(AppModal[None]):
    """``?``: what every key does here, or in the dialog it was asked from (that dialog's keys
    alone). j/k/g/G scroll it, as they move every list; esc, enter, ? or q closes it."""

    BINDINGS = [
        Binding("escape,enter,question_mark,f1", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, under: Screen[Any]) -> None:
        super().__init__()
        self._under = under
        # Read now, while ``under`` is the screen shown: once this dialog is, the app's q is the
        # dialog's (``AgentTuiApp.check_action``), and ``under``'s own keys would lose their quit.
        self._bindings_table = binding_table(under)

    def compose(self) -> ComposeResult:
        # The panel has the focus, so the keys that scroll every pane (j/k/g/G, space) scroll it.
        with ScrollingPane(id="help-panel"):
            title = "Keys of this dialog" if isinstance(self._under, ModalScreen) else "Keys"
            yield Static(Text(title, style="bold"), id="help-title")
            yield Static(self._bindings_table, id="help-bindings")
            if not isinstance(self._under, ModalScreen):
                yield HeaderBar(id="help-statuses")
            palette = self.app.get_key_display(Binding(self.app.COMMAND_PALETTE_BINDING, ""))
            first = (f"{key_of(self, 'modal.close')} or {key_of(self, 'help.close')} closes the dialog (never the app)."
                     if isinstance(self._under, ModalScreen)
                     else f"{palette} opens the command palette: every action, by name.")  # fmt: skip
            yield Static(
                Text(f"{first}\nNothing is written to the store unless you confirm an action."), id="help-footnote"
            )

    def on_mount(self) -> None:
        for legend in self.query(HeaderBar):
            legend.show(status_legend())
