"""Incident mode's dialogs: the marked runs' action menu, the confirmation of a bulk action, and its
progress, run by run, with a summary whose skipped and failed runs open.

The flow (``act_on_marked``) runs in the app's operation worker: pick an action that fits every
marked run, give the value it needs, read the marked runs afresh (``runs.batch.select``), confirm,
then apply. The apply is the progress dialog's own async worker on the app's loop, under each
run's lease (``runs.batch.apply_selection``); its outcomes reach the dialog a frame's worth at
a time (``FRAME_SECONDS``), however fast runs go, and the dialog paints each batch as it comes.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from agenttui.journal.inert import printable
from agenttui.runs.selection.batch import (
    CancelRuns,
    RunOutcome,
    Selection,
    Tally,
    apply_selection,
    outcome_line,
    planned_selection,
    preview_lines,
    select,
    summary_line,
    where_command,
)
from agenttui.stores import describe_url
from agenttui.stores.base import Store
from agenttui.tui.bulk_plan import Fit, bulk_choices, fits, selecting_where
from agenttui.tui.host import TuiHost, host_of
from agenttui.tui.keymap import key_of
from agenttui.tui.messages import StoreChanged
from agenttui.tui.screens.base import AppModal
from agenttui.tui.screens.dialogs import ChoiceList, Confirmation, PromptDialog, reason_field

if TYPE_CHECKING:
    from agenttui.runs.statuses.status import RunStatus

#: The progress dialog paints what came in at most this often: a fast action over thousands of
#: runs costs a frame's work per frame, not a repaint per run. A dialog over the runs list repaints
#: the dimmed list behind it with each frame, so frames are few (five a second read as progress),
#: and keys pressed meanwhile are painted at once (benchmarks/bulk.py, tui).
FRAME_SECONDS = 1 / 5
#: The outcome lines the progress dialog keeps, the latest, as many as fit (the summary lists
#: every run not simply done). A text of set height, not a scrolling log: a log's growing length
#: lays the dialog, and the dimmed list behind it, out again with each frame.
RECENT_LINES = 200

clock = time.monotonic
"""What runs a second and the time left are measured with (a test holds it still)."""


class BulkMenu(AppModal[int | None]):
    """The actions for the marked runs: those that fit every one can be picked; each other says
    how many marked runs it does not fit, and the commonest why. enter picks, esc or q cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="bulk-menu.cancel")]

    def __init__(self, marked: int, fitted: Sequence[Fit]) -> None:
        super().__init__()
        self._marked, self.fitted = marked, list(fitted)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="-bulk"):
            yield Static(Text(f"Act on {self._marked:,} marked runs", style="bold"), id="dialog-title")
            yield ChoiceList(
                *(Option(Text(printable(fit.line())), disabled=not fit.fits) for fit in self.fitted),
                id="choice-list",
            )
            if not any(fit.fits for fit in self.fitted):
                from agenttui.tui.screens.runs import RunsScreen  # the marks are the runs list's

                mark, clear = key_of(self, "runs.mark", RunsScreen), key_of(self, "runs.clear-marks", RunsScreen)
                hint = (
                    f"No action fits every marked run: unmark those that differ ({mark}), or {clear} clears the marks."
                )
                yield Static(Text(hint), id="bulk-hint")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option_index)

    def action_cancel(self) -> None:
        self.dismiss(None)


class BulkConfirm(Confirmation):
    """The confirmation of a bulk action (the one confirmation, its body the preview): how many
    runs by status, the first with what each gets, the marked runs it does not fit, and the
    command that does the same. A cancel's reason is a field (tab reaches it)."""

    def __init__(self, selection: Selection, store_url: str, where: str | None) -> None:
        title = f"{selection.action.verb.capitalize()} {len(selection.fitting):,} marked runs?"
        super().__init__(title, _bulk_command(selection, store_url, where))
        self.selection = selection
        self._store_url, self._where = store_url, where

    def body(self) -> ComposeResult:
        yield Static(self._preview(), id="bulk-preview")

    def fields(self) -> ComposeResult:
        if isinstance(self.selection.action, CancelRuns):
            yield from reason_field(self.selection.action.reason)

    def dialog_classes(self) -> str:
        return "-bulk -reason" if isinstance(self.selection.action, CancelRuns) else "-bulk"

    def _preview(self) -> Text:
        return Text(printable("\n".join(preview_lines(self.selection, self._store_url)), multiline=True))

    @on(Input.Changed, "#confirm-reason")
    def reason_changed(self, event: Input.Changed) -> None:
        assert isinstance(self.selection.action, CancelRuns)
        self.selection.action = replace(self.selection.action, reason=event.value)
        self.query_one("#bulk-preview", Static).update(self._preview())
        self.show_command(_bulk_command(self.selection, self._store_url, self._where))

    @on(Input.Submitted, "#confirm-reason")
    def reason_done(self) -> None:
        self.query_one("#confirm-body").focus()


