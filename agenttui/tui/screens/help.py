"""The help screen: every binding of the screen below it, with its key and id."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static


def binding_table(screen: Screen) -> Table:
    """The bindings active on ``screen`` (focused widget, screen, app), deduplicated by action."""
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False, expand=True)
    table.add_column("key", no_wrap=True)
    table.add_column("does")
    table.add_column("id", style="italic", no_wrap=True)
    seen: set[tuple[str, str]] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        marker = (binding.action, binding.description)
        label = screen.app.get_key_display(binding)
        if marker in seen:
            continue
        seen.add(marker)
        table.add_row(Text(label or key), Text(binding.description or binding.action), Text(binding.id or ""))
    return table


class HelpScreen(ModalScreen[None]):
    """``?``: what every key does here. Any of esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self._under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-panel"):
            yield Static(Text("Keys", style="bold"), id="help-title")
            yield Static(binding_table(self._under), id="help-bindings")
            yield Static(
                Text("ctrl+p opens the command palette: every action, by name.\n"
                     "Nothing is written to the store unless you confirm an action."),  # fmt: skip
                id="help-footnote",
            )
