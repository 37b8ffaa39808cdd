"""The user's config file: ``$XDG_CONFIG_HOME/agenttui/config.toml`` (docs/guide/config.md).

It names stores (``[stores.prod] url = ...``, then ``agenttui prod``), saves views (a filter
under a name: ``[views.refunds] where = ...``, then ``--view refunds`` or ``:`` in the TUI),
binds the TUI's keys (``[keys] "runs.mark" = "space"``) and sets the theme. It is read with ``tomllib`` once a process, when a command first needs it. A bad file never stops a
command: what it ignores is a ``Problem``, one line naming the file, the line and the key
(``agenttui config check`` lists them; the TUI says them once it starts).

A store's credentials are never in the file: a URL with a password is refused, and the password
comes from PostgreSQL's own ways (``~/.pgpass``, ``PGPASSWORD``, ``PGSERVICE``, client
certificates) or from a ``password_command`` whose output is used and never shown.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from agenttui.errors import AgentTuiWarning, ConfigError

#: A config file elsewhere than the platform's place (a team's shared file, a test's).
CONFIG_ENV = "AGENTTUI_CONFIG"
#: How a store's name is written: what a shell passes whole and no path or URL looks like.
STORE_NAME = re.compile(r"[A-Za-z0-9_-]+")
#: How long a ``password_command`` may take.
PASSWORD_COMMAND_SECONDS = 30
#: The keys of a ``[stores.NAME]`` table.
STORE_KEYS = ("url", "password_command")
#: The keys of a ``[views.NAME]`` table.
VIEW_KEYS = ("where", "sort", "columns", "store")
#: A view's orders of the runs list: the listing's (by run id), or the top-level runs by cost,
#: the largest first.
VIEW_SORTS = ("listing", "cost")
#: The runs list's columns a view may choose, beside the run and its status, which always show,
#: and what it waits on, which takes the rest of the width.
VIEW_COLUMNS = ("steps", "turns", "tokens", "cost")
#: The top-level keys, and what each holds.
TOP_KEYS = {
    "theme": "a theme's name",
    "stores": "a table of named stores",
    "views": "a table of saved views",
    "keys": "a table of the TUI's keys, by binding id",
}
#: How a binding's id is written (``runs.mark``): what ``[keys]`` may name.
BINDING_ID = re.compile(r"[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*")


@dataclass(frozen=True)
class Problem:
    """Something in the config file that was ignored, and why."""

    path: Path
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


@dataclass(frozen=True)
class NamedStore:
    """A store the config names: its URL (no password in it) and how to get its password."""

    name: str
    url: str
    password_command: str | None = None

    def password(self) -> str | None:
        """The output of ``password_command`` (its last line break dropped), or None without one.
        Raises ``ConfigError`` saying why the command failed; never with its output."""
        if self.password_command is None:
            return None
        try:
            done = subprocess.run(
                shlex.split(self.password_command), capture_output=True, timeout=PASSWORD_COMMAND_SECONDS, check=False
            )
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(f"store {self.name!r}: its password_command could not run: {exc}") from None
        if done.returncode != 0:
            raise ConfigError(f"store {self.name!r}: its password_command exited {done.returncode}")
        return done.stdout.decode("utf-8", "replace").removesuffix("\n").removesuffix("\r")


@dataclass(frozen=True)
class View:
    """A saved view: a filter expression (``runs --where``'s language), the runs list's order and
    columns, for every store or one. The command line takes its filter; the TUI all three."""

    name: str
    where: str
    """"" for every run."""
    store: str | None = None
    """The store it is offered for (a store's name or URL, as given to commands); None: every store."""

    sort: str = "listing"
    """One of ``VIEW_SORTS``."""
    columns: tuple[str, ...] = VIEW_COLUMNS
    """Which of ``VIEW_COLUMNS`` show (where the width has room for them), in their order."""

    def offered_for(self, store: str) -> bool:
        return self.store is None or self.store == store

    def summary(self) -> str:
        """What it selects and shows, in a line: "status=halted · by cost · tokens, cost"."""
        parts = [self.where or "every run"]
        if self.sort != "listing":
            parts.append(f"by {self.sort}")
        if self.columns != VIEW_COLUMNS:
            parts.append(", ".join(self.columns) or "no counts")
        return " · ".join(parts)


@dataclass(frozen=True)
class Config:
    """What the config file says, and what of it was ignored."""

    path: Path
    exists: bool = False
    theme: str | None = None
    stores: dict[str, NamedStore] = field(default_factory=dict)
    views: dict[str, View] = field(default_factory=dict)
    keys: dict[str, str] = field(default_factory=dict)
    """The TUI's keys the file binds: a binding's id to its keys, as ``"j,down"``."""
    problems: list[Problem] = field(default_factory=list)

    def problems_at(self, found: Iterable[tuple[tuple[str, ...], str]]) -> list[Problem]:
        """A ``Problem`` for each (key, message) found wrong after reading the file (a key the
        TUI has no binding for, two bindings given one key), with the key's line in it."""
        found = list(found)
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines() if found else []
        except (OSError, UnicodeDecodeError):
            lines = []
        return [Problem(self.path, _line_of(lines, key), ".".join(key), message) for key, message in found]

    def view(self, name: str, store: str) -> View:
        """The view ``name`` offered for ``store``; raises ``ConfigError`` naming those there are."""
        view = self.views.get(name)
        if view is not None and view.offered_for(store):
            return view
        offered = sorted(v.name for v in self.views.values() if v.offered_for(store))
        there = (
            f"the config file's views for it: {', '.join(offered)}" if offered else "the config file saves none for it"
        )
        raise ConfigError(f"no view {name!r} for this store ({there}; {self.path})")


def config_path() -> Path:
    """Where the config file is read from: ``$AGENTTUI_CONFIG``, else the platform's config
    directory (``$XDG_CONFIG_HOME``, else ``~/.config``)."""
    if given := os.environ.get(CONFIG_ENV, "").strip():
        return Path(given).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".config"
    return root / "agenttui" / "config.toml"


@cache
def user_config() -> Config:
    """The config file, read once a process; what it ignores is said, once, as a warning each
    (the CLI prints them, the TUI shows them)."""
    import warnings

    read = read_config(config_path())
    for problem in read.problems:
        warnings.warn(ConfigWarning(f"config: {problem}"), stacklevel=2)
    return read


class ConfigWarning(AgentTuiWarning):
    """Something in the config file was ignored."""


def read_config(path: Path, check_where: Callable[[str], str | None] | None = None) -> Config:
    """The config file at ``path`` (an empty config if there is none). ``check_where``, given,
    says what is wrong with a view's filter (None: nothing): the filter language is the runs
    layer's, which this module does not import; a view that does not parse says so when used."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config(path)
    except (OSError, UnicodeDecodeError) as exc:
        return Config(path, True, problems=[Problem(path, None, "", f"cannot be read: {exc}")])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _line_in_message(str(exc))
        return Config(path, True, problems=[Problem(path, line, "", f"not TOML, so all of it is ignored: {exc}")])
    return _Reader(path, text, check_where).read(data)


class _Reader:
    """Reads a parsed file into a ``Config``, a ``Problem`` for each thing it ignores."""

    def __init__(self, path: Path, text: str, check_where: Callable[[str], str | None] | None) -> None:
        self.path = path
        self.lines = text.splitlines()
        self.check_where = check_where
        self.problems: list[Problem] = []

    def read(self, data: dict[str, Any]) -> Config:
        for key in data.keys() - TOP_KEYS.keys():
            self._problem((key,), f"not a key agenttui reads (it reads {', '.join(TOP_KEYS)})")
        theme = data.get("theme")
        if theme is not None and not isinstance(theme, str):
            self._problem(("theme",), "should be a theme's name, in quotes")
            theme = None
        stores = data.get("stores", {})
        if not isinstance(stores, dict):
            self._problem(("stores",), "should be a table: [stores.NAME] url = ...")
            stores = {}
        named = {name: store for name, table in stores.items() if (store := self._store(name, table)) is not None}
        views = data.get("views", {})
        if not isinstance(views, dict):
            self._problem(("views",), "should be a table: [views.NAME] where = ...")
            views = {}
        saved = {name: view for name, table in views.items() if (view := self._view(name, table)) is not None}
        return Config(self.path, True, theme, named, saved, self._keys(data.get("keys", {})), self.problems)

    def _keys(self, table: object) -> dict[str, str]:
        """``[keys]``: each binding id with one key or more (``"space"``, ``"j,down"`` or a list).
        Whether a binding has that id is the TUI's to say (``agenttui.tui.keymap``)."""
        if not isinstance(table, dict):
            self._problem(("keys",), 'should be a table: [keys] "runs.mark" = "space"')
            return {}
        keys: dict[str, str] = {}
        # ``runs.mark = "m"`` unquoted is TOML's dotted key, a table ``runs`` with ``mark`` in it.
        flat = {
            f"{name}.{sub}" if isinstance(value, dict) else name: inner
            for name, value in table.items()
            for sub, inner in (value.items() if isinstance(value, dict) else [("", value)])
        }
        for binding_id, value in flat.items():
            if not BINDING_ID.fullmatch(binding_id):
                self._problem(
                    ("keys", binding_id), 'not a binding\'s id, as "runs.mark" (agenttui config keys lists them)'
                )
            elif isinstance(value, str) and value.strip():
                keys[binding_id] = value.strip()
            elif isinstance(value, list) and value and all(isinstance(k, str) and k.strip() for k in value):
                keys[binding_id] = ",".join(k.strip() for k in value)
            else:
                self._problem(
                    ("keys", binding_id), 'should be a key, as "space", or keys, as "j,down" or ["j", "down"]'
                )
        return keys

    def _named_table(self, kind: str, name: str, table: object, keys: tuple[str, ...]) -> dict[str, Any] | None:
        """``[<kind>s.<name>]`` as a table, or None (said) where its name or it is not one; a key
        of it that is not one of ``keys`` is said, and left alone."""
        key = (f"{kind}s", name)
        if not STORE_NAME.fullmatch(name):
            self._problem(key, f"a {kind}'s name is letters, digits, '-' and '_' (what no path or URL looks like)")
            return None
        if not isinstance(table, dict):
            self._problem(key, f"should be a table with a {keys[0]}")
            return None
        for extra in table.keys() - set(keys):
            self._problem((*key, extra), f"not a key of a {kind} (it has {', '.join(keys)})")
        return table

    def _view(self, name: str, table: object) -> View | None:
        key = ("views", name)
        if (read := self._named_table("view", name, table, VIEW_KEYS)) is None:
            return None
        where, store = read.get("where", ""), read.get("store")
        sort, columns = read.get("sort", "listing"), read.get("columns", list(VIEW_COLUMNS))
        if not isinstance(where, str):
            self._problem((*key, "where"), "the view's filter should be in quotes: the view is ignored")
            return None
        if not (where.strip() or "sort" in read or "columns" in read):
            self._problem(key, "a view needs a filter (where), a sort or columns: the view is ignored")
            return None
        if sort not in VIEW_SORTS:
            self._problem((*key, "sort"), f"should be one of {', '.join(VIEW_SORTS)}: the view is ignored")
            return None
        if not isinstance(columns, list) or not all(c in VIEW_COLUMNS for c in columns):
            self._problem((*key, "columns"), f"should be a list of {', '.join(VIEW_COLUMNS)}: the view is ignored")
            return None
        if where.strip() and self.check_where is not None and (wrong := self.check_where(where)) is not None:
            self._problem((*key, "where"), f"does not parse, {wrong}: the view is ignored")
            return None
        if store is not None and not isinstance(store, str):
            self._problem((*key, "store"), "should be a store's name or URL, in quotes: the view is ignored")
            return None
        ordered = tuple(c for c in VIEW_COLUMNS if c in columns)
        return View(name, where.strip(), store, sort, ordered)

    def _store(self, name: str, table: object) -> NamedStore | None:
        key = ("stores", name)
        if (read := self._named_table("store", name, table, STORE_KEYS)) is None:
            return None
        url, command = read.get("url"), read.get("password_command")
        if not isinstance(url, str) or not url.strip():
            self._problem((*key, "url"), "the store's URL is missing, or not in quotes: the store is ignored")
            return None
        if _has_password(url):
            self._problem((*key, "url"), "holds a password: the store is ignored. Keep it in ~/.pgpass,"
                          " PGPASSWORD or PGSERVICE, or give a password_command")  # fmt: skip
            return None
        if command is not None and (not isinstance(command, str) or not command.strip()):
            self._problem((*key, "password_command"), "should be a command, in quotes: the store is ignored")
            return None
        return NamedStore(name, url.strip(), command)

    def _problem(self, key: tuple[str, ...], message: str) -> None:
        self.problems.append(Problem(self.path, _line_of(self.lines, key), ".".join(key), message))


def _has_password(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.password is not None or any(k.lower() == "password" for k, _ in parse_qsl(parts.query))
    except ValueError:
        return "@" in url  # too broken to tell: as if it had one


def _line_of(lines: list[str], key: tuple[str, ...]) -> int | None:
    """The line (from 1) where ``key`` is set: a table's header (``[stores.prod]``), a key in its
    table (``url = ``), or a dotted key (``stores.prod.url = ``); a key that is missing, its
    table's; None where it cannot be told."""
    found = _line_set(lines, key)
    return found if found is not None or len(key) == 1 else _line_of(lines, key[:-1])


def _line_set(lines: list[str], key: tuple[str, ...]) -> int | None:
    *tables, last = key
    header = re.compile(r"\s*\[\s*" + r"\s*\.\s*".join(map(_key_pattern, key)) + r"\s*\]")
    dotted = re.compile(r"\s*" + r"\s*\.\s*".join(map(_key_pattern, key)) + r"\s*=")
    table_header = re.compile(r"\s*\[\s*" + r"\s*\.\s*".join(map(_key_pattern, tables)) + r"\s*\]") if tables else None
    in_table = table_header is None
    for number, line in enumerate(lines, 1):
        if header.match(line) or dotted.match(line):
            return number
        if line.lstrip().startswith("["):
            in_table = table_header is not None and bool(table_header.match(line))
        elif in_table and re.match(r"\s*" + _key_pattern(last) + r"\s*=", line):
            return number
    return None


def _key_pattern(key: str) -> str:
    """A key as TOML may write it: bare, or in either kind of quotes."""
    escaped = re.escape(key)
    return f"(?:{escaped}|\"{escaped}\"|'{escaped}')"


def _line_in_message(message: str) -> int | None:
    found = re.search(r"line (\d+)", message)
    return int(found.group(1)) if found else None
