"""StoreScreen: a screen that reads the app's store, reports its workers' failures to the app, and
says why a key does nothing where it does not apply; AppModal: every dialog of the app's, with the
one rule for keys inside a dialog."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, TypeVar, cast

from textual import events
from textual.actions import parse as parse_action
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widget import Widget
from textual.worker import Worker, WorkerState

from agenttui.journal.inert import printable
from agenttui.stores.base import Store
from agenttui.tui.host import TuiHost, host_of
from agenttui.tui.keymap import key_names, own_keys

ResultT = TypeVar("ResultT")

_STYLES = Path(__file__).parent.parent
VIEW_STYLES = _STYLES / "views.tcss"
"""The styles of the screens over a run or two (their ``CSS_PATH``)."""
DIALOG_STYLES = _STYLES / "dialogs.tcss"
"""The styles of every dialog (``AppModal``'s ``CSS_PATH``)."""
SCREEN_STYLES = (VIEW_STYLES, DIALOG_STYLES)
"""Every screen's styles beyond the app's own ``app.tcss``, which holds what the runs list and
every screen needs: kept apart so that start-up parses a fifth of the rules (about 20 ms,
benchmarks/startup.py), read all at once after the first rows (``AgentTuiApp.read_screen_styles``)."""


class AppModal(ModalScreen[ResultT]):
    """Every dialog the app shows (menus, confirmations, prompts, progress, help): one rule for its
    keys. ``q`` does what ``esc`` does there, closing it (the app's ``q`` never quits from a
    dialog: ``AgentTuiApp.check_action``), so a replay under it is never lost; ``?`` shows the
    dialog's own keys (``f1`` too, for where a text field takes ``?`` as typed)."""

    CSS_PATH = DIALOG_STYLES
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "close", "Close", show=False, id="modal.close"),
        Binding("question_mark,f1", "keys", "This dialog's keys", show=False, id="modal.keys"),
    ]

    def action_close(self) -> None:
        """What esc does here by default (its binding's action, whatever its key now), or
        dismiss without a result."""
        escape = next((a for a in self.active_bindings.values() if "escape" in own_keys(a.node, a.binding)), None)
        if escape is None or escape.binding.action == "close":
            self.dismiss()
            return
        self.call_next(self.app.run_action, escape.binding.action, escape.node)

    def action_keys(self) -> None:
        host_of(self.app).show_keys()


class StoreScreen(Screen[None]):
    """Screens over the store. Worker state messages do not bubble, so each screen hands its
    failed workers to the app's one error hub (``AgentTuiApp.worker_failed``)."""

    BINDINGS = [Binding("W", "explain", "Whole text", id="screen.explain")]

    def explanation(self) -> tuple[str, str] | None:
        """What this screen cut to fit, to show whole (a title and the text), or None: the
        header's parts, when one was cut (``HeaderBar``)."""
        from agenttui.tui.widgets.header_bar import HeaderBar

        for header in self.query(HeaderBar):
            if header.cut:
                return "The header in full", header.whole
        return None

    def action_explain(self) -> None:
        if (shown := self.explanation()) is not None:
            self.tui.show_whole(*shown)

    @property
    def tui(self) -> TuiHost:
        """The app, typed: its store, agent factory and operations, for the screens over it."""
        return host_of(self.app)

    @property
    def store(self) -> Store:
        # Read once the app's store is open (``StoreOpened``); before that it is None.
        return cast(Store, self.tui.store)

    def unavailable(self, action: str) -> str | None:
        """Why ``action`` does nothing here now, or None when it applies. A key whose action does
        not apply is left out of the footer (``check_action``), and pressed, says why (``on_key``):
        no key the screen binds does nothing silently."""
        if action == "explain" and self.explanation() is None:
            return "nothing is cut here: it all shows whole"
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.unavailable(action) is None

    def on_key(self, event: events.Key) -> None:
        # Keys reach the screen before its bindings are tried (the app tries them as the key
        # leaves the screen): a key of the screen's own whose action does not apply here, and
        # that no other binding takes, says why instead of doing nothing.
        own = [b for cls in type(self).__mro__ for b in cls.__dict__.get("BINDINGS", [])]
        for binding in Binding.make_bindings(own):
            if event.key not in key_names(self.app, binding):
                continue
            why = self.unavailable(parse_action(binding.action)[1])
            if why is not None and event.key not in self.active_bindings:
                event.stop()
                self.notify(printable(why), severity="warning", timeout=4, markup=False)
                return

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
        if tabs.active == pane:
            # Its key again: the pane shown takes the keys (j/k scroll it), as enter on a step does.
            inside = [w for w in tabs.get_pane(pane).query("*") if w.focusable]
            if inside and self.focused not in inside:
                self.focus_now(inside[0])
            else:
                self.notify(f"the {pane.replace('-', ' ')} pane shows already: esc goes back to the list", timeout=3)
            return
        if self.focused is not None and tabs in self.focused.ancestors:
            self.query_one("JournalList").focus()
        tabs.active = pane
