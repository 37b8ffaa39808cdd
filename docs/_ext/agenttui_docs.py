"""A local Sphinx extension: reference tables written from the code at build time, so they cannot
drift from it (docs/decisions.md, "The documentation site").

- ``agenttui-exit-codes``: the exit-code table every command shares, from ``agenttui.cli.EXIT_CODES``.
- ``agenttui-api PACKAGE``: a package of the library, every name of its ``__all__`` in that order
  (autodoc), constants and type aliases included, which autodoc's ``automodule`` leaves out
  when the package imports them rather than defines them. Used inside ``{eval-rst}``: autodoc
  writes reStructuredText.
- ``agenttui-keys``: every key of the TUI, a table a class: the app, each screen and dialog, and
  each widget with keys of its own. The classes are found by importing every module of
  ``agenttui.tui`` (``pkgutil``), never from a list kept here, so a new screen shows by itself.
  Each table holds the keys the class has (its own and those it inherits, as Textual merges
  them), grouped by action as the ``?`` screen groups them, with the key names the app shows.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from typing import Any
from urllib.parse import unquote

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: A span in single or double backquotes: shown as code, as the docstrings and ``EXIT_CODES`` mean it.
_CODE = re.compile(r"``(.+?)``|`(.+?)`")


def inline(text: str) -> list[nodes.Node]:
    """``text`` as docutils nodes: its backquoted spans as literals, the rest as plain text."""
    parts: list[nodes.Node] = []
    at = 0
    for match in _CODE.finditer(text):
        if match.start() > at:
            parts.append(nodes.Text(text[at : match.start()]))
        code = match.group(1) or match.group(2)
        parts.append(nodes.literal(code, code))
        at = match.end()
    if at < len(text):
        parts.append(nodes.Text(text[at:]))
    return parts


def table(headers: list[str], rows: list[list[list[nodes.Node]]], widths: list[int]) -> nodes.table:
    """A docutils table: a header row and ``rows`` of cells, each cell a list of inline nodes."""
    group = nodes.tgroup(cols=len(headers))
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    head += _row([[nodes.Text(header)] for header in headers])
    group += head
    body = nodes.tbody()
    for row in rows:
        body += _row(row)
    group += body
    result = nodes.table(classes=["agenttui-table"])
    result += group
    return result


def _row(cells: list[list[nodes.Node]]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += nodes.paragraph("", "", *cell)
        row += entry
    return row


class ExitCodes(SphinxDirective):
    """The exit codes of every command, from ``EXIT_CODES`` (what ``agenttui --help`` shows)."""

    def run(self) -> list[nodes.Node]:
        from agenttui.cli import EXIT_CODES

        rows = [[[nodes.literal(str(code), str(code))], inline(meaning)] for code, meaning in EXIT_CODES.items()]
        return [table(["code", "means"], rows, [10, 90])]


class Api(SphinxDirective):
    """A package's public API, name by name from its ``__all__`` (a lazy name is asked for, and
    so imported, like any other: ``agenttui.lazy``)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        package = self.arguments[0]
        module = importlib.import_module(package)
        lines = [f".. automodule:: {package}", "   :no-members:", ""]
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value):
                kind = "autoexception" if issubclass(value, BaseException) else "autoclass"
            elif inspect.isfunction(value) or inspect.isbuiltin(value):
                kind = "autofunction"
            else:
                kind = "autodata"  # a constant or a type alias
            lines += [f".. {kind}:: {package}.{name}", ""]
        return self.parse_text_to_nodes("\n".join(lines))


def unquote_image_paths(app: Sphinx, doctree: nodes.document) -> None:
    """An image's path as the file is named. MyST percent-encodes a Markdown link's destination,
    so ``test_runs_screen_at[80x24].svg``, a snapshot test's screenshot, would be looked for as
    ``test_runs_screen_at%5B80x24%5D.svg``. Runs before Sphinx collects the images."""
    for image in doctree.findall(nodes.image):
        if "%" in image["uri"] and "://" not in image["uri"]:
            image["uri"] = unquote(image["uri"])


def drop_type_docs(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A constant or a type alias with no documentation of its own shows none, rather than its
    type's (``str``'s, or "Represent a PEP 604 union type" for ``A | B``)."""
    if what not in ("data", "attribute"):
        return
    text = " ".join(" ".join(lines).split())
    borrowed = [" ".join((inspect.getdoc(source) or "").split()) for source in (obj, type(obj))]
    if text and any(text in doc for doc in borrowed):
        lines.clear()  # autodoc hands the docstring over in parts: each part is found in the type's


def tui_classes() -> list[type[Any]]:
    """Every class defined in a module of ``agenttui.tui`` that is the app, a screen or a dialog,
    or a widget that binds keys of its own."""
    from textual.app import App
    from textual.screen import Screen
    from textual.widget import Widget

    package = importlib.import_module("agenttui.tui")
    modules = [package, importlib.import_module("agenttui.tui.app")]
    modules += [importlib.import_module(info.name) for info in pkgutil.walk_packages(package.__path__, "agenttui.tui.")]
    found: dict[str, type[Any]] = {}
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue  # imported here, defined elsewhere
            if issubclass(cls, App | Screen) or (issubclass(cls, Widget) and "BINDINGS" in cls.__dict__):
                found[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return list(found.values())


def _kind(cls: type[Any]) -> int:
    from textual.app import App
    from textual.screen import ModalScreen, Screen

    if issubclass(cls, App):
        return 0
    if issubclass(cls, ModalScreen):
        return 2
    if issubclass(cls, Screen):
        return 1
    return 3


_KIND_TITLES = {
    0: "The app: keys on every screen",
    1: "Screens",
    2: "Dialogs",
    3: "Widgets",
}
_KIND_TEXT = {
    0: "The app's keys work on every screen, unless a dialog or a text field takes the key first.",
    1: "A screen's keys, and those of the widget that has the focus on it (under Widgets).",
    2: "Every dialog is modal: its keys, and its focused widget's, are the only ones that work while it shows.",
    3: "A widget's keys work while it has the focus, on whichever screen shows it.",
}


def summary(cls: type[Any]) -> str:
    """The first paragraph of a class's docstring, on one line ("" when it has none)."""
    doc = inspect.getdoc(cls) or ""
    if doc == inspect.getdoc(cls.__mro__[1]):
        return ""  # inherited, not its own
    return " ".join(doc.split("\n\n", 1)[0].split())


