"""The App: opens the store read-only, hosts the screens, follows changes, turns errors into dialogs."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerError, WorkerState

from agenttui.errors import (
    AgentTuiError,
    AgentTuiWarning,
    StoreConnectionError,
    StoreDamageWarning,
    StoreLockedError,
    WritesRefusedError,
)
from agenttui.journal.inert import printable, printable_id
from agenttui.stores import describe_url, open_store
from agenttui.stores.base import Store
from agenttui.stores.changes import file_identity, follow_changes
from agenttui.tui import READY_META
from agenttui.tui.commands import AgentTuiCommands
from agenttui.tui.messages import (
    LOCK_RETRY_SECONDS,
    WAITING_FOR_LOCK,
    ConnectionChanged,
    StoreChanged,
    StoreOpened,
    StoreReopened,
    TailStateChanged,
)
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.themes import DEFAULT_THEME, load_themes

# The first screen is the runs list: what only a run's screen, an operation, a dialog, the help
# or the user's agent needs is imported where it is first used (open_run, operate, recover_all,
# worker_failed, action_help, __init__ given --agent), not at start-up. The run screen brings
# the replay and diff screens, the flowchart, the panes, replay and the operations; the agent
# factory the agent loop: about 50 ms of the process's start (benchmarks/startup.py).
if TYPE_CHECKING:
    from agenttui.agent.factory import AgentFactory
    from agenttui.config import Config
    from agenttui.runs.cost.lens import PriceBook
    from agenttui.runs.recovery.choices import StepContext
    from agenttui.runs.recovery.operations import Operation
    from agenttui.runs.statuses.status import RunStatus

CLOSE_SECONDS = 1.0
"""The longest quitting waits for the store to close."""
RECONNECT_FIRST_DELAY = 0.25
RECONNECT_MAX_DELAY = 5.0
EXIT_OK = 0
EXIT_CONNECTION = 2
EXIT_TERMINATED = 143


class AgentTuiApp(App[int]):
    """agenttui's TUI over one store.

    ``store`` may be injected (tests build real stores under tmp_path); otherwise ``url`` is
    opened read-only on mount. ``tail=False`` turns the live change feed off.
    """

    CSS_PATH = "app.tcss"
    TITLE = "agenttui"
    COMMANDS = App.COMMANDS | {AgentTuiCommands}
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("q", "quit", "Quit", priority=True, id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("ctrl+t", "next_theme", "Theme", show=False, id="app.theme"),
    ]

    store_label: reactive[str] = reactive("")
    """The store, as status bars show it (a password masked)."""
    connection: reactive[str] = reactive("connecting")
    """"connecting", "connected", "reconnecting", "failed", or ``WAITING_FOR_LOCK``."""
    tail_state: reactive[str] = reactive("off")
    """The change feed: "off", "watching" (a file), "listening" (NOTIFY) or "polling"."""

    def __init__(
        self,
        url: str = "",
        *,
        store: Store | None = None,
        theme: str | None = None,
        tail: bool = True,
        theme_dir: Path | None = None,
        agent_spec: str | None = None,
        run_id: str | None = None,
        writes_refused: str = "",
        prices_path: str | None = None,
        handles_signals: bool = False,
    ) -> None:
        super().__init__()
        self.handles_signals = handles_signals
        """Whether SIGTERM and SIGHUP quit the app (``launch``: the process is the app's; a
        test's app leaves the test process's signals alone)."""
        self.prices_path = prices_path
        """``--prices``: a TOML file of prices that override the library's (``PriceBook.load``)."""
        self.writes_refused = writes_refused
        """Why this app refuses every write, confirmed or not ("" when it writes what is
        confirmed): a confirmation then shows what would be written, and writes nothing."""
        self.initial_run = run_id
        """``--run``: the run whose journal opens at start, over the runs list."""
        self.agent_spec = agent_spec
        """``--agent module:factory``: the user's agent, for replays with their code and re-drives."""
        self.agent_factory: AgentFactory | None = None
        if agent_spec:
            from agenttui.agent.factory import load_factory

            self.agent_factory = load_factory(agent_spec)
        self.url = url or (store.display_url if store else "")
        self.store: Store | None = store
        self._owns_store = store is None
        self._tail = tail
        self.set_reactive(AgentTuiApp.store_label, describe_url(self.url))
        loaded = load_themes(theme_dir)
        for loaded_theme in loaded.themes:
            self.register_theme(loaded_theme)
        self._theme_problems = loaded.problems
        self._wanted_theme = theme or DEFAULT_THEME
        self._start_with_theme(self._wanted_theme if self._wanted_theme in self.available_themes else DEFAULT_THEME)
        self.failure = ""
        """Why the app could not do its job (the store would not open); the CLI prints it."""
        self._store_file_identity: tuple[int, int] | None = None
        """The (device, inode) of the file the app's own store opened (SQLite), to tell a file
        moved away or replaced from a connection that failed."""
        self._warnings: warnings.catch_warnings[None] | None = None
        """How warnings were shown before the app mounted: restored when it unmounts."""
        self.prices: PriceBook | None = None
        """Model prices, once read (``read_prices``): costs are shown from then on."""
        self.first_rows_shown = asyncio.Event()
        """Set once the runs list has painted its first rows: the change feed waits for it to
        start watching the file (see ``follow_changes``)."""
        self.keymap: dict[str, str] = dict(quiet_config().keys)
        """The keys bound over the bindings' own, by binding id: the config file's ``[keys]``,
        and, once checked against every screen (``bind_keys``), the keys they take from others."""

    def _start_with_theme(self, name: str) -> None:
        """Make ``name`` the theme before any stylesheet is read, so the first parse has its variables.

        Set as ``theme`` is set later (its watcher), it would also re-parse every CSS source and
        restyle the app once it runs: 10-15 ms of start-up (benchmarks/startup.py). Before the
        first parse, what the watcher does beyond that is the theme's classes and, for a theme
        whose darkness or ANSI colours differ from Textual's default, the truecolor filter that
        ``App.__init__`` built for that one: such a theme goes through the watcher.
        """
        before, theme = self.current_theme, self.get_theme(name)
        if theme is None or (theme.dark, theme.ansi) != (before.dark, before.ansi):
            self.theme = name  # the watcher: filter, classes and a re-parse
            return
        self.set_reactive(App.theme, name)
        self.stylesheet.set_variables(self.get_css_variables())
        self.set_class(True, f"-theme-{name}", update=False)
        self.set_class(theme.dark, "-dark-mode", update=False)
        self.set_class(not theme.dark, "-light-mode", update=False)

    def read_screen_styles(self) -> None:
        """Read every other screen's styles (``SCREEN_STYLES``) in one parse: called once the runs
        list's first rows are painted. A screen's own ``CSS_PATH`` reads them as it first opens, but
        Textual then parses every source again and restyles the app (30 ms on the first run opened);
        here only the new files are parsed, before anyone waits for them."""
        from agenttui.tui.screens.base import SCREEN_STYLES

        unread = [path for path in SCREEN_STYLES if not self.stylesheet.has_source(str(path))]
        if unread:
            self.stylesheet.read_all(unread)
            self.stylesheet.parse()
            self.stylesheet.update(self)

    def first_rows_painted(self) -> None:
        """The first screen's first rows are on screen (the runs list's, or those of a run opened
        at start with ``--run``, the runs list then waiting to be shown): what waited for them
        starts (the footer's keys, the other screens' styles, the change feed), and a served app
        says so to its server (``agenttui serve``), which then sends it its page's size. Once:
        later calls do nothing."""
        if self.first_rows_shown.is_set():
            return
        self.first_rows_shown.set()
        self.call_after_refresh(self.read_screen_styles)
        if self.keymap:
            self.bind_keys()
        if (write_meta := getattr(self._driver, "write_meta", None)) is not None:  # Textual's web driver
            write_meta({"type": READY_META})

    async def read_prices(self) -> PriceBook:
        """The model prices, read in a thread the first time (an import and a snapshot: 0.2 s,
        which the event loop must not wait out), then kept for every screen."""
        if self.prices is None:
            from agenttui.runs.cost.lens import PriceBook

            path = self.prices_path
            self.prices = await asyncio.to_thread(lambda: PriceBook.load(path).warm())
        return self.prices

    # -- lifecycle ---------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self.handles_signals:
            # SIGTERM and SIGHUP (a closed SSH session) quit as q does: workers are cancelled, so
            # an action under way releases its run's lease instead of leaving it to lapse.
            from agenttui.tui.signals import stop_on_signals

            stop_on_signals(self, EXIT_TERMINATED)
        # What the core warns of (a store read around damage) is a notification, never stderr
        # scribbled over the screen: from now until the app unmounts.
        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        shown_otherwise = warnings.showwarning
        warnings.simplefilter("always", AgentTuiWarning)  # each is given once, where it arises

        def show(
            message: Warning | str, category: type[Warning], filename: str, lineno: int,
            file: TextIO | None = None, line: str | None = None,
        ) -> None:  # fmt: skip
            if not issubclass(category, AgentTuiWarning):
                shown_otherwise(message, category, filename, lineno, file, line)
                return
            title = "Store damaged" if issubclass(category, StoreDamageWarning) else "Warning"
            self.notify(printable(str(message)), title=title, severity="warning", timeout=15, markup=False)

        warnings.showwarning = show
        if self._wanted_theme not in self.available_themes:
            self.notify(f"no theme {self._wanted_theme!r}; using {DEFAULT_THEME}", severity="warning")
        for problem in self._theme_problems:
            self.notify(f"theme not loaded: {problem}", severity="warning")
        self._say_config_problems()
        if self.keymap:
            self.set_keymap(self.keymap)
        self.push_screen(RunsScreen())
        if self.initial_run is not None:
            self.open_run(self.initial_run)  # it starts reading once the store is open
        if self.store is None:
            self.open_store()
        else:
            self.post_message(StoreOpened(self.store.display_url))

    @work(exclusive=True, group="store", exit_on_error=False)
    async def open_store(self) -> None:
        while True:
            try:
                self.store = await open_store(self.url, read_only=True)
                break
            except StoreLockedError:
                self.post_message(ConnectionChanged(WAITING_FOR_LOCK))
                await asyncio.sleep(LOCK_RETRY_SECONDS)
            except AgentTuiError as exc:
                self.failure = f"{exc.title}: {exc.message}"
                self.exit(return_code=EXIT_CONNECTION)
                return
        self._store_file_identity = self._identity_of_store_file()
        self.post_message(StoreOpened(self.store.display_url))

    def _say_config_problems(self) -> None:
        """What the config file ignored, a notification each (the command line said it before the
        screen switched to the app's, where it cannot be seen)."""
        for problem in quiet_config().problems:
            self.notify(printable(f"config: {problem}"), severity="warning", timeout=10, markup=False)

    @work(exclusive=True, group="keys", exit_on_error=False)
    async def bind_keys(self) -> None:
        """Check the config file's keys against every screen's (``tui/keymap.py``): bind the keys
        they take from others too, and say each conflict, naming both bindings."""
        from agenttui.tui.keymap import resolve

        # It imports every screen: some 0.3 s, which the first frame does not wait for.
        config = quiet_config()
        resolved = await asyncio.to_thread(resolve, config.keys)
        self.keymap = resolved.keymap
        self.set_keymap(self.keymap)
        for problem in config.problems_at((("keys", binding_id), why) for binding_id, why in resolved.problems):
            self.notify(printable(f"config: {problem}"), severity="warning", timeout=10, markup=False)

    def on_store_opened(self, message: StoreOpened) -> None:
        self.connection = "connected"
        # Screens pushed before the store opened (a run opened from the command line, a test
        # quicker than the connection) start reading when they hear it.
        for screen in self.screen_stack:
            screen.post_message(StoreOpened(message.url))
        if self._tail:
            self.follow_store()

    def on_store_reopened(self, message: StoreReopened) -> None:
        while not isinstance(self.screen, RunsScreen) and len(self.screen_stack) > 2:
            self.pop_screen()
        self.screen.post_message(StoreReopened())
        self.connection = "connected"
        self.notify(printable(message.said), severity="warning" if message.warning else "information", markup=False)
        if self._tail:
            self.follow_store()

    async def on_unmount(self) -> None:
        await self._workers_stopped()
        if self._warnings is not None:
            self._warnings.__exit__(None, None, None)
            self._warnings = None
        if self.store is not None and self._owns_store:
            # Bounded: a read blocked behind another process's lock must not hold up quitting
            # (the connection's thread is a daemon, and a reader leaves nothing half-done).
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.store.close(), timeout=CLOSE_SECONDS)

    async def _workers_stopped(self) -> None:
        """Cancel every worker and wait, bounded, for each to unwind. Textual cancels workers on
        the way out but does not wait for them, and a stopped drive releases its run's lease as
        it unwinds: that write must land before the process ends, not lapse minutes later."""
        running = [worker for worker in self.workers if not worker.is_finished]
        for worker in running:
            if not worker.is_cancelled:  # once: a second cancel would cut its unwinding short
                worker.cancel()

        async def unwound(worker: Worker[Any]) -> None:
            with contextlib.suppress(WorkerError):  # cancelled or failed: either way, done
                await worker.wait()

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*map(unwound, running)), timeout=CLOSE_SECONDS)

    # -- live changes ------------------------------------------------------------------------

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def follow_store(self) -> None:
        assert self.store is not None
        await follow_changes(
            self.store,
            lambda runs: self.post_message(StoreChanged(set(runs) if runs is not None else None)),
            lambda state: self.post_message(TailStateChanged(state)),
            ready=self.first_rows_shown.wait,
        )

    def on_store_changed(self, message: StoreChanged) -> None:
        # Every screen on the stack keeps itself current, so going back shows the present.
        for screen in self.screen_stack:
            screen.post_message(StoreChanged(None if message.run_ids is None else set(message.run_ids)))

    def on_connection_changed(self, message: ConnectionChanged) -> None:
        self.connection = message.state

    def on_tail_state_changed(self, message: TailStateChanged) -> None:
        self.tail_state = message.state

    # -- the error hub -----------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.worker_failed(event.worker)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """The one error hub: every failed worker, the app's or a screen's, ends up here."""
        from agenttui.tui.screens.dialogs import ErrorDialog

        error = worker.error
        if error is None:
            return
        if isinstance(error, StoreConnectionError):
            # The store went away: views keep what they show, and the app reconnects by itself.
            # Only a write the user asked for gets a dialog, saying nothing was written.
            if worker.group == "tail":
                self.tail_state = "paused"  # until reconnected: the feed starts again then
            self.reconnect(error.message)
            if worker.group == "operation":
                self.push_screen(
                    ErrorDialog(error.title, f"{error.message}\nThe write was not made; try again once connected.")
                )
        elif isinstance(error, AgentTuiError):
            self.push_screen(ErrorDialog(error.title, error.message))
        else:
            self.push_screen(ErrorDialog("Unexpected error", f"{type(error).__name__}: {error}"))

    @work(exclusive=True, group="reconnect", exit_on_error=False)
    async def reconnect(self, why: str) -> None:
        """Probe the store with backoff until it answers, then refresh every view."""
        if self.store is None:
            return
        self.post_message(ConnectionChanged("reconnecting", why))
        path = self.store.file_path if self._owns_store else None
        delay = RECONNECT_FIRST_DELAY
        while True:
            await asyncio.sleep(delay)
            try:
                # Against the file the store opened, not the one there when the outage began: a
                # file already gone then must not pass for connected (the open connection still
                # reads it, but no write can reach it); reopening it fails until one is back.
                if path is not None and file_identity(path) != self._store_file_identity:
                    await self._reopen()
                    return
                await self.store.get("", "")
            except StoreConnectionError:
                delay = min(delay * 2, RECONNECT_MAX_DELAY)
                continue
            break
        self.post_message(ConnectionChanged("connected"))
        self.post_message(StoreChanged(None))
        if self._tail:
            self.follow_store()  # a feed the outage stopped (a SQLite file moved away) starts again

    async def _reopen(self) -> None:
        """The store's file was replaced: open the new one, and read every view afresh from it."""
        fresh = await open_store(self.url, read_only=True)
        old, self.store = self.store, fresh
        self._store_file_identity = self._identity_of_store_file()
        if old is not None:
            await old.close()
        self.post_message(StoreReopened())

    @work(exclusive=True, group="switch-store", exit_on_error=False)
    async def switch_store(self, name: str) -> None:
        """Open the store the config file names ``name`` in place of this one, every view read
        from it afresh; if it will not open, this one stays, and the error says why."""
        try:
            fresh = await open_store(name, read_only=True)
        except AgentTuiError as error:  # not a connection this app holds: nothing to reconnect
            from agenttui.tui.screens.dialogs import ErrorDialog

            self.push_screen(ErrorDialog(error.title, f"{name} was not opened: {error.message}\nThe store open before"
                                         " stays open."))  # fmt: skip
            return
        old, self.store, self.url = self.store, fresh, name
        self.store_label = describe_url(name)
        self._store_file_identity = self._identity_of_store_file()
        if old is not None and self._owns_store:
            await old.close()
        self._owns_store = True
        self.post_message(StoreReopened(f"switched to {name}", warning=False))

    def _identity_of_store_file(self) -> tuple[int, int] | None:
        path = None if self.store is None else self.store.file_path
        return None if path is None else file_identity(path)

    # -- actions -----------------------------------------------------------------------------

    def open_run(self, run_id: str) -> None:
        from agenttui.tui.screens.run import RunScreen

        self.push_screen(RunScreen(run_id))

    async def act_on_screen(self, kind: str, action: str, run_id: str | None) -> None:
        """Run ``action`` of another screen (the palette offers every screen's): the runs list,
        with its cursor on ``run_id``; the journal or the replay of ``run_id``, found on the stack
        (going back to it) or opened over the current screen."""
        from agenttui.tui.screens.replay import ReplayScreen
        from agenttui.tui.screens.run import RunScreen

        kinds: dict[str, type[Screen[Any]]] = {"runs": RunsScreen, "run": RunScreen, "replay": ReplayScreen}
        wanted = kinds[kind]
        for depth, screen in enumerate(reversed(self.screen_stack)):
            if isinstance(screen, wanted) and (kind == "runs" or getattr(screen, "run_id", None) == run_id):
                for _ in range(depth):
                    self.pop_screen()
                break
        else:
            assert run_id is not None  # only the runs list is offered without a run
            screen = RunScreen(run_id) if kind == "run" else ReplayScreen(run_id)
            await self.push_screen(screen)
        if isinstance(screen, RunsScreen) and run_id is not None and not screen.select_run(run_id):
            self.notify("that run is not listed under the filter in force", severity="warning")
        await self.run_action(action, screen)

    # -- recover operations: choose, ask, confirm, then write ------------------------------------

    @work(exclusive=True, group="operation", exit_on_error=False)
    async def operate(self, status: RunStatus, pick: str | None = None) -> None:
        """Offer the operations that fit ``status`` (or take the one starting with ``pick``)."""
        from agenttui.runs.recovery.choices import choices_for, follow_up, step_context_of
        from agenttui.runs.recovery.operations import Answer, Decide
        from agenttui.tui.screens.dialogs import ChoiceDialog

        # What the step is (the call, its arguments, the asking turn, why it waits): the answer's
        # prompt shows its question, and the confirmation of whatever is chosen shows it all.
        step = None if self.store is None else await step_context_of(self.store, status)
        choices = choices_for(status, self.agent_spec, self.agent_factory, step)
        if pick is not None:
            choices = [c for c in choices if c[0].startswith(pick)]
        if not choices:
            self.notify(
                f"nothing to {pick.lower() if pick else 'do'} for a {status.state.value} run", severity="warning"
            )
            return
        index = (
            0
            if len(choices) == 1 and pick
            else await self.push_screen_wait(ChoiceDialog(f"Act on run {status.run_id}", [c[0] for c in choices]))
        )
        if index is None:
            return
        operation = await choices[index][1](self._ask)
        if operation is None:
            return
        # A decision or an answer leaves its run ready: with an agent given (--agent), offer to
        # re-drive it at once; what was written is said in that offer instead of a notice.
        redrive = follow_up(operation, self.agent_spec, self.agent_factory)
        written = await self._confirm_and_apply(operation, status.run_id, step, announce=redrive is None)
        if written is not None and redrive is not None:
            lead = f"{written}.\nThe run is ready to go on: re-drive it now?"
            await self._confirm_and_apply(redrive, status.run_id, await self._step_now(status.run_id), lead=lead)
        elif written is not None and isinstance(operation, Decide | Answer):
            self.notify(f"{printable_id(status.run_id)} is ready: re-drive it with agenttui redrive, or start "
                        "agenttui with --agent module:factory", timeout=6, markup=False)  # fmt: skip

    async def _step_now(self, run_id: str) -> StepContext | None:
        """What the step of ``run_id`` is now, read afresh (after a write changed it)."""
        from agenttui.runs.recovery.choices import step_context_of
        from agenttui.runs.statuses.status import run_status

        if self.store is None:
            return None
        return await step_context_of(self.store, await run_status(self.store, run_id))

    async def _ask(self, title: str, prompt: str, placeholder: str, value: str = "", problem: str = "") -> str | None:
        from agenttui.tui.screens.dialogs import PromptDialog

        return await self.push_screen_wait(PromptDialog(title, prompt, placeholder, value=value, problem=problem))

    async def _confirm_and_apply(
        self,
        operation: Operation,
        run_id: str | None,
        step: StepContext | None = None,
        *,
        lead: str = "",
        announce: bool = True,
    ) -> str | None:
        """Show what ``operation`` decides (``step``) and writes; write it once confirmed, as
        confirmed (a cancel's reason typed in the dialog). What it wrote, or None."""
        from agenttui.runs.recovery.operations import planned
        from agenttui.tui.screens.dialogs import ConfirmDialog

        if self.store is not None:  # a re-drive names the calls it runs first
            operation = await planned(self.store, operation)
        dialog = ConfirmDialog.of(operation, describe_url(self.url), step, lead=lead)
        if not await self.push_screen_wait(dialog):
            self.notify("nothing written")
            return None
        operation = dialog.operation or operation
        store, opened = await self._writable_store()
        try:
            message = await operation.apply(store)
        finally:
            if opened:
                await store.close()
        # Both name runs and calls, and a re-drive's message quotes the model: untrusted text.
        if announce:
            self.notify(printable(message, multiline=True), title=printable(operation.title), timeout=6, markup=False)
        self.post_message(StoreChanged({run_id} if run_id else None))
        return message

    async def confirm_and_apply(self, operation: Operation, run_id: str | None) -> str | None:
        """Show what ``operation`` writes and write it once confirmed (a screen's own write, as a
        fork saved into this store). What it wrote, or None."""
        return await self._confirm_and_apply(operation, run_id)

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[Store]:
        """A store handle to write with (``_writable_store``), closed after if opened for it."""
        store, opened = await self._writable_store()
        try:
            yield store
        finally:
            if opened:
                await store.close()

    async def _writable_store(self) -> tuple[Store, bool]:
        """A store handle for one write: opened for it alone, unless the app was handed a store.
        Every write asks for one here: an app that refuses writes refuses them all here."""
        if self.writes_refused:
            raise WritesRefusedError(self.writes_refused)
        if not self._owns_store and self.store is not None and not self.store.read_only:
            return self.store, False
        # Never create the file: with it moved or deleted since it was opened, the write would
        # land in a new, empty journal instead of the one on screen. A file gone is an outage.
        return await open_store(self.url, read_only=False, create=False), True

    @work(exclusive=True, group="operation", exit_on_error=False)
    async def operate_marked(
        self, marked: dict[str, RunStatus | None], shown_filter: str | None = None, pick: str | None = None
    ) -> None:
        """Offer the bulk actions that fit every marked run (or take the one starting with
        ``pick``); confirm, then apply with progress (``screens/bulk.py``)."""
        from agenttui.tui.screens.bulk import act_on_marked

        await act_on_marked(self, marked, shown_filter, pick)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Inside a dialog q is the dialog's (it closes it, or a text field takes it as typed):
        # never the app's quit, priority binding or not, so nothing under the dialog is lost.
        return not (action == "quit" and isinstance(self.screen, ModalScreen))

    def action_recover_all(self) -> None:
        self.recover_all()

    @work(exclusive=True, group="operation", exit_on_error=False)
    async def recover_all(self) -> None:
        """Show which runs a recover pass will touch, by status; recover those once confirmed."""
        from agenttui.runs.recovery.operations import RecoverAll
        from agenttui.runs.recovery.recover import plan_recover
        from agenttui.tui.screens.dialogs import ConfirmDialog
        from agenttui.tui.screens.recover import RecoverProgress

        if self.agent_factory is None or not self.agent_spec:
            self.notify("start agenttui with --agent module:factory to recover runs", severity="warning")
            return
        if self.store is None:
            return
        self.notify("reading the unfinished runs…", timeout=2)
        plan = await plan_recover(self.store)
        if not plan.to_drive:
            alone = f" ({len(plan.left_alone)} left to their drivers)" if plan.left_alone else ""
            self.notify(f"no unfinished run to recover{alone}")
            return
        progress = RecoverProgress()
        operation = await RecoverAll(
            self.agent_spec, self.agent_factory, on_progress=progress.advance, plan=plan
        ).planned(self.store)
        command = operation.command(describe_url(self.url))
        dialog = ConfirmDialog(
            operation.title,
            operation.will_write(),
            command,
            heading="The pass, as the store stands now:",
            yes="Recover",
        )
        if not await self.push_screen_wait(dialog):
            self.notify("nothing written")
            return
        self.push_screen(progress)
        store, opened = await self._writable_store()
        try:
            report = await operation.run(store)
        finally:
            if opened:
                await store.close()
        progress.finish(report)
        self.post_message(StoreChanged(None))

    def action_help(self) -> None:
        self.show_keys()

    def show_keys(self) -> None:
        """The keys of the screen or dialog on top: ``?`` anywhere (``TuiHost``)."""
        from agenttui.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def show_whole(self, title: str, text: str) -> None:
        """A text that was cut to fit, whole: ``W`` (``TuiHost``)."""
        from agenttui.tui.screens.explain import ExplanationScreen

        self.push_screen(ExplanationScreen(title, text))

    def action_next_theme(self) -> None:
        names = sorted(name for name in self.available_themes if name.startswith("agenttui-"))
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"theme: {self.theme}", timeout=2)


