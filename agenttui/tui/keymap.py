"""The keys as bound: the config file's ``[keys]`` over the bindings' own (docs/guide/config.md).

Every binding has an id (``runs.mark``); ``[keys] "runs.mark" = "space"`` gives it other keys,
through Textual's keymap (``App.set_keymap``), so the footer, ``?`` and the palette read them
as bound. A hint in a sentence ("esc clears the filter") reads its key here too (``key_of``).

A key the file binds is checked in every *place* its binding is live: a screen or dialog, the
app's keys (on screens, not in dialogs) and the keys of the widgets on it. There, the file's key
wins over a binding that has it by default, which keeps its other keys (``space`` for
``runs.mark`` leaves paging down the list ``pagedown`` and ``ctrl+f``). What cannot be settled
that way is a conflict, named with both bindings: two bindings the file gives one key, or a
default binding that would be left with no key. Places are listed here, by import path, since
most screens are imported only when first shown; tests/tui/test_keymap.py checks each against
the widgets mounted on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import import_module
from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.keys import _normalize_key_list  # Textual's own normalizing of a keymap's keys ("?")

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode

#: Each place keys are pressed, by what a person calls it: its screen or dialog first, then the
#: widgets on it that hold keys. Screens add the app's keys; a dialog's keys are its own.
PLACES: dict[str, tuple[str, ...]] = {
    "the runs list": ("screens.runs:RunsScreen", "widgets.runs_table:RunsTable"),
    "a run": (
        "screens.run:RunScreen",
        "widgets.virtual_list:VirtualList",
        "widgets.scrolling_pane:ScrollingPane",
        "widgets.flowchart_view:FlowchartView",
        "widgets.find_bar:FindBar",
    ),
    "a replay": (
        "screens.replay:ReplayScreen",
        "widgets.virtual_list:VirtualList",
        "widgets.scrolling_pane:ScrollingPane",
        "widgets.flowchart_view:FlowchartView",
    ),
    "a diff": ("screens.diff:DiffScreen", "widgets.virtual_list:VirtualList", "widgets.scrolling_pane:ScrollingPane"),
    "a comparison": (
        "screens.compare:CompareScreen",
        "widgets.virtual_list:VirtualList",
        "widgets.scrolling_pane:ScrollingPane",
    ),
    "the help": ("screens.help:HelpScreen", "widgets.scrolling_pane:ScrollingPane"),
    "an explanation": ("screens.explain:ExplanationScreen", "widgets.scrolling_pane:ScrollingPane"),
    "a confirmation": ("screens.dialogs:ConfirmDialog", "widgets.scrolling_pane:ScrollingPane"),
    "a choice": ("screens.dialogs:ChoiceDialog", "screens.dialogs:ChoiceList"),
    "a prompt": ("screens.dialogs:PromptDialog",),
    "an error": ("screens.dialogs:ErrorDialog",),
    "the export dialog": ("screens.export:ExportDialog", "widgets.scrolling_pane:ScrollingPane"),
    "the fork editor": ("screens.fork_editor:ForkEditor", "screens.fork_editor:ValueArea"),
    "a bulk action's menu": ("screens.bulk:BulkMenu", "screens.dialogs:ChoiceList"),
    "a bulk action's progress": ("screens.bulk:BulkProgress", "widgets.scrolling_pane:ScrollingPane"),
    "recovery's progress": ("screens.recover:RecoverProgress", "widgets.scrolling_pane:ScrollingPane"),
}
APP = "app:AgentTuiApp"


def place_classes(place: str) -> list[type[DOMNode]]:
    """The classes whose bindings are live in ``place``: its screen's, its widgets', and the app's
    on a screen (a dialog stops Textual's chain of keys at itself)."""
    from textual.screen import ModalScreen

    classes = [_class(path) for path in PLACES[place]]
    return classes if issubclass(classes[0], ModalScreen) else [*classes, _class(APP)]


@cache
def _class(path: str) -> type[DOMNode]:
    module, _, name = path.partition(":")
    found: type[DOMNode] = getattr(import_module(f"agenttui.tui.{module}"), name)
    return found


@cache
def bindings_of(cls: type[DOMNode]) -> dict[str, tuple[Binding, list[str]]]:
    """``cls``'s bindings with an id (its bases' too, as Textual merges them), each with its keys.
    Read once a class (a hint asks for them each time it is drawn): not to be changed."""
    merged = cls._merged_bindings
    found: dict[str, tuple[Binding, list[str]]] = {}
    for key, bindings in merged.key_to_bindings.items() if merged is not None else ():
        for binding in bindings:
            if binding.id is not None:
                found.setdefault(binding.id, (binding, []))[1].append(key)
    return found


def default_keys() -> dict[str, list[str]]:
    """Every binding id of every place, with its own keys (as Textual binds them: "question_mark")."""
    keys: dict[str, list[str]] = {}
    for place in PLACES:
        for cls in place_classes(place):
            for binding_id, (_, own) in bindings_of(cls).items():
                listed = keys.setdefault(binding_id, [])
                listed.extend(key for key in own if key not in listed)
    return keys


def _split(keys: str) -> list[str]:
    return [key for key in _normalize_key_list(keys).split(",") if key]


@dataclass(frozen=True)
class Resolved:
    """The keymap to bind (``App.set_keymap``) and what of the file's ``[keys]`` could not be."""

    keymap: dict[str, str]
    problems: list[tuple[str, str]]
    """(binding id, what is wrong): a binding that does not exist, or a conflict."""


def resolve(chosen: Mapping[str, str]) -> Resolved:
    """The keymap for ``chosen`` (the file's ``[keys]``, id to keys): ``chosen`` itself, plus each
    key it binds taken from the bindings that have it by default where both are live, and the
    conflicts that leaves (see the module's notes). Imports every place's screen."""
    defaults = default_keys()
    problems: list[tuple[str, str]] = []
    wanted: dict[str, list[str]] = {}
    for binding_id, keys in chosen.items():
        if binding_id not in defaults:
            problems.append((binding_id, "no binding has this id (agenttui config keys lists them)"))
        elif not (split := _split(keys)):
            problems.append((binding_id, 'should be one key or more, as "space" or "ctrl+f,pagedown"'))
        else:
            wanted[binding_id] = split
    resolution = _Resolution(defaults, wanted)
    for place in PLACES:
        resolution.settle(place)
    return Resolved(resolution.keymap(), problems + resolution.problems)


class _Resolution:
    """The file's keys settled place by place against the bindings live with them there."""

    def __init__(self, defaults: dict[str, list[str]], wanted: dict[str, list[str]]) -> None:
        self.defaults, self.wanted = defaults, wanted
        self.left = {binding_id: list(keys) for binding_id, keys in defaults.items() if binding_id not in wanted}
        """Each default binding's keys, less those the file's keys took from it."""
        self.problems: list[tuple[str, str]] = []
        self._said: set[frozenset[str]] = set()

    def keymap(self) -> dict[str, str]:
        keymap = {binding_id: ",".join(keys) for binding_id, keys in self.wanted.items()}
        keymap.update({b: ",".join(keys) for b, keys in self.left.items() if keys != self.defaults[b]})
        return keymap

    def settle(self, place: str) -> None:
        holders = _holders(place, self.defaults, self.wanted)
        # Bindings that share a key by default share it by design (enter finishes a filter while
        # one is typed, and opens a run otherwise): given one key again, they are no conflict.
        together = {
            frozenset((a, b))
            for bound in _holders(place, self.defaults, {}).values()
            for a, _ in bound
            for b, _ in bound
        }
        for binding_id, keys in self.wanted.items():
            for key in keys:
                for other in _met_by(binding_id, key, holders):
                    if frozenset((binding_id, other)) not in together:
                        self._settle(place, key, binding_id, other)

    def _settle(self, place: str, key: str, mine: str, other: str) -> None:
        """``key``, the file's for ``mine``, is also ``other``'s in ``place``."""
        if other in self.wanted:
            self._say(mine, other, f"{_written(key)} is also {other}'s in {place} (both set here): give one of "
                                   "them another key")  # fmt: skip
        elif self.left[other] != [key]:
            self.left[other] = [k for k in self.left[other] if k != key]
        else:
            self._say(mine, other, f"{_written(key)} is {other}'s only key in {place}, where {other} keeps it: "
                                   f"give {other} another key too")  # fmt: skip

    def _say(self, mine: str, other: str, problem: str) -> None:
        if (pair := frozenset((mine, other))) not in self._said:
            self._said.add(pair)
            self.problems.append((mine, problem))


def _met_by(binding_id: str, key: str, holders: dict[str, list[tuple[str, str | None]]]) -> list[str]:
    """The other bindings live with ``binding_id`` on ``key`` (none where it is not live itself)."""
    bound = holders.get(key, [])
    layers = [layer for held, layer in bound if held == binding_id]
    if not layers:
        return []
    return [other for other, layer in bound if other != binding_id and _meet(layers[0], layer)]


def _holders(
    place: str, defaults: dict[str, list[str]], wanted: dict[str, list[str]]
) -> dict[str, list[tuple[str, str | None]]]:
    """Each key live in ``place`` with its bindings, as (id, layer): the widget class holding it,
    or None for the screen's and the app's, which are live whatever has the focus."""
    from textual.screen import Screen

    holders: dict[str, list[tuple[str, str | None]]] = {}
    for cls in place_classes(place):
        layer = None if issubclass(cls, Screen) or cls.__name__ == "AgentTuiApp" else cls.__name__
        for binding_id in bindings_of(cls):
            for key in wanted.get(binding_id, defaults[binding_id]):
                if (binding_id, layer) not in holders.setdefault(key, []):
                    holders[key].append((binding_id, layer))
    return holders


def _meet(layer: str | None, other: str | None) -> bool:
    """Whether keys of two layers are live together: never two widgets' (one has the focus)."""
    return layer is None or other is None or layer == other


def _written(key: str) -> str:
    """``key`` quoted as ``[keys]`` would write it."""
    return f'"{_as_written(key)}"'


# -- keys in sentences -------------------------------------------------------------------------


def key_of(node: DOMNode, binding_id: str, owner: type[DOMNode] | str | None = None, *, every: bool = False) -> str:
    """How a sentence names the key of ``binding_id`` as bound: a binding of ``owner`` (a class,
    or its path as ``PLACES`` gives it; else ``node``'s class), with the app's keymap over it;
    its first key, or ``every`` one ("j/down")."""
    cls = _class(owner) if isinstance(owner, str) else owner or type(node)
    binding, own = bindings_of(cls)[binding_id]
    keys = keys_bound(node.app, binding, own)
    return "/".join(keys) if every else keys[0]


def keys_bound(app: App[Any], binding: Binding, own: list[str] | None = None) -> list[str]:
    """``binding``'s keys as bound (the app's keymap's, else ``own``, else its own), as the footer
    shows them."""
    keymap: Mapping[str, str] = getattr(app, "keymap", {})
    chosen = keymap.get(binding.id or "")
    bound = _split(chosen) if chosen else own or _split(binding.key)
    return [app.get_key_display(binding.with_key(key, key_display=None)) for key in bound]


def own_keys(node: DOMNode, binding: Binding) -> list[str]:
    """The names of the keys ``binding`` of ``node`` has by default, whatever the keymap says."""
    found = bindings_of(type(node)).get(binding.id or "")
    return found[1] if found is not None else _split(binding.key)


def key_names(app: App[Any], binding: Binding) -> list[str]:
    """The names of ``binding``'s keys as bound, as a key event gives them ("question_mark"):
    the keymap's for its id, else its own."""
    keymap: Mapping[str, str] = getattr(app, "keymap", {})
    return _split(keymap.get(binding.id or "") or binding.key)


def keys_written(keymap: Mapping[str, str], binding_id: str, own: list[str]) -> list[str]:
    """A binding's keys under ``keymap`` (else ``own``) as ``[keys]`` would write them: "?",
    "/", "escape", "ctrl+f"."""
    return [_as_written(key) for key in (_split(keymap[binding_id]) if binding_id in keymap else own)]


def _as_written(key: str) -> str:
    """A key's name as a person writes it: its character where it has a plain one ("/" for
    "slash"), else its name ("escape", "space", "up")."""
    from textual.keys import format_key, key_to_character

    character = key_to_character(key) or format_key(key)
    return (
        character
        if len(character) == 1 and character.isascii() and character.isprintable() and character != " "
        else key
    )


def listing() -> list[tuple[str, Binding, list[str]]]:
    """Every binding with an id, by place, each once a place, with its own keys: ``config keys``."""
    rows: list[tuple[str, Binding, list[str]]] = []
    for place in PLACES:
        seen: set[str] = set()
        for cls in place_classes(place):
            for binding_id, (binding, own) in bindings_of(cls).items():
                if binding_id not in seen:
                    seen.add(binding_id)
                    rows.append((place, binding, own))
    return rows
