"""The command line's frame: the ``agenttui`` group, exit codes, errors as one line, stores opened
for one command. Each command lives with its kin in a module of this package (``views``,
``replay``, ``actions``, ``launch``); ``agenttui.cli`` imports them all, so that they register.

One exit-code table for every command (``EXIT_CODES``, shown in ``--help`` and README). Errors
are one line on stderr, the store's text in them shown inert; a password is never printed.
"""

from __future__ import annotations

import asyncio
import errno
import io
import os
import re
import signal
import sys
import traceback
import warnings
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from typing import Any, NoReturn, TypeVar, cast

import click

from agenttui import backstop
from agenttui.agent.pauses import AlreadyDecided
from agenttui.errors import AgentTuiError, AgentTuiWarning, RunNotFoundError
from agenttui.journal.inert import printable, printable_id
from agenttui.stores import open_store
from agenttui.stores.base import Store

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_DIVERGED = 3
EXIT_ALREADY_DECIDED = 4
EXIT_RUNS_FAILED = 5
EXIT_CONFLICT = 6
EXIT_TERMINATED = 143

#: Every command's exit codes, as ``--help`` and README show them.
EXIT_CODES = {
    0: "done (a replay: it matches the recording, to its end or up to where it stops)",
    EXIT_NOT_FOUND: "no such run",
    EXIT_USAGE: "usage, store or connection error, nothing written (a replay: refused; `import`: unless the message names the runs it wrote, each whole; `export --otlp`: the message names the runs sent before the endpoint failed)",
    EXIT_DIVERGED: "a replay diverged from the recording (`compare`: the two runs differ; a fork: it stopped where the recording cannot answer)",
    EXIT_ALREADY_DECIDED: "nothing written: the step was already decided (the standing decision is named)",
    EXIT_RUNS_FAILED: "`recover`, or an action applied with `--where … --yes`: some runs failed (the report names them)",
    EXIT_CONFLICT: "`import`: the store holds a run with other records (each is named); nothing written, unless the message names the runs written first",
    130: "interrupted (ctrl+c)",
    EXIT_TERMINATED: "terminated (SIGTERM, SIGHUP); as on ctrl+c, leases are released",
}


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """One line on stderr and an exit code. Messages quote the store (lease holders, reasons,
    record names, run ids): they go through the same inert-text path as every view."""
    click.echo(f"agenttui: {printable(message)}", err=True)
    backstop.said()
    sys.exit(code)