def _section_id(cls: type[Any]) -> str:
    return nodes.make_id(f"keys-{cls.__qualname__}")


class Keys(SphinxDirective):
    """Every key of every screen, dialog and widget of the TUI, from their ``BINDINGS``."""

    def run(self) -> list[nodes.Node]:
        from textual.app import App

        classes = sorted(tui_classes(), key=lambda cls: (_kind(cls), cls.__qualname__))
        ours = set(classes)
        shown_by = App()  # the key names the app shows (``App.get_key_display``), as the ? screen does
        result: list[nodes.Node] = []
        for kind in sorted({_kind(cls) for cls in classes}):
            group = nodes.section(ids=[nodes.make_id(f"keys-{_KIND_TITLES[kind]}")])
            group += nodes.title(_KIND_TITLES[kind], _KIND_TITLES[kind])
            group += nodes.paragraph(_KIND_TEXT[kind], _KIND_TEXT[kind])
            for cls in (cls for cls in classes if _kind(cls) == kind):
                group += self._section(cls, ours, shown_by)
            result.append(group)
        return result

    def _section(self, cls: type[Any], ours: set[type[Any]], shown_by: Any) -> nodes.section:
        section = nodes.section(ids=[_section_id(cls)])
        section += nodes.title(cls.__qualname__, cls.__qualname__)
        if text := summary(cls):
            section += nodes.paragraph("", "", *inline(text))
        rows: dict[tuple[str, str, str, type[Any]], list[str]] = {}
        # The keys as Textual merges them over the class's bases (a subclass's key replaces its
        # base's; ``inherit_bindings=False`` drops the bases'): Textual is pinned exactly.
        for key_bindings in cls._merge_bindings().key_to_bindings.values():
            for binding in key_bindings:
                owner = _owner(cls, binding)
                keys = rows.setdefault((binding.action, binding.description, binding.id or "", owner), [])
                if (label := shown_by.get_key_display(binding)) not in keys:
                    keys.append(label)
        if not rows:
            section += nodes.paragraph("", "No keys of its own.")
            return section
        # Its own keys first, then those it inherits, nearest class first.
        order = {base: depth for depth, base in enumerate(cls.__mro__)}
        cells = []
        for (action, description, binding_id, owner), keys in sorted(rows.items(), key=lambda row: order[row[0][3]]):
            cells.append(
                [
                    _spaced(keys),
                    [nodes.Text(description or action)],
                    [nodes.literal(binding_id, binding_id)] if binding_id else [],
                    [] if owner is cls else _owner_cell(owner, ours),
                ]
            )
        section += table(["keys", "does", "id", "inherited from"], cells, [20, 45, 20, 15])
        return section


def _spaced(keys: list[str]) -> list[nodes.Node]:
    cell: list[nodes.Node] = []
    for key in keys:
        if cell:
            cell.append(nodes.Text(" "))
        cell.append(nodes.literal(key, key))
    return cell


def _owner(cls: type[Any], binding: Any) -> type[Any]:
    """The nearest class of ``cls``'s that binds ``binding`` in its own ``BINDINGS``."""
    from textual.binding import Binding

    for base in cls.__mro__:
        own = base.__dict__.get("BINDINGS")
        if own and any(_same(binding, made) for made in Binding.make_bindings(own)):
            return base
    return cls


def _same(one: Any, other: Any) -> bool:
    return bool(one.key == other.key and one.action == other.action and one.id == other.id)


def _owner_cell(owner: type[Any], ours: set[type[Any]]) -> list[nodes.Node]:
    if owner in ours:
        link = nodes.reference("", "", refid=_section_id(owner))
        link += nodes.Text(owner.__qualname__)
        return [link]
    framework = owner.__module__.split(".")[0].capitalize()  # Textual's own classes
    return [nodes.Text(f"{framework}'s "), nodes.literal(owner.__qualname__, owner.__qualname__)]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("agenttui-api", Api)
    app.connect("autodoc-process-docstring", drop_type_docs)
    app.connect("doctree-read", unquote_image_paths, priority=100)
    app.add_directive("agenttui-exit-codes", ExitCodes)
    app.add_directive("agenttui-keys", Keys)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
