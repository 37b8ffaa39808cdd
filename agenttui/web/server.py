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

One app is kept started ahead of the next page (the spare), so that a page shows its runs as
soon as its terminal connects.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hmac
import ipaddress
import json
import logging
import os
import secrets
import shlex
import signal
import socket
import sys
from asyncio.subprocess import Process
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager
from textual_serve.server import Server, to_int

from agenttui.stores import describe_url
from agenttui.tui import READY_META
from agenttui.web import STORE_VARIABLE

log = logging.getLogger("agenttui.serve")

TOKEN_VARIABLE = "AGENTTUI_SERVE_TOKEN"
"""The token, when it is to be the operator's rather than one made at start."""
TOKEN_COOKIE = "agenttui_token"
STOP_SECONDS = 5.0
"""How long a closed tab's app has to quit before it is killed."""
WAITING_SECONDS = 30.0
"""How long an app started with its page waits for the page to connect."""
MOST_WAITING = 8
"""At most this many apps wait for their pages at once."""
SPARE_SECONDS = 300.0
"""How long the app started ahead of the next page waits for it before it is replaced."""
READY_SECONDS = 5.0
"""How long a page waits for its app to be ready before it sends its size anyway."""
DEFAULT_SIZE = (120, 40)
"""The terminal an app started with its page draws in until the page says its own size."""
#: textual-serve's page fetches its font from an outside host: a page served here uses the one it
#: ships (an intranet host reaches no outside one, and the page names no third party).
OUTSIDE_FONT = (
    '<link\n      rel="stylesheet"\n      href="https://fonts.googleapis.com/css?family=Roboto%20Mono"\n    />'
)
OWN_FONT = """<style>
      @font-face {
        font-family: "Roboto Mono";
        src: url("{{ config.static.url }}fonts/RobotoMono-VariableFont_wght.ttf") format("truetype");
      }
    </style>"""
#: Keys reach the app as soon as its terminal shows, not after a first click in it.
FOCUS_AT_LOAD = """<script>
      new MutationObserver((_, watching) => {
        const input = document.querySelector("#terminal textarea");
        if (input) { input.focus(); watching.disconnect(); }
      }).observe(document.documentElement, { childList: true, subtree: true });
    </script>
  </body>"""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def page_template(textual_serve_templates: os.PathLike[str]) -> str:
    """textual-serve's page, its font served from here and its terminal focused at load."""
    page = (Path(textual_serve_templates) / "app_index.html").read_text(encoding="utf-8")
    if OUTSIDE_FONT not in page or "</body>" not in page:  # a new textual-serve: look again at its page
        raise RuntimeError("textual-serve's page changed: agenttui's serve cannot adapt it")
    return page.replace(OUTSIDE_FONT, OWN_FONT).replace("</body>", FOCUS_AT_LOAD, 1)


