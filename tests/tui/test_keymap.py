"""The keymap (issue 51): the config file's ``[keys]`` rebinds every action by its binding's id;
the footer, ``?``, the palette and every hint say the keys as bound; a key the file binds wins
over a default where both are live, and a conflict is said at start with both bindings named.

The whole-app test binds every action to other keys (letters to a Russian keyboard's, the rest to
other keys) and drives the runs list, a run, a replay, a diff, a comparison and the help by them
alone, pressing every key each screen has and checking its action ran; the old keys do nothing.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from textual.dom import DOMNode
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Input, Tab

from agenttui.config import user_config
from agenttui.tui import app as app_module
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.keymap import PLACES, bindings_of, default_keys, place_classes, resolve
from agenttui.tui.screens.compare import CompareScreen
from agenttui.tui.screens.diff import DiffScreen
from agenttui.tui.screens.help import HelpScreen
from agenttui.tui.screens.replay import ReplayScreen
from agenttui.tui.screens.run import RunScreen
from agenttui.tui.screens.runs import RunsScreen
from agenttui.tui.widgets.header_bar import HeaderBar
from tests.processes import agenttui
from tests.tui.conftest import notices, settle, wait_for_screen
from tests.tui.test_app import shown
from tests.tui.test_every_key import back_to_runs, calm

SIZE = (120, 40)

#: A Russian keyboard's letters where an English one has them (ЙЦУКЕН): the layout the issue names.
RUSSIAN = dict(zip("qwertyuiopasdfghjklzxcvbnm", "йцукенгшщзфывапролдячсмить", strict=True))
#: Other keys for the rest: none a default binding has, none the app or Textual take otherwise.
OTHERS = {
    "escape": "ctrl+g",
    "enter": "ctrl+e",
    "space": "ctrl+u",
    "question_mark": "comma",
    "slash": "full_stop",
    "colon": "semicolon",
    "dollar_sign": "number_sign",
    "f1": "f2",
    "1": "f7",
    "2": "f8",
    "3": "f9",
}


def moved(key: str) -> str:
    """``key`` on the other keyboard: letters Russian (shift kept), the rest ``OTHERS``, arrows
    and the like with shift, control keys with shift too."""
    if len(key) == 1 and key.lower() in RUSSIAN:
        russian = RUSSIAN[key.lower()]
        return russian.upper() if key.isupper() else russian
    if key in OTHERS:
        return OTHERS[key]
    if key.startswith("ctrl+"):
        return f"ctrl+shift+{key.removeprefix('ctrl+')}"
    return f"shift+{key}"


MOVED_ESCAPE = OTHERS["escape"]
#: Every binding of every place on other keys.
EVERY_KEY_MOVED = {binding_id: ",".join(map(moved, keys)) for binding_id, keys in default_keys().items()}


def config_with_keys(path: Path, keys: dict[str, str]) -> None:
    lines = ["[keys]", *(f'"{binding_id}" = "{key}"' for binding_id, key in keys.items())]
    path.write_text("\n".join(lines) + "\n")
    user_config.cache_clear()


# -- resolving: what wins, what conflicts ------------------------------------------------------


def test_a_key_the_file_binds_is_taken_from_a_default_binding_that_keeps_its_others() -> None:
    resolved = resolve({"runs.mark": "space"})
    assert resolved.problems == []
    assert resolved.keymap == {"runs.mark": "space", "list.page-down": "pagedown,ctrl+f"}


def test_two_bindings_the_file_gives_one_key_are_a_conflict_naming_both() -> None:
    resolved = resolve({"runs.mark": "space", "runs.diff": "space"})
    assert resolved.problems == [
        ("runs.mark", '"space" is also runs.diff\'s in the runs list (both set here): give one of them another key')
    ]


def test_a_key_that_would_leave_a_binding_with_none_is_a_conflict_naming_both() -> None:
    (problem,) = resolve({"runs.clear-marks": "d"}).problems
    assert problem == (
        "runs.clear-marks",
        '"d" is runs.diff\'s only key in the runs list, where runs.diff keeps it: give runs.diff another key too',
    )
    assert resolve({"runs.clear-marks": "d", "runs.diff": "D"}).problems == []


def test_keys_of_two_widgets_never_meet_and_an_unknown_id_is_said() -> None:
    # j on the journal list and j on the inspector are never live together: one has the focus.
    assert [why for _, why in resolve({"list.down": "n"}).problems] == [
        '"n" is run.next-hit\'s only key in a run, where run.next-hit keeps it: give run.next-hit another key too',
        '"n" is compare.next\'s only key in a comparison, where compare.next keeps it: give compare.next another key too',
    ]
    assert resolve({"pane.down": "x", "runs.nope": "x"}).problems == [
        ("runs.nope", "no binding has this id (agenttui config keys lists them)"),
        ("pane.down", '"x" is run.deny\'s only key in a run, where run.deny keeps it: give run.deny another key too'),
    ]


def test_every_action_moved_to_the_other_keyboard_is_one_keymap_without_a_conflict() -> None:
    resolved = resolve(EVERY_KEY_MOVED)
    assert resolved.problems == []
    for binding_id, keys in default_keys().items():
        assert set(resolved.keymap[binding_id].split(",")).isdisjoint(keys), binding_id


# -- places: the keys live together, checked against what is mounted ----------------------------


def holders(screen: Screen[Any]) -> set[type[DOMNode]]:
    """The classes on ``screen`` that hold keys with an id: itself and its widgets."""
    nodes: list[DOMNode] = [screen, *screen.query("*")]
    return {type(node) for node in nodes if bindings_of(type(node))}


async def reach_runs(pilot: Pilot[Any]) -> None:
    pass


async def reach_run(pilot: Pilot[Any]) -> None:
    await select(pilot, "refund-a1002")
    await press(pilot, "list.choose")
    await wait_for_screen(pilot, RunScreen)


async def reach_replay(pilot: Pilot[Any]) -> None:
    await reach_run(pilot)
    await calm(pilot)
    await press(pilot, "run.replay")
    await wait_for_screen(pilot, ReplayScreen)


async def marked_two(pilot: Pilot[Any], *, mark_second: bool) -> None:
    """Two refunds, the first marked (the second too, with ``mark_second``), the cursor on the second."""
    await press(pilot, "runs.clear-marks")
    await select(pilot, "refund-a1002")
    await press(pilot, "runs.mark")
    await select(pilot, "refund-a1003-denied")
    if mark_second:
        await press(pilot, "runs.mark")


async def reach_diff(pilot: Pilot[Any]) -> None:
    await marked_two(pilot, mark_second=True)
    await press(pilot, "runs.diff")
    await wait_for_screen(pilot, DiffScreen)


async def reach_compare(pilot: Pilot[Any]) -> None:
    await marked_two(pilot, mark_second=False)
    await press(pilot, "runs.compare")
    await wait_for_screen(pilot, CompareScreen)


async def reach_help(pilot: Pilot[Any]) -> None:
    await press(pilot, "app.help")
    await wait_for_screen(pilot, HelpScreen)


REACH: dict[str, tuple[Callable[[Pilot[Any]], Awaitable[None]], type[Screen[Any]]]] = {
    "the runs list": (reach_runs, RunsScreen),
    "a run": (reach_run, RunScreen),
    "a replay": (reach_replay, ReplayScreen),
    "a diff": (reach_diff, DiffScreen),
    "a comparison": (reach_compare, CompareScreen),
    "the help": (reach_help, HelpScreen),
}


async def select(pilot: Pilot[Any], run_id: str) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, RunsScreen)
    screen.table.cursor = next(i for i, r in enumerate(screen.table.items) if r.run_id == run_id)
    await pilot.pause()


async def press(pilot: Pilot[Any], binding_id: str) -> None:
    """Press ``binding_id``'s first key as the app binds it."""
    app = pilot.app
    assert isinstance(app, AgentTuiApp)
    await pilot.press(app.keymap.get(binding_id, ",".join(default_keys()[binding_id])).split(",")[0])
    await calm(pilot)


