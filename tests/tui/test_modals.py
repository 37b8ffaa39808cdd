"""One rule for keys inside every dialog of the app's, checked on each dialog found in the code:
``q`` closes it (never quits the app; where a text field has the focus, it types a q), esc closes
it, and ``?`` (``f1`` where a text field takes ``?``) shows the dialog's own keys."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import pkgutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TextArea

import agenttui.tui.screens as screens_package
from agenttui.journal import Journal
from agenttui.runs.recovery.operations import Cancel
from agenttui.runs.recovery.recover import RecoverReport
from agenttui.runs.selection.batch import CancelRuns, Selection
from agenttui.stores.base import Store
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.bulk_plan import bulk_choices, fits
from agenttui.tui.export_plan import one_run
from agenttui.tui.screens.base import AppModal
from agenttui.tui.screens.bulk import BulkConfirm, BulkMenu, BulkProgress
from agenttui.tui.screens.dialogs import (
    ChoiceDialog,
    Confirmation,
    ConfirmDialog,
    ErrorDialog,
    PromptDialog,
)
from agenttui.tui.screens.explain import ExplanationScreen
from agenttui.tui.screens.export import ExportDialog
from agenttui.tui.screens.fork_editor import ForkEditor
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.recover import RecoverProgress
from agenttui.tui.screens.runs import RunsScreen
from tests.tui.conftest import screen_of, settle, until

SIZE = (80, 24)


def every_modal() -> list[type[ModalScreen[Any]]]:
    """Every dialog class the app's screens define, found by importing each screen module."""
    found: dict[str, type[ModalScreen[Any]]] = {}
    for module_info in pkgutil.iter_modules(screens_package.__path__):
        module = importlib.import_module(f"{screens_package.__name__}.{module_info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, ModalScreen) and cls.__module__ == module.__name__ and cls is not AppModal:
                found[cls.__qualname__] = cls
    return [found[name] for name in sorted(found)]


async def _fork_editor(store: Store) -> ForkEditor:
    records = await Journal(store).history("refund-a1002")
    return ForkEditor(next(r for r in records if r.name == "@llm/1"))


def _finished_recover(_: Store) -> RecoverProgress:
    progress = RecoverProgress()
    progress.call_after_refresh(progress.finish, RecoverReport())
    return progress


def _bulk_progress(store: Store) -> BulkProgress:
    """A bulk action over no runs: it finishes at once, writing nothing."""

    @contextlib.asynccontextmanager
    async def writing() -> AsyncIterator[Store]:
        yield store

    return BulkProgress(Selection(CancelRuns("why"), None), writing)


#: How to show each dialog, by class name: a dialog added to the app without a line here fails
#: ``test_every_dialog_is_an_app_modal_and_walked``.
SHOW: dict[str, Callable[[Store], Any]] = {
    "BulkConfirm": lambda _: BulkConfirm(Selection(CancelRuns("why"), None), "demo.db", None),
    "BulkMenu": lambda _: BulkMenu(2, fits(bulk_choices(None, None), {"a": None, "b": None})),
    "BulkProgress": _bulk_progress,
    "ChoiceDialog": lambda _: ChoiceDialog("Act on run x", ["one", "two"]),
    "Confirmation": lambda _: Confirmation("Write?", "agenttui cancel demo.db x"),
    "ConfirmDialog": lambda _: ConfirmDialog.of(Cancel("refund-a1005", "why"), "demo.db"),
    "ErrorDialog": lambda _: ErrorDialog("Bad value", "not JSON"),
    "ExplanationScreen": lambda _: ExplanationScreen("The header in full", "stopped at breakpoint " * 20),
    "ExportDialog": lambda store: ExportDialog(store, "demo.db", [one_run("refund-a1002", "the run")]),
    "ForkEditor": _fork_editor,
    "HelpScreen": lambda _: None,  # ? on the runs list
    "PromptDialog": lambda _: PromptDialog("Answer", "The question", "your answer"),
    "RecoverProgress": _finished_recover,
}


def test_every_dialog_is_an_app_modal_and_walked() -> None:
    modals = every_modal()
    assert len(modals) >= 12
    for cls in modals:
        assert issubclass(cls, AppModal), f"{cls.__qualname__} is a ModalScreen but not an AppModal"
    assert sorted(cls.__qualname__ for cls in modals) == sorted(SHOW)


def help_text(help_screen: HelpScreen) -> str:
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(help_screen.query_one("#help-bindings", Static).content)
    return console.export_text()


async def show(app: AgentTuiApp, name: str) -> ModalScreen[Any]:
    assert app.store is not None
    made = SHOW[name](app.store)
    dialog = await made if inspect.isawaitable(made) else made
    if dialog is None:
        app.action_help()
    else:
        await app.push_screen(dialog)
    return app.screen  # type: ignore[return-value]  # what was just pushed: a dialog


def typing_into(dialog: ModalScreen[Any]) -> Input | TextArea | None:
    focused = dialog.focused
    return focused if isinstance(focused, Input | TextArea) else None


@pytest.mark.parametrize("name", sorted(SHOW))
async def test_q_closes_the_dialog_not_the_app_and_question_mark_shows_its_keys(demo_db: Path, name: str) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dialog = await show(app, name)
        await pilot.pause()
        if isinstance(dialog, BulkProgress):
            await until(pilot, lambda: dialog.finished, "the empty bulk action to finish")
        assert isinstance(dialog, AppModal)
        field = typing_into(dialog)

        if not isinstance(dialog, HelpScreen):
            await pilot.press("f1" if field is not None else "question_mark")
            await pilot.pause()
            keys = screen_of(app, HelpScreen)
            text = help_text(keys)
            own = {a.binding.description for a in dialog.active_bindings.values() if a.node is dialog and a.binding.id}
            assert own and all(does in text for does in own), (own, text)
            assert "Quit" not in text and "modal.close" not in text  # not the app's keys; words, not ids
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is dialog

        if field is not None:
            before = field.text if isinstance(field, TextArea) else field.value
            await pilot.press("q")
            await pilot.pause()
            after = field.text if isinstance(field, TextArea) else field.value
            assert app.is_running and app.screen is dialog and after != before and "q" in after
            await pilot.press("escape")
        else:
            await pilot.press("q")
        await pilot.pause()
        await pilot.pause()
        assert app.is_running
        assert dialog not in app.screen_stack, f"q left {name} open"
        assert isinstance(app.screen, RunsScreen)


@pytest.mark.parametrize("name", sorted(n for n in SHOW if n != "HelpScreen"))
async def test_esc_closes_the_dialog(demo_db: Path, name: str) -> None:
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        dialog = await show(app, name)
        await pilot.pause()
        if isinstance(dialog, BulkProgress):
            await until(pilot, lambda: dialog.finished, "the empty bulk action to finish")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.pause()
        assert app.is_running and dialog not in app.screen_stack