def run_async(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Run a command's coroutine, stoppable by SIGTERM and SIGHUP as by ctrl+c. What it raises is
    the group's to show (``AgentTuiGroup.invoke``), as for every command."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> T:
        return asyncio.run(_stoppable(fn(*args, **kwargs)))

    return wrapper


async def _stoppable(command: Coroutine[Any, Any, T]) -> T:
    """``command``, stopped on SIGINT, SIGTERM or SIGHUP: cancelled, so every lease it holds is
    released on the way out (a killed process's lease would block its runs for a whole TTL). If
    the process still stands moments later (a thread blocked in a read: the MCP transport's on an
    open stdin), the backstop ends it; a second signal ends it at once."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        code = 130 if signum == signal.SIGINT else EXIT_TERMINATED
        if stopped_by:
            os._exit(code)
        stopped_by.append(signum)
        task.cancel()
        backstop.arm(code, f"agenttui: {EXIT_CODES[code]}")

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await command
    except asyncio.CancelledError:
        if stopped_by == [signal.SIGINT]:
            raise KeyboardInterrupt from None  # said as ctrl+c is, exit 130
        raise


async def open_for_command(url: str, *, read_only: bool = True) -> Store:
    # A write acts on a journal that exists: a mistyped path must not become a new, empty store.
    return await open_store(url, read_only=read_only, create=False)


async def with_store(url: str, body: Callable[[Store], Awaitable[T]], *, read_only: bool = True) -> T:
    store = await open_for_command(url, read_only=read_only)
    try:
        return await body(store)
    finally:
        await store.close()


async def run_history(store: Store, run_id: str) -> list[Any]:
    from agenttui.journal.journal import Journal

    records = (await Journal(store).read(run_id)).records
    if not records:
        raise RunNotFoundError(run_id)
    return records


DEBUG_VARIABLE = "AGENTTUI_DEBUG"
"""Set to 1, an unexpected error shows its traceback (inert, as every output) under its one line."""


class OneLineUsageError(click.UsageError):
    """A usage error said as every error is: one inert line (click's own takes four)."""

    def show(self, file: Any = None) -> None:
        command = self.ctx.command_path if self.ctx is not None else "agenttui"
        message = printable(self.format_message()).rstrip(".")
        hint = "" if "--help" in message else f" (see {command} --help)"
        click.echo(f"agenttui: {message}{hint}", err=True)
        backstop.said()


class AgentTuiGroup(click.Group):
    """The ``agenttui`` group, the one entry point every command runs through.

    ``agenttui STORE`` (no subcommand) means ``agenttui open STORE``, when STORE names a store; any
    other word is a command mistyped, and is said to be one. Whatever a command raises ends here
    as one inert line on stderr and an exit code from ``EXIT_CODES``: a new command inherits that
    the day it is registered, with no ``try`` of its own.
    """

    default_command = "open"

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        lead = 0  # the group's own flags may come first: ``agenttui --no-cache STORE``
        while lead < len(args) and args[lead] in _GROUP_FLAGS:
            lead += 1
        word = args[lead] if lead < len(args) else ""
        if word and word not in self.commands and not word.startswith("-") and names_a_store(word):
            args = [*args[:lead], self.default_command, *args[lead:]]
        return super().parse_args(ctx, args)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib  # 13 ms to import: only a mistyped command needs it

            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = (
                f" (did you mean '{near[0]}'?)"
                if near
                else " (agenttui --help lists them; a store is a path, a URL or a name the config file gives)"
            )
            raise click.UsageError(f"no such command '{printable_id(name)}'{hint}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with warnings.catch_warnings():
            # Each is said once where it arises (a store warns once per handle): show every one.
            warnings.simplefilter("always", AgentTuiWarning)
            warnings.showwarning = _warning_shower(warnings.showwarning)
            return self._invoke(ctx)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a command's own arguments
            raise _one_line(exc) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise  # click's own: --help, and errors click says in one line already
        except BrokenPipeError:
            raise  # the output failing: ``entry`` says so (or, for a closed pipe, nothing)
        except asyncio.CancelledError:
            fail("terminated: leases released, nothing half-written", EXIT_TERMINATED)
        except KeyboardInterrupt:
            fail("interrupted", 130)
        except RunNotFoundError as exc:
            fail(exc.message, EXIT_NOT_FOUND)
        except AlreadyDecided as exc:
            fail(exc.message, EXIT_ALREADY_DECIDED)
        except AgentTuiError as exc:
            fail(f"{exc.title}: {exc.message}")
        except OSError as exc:
            if exc.filename is None and exc.errno in _OUTPUT_ERRNOS:
                raise  # writing the output failed: ``entry`` points it at nothing and says so
            where = f" ({exc.filename})" if exc.filename is not None else ""
            fail(f"{exc.strerror or exc}{where}")
        except Exception as exc:
            _show_traceback_if_asked()
            fail(f"unexpected error ({type(exc).__name__}: {exc}); {DEBUG_VARIABLE}=1 shows where")


def names_a_store(word: str) -> bool:
    """Whether ``word`` is meant as a store rather than a command: a file that is there, a URL
    (``sqlite:``, ``postgresql:``... with its scheme), ``memory:``, a path (it has a separator
    or a dot), which ``open`` then says is missing, or a store the config file names. Any other
    bare word is a command, mistyped."""
    from agenttui.config import user_config

    return (
        os.path.exists(os.path.expanduser(word))
        or _SCHEME.match(word) is not None
        or any(mark in word for mark in ("/", os.sep, "."))
        or word in user_config().stores
    )


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _warning_shower(shown_otherwise: Callable[..., None]) -> Callable[..., None]:
    """agenttui's warnings as one inert line on stderr, as its errors; any other as before."""

    def show(message: Warning | str, category: type[Warning], *where: Any) -> None:
        if issubclass(category, AgentTuiWarning):
            click.echo(f"agenttui: warning: {printable(str(message))}", err=True)
        else:
            shown_otherwise(message, category, *where)

    return show


#: Errors of writing the output rather than of the command's own files or connections.
_OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EIO, errno.EBADF, errno.EDQUOT})


def _show_traceback_if_asked() -> None:
    if os.environ.get(DEBUG_VARIABLE) not in (None, "", "0"):
        click.echo(printable(traceback.format_exc().rstrip(), multiline=True), err=True)


@click.group(cls=AgentTuiGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog="\b\nExit codes, every command:\n" + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items()))  # fmt: skip
@click.version_option(package_name="agenttui")
@click.option("--no-cache", is_flag=True,
              help="Read every run's status from the store, without the status index kept in the cache"
                   " directory (as AGENTTUI_CACHE=off does).")  # fmt: skip
