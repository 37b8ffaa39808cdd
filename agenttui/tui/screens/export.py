"""The export dialog: runs written to a bundle file, once a person confirms, with a progress bar."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Checkbox, Input, ProgressBar, RadioButton, RadioSet, Static
from textual.worker import Worker, WorkerState

from agenttui.errors import AgentTuiError
from agenttui.journal.inert import printable, printable_id
from agenttui.runs.bundles import BundleProgress, ExportReport, export_runs
from agenttui.stores.base import Store
from agenttui.stores.bundle_file import BundleExistsError
from agenttui.tui.clipboard import copy_text
from agenttui.tui.export_plan import ExportScope, default_path, export_command, parse_redactions, report_lines
from agenttui.tui.keymap import key_of
from agenttui.tui.screens.base import AppModal
from agenttui.tui.screens.dialogs import CommandLine, ConfirmDialog, command_label


def working_directory() -> Path:
    """Where a bundle goes unless the person types another path: the directory agenttui was
    started in, as for ``agenttui export -o FILE``."""
    return Path.cwd()


class ExportDialog(AppModal[None]):
    """Which runs, which file, sub-runs or not, what to redact, and the CLI command that does the
    same; ``w`` exports (asking first before it replaces a file), ``y`` copies the command, esc
    cancels: the export while it runs (nothing is left behind), else the dialog.

    Exporting reads the store and writes only the new file, in an async worker on the app's loop;
    its progress arrives as messages, coalesced, and what it wrote ends in a notice.
    """

    @dataclass
    class Progressed(Message, bubble=False):
        """The export has copied another run. Coalesces: only the newest waiting one is shown."""

        progress: BundleProgress

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ExportDialog.Progressed)

    @dataclass
    class Finished(Message, bubble=False):
        report: ExportReport

    @dataclass
    class Failed(Message, bubble=False):
        """The export stopped on an error; nothing is left at the file's path."""

        title: str
        message: str

    BINDINGS = [
        Binding("w", "export", "Export", id="export.write"),
        Binding("escape", "cancel", "Cancel", id="export.cancel"),
        Binding("y", "copy_command", "Copy the command", id="export.copy"),
        Binding("left", "scroll_command(-8)", "Scroll the command left", show=False, id="export.scroll-left"),
        Binding("right", "scroll_command(8)", "Scroll the command right", show=False, id="export.scroll-right"),
    ]

    def __init__(self, store: Store, store_url: str, scopes: Sequence[ExportScope], *, chosen: int = 0) -> None:
        super().__init__()
        self._store = store
        self._store_url = store_url
        self.scopes = tuple(scopes)
        """The choices of runs, the first the run under the cursor or the run shown."""
        self.chosen = chosen
        """The index of the scope chosen."""
        self._directory = working_directory()
        self._path_typed = False
        """The person changed the file's path: choosing other runs leaves it alone."""
        self._worker: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        scope = self.scopes[self.chosen]
        with Vertical(id="dialog"):
            yield Static(Text("Export to a bundle", style="bold"), id="dialog-title")
            with Horizontal(classes="export-row"):
                yield Static("Runs", classes="export-label")
                if len(self.scopes) > 1:
                    with RadioSet(id="export-scope", compact=True):
                        for index, choice in enumerate(self.scopes):
                            yield RadioButton(Text(choice.label), value=index == self.chosen)
                else:
                    yield Static(Text(scope.label), id="export-scope-only")
            with Horizontal(classes="export-row"):
                yield Static("File", classes="export-label")
                yield Input(
                    str(default_path(self._directory, scope)), id="export-path", select_on_focus=False, compact=True
                )
            with Horizontal(classes="export-row"):
                yield Static("Sub-runs", classes="export-label")
                yield Checkbox("each run's sub-runs go with it", value=True, id="export-sub-runs", compact=True)
            with Horizontal(classes="export-row"):
                yield Static("Redact", classes="export-label")
                yield Input(placeholder="none (e.g. card_number, $.result.token)", id="export-redact", compact=True)
            yield Static("", id="export-note")
            yield ProgressBar(id="export-progress", show_eta=False, total=None)
            yield command_label(self, "export.copy")
            yield CommandLine(self._command(), id="dialog-command")
            with Horizontal(id="dialog-buttons"):
                yield Static(Text("tab: next field"), id="export-hint")
                yield Button(f"Export ({key_of(self, 'export.write')})", id="export", variant="warning")
                yield Button(f"Cancel ({key_of(self, 'export.cancel')})", id="cancel", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#export-progress").display = False
        for scopes in self.query(RadioSet):  # its cursor starts on the first: bring it to the chosen
            for _ in range(self.chosen):
                scopes.action_next_button()
        # As a confirmation focuses its "no": w exports what the dialog shows, and enter cancels.
        self.query_one("#cancel", Button).focus()
        self._refresh()

    # -- what the fields say -------------------------------------------------------------------

    @property
    def scope(self) -> ExportScope:
        return self.scopes[self.chosen]

    @property
    def path(self) -> Path:
        """The file, as typed (``~`` expanded; a relative path is under the working directory)."""
        typed = os.path.expanduser(self.query_one("#export-path", Input).value.strip())
        return self._directory / typed if typed else Path()

    @property
    def sub_runs(self) -> bool:
        return self.query_one("#export-sub-runs", Checkbox).value

    @property
    def redactions(self) -> list[str]:
        return parse_redactions(self.query_one("#export-redact", Input).value)

    def _command(self, *, force: bool = False) -> str:
        if not self.is_mounted:
            path, sub_runs, redact = default_path(self._directory, self.scope), True, []
        else:
            path, sub_runs, redact = self.path, self.sub_runs, self.redactions
        return export_command(self._store_url, self.scope, path, sub_runs=sub_runs, redact=redact, force=force)

    def _problem(self) -> str:
        """Why the fields cannot be exported as they are ("" when they can)."""
        from agenttui.journal.redact import Redactor

        if not self.query_one("#export-path", Input).value.strip():
            return "name the file to write"
        if self.path.is_dir():
            return f"{printable(str(self.path))} is a directory: name a file"
        try:
            Redactor(self.redactions)
        except AgentTuiError as exc:
            return exc.message
        return ""

    def _refresh(self) -> None:
        """The command and the note follow the fields."""
        self.query_one(CommandLine).show(self._command())
        problem = self._problem()
        if problem:
            self._note(problem, "-error")
        elif self.path.exists():
            self._note(
                f"{printable(self.path.name)} exists: {key_of(self, 'export.write')} asks before replacing it",
                "-warning",
            )
        else:
            self._note("")

    def _note(self, text: str, state: str = "") -> None:
        note = self.query_one("#export-note", Static)
        note.update(Text(text))
        note.set_classes(state)

    @on(RadioSet.Changed, "#export-scope")
    def scope_changed(self, event: RadioSet.Changed) -> None:
        self.chosen = event.index
        if not self._path_typed:
            self.query_one("#export-path", Input).value = str(default_path(self._directory, self.scope))
        self._refresh()

    @on(Input.Changed, "#export-path")
    def path_changed(self, event: Input.Changed) -> None:
        self._path_typed = event.value != str(default_path(self._directory, self.scope))
        self._refresh()

    @on(Input.Changed, "#export-redact")
    @on(Checkbox.Changed)
    def options_changed(self) -> None:
        self._refresh()

    @on(Input.Submitted)
    def field_done(self) -> None:
        self.focus_next()

    # -- exporting ----------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._worker is not None and not self._worker.is_finished

    def action_export(self) -> None:
        if self.running:
            return
        if refused := str(getattr(self.app, "writes_refused", "")):  # a file on this machine is a write too
            self._note(f"Nothing is written here: {refused}. The command below exports from a shell.", "-error")
            return
        if problem := self._problem():
            self._note(problem, "-error")
            return
        path = self.path
        if not path.exists():
            self._start(force=False)
            return
        size = path.stat().st_size
        replace = ConfirmDialog(
            "Replace an existing file?",
            f"{path}\n({size:,} bytes) is replaced by the bundle, once it is written whole.",
            self._command(force=True),
            heading="The file:",
            yes="Replace",
        )
        self.app.push_screen(replace, self._replace_answered)

    def _replace_answered(self, yes: bool | None) -> None:
        if yes:
            self._start(force=True)
        else:
            self._note(
                f"{printable(self.path.name)} kept: type another file, or {key_of(self, 'export.write')} to be asked again",
                "-warning",
            )

    def _start(self, *, force: bool) -> None:
        self._set_running(True)
        bar = self.query_one(ProgressBar)
        bar.update(total=None, progress=0)
        self._note(f"reading the runs… ({key_of(self, 'export.cancel')} cancels)")
        self._worker = self._export(
            self.scope.run_ids, self.path, sub_runs=self.sub_runs, redact=self.redactions, force=force
        )

    def _set_running(self, running: bool) -> None:
        for field in self.query(".export-row Input, .export-row Checkbox, .export-row RadioSet"):
            field.disabled = running
        self.query_one("#export", Button).disabled = running
        self.query_one(ProgressBar).display = running
        if running:
            self.query_one("#cancel", Button).focus()

    @work(exclusive=True, group="export", exit_on_error=False)
    async def _export(
        self, run_ids: Sequence[str], path: Path, *, sub_runs: bool, redact: Sequence[str], force: bool
    ) -> None:
        """Write the bundle; report by messages. Cancelled, the core removes what it began."""

        def progressed(progress: BundleProgress) -> None:
            self.post_message(ExportDialog.Progressed(progress))

        try:
            report = await export_runs(
                self._store, run_ids, path, sub_runs=sub_runs, redact=redact, force=force, on_progress=progressed
            )
        except BundleExistsError:
            self.post_message(
                ExportDialog.Failed(
                    "File exists", f"{path} appeared meanwhile: {key_of(self, 'export.write')} asks to replace it"
                )
            )
            return
        except AgentTuiError as exc:
            self.post_message(ExportDialog.Failed(exc.title, exc.message))
            return
        except OSError as exc:
            self.post_message(ExportDialog.Failed("Cannot write", f"{path}: {exc.strerror or exc}"))
            return
        except Exception as exc:  # shown in the dialog, never a traceback over the screen
            self.post_message(ExportDialog.Failed("Unexpected error", f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(ExportDialog.Finished(report))

    def on_export_dialog_progressed(self, message: ExportDialog.Progressed) -> None:
        if not self.running:
            return
        progress = message.progress
        self.query_one(ProgressBar).update(total=progress.runs_total, progress=progress.runs_done)
        self._note(
            f"{progress.runs_done:,} of {progress.runs_total:,} runs, {progress.records:,} records"
            f" · {printable_id(progress.run_id)} ({key_of(self, 'export.cancel')} cancels)"
        )

    def on_export_dialog_finished(self, message: ExportDialog.Finished) -> None:
        self.app.notify("\n".join(report_lines(message.report)), title="Exported", timeout=10, markup=False)
        self.dismiss()

    def on_export_dialog_failed(self, message: ExportDialog.Failed) -> None:
        self._set_running(False)
        self._note(printable(f"{message.title}: {message.message}", multiline=True), "-error")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is self._worker and event.state == WorkerState.CANCELLED:
            self._set_running(False)
            self._note("export cancelled: nothing was written", "-warning")
            self.app.notify("export cancelled: nothing was written", timeout=4)

    # -- keys ---------------------------------------------------------------------------------

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "export":
            self.action_export()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        """esc: stop the export under way (what it began is removed), or close the dialog."""
        if self._worker is not None and not self._worker.is_finished:
            self._note("cancelling…", "-warning")
            self._worker.cancel()
            return
        self.dismiss()

    def action_copy_command(self) -> None:
        copy_text(self, self.query_one(CommandLine).command, "the command", one_line=True)

    def action_scroll_command(self, columns: int) -> None:
        self.query_one(CommandLine).scroll_relative(x=columns, animate=False)
