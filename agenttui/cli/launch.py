"""Commands that open the TUI: ``agenttui STORE`` (``open``) and ``agenttui demo``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from agenttui.cli.app import fail, main, run_async, theme_option, with_store
from agenttui.errors import AgentTuiError
from agenttui.web import STORE_VARIABLE

if TYPE_CHECKING:
    from agenttui.stores.base import Store

NO_WRITES_REASON = "this TUI refuses writes (open --no-writes; serve without --allow-writes)"
DEFAULT_DEMO_PATH = "agenttui-demo.db"
DEMO_FACTORY = "agenttui.demo.build:factory"


@main.command("open")
@click.argument("store", envvar=STORE_VARIABLE)
@theme_option
@click.option(
    "--agent", "agent_spec", metavar="MODULE:FACTORY", help="Your agent factory: replay with your code, re-drive runs."
)
@click.option("--run", "run_id", metavar="RUN_ID", help="Open this run's journal at once (esc goes back to every run).")
@click.option("--no-writes", is_flag=True, help="Refuse every write, confirmed or not (what `serve` does without --allow-writes).")  # fmt: skip
@click.option("--prices", "prices_path", metavar="FILE",
              help="A TOML file of prices that override the library's, for the costs shown (docs/guide/cost.md).")  # fmt: skip
def open_command(
    store: str, theme: str | None, agent_spec: str | None, run_id: str | None, no_writes: bool, prices_path: str | None
) -> None:
    """Open the TUI on STORE (read-only: nothing is written unless you confirm an action).

    STORE may come from the environment (AGENTTUI_STORE), which keeps a password out of the
    process list."""
    from agenttui.config import user_config
    from agenttui.errors import StoreMissingError
    from agenttui.render.bulk import collector_paused
    from agenttui.stores import named_store, names_hint, sqlite_path
    from agenttui.stores.sqlite import require_file

    with collector_paused():  # what the TUI's imports make lives on: a collector's pass would free nothing
        from agenttui.tui.app import launch

    if agent_spec:
        _check_factory(agent_spec)
    if prices_path is not None:
        from agenttui.runs.cost.lens import PriceBook

        PriceBook.load(prices_path)  # a file that is not prices: said here, before the app's screen
    try:
        if named_store(store) is None and (path := sqlite_path(store)) is not None:
            require_file(path)  # said here, before the terminal switches to the app's screen
    except StoreMissingError as exc:
        fail(f"{exc.title}: {exc.message}{names_hint(store)}")
    except AgentTuiError as exc:
        fail(f"{exc.title}: {exc.message}")
    if run_id is not None:
        run_async(require_run)(store, run_id)  # no such run: said as every command says it (exit 1)
    refused = NO_WRITES_REASON if no_writes else ""
    theme = theme or user_config().theme
    sys.exit(
        launch(
            store, theme=theme, agent_spec=agent_spec, run_id=run_id, writes_refused=refused, prices_path=prices_path
        )
    )


async def require_run(url: str, run_id: str) -> None:
    """Raise ``RunNotFoundError`` unless the store holds a record of ``run_id`` (one is read)."""
    from agenttui.errors import RunNotFoundError

    async def first_record(store: Store) -> None:
        async for _ in store.load(run_id):
            return
        raise RunNotFoundError(run_id)

    await with_store(url, first_record)


def _check_factory(spec: str) -> None:
    from agenttui.agent.factory import load_factory

    try:
        load_factory(spec)
    except AgentTuiError as exc:
        fail(f"{exc.title}: {exc.message}")


@main.command()
@click.option("--path", "path", metavar="FILE|URL", default=DEFAULT_DEMO_PATH, show_default=True,
              help="Where to build the demo: a SQLite file, or postgresql://…?schema=s (a schema holding no other runs).")  # fmt: skip
@click.option("--no-tui", is_flag=True, help="Build the store and exit.")
@click.option("--fresh", is_flag=True, help="Rebuild the demo store at --path, dropping what was done in it (a SQLite file; a PostgreSQL schema is never emptied).")  # fmt: skip
@click.option("--force", is_flag=True, help="Replace the file at --path even if it is not a demo store agenttui made; never a journal of other runs, nor a PostgreSQL schema.")  # fmt: skip
@click.option("--bulk-turns", type=int, default=2000, show_default=True, help="Turns in the long run.")
@theme_option
def demo(path: str, no_tui: bool, fresh: bool, force: bool, bulk_turns: int, theme: str | None) -> None:
    """Build a demo store with the runtime (a run in every status) and open the TUI on it; a demo store already
    at --path is opened as it stands (--fresh rebuilds it). While the TUI is open, a background writer adds a
    run live-tail-<pid> to the store, record by record, to show a live tail."""
    from agenttui.demo.command import build_demo_at
    from agenttui.stores import describe_url

    run_async(build_demo_at)(
        path, bulk_turns=bulk_turns, echo=lambda m: click.echo(m, err=True), force=force, fresh=fresh
    )
    if no_tui:
        click.echo(describe_url(path))
        return
    from agenttui.tui.app import launch

    sys.exit(launch(path, theme=theme, live_writer=True, agent_spec=DEMO_FACTORY))
