"""Dialogs: an error to acknowledge, a value to give, a choice to make, and the one confirmation
before a write (``Confirmation``), which shows what the write decides, what it writes and the
command that does the same."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, HorizontalScroll, Vertical
from textual.widgets import Button, Input, OptionList, Static
from textual.widgets.option_list import Option

from agenttui.journal.inert import printable
from agenttui.runs.recovery.choices import StepContext
from agenttui.runs.recovery.operations import Cancel, Operation
from agenttui.tui.clipboard import copy_text
from agenttui.tui.keymap import key_of
from agenttui.tui.screens.base import AppModal
from agenttui.tui.widgets.scrolling_pane import ScrollingPane


class ErrorDialog(AppModal[None]):
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


def command_label(dialog: AppModal[Any], copy: str) -> Static:
    """The line over a dialog's ``CommandLine``, naming its keys as bound (``copy``: its copy
    binding's id, the dialog's own; the command scrolls by its ``*.scroll-left``/``-right``)."""
    area = copy.partition(".")[0]
    keys = (key_of(dialog, copy), key_of(dialog, f"{area}.scroll-left"), key_of(dialog, f"{area}.scroll-right"))
    return Static(
        Text(f"Same from the command line ({keys[0]} copies it; {keys[1]} {keys[2]} scroll it):"),
        id="dialog-command-label",
    )


class Confirmation(AppModal[bool]):
    """The one confirmation before a write, whatever writes: a title, a body that scrolls (what
    the write decides and what it writes), the command that does the same on one line, and two
    buttons that stay in view at 80x24 (``#confirm-body`` is capped at a share of the terminal).

    ``w`` writes; ``n``, esc or q writes nothing; ``y`` copies the command (the key that copies
    everywhere), so a reflexive "yes" copies and writes nothing; j/k, g/G and space scroll the
    body. Subclasses give the body (``body``) and any field under it (``fields``).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w", "answer(True)", "Write it", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "Back, write nothing", id="confirm.no"),
        Binding("y", "copy_command", "Copy the command", id="confirm.copy"),
        Binding("left", "scroll_command(-8)", "Scroll the command left", show=False, id="confirm.scroll-left"),
        Binding("right", "scroll_command(8)", "Scroll the command right", show=False, id="confirm.scroll-right"),
    ]

    def __init__(self, title: str, command: str, *, yes: str = "Write it", classes: str = "") -> None:
        super().__init__()
        self._title, self._yes, self._dialog_classes = title, yes, classes
        self.command = command
        """The CLI command that does the same, as ``y`` copies it."""

    def body(self) -> ComposeResult:
        """What the body shows: what the write decides and what it writes."""
        yield from ()

    def fields(self) -> ComposeResult:
        """Fields under the body, always in view (a cancel's reason)."""
        yield from ()

    def dialog_classes(self) -> str:
        """The dialog's classes: ``-step`` and ``-reason`` leave the body fewer rows (app.tcss)."""
        return self._dialog_classes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes=f"-confirm {self.dialog_classes()}".strip()):
            yield Static(Text(printable(self._title), style="bold"), id="dialog-title")
            with ScrollingPane(id="confirm-body"):
                yield from self.body()
            yield from self.fields()
            yield command_label(self, "confirm.copy")
            yield CommandLine(self.command, id="dialog-command")
            if refused := self._refused():
                yield Static(
                    Text(printable(f"Nothing is written here: {refused}."), style="bold"), id="confirm-refused"
                )
            with Horizontal(id="dialog-buttons"):
                yes = "Writes refused" if refused else f"{self._yes} ({key_of(self, 'confirm.yes')})"
                yield Button(yes, id="yes", variant="warning", compact=True, disabled=bool(refused))
                yield Button(
                    f"Back, write nothing ({key_of(self, 'confirm.no')})", id="no", variant="primary", compact=True
                )

    def _refused(self) -> str:
        """Why the app refuses every write (``AgentTuiApp.writes_refused``), or ""."""
        return str(getattr(self.app, "writes_refused", ""))

    def on_mount(self) -> None:
        # The body has the focus: j/k scroll it, and enter, which a focused "no" would take, does nothing.
        self.query_one("#confirm-body").focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        if yes and (refused := self._refused()):
            self.notify(printable(f"nothing written: {refused}"), severity="warning", markup=False)
            return
        self.dismiss(yes)

    def action_copy_command(self) -> None:
        copy_text(self, self.command, "the command", one_line=True)

    def action_scroll_command(self, columns: int) -> None:
        self.query_one(CommandLine).scroll_relative(x=columns, animate=False)

    def show_command(self, command: str) -> None:
        """Show and copy ``command`` from now on (a field changed what the write is)."""
        self.command = command
        self.query_one(CommandLine).show(command)