def _bulk_command(selection: Selection, store_url: str, where: str | None) -> str:
    """The command that does what ``selection`` does: one ``--where`` naming its runs when one
    can, else the first run's command and how many more."""
    return where_command(selection.action, store_url, where) if where is not None else selection.command(store_url)


Writing = Callable[[], AbstractAsyncContextManager[Store]]
"""Gives a store handle to write with, for the length of a ``with`` (``AgentTuiApp.writing``)."""


class BulkProgress(AppModal[None]):
    """A bulk action under way: runs done of the total, runs a second and the time left, each
    outcome as it comes. esc stops after the run in hand; at the end, the summary and the runs
    skipped or failed, each opened with enter; esc or q closes."""

    @dataclass
    class Applied(Message, bubble=False):
        """Runs acted on. Coalesces: a message waiting takes the outcomes of the one before it."""

        outcomes: list[RunOutcome] = field(default_factory=list)

        def can_replace(self, message: Message) -> bool:
            if not isinstance(message, BulkProgress.Applied):
                return False
            message.outcomes[:0] = self.outcomes
            return True

    @dataclass
    class Finished(Message, bubble=False):
        """The action is over: every run done, or stopped (``error``: why it could not go on)."""

        error: str = ""

    BINDINGS = [
        Binding("escape", "stop_or_close", "Stop", id="bulk-progress.stop"),
        Binding("q", "close", "Close", show=False, id="bulk-progress.close"),
    ]

    def __init__(self, selection: Selection, writing: Writing) -> None:
        super().__init__()
        self.selection = selection
        self._writing = writing
        self.tally = Tally()
        self.stopping = False
        """esc was pressed: the action stops after the run in hand."""
        self.finished = False
        self._unpainted: list[RunOutcome] = []
        self.recent: deque[str] = deque(maxlen=RECENT_LINES)
        """The latest outcome lines, as the dialog shows them (the summary names every run not done)."""
        self._started = 0.0
        self.problems: list[RunOutcome] = []
        """The runs skipped or failed, as the summary lists them (enter opens one)."""

    @property
    def total(self) -> int:
        return len(self.selection.fitting)

    def compose(self) -> ComposeResult:
        title = f"{self.selection.action.verb.capitalize()}: {self.total:,} runs"
        with Vertical(id="dialog", classes="-bulk"):
            yield Static(Text(printable(title), style="bold"), id="dialog-title")
            yield ProgressBar(id="bulk-progress", total=max(self.total, 1), show_eta=False)
            yield Static("", id="bulk-rate")
            yield Static("", id="bulk-log")
            yield Static("", id="bulk-summary")
            yield ChoiceList(id="bulk-problems")
            yield Static(Text(f"{key_of(self, 'bulk-progress.stop')} stops after the current run"), id="bulk-hint")

    def on_mount(self) -> None:
        self.query_one("#bulk-summary").display = False
        self.query_one("#bulk-problems").display = False
        self._started = clock()
        self.query_one("#bulk-rate", Static).update(self._rate_text())
        self.apply()

    @work(exclusive=True, group="bulk-apply", exit_on_error=False)
    async def apply(self) -> None:
        """Act on the selection, run by run, posting each outcome."""
        async with self._writing() as store:
            # Outcomes go to the dialog a frame's worth at a time: a message per run (hundreds a
            # second) would keep the dialog's queue from ever going idle, and a screen repaints when
            # idle: a key pressed meanwhile would be handled at once, and painted late.
            done: list[RunOutcome] = []

            def report() -> None:
                if done:
                    self.post_message(BulkProgress.Applied(done.copy()))
                    done.clear()

            reporter = self.set_interval(FRAME_SECONDS, report)
            try:
                async for outcome in apply_selection(store, self.selection, stopping=lambda: self.stopping):
                    done.append(outcome)
            finally:
                reporter.stop()
                report()
        self.post_message(BulkProgress.Finished())

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.group == "bulk-apply":
            error = event.worker.error
            self.post_message(
                BulkProgress.Finished(f"{getattr(error, 'title', 'Error')}: {getattr(error, 'message', error)}")
            )
            self.tui.worker_failed(event.worker)

    @property
    def tui(self) -> TuiHost:
        return host_of(self.app)

    def on_bulk_progress_applied(self, message: BulkProgress.Applied) -> None:
        for outcome in message.outcomes:
            self.tally.add(outcome)
        self._unpainted += message.outcomes
        self._paint()

    def _paint(self) -> None:
        lines, self._unpainted = self._unpainted, []
        if lines:
            # Run ids and details are the store's: made inert before they reach the terminal.
            self.recent.extend(printable(outcome_line(o)) for o in lines)
            log = self.query_one("#bulk-log", Static)
            shown = list(self.recent)[-max(log.size.height, 1) :]
            log.update(Text("\n".join(shown), no_wrap=True, overflow="ellipsis"), layout=False)
        self.query_one(ProgressBar).update(progress=self.tally.count)
        self.query_one("#bulk-rate", Static).update(self._rate_text(), layout=False)  # one line, always

    def _rate_text(self) -> Text:
        count, total = self.tally.count, self.total
        elapsed = max(clock() - self._started, 1e-6)
        rate = count / elapsed
        text = f"{count:,} of {total:,} runs"
        if self.finished:
            text += f" in {_duration(elapsed)} · {rate:,.1f} runs/s"
        elif count:
            text += f" · {rate:,.1f} runs/s · {_duration((total - count) / rate)} left"
        if self.stopping:
            text += " · stopped after the current run" if self.finished else " · stopping after the current run"
        return Text(text)

    def on_bulk_progress_finished(self, message: BulkProgress.Finished) -> None:
        self.finished = True
        self._paint()
        stopped = self.tally.count < self.total
        summary = summary_line(self.selection.action.verb, self.tally, self.selection, stopped=stopped)
        if message.error:
            summary += f"\n{message.error}"
        self.query_one("#bulk-summary", Static).update(Text(printable(summary, multiline=True), style="bold"))
        self.query_one("#bulk-summary").display = True
        self.problems = self.tally.skipped + self.tally.failed
        problems = self.query_one("#bulk-problems", ChoiceList)
        if self.problems:
            problems.add_options(Option(Text(printable(outcome_line(o)))) for o in self.problems)
            problems.highlighted = 0
            problems.display = True
            self.query_one("#bulk-log").display = False
            problems.focus()
        closes = f"{key_of(self, 'bulk-progress.stop')} or {key_of(self, 'bulk-progress.close')} closes"
        hint = f"enter opens a run; {closes}" if self.problems else closes
        self.query_one("#bulk-hint", Static).update(Text(hint))
        touched = {o.run_id for o in (*self.tally.skipped, *self.tally.failed)} | {
            s.run_id for s in self.selection.fitting
        }
        self.app.post_message(StoreChanged(touched))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.tui.open_run(self.problems[event.option_index].run_id)

    def action_stop_or_close(self) -> None:
        if self.finished:
            self.dismiss()
            return
        if not self.stopping:
            self.stopping = True
            self.query_one("#bulk-rate", Static).update(self._rate_text())
            self.query_one("#bulk-hint", Static).update(Text("stopping after the current run…"))

    def action_close(self) -> None:
        if self.finished:
            self.dismiss()
        else:
            self.action_stop_or_close()


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


