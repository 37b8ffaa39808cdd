"""The help screen: every binding of the screen below it, with its key and id."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from agenttui.runs.state import RunState
from agenttui.tui.widgets.header_bar import HeaderBar
from agenttui.tui.widgets.scrolling_pane import ScrollingPane


def binding_table(screen: Screen[Any]) -> Table:
    """The bindings active on ``screen`` (focused widget, screen, app): one row per action, all its keys."""
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("keys", no_wrap=True, min_width=14)
    table.add_column("does", min_width=24)
    table.add_column("id", style="italic", no_wrap=True)
    rows: dict[tuple[str, str, str], list[str]] = {}
    for active in screen.active_bindings.values():
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


class HelpScreen(ModalScreen[None]):
    """``?``: what every key does here. j/k/g/G scroll it, as they move every list; esc, enter or
    ? closes it (q quits, as everywhere)."""

    BINDINGS = [
        Binding("escape,enter,question_mark", "dismiss", "Close", id="help.close"),
    ]

    def __init__(self, under: Screen[Any]) -> None:
        super().__init__()
        self._under = under

    def compose(self) -> ComposeResult:
        # The panel has the focus, so the keys that scroll every pane (j/k/g/G, space) scroll it.
        with ScrollingPane(id="help-panel"):
            yield Static(Text("Keys", style="bold"), id="help-title")
            yield Static(binding_table(self._under), id="help-bindings")
            yield HeaderBar(id="help-statuses")
            yield Static(
                Text("ctrl+p opens the command palette: every action, by name.\n"
                     "Nothing is written to the store unless you confirm an action."),
                id="help-footnote",
            )  # fmt: skip

    def on_mount(self) -> None:
        self.query_one(HeaderBar).show(status_legend())
