"""StoreScreen: a screen that reads the app's store and reports its workers' failures to the app;
AppModal: every dialog of the app's, with the one rule for keys inside a dialog."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar, cast

from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.tui.app import AgentTuiApp


ResultT = TypeVar("ResultT")


class AppModal(ModalScreen[ResultT]):
    """Every dialog the app shows (menus, confirmations, prompts, progress, help): one rule for its
    keys. ``q`` does what ``esc`` does there, closing it (the app's ``q`` never quits from a
    dialog: ``AgentTuiApp.check_action``), so a replay under it is never lost; ``?`` shows the
    dialog's own keys (``f1`` too, for where a text field takes ``?`` as typed)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "close", "Close", show=False, id="modal.close"),
        Binding("question_mark,f1", "keys", "This dialog's keys", show=False, id="modal.keys"),
    ]

    def action_close(self) -> None:
        """What esc does here (its binding's action), or dismiss without a result."""
        escape = self.active_bindings.get("escape")
        if escape is None or escape.binding.action == "close":
            self.dismiss()
            return
        self.call_next(self.app.run_action, escape.binding.action, escape.node)

    def action_keys(self) -> None:
        from agenttui.tui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen(self))


class StoreScreen(Screen[None]):
    """Screens over the store. Worker state messages do not bubble, so each screen hands its
    failed workers to the app's one error hub (``AgentTuiApp.worker_failed``)."""

    @property
    def tui(self) -> AgentTuiApp:
        """The app, typed: its store, agent factory and operations, for the screens over it."""
        return cast("AgentTuiApp", self.app)

    @property
    def store(self) -> Store:
        # Read once the app's store is open (``StoreOpened``); before that it is None.
        return cast(Store, self.tui.store)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.tui.worker_failed(event.worker)

    def focus_now(self, widget: Widget) -> None:
        """Focus ``widget`` before the next key is handled.

        ``Widget.focus`` waits behind the messages already queued, so keys typed ahead (a paste,
        or keys a slow SSH link delivers together) would go to the old widget: "/ref⏎" would
        open the run under the cursor instead of filtering."""
        self.set_focus(widget)

    def back_to(self, view: Widget) -> None:
        """Esc on a screen of a list and its detail: back to the list from the detail, and off
        the screen from the list."""
        if self.focused is not None and self.focused is not view:
            self.focus_now(view)
        else:
            self.app.pop_screen()

    def copy_step_name(self, name: str | None, none_here: str) -> None:
        """Copy ``name`` to the clipboard, or warn ``none_here`` when the cursor is on no step."""
        from agenttui.tui.clipboard import copy_text

        if name is None:
            self.notify(none_here, severity="warning")
            return
        copy_text(self, name, "the step name")

    def show_pane(self, pane: str) -> None:
        """Switch the screen's tabbed panes to ``pane``. Focus inside the pane being hidden goes
        to the journal first: left there, Textual would move it into a hidden pane's neighbour
        and the tabs would follow it straight back."""
        # Imported here: the runs list, the first screen, has no tabs (about 8 ms of start-up).
        from textual.widgets import TabbedContent

        tabs = self.query_one(TabbedContent)
        if self.focused is not None and tabs in self.focused.ancestors:
            self.query_one("JournalList").focus()
        tabs.active = pane
