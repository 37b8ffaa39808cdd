"""Themes are data: TOML files in ``themes/``, validated, loaded at start-up."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

from textual.theme import Theme

DEFAULT_THEME = "agenttui-dark"
_THEME_FIELDS = {f.name for f in fields(Theme)}


class InvalidThemeError(ValueError):
    """A theme file that does not describe a theme."""


@dataclass(frozen=True, slots=True)
class LoadedThemes:
    themes: list[Theme]
    problems: list[str]
    """One line per theme file that could not be loaded (shown as a notification, never fatal)."""


def theme_from_toml(text: str, origin: str) -> Theme:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidThemeError(f"{origin}: not TOML ({exc})") from None
    unknown = sorted(set(data) - _THEME_FIELDS)
    if unknown:
        raise InvalidThemeError(f"{origin}: unknown keys {', '.join(unknown)}")
    if not isinstance(data.get("name"), str) or not isinstance(data.get("primary"), str):
        raise InvalidThemeError(f"{origin}: a theme needs a name and a primary colour")
    try:
        theme = Theme(**data)
        theme.to_color_system()  # parses every colour: a typo fails here, not mid-render
    except Exception as exc:  # Textual raises several types for bad colours
        raise InvalidThemeError(f"{origin}: {exc}") from None
    return theme


def load_themes(extra_dir: Path | None = None) -> LoadedThemes:
    """The themes shipped with agenttui (the ``themes`` package), then any in ``extra_dir``."""
    themes: list[Theme] = []
    problems: list[str] = []
    sources = [
        (entry.name, entry.read_text)
        for entry in resources.files("agenttui.themes").iterdir()
        if entry.name.endswith(".toml")
    ]
    if extra_dir is not None and extra_dir.is_dir():
        sources += [(str(path), path.read_text) for path in sorted(extra_dir.glob("*.toml"))]
    for origin, read in sorted(sources, key=lambda s: s[0]):
        try:
            themes.append(theme_from_toml(read(), origin))
        except (InvalidThemeError, OSError, UnicodeDecodeError) as exc:
            problems.append(str(exc))
    return LoadedThemes(themes, problems)