def main(no_cache: bool) -> None:
    """Debug durable AI-agent runs from a terminal.

    \b
    agenttui STORE              open the TUI on a store (read-only)
    agenttui demo               build a demo store and open the TUI on it
    STORE is a SQLite file, sqlite:///abs/path.db, postgresql://user@host/db[?schema=s]
    """
    if no_cache:
        from agenttui.runs.statuses import index as status_index  # deferred: the package's import is the TUI's start

        status_index.disable()


#: The group's flags, which may stand before a store given without a command.
_GROUP_FLAGS = ("--no-cache",)


theme_option = click.option("--theme", default=None, help="Theme name (see themes/).")
view_option = click.option(
    "--view", "view_name", metavar="NAME",
    help="A view the config file saves ([views.NAME] where = ...): its filter, and --where's if given too.",
)  # fmt: skip


def takes_view(where: str = "where_text", store: Callable[[dict[str, Any]], str] | None = None) -> Callable[[F], F]:
    """``--view NAME`` on a command that selects runs with the filter parameter ``where``: the
    view's filter joined to it (``with_view``), so the command sees one filter. ``store`` gives
    the store a view is offered for from the command's parameters (its ``store``, by default)."""

    def decorate(command: F) -> F:
        @wraps(command)
        def viewed(*args: Any, view_name: str | None = None, **kwargs: Any) -> Any:
            if view_name is not None:
                kwargs[where] = with_view(kwargs[where], view_name, store(kwargs) if store else kwargs["store"])
            return command(*args, **kwargs)

        return cast(F, view_option(viewed))

    return decorate


def with_view(where: str | None, view_name: str | None, store: str) -> str | None:
    """``where`` and the filter of the view ``view_name`` the config file saves for ``store``,
    both (``--view``); raises ``ConfigError`` for a view it does not save, naming those it does."""
    if view_name is None:
        return where
    from agenttui.config import user_config

    saved = user_config().view(view_name, store).where
    if not saved:
        return where
    return saved if not where else f"({saved}) and ({where})"


agent_option = click.option(
    "--agent",
    "agent_spec",
    metavar="MODULE:FACTORY",
    help="Your agent factory: builds the tools (and model) for a run.",
)


def mask_process_title() -> None:
    """Show the process in ``ps`` with any password in its arguments masked (``PGPASSWORD`` or
    ``~/.pgpass`` keep it out of the command line altogether)."""
    from agenttui.stores import describe_url

    masked = [describe_url(arg) if "://" in arg else arg for arg in sys.argv]
    if masked != sys.argv:
        import setproctitle  # deferred: most commands carry no password

        setproctitle.setproctitle(" ".join(["agenttui", *masked[1:]]))


def _one_line(error: click.UsageError) -> OneLineUsageError:
    if isinstance(error, OneLineUsageError):
        return error
    one = OneLineUsageError(error.format_message(), error.ctx)
    one.exit_code = error.exit_code
    return one


def entry() -> None:
    """The console script: ``main``, safe on any terminal and into any output.

    A terminal whose encoding cannot show a character gets an escape for it, not a traceback;
    output that cannot be written (a full disk, a closed pipe) is one line on stderr and exit 2.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    mask_process_title()
    try:
        main(prog_name="agenttui")  # ``python -m agenttui`` too: what its messages tell a person to type
    except OSError as exc:  # the store's errors are StoreErrors: this is the output failing
        # Python would try the output again at exit and complain: point it at nothing first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if not isinstance(exc, BrokenPipeError):  # a reader that stopped reading is no error
            click.echo(f"agenttui: cannot write the output: {exc.strerror or exc}", err=True)
            sys.exit(EXIT_USAGE)