def reachable_url(host: str, port: int) -> str:
    """The URL a browser opens for a server bound to ``host``: for every address (0.0.0.0, ::),
    this machine's name, which a browser can reach (no browser opens 0.0.0.0 elsewhere)."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback: ``localhost`` or an
    address in 127.0.0.0/8 or ::1. Any other name may resolve anywhere."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def tab_command(*, allow_writes: bool, theme: str | None, prices: str | None = None) -> str:
    """The shell command that runs one tab's app: this Python's agenttui, the store from the
    environment. ``exec``: the shell becomes the app, so stopping it stops the app."""
    argv = [sys.executable, "-m", "agenttui", "open"]
    if not allow_writes:
        argv.append("--no-writes")
    if theme:
        argv += ["--theme", theme]
    if prices:
        argv += ["--prices", os.path.abspath(prices)]
    return "exec " + shlex.join(argv)


def _end_with_the_server() -> None:
    """In a tab's app, before it runs: a SIGTERM when the server's process ends (Linux's
    ``PR_SET_PDEATHSIG``; kept across the shell's ``exec``), so that a server killed outright
    leaves no app behind; the app quits on it as on ctrl+c, releasing its leases. Elsewhere, the
    server's own shutdown stops them."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1


class TabApp(AppService):
    """One browser tab's app process. It may start before its page connects (``attach``): what
    it draws meanwhile is kept, and sent first once the page's WebSocket is there."""

    def __init__(self, command: str, download_manager: DownloadManager) -> None:
        super().__init__(
            command,
            write_bytes=self._send_or_keep,
            write_str=self._send_or_keep,
            close=self._close,
            download_manager=download_manager,
        )
        self._starting: asyncio.Future[None] | None = None
        self._websocket: web.WebSocketResponse | None = None
        self._kept: list[bytes | str] = []
        """What the app sent before its page connected, in order."""
        self._closed_early = False
        self._ready = asyncio.Event()
        """Set once the app says its first rows are painted (or it ended)."""

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        """textual-serve's, with the app bound to end with the server, however the server ends."""
        self._process = process = await asyncio.create_subprocess_shell(
            self.command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._build_environment(width=width, height=height),
            preexec_fn=_end_with_the_server,
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    def start_soon(self, width: int, height: int) -> None:
        """Start the app without waiting for it (``started`` waits)."""
        self._starting = asyncio.ensure_future(self.start(width, height))

    async def started(self) -> None:
        """Once the app's process runs (``start_soon`` started it)."""
        assert self._starting is not None
        await self._starting

    async def attach(self, websocket: web.WebSocketResponse) -> None:
        """Send the page what the app drew so far, then all it draws, as it draws it."""
        while self._kept:  # the app may draw more while this is sent: it is kept, and sent too
            await _send(websocket, self._kept.pop(0))
        self._websocket = websocket
        if self._closed_early:
            await websocket.close()

    async def ready(self) -> None:
        """Once the app's first rows are painted (``READY_META``), or ended, or ``READY_SECONDS``
        passed. A size sent sooner can race the one the app starts with, and lose: Textual's web
        driver may read it from the pipe before it applies its own."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), READY_SECONDS)

    async def on_meta(self, data: bytes) -> None:
        if json.loads(data).get("type") == READY_META:
            self._ready.set()
            return
        await super().on_meta(data)

    async def _send_or_keep(self, data: bytes | str) -> None:
        if self._websocket is None:
            self._kept.append(data)
        else:
            await _send(self._websocket, data)

    async def _close(self) -> None:
        self._ready.set()
        if self._websocket is None:
            self._closed_early = True
        else:
            await self._websocket.close()

    async def stop(self) -> None:
        """Ask the app to quit (it releases its leases on the way out); kill it if it hangs."""
        if self._starting is not None:
            with contextlib.suppress(Exception):  # a start that failed left nothing to stop
                await self._starting
        try:
            await asyncio.wait_for(super().stop(), STOP_SECONDS)
        except TimeoutError:
            if self._process is not None and self._process.returncode is None:
                self._process.kill()
                await self._process.wait()


async def _send(websocket: web.WebSocketResponse, data: bytes | str) -> None:
    await (websocket.send_bytes(data) if isinstance(data, bytes) else websocket.send_str(data))


class AgentTuiServer(Server):
    """textual-serve's server, with agenttui's guards (see the module's docstring)."""

    def __init__(
        self, store_url: str, *, host: str, port: int, token: str | None, allow_writes: bool, theme: str | None,
        prices: str | None = None, max_tabs: int = 10,
    ) -> None:  # fmt: skip
        super().__init__(
            tab_command(allow_writes=allow_writes, theme=theme, prices=prices),
            host=host,
            port=port,
            title=f"agenttui · {describe_url(store_url)}",
        )
        self.store_url = store_url
        self.token = token
        self.allow_writes = allow_writes
        self.max_tabs = max_tabs
        """At most this many tabs at once, each an app of its own (about 55 MB): the next page is
        told to close one, rather than the machine running out of memory (``--max-tabs``)."""
        self._tabs_full = f"agenttui serve: {max_tabs} tabs are open already: close one, then reload this page\n"
        self.tabs: set[TabApp] = set()
        """The tabs' apps now running with their pages."""
        self.waiting: dict[str, TabApp] = {}
        """Apps started for pages not yet connected, by the key each page's WebSocket names."""
        self._spare: TabApp | None = None
        """An app started ahead of the next page (``_keep_a_spare``)."""
        self._background: set[asyncio.Future[None]] = set()

    def initialize_logging(self) -> None:
        logging.basicConfig(level="INFO", format="agenttui serve: %(message)s")

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if self.token is None and not is_loopback(urlsplit(f"//{request.host}").hostname or ""):
            raise web.HTTPForbidden(text="agenttui serve: on a loopback address it answers loopback names only\n")
        if self.token is not None and not self._carries_token(request):
            raise web.HTTPUnauthorized(text="agenttui serve: this server needs its token: open the URL it printed\n")
        origin = request.headers.get("Origin")
        if request.path.startswith("/ws") and origin is not None and urlsplit(origin).netloc != request.host:
            raise web.HTTPForbidden(text="agenttui serve: a page of another site may not open a tab\n")
        return await handler(request)

    def _carries_token(self, request: web.Request) -> bool:
        assert self.token is not None
        given = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({"app_index.html": page_template(self.templates_path)}))
        app.middlewares.append(self._guard)
        app.router.add_get("/ws/{tab}", self.handle_websocket)
        app.on_shutdown.append(self._stop_every_tab)
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page, its addresses taken from the request: right behind an SSH tunnel or a proxy
        alike. A token in the query string becomes a cookie, for the page's own requests.

        The page's app was started ahead of it (the spare: ``_keep_a_spare``), and the next
        page's starts now: a page shows its runs as soon as its terminal connects, not an app's
        start-up later (benchmarks/serve.py). The page's WebSocket names its app (``/ws/KEY``);
        an app no page connects to within ``WAITING_SECONDS`` is stopped."""
        if len(self.tabs) + len(self.waiting) >= self.max_tabs:
            raise web.HTTPServiceUnavailable(text=self._tabs_full)
        key = self._start_waiting_tab()
        origin = f"{request.scheme}://{request.host}"
        socket = f"{'wss' if request.scheme == 'https' else 'ws'}://{request.host}/ws"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{socket}/{key}" if key else socket,
            "config": {"static": {"url": f"{origin}/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        if self.token is not None and "token" in request.query:
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    def _start_waiting_tab(self) -> str | None:
        """Hand a page the spare app, and start the next; the app's key, or None when
        ``MOST_WAITING`` wait already (pages asked for and never connected: each later page
        starts its app as it connects)."""
        if len(self.waiting) >= MOST_WAITING:
            return None
        key = secrets.token_urlsafe(16)
        self.waiting[key], self._spare = self._spare or self._started_tab(), None
        asyncio.get_running_loop().call_later(WAITING_SECONDS, self._stop_if_waiting, key)
        self._keep_a_spare()
        return key

    def _started_tab(self) -> TabApp:
        tab = TabApp(self.command, self.download_manager)
        tab.start_soon(*DEFAULT_SIZE)
        return tab

    def _keep_a_spare(self) -> None:
        """Start the app the next page takes, replaced after ``SPARE_SECONDS`` untaken (what it
        drew meanwhile is kept for its page: replaced, that stays small)."""
        spare = self._spare = self._started_tab()
        asyncio.get_running_loop().call_later(SPARE_SECONDS, self._replace_spare, spare)

    def _replace_spare(self, spare: TabApp) -> None:
        if self._spare is spare:
            self._stop_in_background(spare)
            self._keep_a_spare()

    def _stop_if_waiting(self, key: str) -> None:
        if (tab := self.waiting.pop(key, None)) is not None:
            self._stop_in_background(tab)

    def _stop_in_background(self, tab: TabApp) -> None:
        stopping = asyncio.ensure_future(tab.stop())
        self._background.add(stopping)
        stopping.add_done_callback(self._background.discard)

    async def _stop_every_tab(self, app: web.Application) -> None:
        """On the way out: every app quits (its leases released), with its page or not."""
        tabs = [*self.tabs, *self.waiting.values(), *([self._spare] if self._spare else [])]
        self.waiting, self._spare = {}, None
        await asyncio.gather(*(tab.stop() for tab in tabs))

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """One tab: its own app process for as long as its WebSocket is open (the one started
        with its page, or one started now)."""
        waiting = request.match_info.get("tab", "") in self.waiting
        if not waiting and len(self.tabs) + len(self.waiting) >= self.max_tabs:
            raise web.HTTPServiceUnavailable(text=self._tabs_full)
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        await websocket.prepare(request)
        waited = self.waiting.pop(request.match_info.get("tab", ""), None)
        tab = waited or TabApp(self.command, self.download_manager)
        self.tabs.add(tab)
        try:
            if waited is None:  # no app started with its page
                tab.start_soon(width, height)
            await tab.started()
            await tab.attach(websocket)
            await tab.ready()
            await tab.set_terminal_size(width, height)
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
        self._keep_a_spare()
        url = reachable_url(self.host, self.port)
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


def serve(
    store_url: str, *, host: str, port: int, token: str | None, allow_writes: bool, theme: str | None,
    prices: str | None = None, max_tabs: int = 10,
) -> None:  # fmt: skip
    """Run ``agenttui serve`` until stopped."""
    AgentTuiServer(store_url, host=host, port=port, token=token, allow_writes=allow_writes, theme=theme,
                   prices=prices, max_tabs=max_tabs).serve()  # fmt: skip
