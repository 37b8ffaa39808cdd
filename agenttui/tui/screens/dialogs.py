"""Dialogs: an error to acknowledge, and a confirmation that shows exactly what will be written."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from agenttui.journal.inert import printable


class ErrorDialog(ModalScreen[None]):
    """An error the core raised, with its title; enter or esc closes it."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close", id="error.close")]

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self._title, self._message = title, message

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="-error"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            yield Static(Text(printable(self._message, multiline=True)), id="dialog-body")
            with Horizontal(id="dialog-buttons"):
                yield Button("Close", id="close", variant="primary")

    def on_button_pressed(self) -> None:
        self.dismiss()


class ConfirmDialog(ModalScreen[bool]):
    """Asks before a write: shows what will be written and the equivalent CLI command."""

    BINDINGS = [
        Binding("y", "answer(True)", "Yes, write it", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(
        self, title: str, will_write: str, command: str, *, heading: str = "Will write:", yes: str = "Write it (y)"
    ) -> None:
        super().__init__()
        self._title, self._will_write, self._command = title, will_write, command
        self._heading, self._yes = heading, yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            yield Static(Text(self._heading + "\n" + printable(self._will_write, multiline=True)), id="dialog-body")
            yield Static(Text("Same from the command line:\n  " + printable(self._command)), id="dialog-command")
            with Horizontal(id="dialog-buttons"):
                yield Button(self._yes, id="yes", variant="warning")
                yield Button("Cancel (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class PromptDialog(ModalScreen[str | None]):
    """Asks for one value (an answer, a result); enter submits, esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, prompt: str, placeholder: str = "") -> None:
        super().__init__()
        self._title, self._prompt, self._placeholder = title, prompt, placeholder

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            yield Static(Text(printable(self._prompt, multiline=True)), id="dialog-body")
            yield Input(placeholder=self._placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceDialog(ModalScreen[int | None]):
    """Pick one of several actions; enter picks, esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choice.cancel")]

    def __init__(self, title: str, choices: list[str]) -> None:
        super().__init__()
        self._title, self._choices = title, choices

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            yield OptionList(*(Option(Text(printable(c))) for c in self._choices), id="choice-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_cancel(self) -> None:
        self.dismiss(None)