class Recording(AgentTuiApp):
    """The app, noting each action a key ran (``App._check_bindings`` runs them here)."""

    CSS_PATH = str(Path(app_module.__file__).parent / AgentTuiApp.CSS_PATH)  # Textual reads it beside the subclass

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ran: list[tuple[str, DOMNode | None]] = []

    async def run_action(
        self,
        action: str | tuple[str, str, tuple[object, ...]],
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        self.ran.append((str(action), default_namespace))
        return await super().run_action(action, default_namespace, namespaces)


async def keys_bound(app: Recording, pilot: Pilot[Any]) -> None:
    """Wait for the app to check the file's keys against every screen (``bind_keys``)."""
    for _ in range(400):
        if (
            all(worker.is_finished for worker in app.workers if worker.group == "keys")
            and app.first_rows_shown.is_set()
        ):
            return
        await pilot.pause(0.01)
    raise AssertionError("the keys were never bound")


@pytest.mark.parametrize("place", list(REACH))
async def test_each_place_lists_the_widgets_with_keys_mounted_there(demo_db: Path, place: str) -> None:
    reach, kind = REACH[place]
    app = Recording(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await reach(pilot)
        await calm(pilot)
        assert isinstance(app.screen, kind)
        declared = place_classes(place)
        for cls in holders(app.screen):
            assert issubclass(cls, tuple(declared)), f"{cls.__name__} holds keys in {place}; PLACES does not list it"


def test_every_place_is_one_the_app_has() -> None:
    assert set(REACH) <= set(PLACES)
    for place in PLACES:
        assert place_classes(place)  # every path imports


# -- the whole app on other keys ----------------------------------------------------------------

NOT_PRESSED = {"app.quit"}
"""Quit ends the app (tests/tui/test_app.py proves q does)."""


@pytest.mark.parametrize("place", list(REACH))
async def test_every_action_runs_by_its_new_key_and_never_by_its_old_one(
    demo_db: Path, no_user_config: Path, place: str
) -> None:
    config_with_keys(no_user_config, EVERY_KEY_MOVED)
    reach, kind = REACH[place]
    app = Recording(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await keys_bound(app, pilot)
        assert not [n for n in notices(app) if "config" in n], notices(app)
        await reach(pilot)
        await calm(pilot)
        assert isinstance(app.screen, kind)
        actives = {
            active.binding.id: (key, active)
            for key, active in app.screen.active_bindings.items()
            if active.binding.id and active.binding.id not in NOT_PRESSED and active.enabled
        }
        assert actives, f"no key is live in {place}"
        for binding_id, (key, active) in actives.items():
            assert key in EVERY_KEY_MOVED[binding_id].split(","), f"{binding_id} is live on {key}, not a moved key"
            if not isinstance(app.screen, kind):  # the last key left: back, and there again
                await back_to_runs(pilot, MOVED_ESCAPE)
                await reach(pilot)
            if app.screen.active_bindings.get(key) is None:
                continue  # the last key changed what is live (a pane shown, a filter opened)
            app.ran.clear()
            await pilot.press(key)
            await calm(pilot)
            ran = [(action, type(node)) for action, node in app.ran]
            assert (active.binding.action, type(active.node)) in ran, f"{key} ran {app.ran}, not {binding_id}"
            await leave_prompts(pilot, kind)
        # The old keys run none of this place's actions now.
        await back_to_runs(pilot, MOVED_ESCAPE)
        await reach(pilot)
        old = {key for binding_id in actives for key in default_keys()[binding_id] if len(key) == 1 and key.isalpha()}
        app.ran.clear()
        for key in sorted(old):
            await pilot.press(key)
            await calm(pilot)
        ran_by_old_keys = {action for action, _ in app.ran}
        assert ran_by_old_keys.isdisjoint({active.binding.action for _, active in actives.values()}), ran_by_old_keys


async def leave_prompts(pilot: Pilot[Any], kind: type[Screen[Any]]) -> None:
    """Close what a key opened (a prompt, a dialog) by the moved keys: the next key is the screen's."""
    app = pilot.app
    for _ in range(3):
        if isinstance(app.screen.focused, Input) and isinstance(app.screen, kind):
            await pilot.press(MOVED_ESCAPE)
            await calm(pilot)
            continue
        if not app.screen.is_modal or isinstance(app.screen, kind):
            return
        await pilot.press(MOVED_ESCAPE)
        await calm(pilot)


# -- every place that names a key names it as bound --------------------------------------------


async def test_the_footer_the_help_the_palette_and_the_hints_say_the_keys_as_bound(
    demo_db: Path, no_user_config: Path
) -> None:
    config_with_keys(no_user_config, EVERY_KEY_MOVED)
    app = Recording(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await keys_bound(app, pilot)
        footer = " ".join(str(key.render()) for key in app.screen.query("FooterKey"))
        assert "ы Status filter" in footer and "s Status filter" not in footer
        # A filter that matches nothing says how to clear it and cycle the status filter, as bound.
        runs = app.screen
        assert isinstance(runs, RunsScreen)
        await press(pilot, "runs.filter")
        await pilot.press(*"nosuchrun")
        await calm(pilot)
        assert runs.table.empty_text == "No run matches the filter: ^g clears the text, ы cycles the status filter."
        await pilot.press(MOVED_ESCAPE, MOVED_ESCAPE)
        await calm(pilot)
        await press(pilot, "app.help")
        await wait_for_screen(pilot, HelpScreen)
        listed = shown(app.screen.query_one("#help-bindings"))
        assert re.search(r"^ы +Cycle status filter", listed, re.M) and "runs.status-filter" not in listed, listed
        await pilot.press(MOVED_ESCAPE)
        await calm(pilot)
        # A run's tabs name their panes' keys, as bound.
        await reach_run(pilot)
        await calm(pilot)
        tabs = [tab.label_text for tab in app.screen.query(Tab)]
        assert tabs == ["ш Record", "с State", "м Events", "ц Flow", "# Cost"], tabs
        await reach_replay_from_run(pilot)
        assert "waiting: т next turn, у to the end" in app.screen.query_one("#replay-title", HeaderBar).whole


async def reach_replay_from_run(pilot: Pilot[Any]) -> None:
    await press(pilot, "run.replay")
    await wait_for_screen(pilot, ReplayScreen)
    await calm(pilot)


async def test_the_palette_says_each_actions_key_as_bound(demo_db: Path, no_user_config: Path) -> None:
    from agenttui.tui.commands import AgentTuiCommands

    config_with_keys(no_user_config, {"runs.mark": "space", "run.replay": "ctrl+y"})
    app = Recording(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys_bound(app, pilot)
        provider = AgentTuiCommands(app.screen)
        helps = {title: help_text for title, _, help_text in provider._commands()}
        assert helps["runs: Mark or unmark the selected run"] == "key: space"
        assert helps["run: Replay (recorded tools)"].endswith("(key there: ^y)")


async def test_a_conflict_is_said_at_start_naming_both_bindings_and_the_line(
    demo_db: Path, no_user_config: Path
) -> None:
    config_with_keys(no_user_config, {"runs.mark": "space", "runs.diff": "space"})
    app = Recording(str(demo_db), tail=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await keys_bound(app, pilot)
        said = [n for n in notices(app) if n.startswith("config:")]
        assert said == [
            f'config: {no_user_config}:2: keys.runs.mark: "space" is also runs.diff\'s in the runs list (both set '
            "here): give one of them another key"
        ]


async def test_space_marks_a_run_once_the_file_says_so(demo_db: Path, no_user_config: Path) -> None:
    """The issue's own example: ``"runs.mark" = "space"``, though space pages the list by default."""
    config_with_keys(no_user_config, {"runs.mark": "space"})
    app = Recording(str(demo_db), tail=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await keys_bound(app, pilot)
        screen = app.screen
        assert isinstance(screen, RunsScreen)
        first = screen.table.items[0].run_id
        screen.table.cursor = 0
        await pilot.press("space")
        await calm(pilot)
        assert first in screen.table.marks
        assert not notices(app) or all("config" not in n for n in notices(app))


# -- the command line ---------------------------------------------------------------------------


def test_config_keys_lists_every_binding_as_bound_and_check_says_what_is_wrong(no_user_config: Path) -> None:
    config_with_keys(no_user_config, {"runs.mark": "space", "runs.nope": "x"})
    listed = agenttui("config", "keys", "--json")
    assert listed.returncode == 0, listed.stderr
    import json

    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    mark = next(r for r in rows if r["id"] == "runs.mark")
    assert mark == {"place": "the runs list", "id": "runs.mark", "keys": ["space"], "does": "Mark or unmark"}
    page = next(r for r in rows if r["id"] == "list.page-down" and r["place"] == "the runs list")
    assert page["keys"] == ["pagedown", "ctrl+f"]
    assert {r["id"] for r in rows} == set(default_keys())
    checked = agenttui("config", "check")
    assert checked.returncode == 2
    assert checked.stderr.strip() == (
        f"agenttui: {no_user_config}:3: keys.runs.nope: no binding has this id (agenttui config keys lists them)"
    )


def test_every_screen_key_has_a_group_in_the_help() -> None:
    """A screen's key not in ``GROUPS`` would be listed last, under moving about."""
    from textual.screen import ModalScreen

    from agenttui.tui.screens.help import GROUPS

    grouped = set().union(*(ids for _, ids in GROUPS))
    for place in PLACES:
        classes = place_classes(place)
        if not issubclass(classes[0], ModalScreen):  # a screen, its widgets, then the app
            assert set(bindings_of(classes[0])) | set(bindings_of(classes[-1])) <= grouped, place
