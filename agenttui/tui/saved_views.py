"""Saving a view from the TUI into the config file (docs/guide/config.md): a ``[views.NAME]``
table added at its end, the rest of the file as the person wrote it, byte for byte.

The file is written as every file agenttui writes is (``stores.files``): a regular file or a new
one, never through a link or onto a device, whole under a temporary name and then moved into
place. A name the file already saves is refused: the file is the person's to edit.
"""

from __future__ import annotations

import asyncio
import json
import tomllib
from pathlib import Path

from agenttui.config import VIEW_COLUMNS, View, config_path
from agenttui.errors import ConfigError
from agenttui.stores.files import check_replaceable, read_small_file, write_whole

#: The largest config file a save reads back (a hand-written file is a few kilobytes).
CONFIG_LIMIT = 1_000_000


class ViewTakenError(ConfigError):
    """The config file saves a view by that name already."""

    title = "View exists"


def view_table(view: View) -> str:
    """``view`` as TOML: its table header, its filter, and its order and columns where not the
    defaults (strings written as JSON writes them, which TOML reads the same)."""
    lines = [f"[views.{view.name}]", f"where = {json.dumps(view.where, ensure_ascii=False)}"]
    if view.sort != "listing":
        lines.append(f"sort = {json.dumps(view.sort)}")
    if view.columns != VIEW_COLUMNS:
        lines.append(f"columns = {json.dumps(list(view.columns))}")
    if view.store is not None:
        lines.append(f"store = {json.dumps(view.store, ensure_ascii=False)}")
    return "\n".join(lines) + "\n"


async def save_view(view: View, path: Path | None = None) -> tuple[Path, int]:
    """Add ``view`` to the config file (``path``, else the one in use); where it was written and
    the line of its table. Raises ``ViewTakenError`` for a name it saves already, and what the
    guarded write raises for a path that is no regular file."""
    target = await check_replaceable(path or config_path(), force=True)
    return await asyncio.to_thread(_add_view, target, view)  # a read, a write and an fsync: off the loop


def _add_view(target: Path, view: View) -> tuple[Path, int]:
    try:
        text = read_small_file(target, limit=CONFIG_LIMIT).decode("utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{target}: cannot be read, so nothing is added to it: {exc}") from None
    if view.name in _saved_names(text) or f"[views.{view.name}]" in text:
        raise ViewTakenError(f"the config file saves a view {view.name!r} already ({target}): choose another name")
    lead = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    target.parent.mkdir(parents=True, exist_ok=True)
    write_whole(target, text + lead + view_table(view), force=True)
    return target, text.count("\n") + lead.count("\n") + 1


def _saved_names(text: str) -> set[str]:
    """The views ``text`` saves, as TOML reads it (none from a file that is not TOML)."""
    try:
        views = tomllib.loads(text).get("views", {})
    except tomllib.TOMLDecodeError:
        return set()
    return set(views) if isinstance(views, dict) else set()
