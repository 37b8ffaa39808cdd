"""RecoverProgress: the spec's Recover over every unfinished run, with a progress bar."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from agenttui.journal.describe import printable, printable_id
from agenttui.runs.recovery.operations import report_lines
from agenttui.runs.recovery.recover import RecoverReport
from agenttui.tui.screens.base import AppModal


class RecoverProgress(AppModal[None]):
    """Shows each run as it is recovered, then the report; esc closes once done."""

    BINDINGS = [Binding("escape,enter", "close", "Close", id="recover.close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text("Recovering unfinished runs", style="bold"), id="dialog-title")
            yield ProgressBar(id="recover-progress", show_eta=False, total=None)
            yield Static("", id="dialog-body")
        self._done = False

    def advance(self, done: int, run_id: str) -> None:
        self.query_one(ProgressBar).update(progress=done)
        self.query_one("#dialog-body", Static).update(Text(f"{done} runs · last: {printable_id(run_id)}"))

    def finish(self, report: RecoverReport) -> None:
        self._done = True
        bar = self.query_one(ProgressBar)
        total = len(report.re_driven) + len(report.skipped) + len(report.errors)
        bar.update(total=max(total, 1), progress=max(total, 1))
        lines = [printable(line) for line in report_lines(report, most=10)]
        self.query_one("#dialog-body", Static).update(Text("\n".join(lines) + "\n\nesc closes"))

    def action_close(self) -> None:
        if self._done:
            self.dismiss()
