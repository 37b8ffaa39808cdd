"""``agenttui config``: where the config file is, and what in it is ignored (``agenttui.config``;
docs/guide/config.md)."""

from __future__ import annotations

import sys

import click

from agenttui.cli.app import EXIT_USAGE, main
from agenttui.journal.inert import printable


@main.group()
def config() -> None:
    """The config file: named stores, saved views, the TUI's keys and its theme
    (docs/guide/config.md).

    \b
    agenttui config path    where it is read from
    agenttui config check   what in it is ignored, and why
    agenttui config keys    every key of the TUI, by binding id, as bound
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
    problems = list(read.problems)
    if read.keys:
        from agenttui.tui.keymap import resolve

        problems += read.problems_at((("keys", binding_id), why) for binding_id, why in resolve(read.keys).problems)
    for problem in problems:
        click.echo(f"agenttui: {printable(str(problem))}", err=True)
    if problems:
        sys.exit(EXIT_USAGE)
    stores, views = ", ".join(read.stores) or "none", ", ".join(read.views) or "none"
    click.echo(f"{printable(str(read.path))}: fine; named stores: {printable(stores)}; views: {printable(views)}")


@config.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object a binding: place, id, keys, does.")
def keys(as_json: bool) -> None:
    """List every key of the TUI by place: the binding's id (what [keys] names), its keys as the
    config file binds them, and what it does."""
    import json

    from agenttui.config import config_path, read_config
    from agenttui.tui.keymap import keys_written, listing, resolve

    keymap = resolve(read_config(config_path()).keys).keymap
    rows = [
        (place, binding.id or "", keys_written(keymap, binding.id or "", own), binding.description)
        for place, binding, own in listing()
    ]
    if as_json:
        for place, binding_id, bound, does in rows:
            click.echo(json.dumps({"place": place, "id": binding_id, "keys": bound, "does": does}))
        return
    width = max(len(binding_id) for _, binding_id, _, _ in rows)
    shown_place = None
    for place, binding_id, bound, does in rows:
        if place != shown_place:
            click.echo(f"{'' if shown_place is None else chr(10)}{place}:")
            shown_place = place
        click.echo(f"  {binding_id:<{width}}  {' '.join(bound):<16}  {printable(does)}")
