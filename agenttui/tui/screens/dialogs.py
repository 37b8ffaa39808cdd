"""Dialogs: an error to acknowledge, and a confirmation that shows exactly what will be written."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, HorizontalScroll, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from agenttui.journal.inert import printable
from agenttui.tui.clipboard import copy_text


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


class CommandLine(HorizontalScroll):
    """A CLI command on one line that never wraps: wider than the dialog, it scrolls sideways
    (focus it, then left/right), so what a terminal shows is the command as typed, ready to select."""

    def __init__(self, command: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.command = command

    def compose(self) -> ComposeResult:
        yield Static(self._text(), id="command-text")

    def show(self, command: str) -> None:
        """Show ``command`` instead (a dialog whose fields change it)."""
        self.command = command
        self.query_one("#command-text", Static).update(self._text())

    def _text(self) -> Text:
        return Text(printable(self.command), no_wrap=True, overflow="ignore")


class ConfirmDialog(ModalScreen[bool]):
    """Asks before a write: shows what will be written and the equivalent CLI command.

    ``w`` writes; ``n`` or esc writes nothing; ``y`` copies the command (the key that copies
    everywhere), so a reflexive "yes" copies and writes nothing.
    """

    BINDINGS = [
        Binding("w", "answer(True)", "Write it", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
        Binding("y", "copy_command", "Copy the command", id="confirm.copy"),
        Binding("left", "scroll_command(-8)", "Scroll the command left", show=False, id="confirm.scroll-left"),
        Binding("right", "scroll_command(8)", "Scroll the command right", show=False, id="confirm.scroll-right"),
    ]

    def __init__(
        self,
        title: str,
        will_write: str,
        command: str,
        *,
        heading: str = "Will write:",
        yes: str = "Write it (w)",
        lead: str = "",
    ) -> None:
        super().__init__()
        self._title, self._will_write = title, will_write
        self._heading, self._yes = heading, yes
        self.lead = lead
        """A line above what will be written: why it is asked now (a re-drive offered after a write)."""
        self.command = command
        """The CLI command that does the same, as ``y`` copies it."""

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            if self.lead:
                yield Static(Text(printable(self.lead, multiline=True)), id="dialog-lead")
            yield Static(Text(self._heading + "\n" + printable(self._will_write, multiline=True)), id="dialog-body")
            yield Static(Text("Same from the command line (y copies it; ← → scroll it):"), id="dialog-command-label")
            yield CommandLine(self.command, id="dialog-command")
            with Horizontal(id="dialog-buttons"):
                yield Button(self._yes, id="yes", variant="warning")
                yield Button("Cancel (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    def action_copy_command(self) -> None:
        copy_text(self, self.command, "the command", one_line=True)

    def action_scroll_command(self, columns: int) -> None:
        self.query_one(CommandLine).scroll_relative(x=columns, animate=False)


class PromptDialog(ModalScreen[str | None]):
    """Asks for one value (an answer, a result); enter submits, esc cancels. Asked again after a
    refusal, it holds what was typed and says under it why it was refused."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, prompt: str, placeholder: str = "", *, value: str = "", problem: str = "") -> None:
        super().__init__()
        self._title, self._prompt, self._placeholder = title, prompt, placeholder
        self._value, self._problem = value, problem

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            yield Static(Text(printable(self._prompt, multiline=True)), id="dialog-body")
            yield Input(self._value, placeholder=self._placeholder, id="prompt-input")
            if self._problem:
                yield Static(Text(printable(self._problem)), id="prompt-problem", classes="-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceList(OptionList):
    """Textual's ``OptionList`` with the keys every list of agenttui's has: j/k, g/G."""

    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, id="choice.down"),
        Binding("k", "cursor_up", "Up", show=False, id="choice.up"),
        Binding("g", "first", "First", show=False, id="choice.first"),
        Binding("G", "last", "Last", show=False, id="choice.last"),
    ]


class ChoiceDialog(ModalScreen[int | None]):
    """Pick one of several actions; j/k or the arrows move, enter picks, esc cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choice.cancel")]

    def __init__(self, title: str, choices: list[str]) -> None:
        super().__init__()
        self._title, self._choices = title, choices

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            yield ChoiceList(*(Option(Text(printable(c))) for c in self._choices), id="choice-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_cancel(self) -> None:
        self.dismiss(None)
