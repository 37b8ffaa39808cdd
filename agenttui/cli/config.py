"""``agenttui config``: where the config file is, and what in it is ignored (``agenttui.config``;
docs/guide/config.md)."""

from __future__ import annotations

import sys

import click

from agenttui.cli.app import EXIT_USAGE, main
from agenttui.journal.inert import printable


@main.group()
def config() -> None:
    """The config file: named stores and the theme (docs/guide/config.md).

    \b
    agenttui config path    where it is read from
    agenttui config check   what in it is ignored, and why
    """


@config.command()
def path() -> None:
    """Print where the config file is read from ($AGENTTUI_CONFIG, else the platform's config
    directory), whether or not it is there."""
    from agenttui.config import config_path

    click.echo(printable(str(config_path())))


@config.command()
def check() -> None:
    """Read the config file and list what in it is ignored, one line each (file, line, key, why);
    exit 2 if anything is. A file that is not there is no error: there is nothing to ignore."""
    from agenttui.config import config_path, read_config
    from agenttui.runs.selection.where import WhereError, parse_where

    def wrong(where: str) -> str | None:
        try:
            parse_where(where)
        except WhereError as bad:
            return bad.message
        return None

    read = read_config(config_path(), check_where=wrong)
    if not read.exists:
        click.echo(f"no config file at {printable(str(read.path))}: nothing to check")
        return
    for problem in read.problems:
        click.echo(f"agenttui: {printable(str(problem))}", err=True)
    if read.problems:
        sys.exit(EXIT_USAGE)
    stores, views = ", ".join(read.stores) or "none", ", ".join(read.views) or "none"
    click.echo(f"{printable(str(read.path))}: fine; named stores: {printable(stores)}; views: {printable(views)}")