class ConfirmDialog(Confirmation):
    """The confirmation of one write: of an operation on one run (``ConfirmDialog.of``: approve,
    deny, answer, resolve, cancel, re-drive, release or break a lease, a fork saved), what the
    step is (``StepContext``: the call, its arguments in full, the turn that asked for it, why the
    run waits) and what will be written; of another write (recover-all's pass, a file replaced,
    tools run live), what it does. A cancel's reason is a field (tab reaches it), recorded in
    ``run:cancelled``: ``operation`` is the write as confirmed, read it once dismissed with yes.
    """

    def __init__(
        self,
        title: str,
        will_write: str,
        command: str,
        *,
        heading: str = "Will write:",
        yes: str = "Write it",
        lead: str = "",
        step: StepContext | None = None,
    ) -> None:
        super().__init__(title, command, yes=yes)
        self._will_write, self._heading = will_write, heading
        self.lead = lead
        """A line above the rest: why it is asked now (a re-drive offered after a write)."""
        self.step = step
        """What the step the write decides is (None: a write that decides no step)."""
        self.operation: Operation | None = None
        """The operation as confirmed (``of``), a cancel with the reason as typed."""
        self._store_url = ""

    @classmethod
    def of(
        cls, operation: Operation, store_url: str, step: StepContext | None = None, *, lead: str = ""
    ) -> ConfirmDialog:
        """The confirmation of ``operation``, the step it decides shown first."""
        dialog = cls(operation.title, operation.will_write(), operation.command(store_url), lead=lead, step=step)
        dialog.operation, dialog._store_url = operation, store_url
        return dialog

    def body(self) -> ComposeResult:
        if self.lead:
            yield Static(Text(printable(self.lead, multiline=True)), id="dialog-lead")
        if self.step is None:
            yield Static(self._will_write_text(), id="dialog-body")
        else:
            yield Static(Text(printable(_clipped("\n".join(self.step.lines())), multiline=True)), id="confirm-step")

    def fields(self) -> ComposeResult:
        # Under a step, what will be written stays in view below it, however far the step scrolls.
        if self.step is not None:
            yield Static(self._will_write_text(), id="dialog-body", classes="-fixed")
        if isinstance(self.operation, Cancel):
            yield from reason_field(self.operation.reason)

    def dialog_classes(self) -> str:
        return " ".join(
            c for c, on in (("-step", self.step is not None), ("-reason", isinstance(self.operation, Cancel))) if on
        )

    def _will_write_text(self) -> Text:
        return Text(self._heading + "\n" + printable(self._will_write, multiline=True))

    @on(Input.Changed, "#confirm-reason")
    def reason_changed(self, event: Input.Changed) -> None:
        assert isinstance(self.operation, Cancel)
        self.operation = replace(self.operation, reason=event.value)
        self._will_write = self.operation.will_write()
        self.query_one("#dialog-body", Static).update(self._will_write_text())
        self.show_command(self.operation.command(self._store_url))

    @on(Input.Submitted, "#confirm-reason")
    def reason_done(self) -> None:
        self.query_one("#confirm-body").focus()  # back where w, n and y answer


def reason_field(reason: str) -> ComposeResult:
    """A cancel's reason, under a confirmation's body: tab reaches it, enter goes back to the body."""
    with Horizontal(id="confirm-reason-row"):
        yield Static("Reason (tab):", id="confirm-reason-label")
        yield Input(reason, id="confirm-reason", compact=True, select_on_focus=False)


#: The most of a step's text a confirmation shows: arguments of a megabyte would take the dialog
#: seconds to lay out (the inspector and ``agenttui show`` show them whole).
STEP_CHARS = 20_000


def _clipped(text: str) -> str:
    if len(text) <= STEP_CHARS:
        return text
    return text[:STEP_CHARS] + f"\n… {len(text) - STEP_CHARS:,} more characters (the inspector shows them all)"


class PromptDialog(AppModal[str | None]):
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


class ChoiceDialog(AppModal[int | None]):
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
