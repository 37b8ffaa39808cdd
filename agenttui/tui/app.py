"""The App: opens the store read-only, hosts the screens, follows changes, turns errors into dialogs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from agenttui.agent.factory import AgentFactory, load_factory
from agenttui.errors import AgentTuiError
from agenttui.stores import describe_url, open_store
from agenttui.stores.base import Store
from agenttui.tui.commands import AgentTuiCommands
from agenttui.tui.messages import ConnectionChanged, StoreChanged, StoreOpened, TailStateChanged
from agenttui.tui.screens.dialogs import ErrorDialog
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.tail import follow_changes
from agenttui.tui.themes import DEFAULT_THEME, load_themes
from agenttui.tui.widgets.status_bar import StatusBar

EXIT_OK = 0
EXIT_CONNECTION = 2


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

    def __init__(
        self,
        url: str = "",
        *,
        store: Store | None = None,
        theme: str | None = None,
        tail: bool = True,
        theme_dir: Path | None = None,
        agent_spec: str | None = None,
    ) -> None:
        super().__init__()
        self.agent_spec = agent_spec
        """``--agent module:factory``: the user's agent, for replays with their code and re-drives."""
        self.agent_factory: AgentFactory | None = load_factory(agent_spec) if agent_spec else None
        self.url = url or (store.display_url if store else "")
        self.store: Store | None = store
        self._owns_store = store is None
        self._tail = tail
        self._connection = "connecting"
        self._tail_state = "off"
        loaded = load_themes(theme_dir)
        for loaded_theme in loaded.themes:
            self.register_theme(loaded_theme)
        self._theme_problems = loaded.problems
        self._wanted_theme = theme or DEFAULT_THEME
        self.failure = ""
        """Why the app could not do its job (the store would not open); the CLI prints it."""

    # -- lifecycle ---------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self._wanted_theme in self.available_themes:
            self.theme = self._wanted_theme
        else:
            self.theme = DEFAULT_THEME
            self.notify(f"no theme {self._wanted_theme!r}; using {DEFAULT_THEME}", severity="warning")
        for problem in self._theme_problems:
            self.notify(f"theme not loaded: {problem}", severity="warning")
        self.push_screen(RunsScreen())
        if self.store is None:
            self.open_store()
        else:
            self.post_message(StoreOpened(self.store.display_url))

    @work(exclusive=True, group="store", exit_on_error=False)
    async def open_store(self) -> None:
        try:
            self.store = await open_store(self.url, read_only=True)
        except AgentTuiError as exc:
            self.failure = f"{exc.title}: {exc.message}"
            self.exit(return_code=EXIT_CONNECTION)
            return
        self.post_message(StoreOpened(self.store.display_url))

    def on_store_opened(self, message: StoreOpened) -> None:
        self.url = message.url
        self.post_message(ConnectionChanged("connected"))
        screen = self.screen
        if isinstance(screen, RunsScreen):
            screen.load_runs()
        if self._tail:
            self.follow_store()

    async def on_unmount(self) -> None:
        if self.store is not None and self._owns_store:
            await self.store.close()

    # -- live changes ------------------------------------------------------------------------

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def follow_store(self) -> None:
        assert self.store is not None
        await follow_changes(
            self.store,
            lambda runs: self.post_message(StoreChanged(set(runs) if runs is not None else None)),
            lambda state: self.post_message(TailStateChanged(state)),
        )

    def on_store_changed(self, message: StoreChanged) -> None:
        # Every screen on the stack keeps itself current, so going back shows the present.
        for screen in self.screen_stack:
            if isinstance(screen, (RunsScreen, RunScreen)):
                screen.post_message(StoreChanged(None if message.run_ids is None else set(message.run_ids)))

    def on_connection_changed(self, message: ConnectionChanged) -> None:
        self._connection = message.state
        self.refresh_status_bars()

    def on_tail_state_changed(self, message: TailStateChanged) -> None:
        self._tail_state = message.state
        self.refresh_status_bars()

    def status_fields(self) -> tuple[str, str, str]:
        """What status bars show: the store (password masked), the connection, the tail."""
        return describe_url(self.url), self._connection, self._tail_state

    def refresh_status_bars(self) -> None:
        """Tell every status bar the news (a bar mounted later asks ``status_fields`` itself)."""
        for screen in self.screen_stack:
            for bar in screen.query(StatusBar):
                bar.show(*self.status_fields())

    # -- the error hub -----------------------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state != WorkerState.ERROR or event.worker.error is None:
            return
        error = event.worker.error
        if isinstance(error, AgentTuiError):
            self.push_screen(ErrorDialog(error.title, error.message))
        else:
            self.push_screen(ErrorDialog("Unexpected error", f"{type(error).__name__}: {error}"))

    # -- actions -----------------------------------------------------------------------------

    def open_run(self, run_id: str) -> None:
        screen = RunScreen(run_id)
        self.push_screen(screen)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def action_next_theme(self) -> None:
        names = sorted(name for name in self.available_themes if name.startswith("agenttui-"))
        self.theme = names[(names.index(self.theme) + 1) % len(names)] if self.theme in names else names[0]
        self.notify(f"theme: {self.theme}", timeout=2)


def launch(url: str, *, theme: str | None = None, live_writer: bool = False, agent_spec: str | None = None) -> int:
    """Run the TUI on ``url``; returns the process exit code. ``live_writer`` (the demo) starts
    a separate process that keeps one run in flight, so there is something to tail."""
    writer = None
    if live_writer:
        writer = subprocess.Popen(
            [sys.executable, "-m", "agenttui.demo.live", url],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    app = AgentTuiApp(url, theme=theme, agent_spec=agent_spec)
    try:
        app.run()
    finally:
        if writer is not None:
            writer.terminate()
            writer.wait(timeout=5)
    if app.failure:
        print(f"agenttui: {app.failure}", file=sys.stderr)
    return app.return_code or EXIT_OK
