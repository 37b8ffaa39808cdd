"""``agenttui serve``: the TUI in a browser tab, safe by default.

textual-serve runs the app once per browser connection, as a process of its own on the same
store, and draws it with xterm.js: the same screens, keys and verdicts as the terminal. What this
module adds is what makes that safe to leave running:

- Bound to a loopback address, it answers only requests that name a loopback host (a page on
  another site cannot reach it by a DNS name rebound to 127.0.0.1). Bound to any other address,
  every request must carry the token (``?token=…`` once, then a cookie): without it, a 401 and
  never a terminal.
- A browser's WebSocket must come from this server's own page (its ``Origin``): a page on
  another site cannot drive a tab's app.
- Each tab's app refuses every write unless the server was started with ``--allow-writes``
  (``open --no-writes``); then every write still goes through the confirmation, the lease and
  the at-most-once insert.
- The store's URL reaches the apps through the environment (``AGENTTUI_STORE``), never a command
  line; the page, the logs and the process list see it with its password masked. Requests are
  not logged (a token in a query string would be).
- A closed tab ends its app, which releases any lease it held; one that does not end within
  ``STOP_SECONDS`` is killed.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from agenttui.stores import describe_url
from agenttui.web import STORE_VARIABLE

log = logging.getLogger("agenttui.serve")

TOKEN_VARIABLE = "AGENTTUI_SERVE_TOKEN"
"""The token, when it is to be the operator's rather than one made at start."""
TOKEN_COOKIE = "agenttui_token"
STOP_SECONDS = 5.0
"""How long a closed tab's app has to quit before it is killed."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback: ``localhost`` or an
    address in 127.0.0.0/8 or ::1. Any other name may resolve anywhere."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tab_command(*, allow_writes: bool, theme: str | None) -> str:
    """The shell command that runs one tab's app: this Python's agenttui, the store from the
    environment. ``exec``: the shell becomes the app, so stopping it stops the app."""
    argv = [sys.executable, "-m", "agenttui", "open"]
    if not allow_writes:
        argv.append("--no-writes")
    if theme:
        argv += ["--theme", theme]
    return "exec " + shlex.join(argv)


class TabApp(AppService):
    """One browser tab's app process."""

    async def stop(self) -> None:
        """Ask the app to quit (it releases its leases on the way out); kill it if it hangs."""
        try:
            await asyncio.wait_for(super().stop(), STOP_SECONDS)
        except TimeoutError:
            if self._process is not None and self._process.returncode is None:
                self._process.kill()
                await self._process.wait()


async def _closed(websocket: web.WebSocketResponse) -> None:
    await websocket.close()


class AgentTuiServer(Server):
    """textual-serve's server, with agenttui's guards (see the module's docstring)."""

    def __init__(
        self, store_url: str, *, host: str, port: int, token: str | None, allow_writes: bool, theme: str | None
    ) -> None:
        super().__init__(
            tab_command(allow_writes=allow_writes, theme=theme),
            host=host,
            port=port,
            title=f"agenttui · {describe_url(store_url)}",
        )
        self.store_url = store_url
        self.token = token
        self.allow_writes = allow_writes
        self.tabs: set[TabApp] = set()
        """The tabs' apps now running."""

    def initialize_logging(self) -> None:
        logging.basicConfig(level="INFO", format="agenttui serve: %(message)s")

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.token is None and not is_loopback(urlsplit(f"//{request.host}").hostname or ""):
            raise web.HTTPForbidden(text="agenttui serve answers this machine's own address only (see --host)\n")
        if self.token is not None and not self._carries_token(request):
            raise web.HTTPUnauthorized(text="agenttui serve: this server needs its token: open the URL it printed\n")
        origin = request.headers.get("Origin")
        if request.path == "/ws" and origin is not None and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="agenttui serve: a page of another site may not open a tab\n")
        return await handler(request)

    def _carries_token(self, request: web.Request) -> bool:
        assert self.token is not None
        given = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page, its addresses taken from the request: right behind an SSH tunnel or a proxy
        alike. A token in the query string becomes a cookie, for the page's own requests."""
        origin = f"{request.scheme}://{request.host}"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{'wss' if request.scheme == 'https' else 'ws'}://{request.host}/ws",
            "config": {"static": {"url": f"{origin}/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        if self.token is not None and "token" in request.query:
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its own app process for as long as its WebSocket is open."""
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        await websocket.prepare(request)
        tab = TabApp(
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=lambda: _closed(websocket),
            download_manager=self.download_manager,
        )
        self.tabs.add(tab)
        try:
            await tab.start(width, height)
            await self._process_messages(websocket, tab)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # one tab failing must not end the others
            log.warning("a tab failed: %s", error)
        finally:
            self.tabs.discard(tab)
            await tab.stop()
        return websocket

    async def on_startup(self, app: web.Application) -> None:
        url = f"http://{self.host}:{self.port}/" if ":" not in self.host else f"http://[{self.host}]:{self.port}/"
        print(f"agenttui serve: {describe_url(self.store_url)} at {url}", flush=True)
        print(f"  {'writes allowed (each confirmed)' if self.allow_writes else 'read-only: every write refused'}; ctrl+c stops", flush=True)  # fmt: skip
        if self.token is not None:
            print(f"  open {url}?token={self.token} (the token is asked for by every request)", flush=True)

    def serve(self, debug: bool = False) -> None:
        """Serve until ctrl+c or SIGTERM; the tabs' apps are stopped on the way out."""
        os.environ[STORE_VARIABLE] = self.store_url  # each tab's app reads it there (``open``)
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        for stop in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(stop, self.request_exit)
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            handle_signals=False,
            loop=loop,
            access_log=None,
            print=lambda *args: None,
        )


def serve(store_url: str, *, host: str, port: int, token: str | None, allow_writes: bool, theme: str | None) -> None:
    """Run ``agenttui serve`` until stopped."""
    AgentTuiServer(store_url, host=host, port=port, token=token, allow_writes=allow_writes, theme=theme).serve()