async def act_on_marked(
    app: App[Any], marked: Mapping[str, RunStatus | None], shown_filter: str | None, pick: str | None = None
) -> None:
    """The marked runs' flow, in the app's operation worker: choose (or take ``pick``, a label's
    start), ask for a value, read the runs afresh, confirm, then apply with progress.
    ``shown_filter``: the filter in force when the marks are exactly the runs it shows."""
    host = host_of(app)
    fitted = fits(bulk_choices(host.agent_spec, host.agent_factory), marked)
    if pick is not None:
        fit = next(f for f in fitted if f.choice.label.startswith(pick))
        if not fit.fits:
            app.notify(printable(fit.line()), severity="warning", markup=False)
            return
    else:
        index = await app.push_screen_wait(BulkMenu(len(marked), fitted))
        if index is None:
            return
        fit = fitted[index]

    async def ask(title: str, prompt: str, placeholder: str, value: str = "", problem: str = "") -> str | None:
        return await app.push_screen_wait(PromptDialog(title, prompt, placeholder, value=value, problem=problem))

    action = await fit.choice.chosen(ask, len(marked))
    if action is None or host.store is None:
        return
    selection = await planned_selection(host.store, await select(host.store, action, run_ids=list(marked)))
    if not selection.fitting:
        why = selection.unfit[0][1] if selection.unfit else "none was found"
        app.notify(printable(f"none of the marked runs fits {action.verb} any more ({why}): nothing written"),
                   severity="warning", markup=False)  # fmt: skip
        return
    url = describe_url(host.url)
    fitting = [status.run_id for status in selection.fitting]
    where = selecting_where(fitting, marked=list(marked), shown_filter=shown_filter)
    if not await app.push_screen_wait(BulkConfirm(selection, url, where)):
        app.notify("nothing written")
        return
    await app.push_screen(BulkProgress(selection, host.writing))
