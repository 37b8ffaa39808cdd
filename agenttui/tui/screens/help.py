"""The help screen: every binding of the screen below it, with its key and id."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from agenttui.runs.statuses.state import RunState
from agenttui.tui.screens.base import AppModal
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.scrolling_pane import ScrollingPane


def binding_table(screen: Screen[Any]) -> Table:
    """The bindings active on ``screen`` (focused widget, screen, app): one row per action, all its keys."""
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("keys", no_wrap=True, min_width=14)
    table.add_column("does", min_width=24)
    table.add_column("id", style="italic", no_wrap=True)
    rows: dict[tuple[str, str, str], list[str]] = {}
    actives = list(screen.active_bindings.values())
    if isinstance(screen, ModalScreen):  # a dialog's own keys first, then its focused widget's
        actives.sort(key=lambda active: active.node is not screen)
    for active in actives:
        binding = active.binding
        keys = rows.setdefault((binding.action, binding.description, binding.id or ""), [])
        label = screen.app.get_key_display(binding)
        if label not in keys:
            keys.append(label)
    for (action, description, binding_id), keys in rows.items():
        table.add_row(Text(" ".join(keys)), Text(description or action), Text(binding_id))
    return table


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
            first = ("q or esc closes the dialog (never the app)." if isinstance(self._under, ModalScreen)
                     else "ctrl+p opens the command palette: every action, by name.")  # fmt: skip
            yield Static(
                Text(f"{first}\nNothing is written to the store unless you confirm an action."), id="help-footnote"
            )

    def on_mount(self) -> None:
        for legend in self.query(HeaderBar):
            legend.show(status_legend())