def launch(
    url: str,
    *,
    theme: str | None = None,
    live_writer: bool = False,
    agent_spec: str | None = None,
    run_id: str | None = None,
    writes_refused: str = "",
    prices_path: str | None = None,
) -> int:
    """Run the TUI on ``url``; returns the process exit code. ``live_writer`` (the demo) starts
    a separate process that keeps one run in flight, so there is something to tail."""
    writer = None
    if live_writer:
        # The store in the environment, not the arguments: a PostgreSQL URL may hold a password,
        # and any user on the host can read a process's arguments.
        writer = subprocess.Popen(
            [sys.executable, "-m", "agenttui.demo.live"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "AGENTTUI_DEMO_STORE": url},
        )  # fmt: skip
    # asyncpg's pool logs each failed reconnect to stderr, which would scribble over the screen;
    # the status bar already says the app is reconnecting.
    logging.getLogger("asyncpg").propagate = False
    app = AgentTuiApp(
        url, theme=theme, agent_spec=agent_spec, run_id=run_id, writes_refused=writes_refused,
        prices_path=prices_path, handles_signals=True,
    )  # fmt: skip
    # What exists now (every module imported, the app) lives as long as the process: set aside
    # from the collector's full passes, one of which walked it all during the first paint (33 ms).
    # A long read's ``older_objects_set_aside`` gives it back to the collector with its own.
    gc.freeze()
    try:
        app.run()
    finally:
        if writer is not None:
            writer.terminate()
            writer.wait(timeout=5)
    if app.failure:
        print(f"agenttui: {app.failure}", file=sys.stderr)
    return app.return_code or EXIT_OK


def quiet_config() -> Config:
    """The config file, its problems not warned of: the app says them as notifications."""
    from agenttui.config import ConfigWarning, user_config

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        return user_config()
