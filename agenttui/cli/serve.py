"""``agenttui serve``: the TUI in a browser, a process a tab (``agenttui.web``)."""

from __future__ import annotations

import os
import secrets

import click

from agenttui.cli.app import fail, main, run_async, theme_option, with_store
from agenttui.errors import AgentTuiError

#: The tabs ``serve`` runs at once unless told (``--max-tabs``); ``agenttui.web.server`` is imported
#: only when it serves.
MOST_TABS = 10


@main.command()
@click.argument("store")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on. Any but a loopback address needs the token (printed at start, or AGENTTUI_SERVE_TOKEN).")  # fmt: skip
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="The port to listen on.")
@click.option("--allow-writes", is_flag=True,
              help="Let the tabs write (approve, deny, answer, cancel, recover...), each write confirmed; without it every write is refused.")  # fmt: skip
@click.option("--max-tabs", default=MOST_TABS, show_default=True, type=click.IntRange(1, 1000),
              help="At most this many tabs at once, each an app of its own (about 55 MB): the next is told to close one.")  # fmt: skip
@theme_option
@click.option("--prices", "prices_path", metavar="FILE",
              help="A TOML file of prices that override the library's, for the costs the tabs show (docs/guide/cost.md).")  # fmt: skip
def serve(
    store: str, host: str, port: int, allow_writes: bool, max_tabs: int, theme: str | None, prices_path: str | None
) -> None:
    """Serve the TUI to browsers: each tab its own app on STORE, the same screens and keys.

    \b
    Safe by default: it listens on 127.0.0.1 (reach it from elsewhere through an SSH tunnel:
    ssh -L 8000:127.0.0.1:8000 HOST); on any other address every request needs the token;
    every write is refused unless --allow-writes. Closing a tab ends its app."""
    from agenttui.web.server import TOKEN_VARIABLE, is_loopback
    from agenttui.web.server import serve as serve_tabs

    if prices_path is not None:
        from agenttui.runs.cost.lens import PriceBook

        PriceBook.load(prices_path)  # a file that is not prices: said here, not in every tab
    run_async(with_store)(store, _readable)  # a mistyped store is said here, not in every tab
    token = None if is_loopback(host) else (os.environ.get(TOKEN_VARIABLE) or secrets.token_urlsafe(24))
    try:
        serve_tabs(store, host=host, port=port, token=token, allow_writes=allow_writes, theme=theme,
                   prices=prices_path, max_tabs=max_tabs)  # fmt: skip
    except AgentTuiError as exc:
        fail(f"{exc.title}: {exc.message}")


async def _readable(store: object) -> None:
    """Nothing more than opening it: ``with_store`` said whatever was wrong."""
