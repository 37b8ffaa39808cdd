"""The fork editor: a recorded model turn or tool result as JSON, edited in the app or in $EDITOR,
checked against the record's shape before a fork takes it."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static, TextArea

from agenttui.journal.inert import printable
from agenttui.journal.record import Record, StepKind
from agenttui.replay.edit import BadEdit, editable_value, make_edit
from agenttui.tui.keymap import key_of
from agenttui.tui.screens.base import AppModal


class ValueArea(TextArea):
    """The value's text area, ctrl+a selecting all of it as in most editors (TextArea's own ctrl+a
    goes to the line's start, which home does too; f7 still selects all)."""

    BINDINGS = [Binding("ctrl+a", "select_all", "Select all", show=False, id="fork-editor.select-all")]


class ForkEditor(AppModal[str | None]):
    """Edit ``record``'s value; ctrl+s takes it once it fits (the error shows inline otherwise),
    ctrl+o opens it in $EDITOR (ctrl+e is the text area's end of line) with the app suspended, esc gives up."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Fork with it", id="fork-editor.save"),
        Binding("ctrl+o", "external", "Edit in $EDITOR", id="fork-editor.external"),
        Binding("escape", "cancel", "Cancel", id="fork-editor.cancel"),
    ]

    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record
        what = "a model turn: its message" if record.kind == StepKind.MODEL else "a tool result: the tool's JSON"
        self._title = f"Fork at {record.name} ({what})"

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-editor"):
            yield Static(Text(printable(self._title), style="bold"), id="fork-editor-title")
            yield Static(
                Text(
                    f"{key_of(self, 'fork-editor.save')} fork with it · "
                    f"{key_of(self, 'fork-editor.select-all', ValueArea)} select all · "
                    f"{key_of(self, 'fork-editor.external')} edit in $EDITOR · {key_of(self, 'fork-editor.cancel')} cancel"
                ),
                id="fork-editor-help",
            )
            # Not ``code_editor``: its tab indents and its esc only leaves the editor; here esc cancels.
            yield ValueArea(editable_value(self.record), language="json", show_line_numbers=True, id="fork-editor-text")
            yield Static(id="fork-editor-error")

    def on_mount(self) -> None:
        area = self.query_one(TextArea)
        area.cursor_blink = False  # steady, as every cursor of the app's (and snapshots stay still)
        area.focus()

    @property
    def text(self) -> str:
        return self.query_one(TextArea).text

    def check(self) -> str:
        """What is wrong with the value ("" when a fork can take it), shown under the editor."""
        try:
            make_edit(self.record, self.text)
            why = ""
        except BadEdit as bad:
            why = bad.message
        error = self.query_one("#fork-editor-error", Static)
        error.update(Text(printable(why)))
        error.set_class(bool(why), "-error")
        return why

    def action_save(self) -> None:
        if not self.check():
            self.dismiss(self.text)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_external(self) -> None:
        """Edit the value in $VISUAL or $EDITOR (vi without either), the app suspended meanwhile."""
        editor = shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "value.json"
            path.write_text(self.text, encoding="utf-8")
            try:
                with self.app.suspend():
                    subprocess.run([*editor, str(path)], check=False)
            except SuspendNotSupported:
                self.notify("this terminal cannot be handed to an editor: edit here", severity="warning")
                return
            except OSError as exc:
                self.notify(f"cannot run {printable(editor[0])}: {exc.strerror or exc}", severity="error", markup=False)
                return
            self.query_one(TextArea).load_text(path.read_text(encoding="utf-8"))
        self.check()
