"""``agenttui serve``: safe by default, over HTTP and in a real browser.

The guards (a loopback server answers loopback names only, a WebSocket from another site is
refused, a server on another address asks every request for its token) are checked with plain
HTTP; the TUI itself in headless Chromium: the runs list shows, keys open a run and step a replay,
an approve writes exactly one record when writes are allowed and none when not, a closed tab's
app ends, and a store's password never reaches the page, the server's output or a process list.
"""

from __future__ import annotations

import asyncio
import re
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from agenttui.journal import Journal
from agenttui.stores.sqlite import SQLiteStore
from tests.pg import PostgresCluster
from tests.web.conftest import Tab, served


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


WEBSOCKET_HEADERS = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                     "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}  # fmt: skip


def test_a_loopback_server_answers_loopback_names_and_its_own_pages_only(demo_db: Path) -> None:
    with served(str(demo_db)) as server:
        status, _, page = fetch(server.url)
        assert status == 200
        # The page names its own app's WebSocket: the app started ahead of it.
        found = re.search(rf'data-session-websocket-url="ws://127\.0\.0\.1:{server.port}(/ws/[\w-]+)"', page)
        assert found is not None
        # A name rebound to 127.0.0.1 by another site's DNS: refused.
        assert fetch(server.url, {"Host": f"attacker.example:{server.port}"})[0] == 403
        # A page of another site opening a tab's WebSocket, the page's app's or a new one: refused.
        for path in (found.group(1), "/ws"):
            origin = {**WEBSOCKET_HEADERS, "Origin": "http://attacker.example"}
            assert fetch(f"http://127.0.0.1:{server.port}{path}", origin)[0] == 403


def test_a_server_on_another_address_asks_every_request_for_its_token(demo_db: Path) -> None:
    with served(str(demo_db), "--host", "0.0.0.0", env={"AGENTTUI_SERVE_TOKEN": "s3cret-token"}) as server:
        status, _, body = fetch(server.url)
        assert status == 401 and "token" in body and "<html" not in body
        assert fetch(f"{server.url}static/js/textual.js")[0] == 401
        assert fetch(f"{server.url}ws", WEBSOCKET_HEADERS)[0] == 401
        assert fetch(f"{server.url}?token=wrong")[0] == 401
        status, headers, _ = fetch(f"{server.url}?token=s3cret-token")
        assert status == 200 and "agenttui_token=s3cret-token" in headers["Set-Cookie"]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        assert fetch(f"{server.url}static/js/textual.js", {"Cookie": "agenttui_token=s3cret-token"})[0] == 200
    output = server.output()
    assert "?token=s3cret-token" in output  # said once, at start
    assert output.count("s3cret-token") == 1  # and never in a log line of a request


def test_a_server_on_another_address_makes_a_token_when_given_none(demo_db: Path) -> None:
    with served(str(demo_db), "--host", "0.0.0.0") as server:
        assert fetch(server.url)[0] == 401
    assert "?token=" in server.output()


def test_a_store_that_is_not_there_is_said_before_serving(tmp_path: Path) -> None:
    from tests.processes import agenttui

    done = agenttui("serve", str(tmp_path / "missing.db"), "--port", "1")
    assert done.returncode == 2 and "missing.db" in done.stderr and "Traceback" not in done.stderr


def test_a_prices_file_reaches_every_tab_and_one_that_is_not_prices_is_said_before_serving(
    tmp_path: Path, demo_db: Path
) -> None:
    import shlex

    from agenttui.web.server import tab_command
    from tests.processes import agenttui

    (tmp_path / "prices.toml").write_text('["acme/house-llm-2"]\ninput = 0.4\n')
    argv = shlex.split(tab_command(allow_writes=False, theme=None, prices="prices.toml"))
    assert argv[-2:] == ["--prices", str(Path("prices.toml").resolve())]  # a tab's app starts elsewhere
    (tmp_path / "bad.toml").write_text("not toml")
    done = agenttui("serve", str(demo_db), "--port", "1", "--prices", str(tmp_path / "bad.toml"))
    assert done.returncode == 2 and "not a TOML file" in done.stderr and done.stderr.count("\n") == 1


async def test_the_tui_in_a_browser_opens_a_run_and_steps_a_replay(demo_db: Path, browser: Any) -> None:
    with served(str(demo_db)) as server:
        tab = await Tab.open(browser, server.url)
        await tab.until("17 runs", "refund-a1002", "awaiting-approval")
        await tab.press("Enter")  # the first run: audit-bulk
        await tab.until("run audit-bulk", "@journal")
        await tab.press("R")
        await tab.until("replay audit-bulk")
        await tab.press("n")
        await tab.until("turn 1 of")
        await tab.page.close()


async def _approve_in_browser(tab: Tab) -> None:
    """Open refund-a1005's actions (it awaits approval), choose approve, and press w."""
    await tab.until("refund-a1005", "awaiting-approval")
    await tab.press("/", *"refund-a1005", "Enter")  # the filter: the run first, then the one it became
    await tab.until("/refund-a1005")
    await tab.press_until("o", "Approve", again_on="no run selected")
    await tab.press("Enter")  # the first choice: approve
    await tab.until("Approve refund_payment call call_1_0 of run refund-a1005", "Write it (w)")


async def test_a_confirmed_approve_in_a_browser_writes_exactly_one_record(demo_db: Path, browser: Any) -> None:
    before = await _records(demo_db, "refund-a1005")
    with served(str(demo_db), "--allow-writes") as server:
        tab = await Tab.open(browser, server.url)
        await _approve_in_browser(tab)
        await tab.press("w")
        after = await _records_once_more_than(demo_db, "refund-a1005", len(before))
        assert after[: len(before)] == before and [record.name for record in after[len(before) :]] == [
            "approval:call_1_0"
        ]
        assert after[-1].approved


async def test_a_served_tui_writes_nothing_without_allow_writes(demo_db: Path, browser: Any) -> None:
    before = await _records(demo_db, "refund-a1005")
    with served(str(demo_db)) as server:
        tab = await Tab.open(browser, server.url)
        await tab.until("read-only")
        await tab.press("/", *"refund-a1005", "Enter")
        await tab.until("/refund-a1005")
        await tab.press_until("o", "Approve", again_on="no run selected")
        await tab.press("Enter")
        await tab.until("Approve refund_payment", "Nothing is written here", "Writes refused")
        await tab.press("w")
        await tab.until("nothing written")
    assert await _records(demo_db, "refund-a1005") == before


async def test_a_closed_tab_ends_its_app(demo_db: Path, browser: Any) -> None:
    """Its app ends; the one started ahead of the next page stays (one, whatever came before)."""
    with served(str(demo_db)) as server:
        tab = await Tab.open(browser, server.url)
        await tab.until("17 runs")
        assert len(server.tab_processes()) == 2  # the tab's app and the next page's
        await tab.page.close()
        for _ in range(200):
            if len(server.tab_processes()) == 1:
                break
            await asyncio.sleep(0.05)
        assert len(server.tab_processes()) == 1


def test_a_server_killed_outright_leaves_no_app_behind(demo_db: Path) -> None:
    with served(str(demo_db)) as server:
        assert fetch(server.url)[0] == 200  # the page's app, and the next page's
        for _ in range(200):
            if len(apps := server.tab_processes()) == 2:
                break
            time.sleep(0.05)
        assert len(apps) == 2
        server.process.kill()
        server.process.wait()
        for _ in range(200):
            if not any(_running(pid) for pid in apps):
                break
            time.sleep(0.05)
        assert not any(_running(pid) for pid in apps)


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_a_stores_password_reaches_neither_the_page_nor_the_output_nor_a_process_list(
    postgres_cluster: PostgresCluster, browser: Any
) -> None:
    url = await postgres_cluster.demo_schema("serve", bulk_turns=4)
    password = postgres_cluster.password
    with served(url) as server:
        tab = await Tab.open(browser, server.url)
        await tab.until("17 runs", "refund-a1002")
        assert password not in await tab.page.content() and password not in await tab.text()
        for pid in [server.process.pid, *server.tab_processes()]:
            assert password not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"), pid
        await tab.page.close()
    assert password not in server.output()


async def _records_once_more_than(path: Path, run_id: str, count: int) -> list[Any]:
    """The run's records once it holds more than ``count`` (and a moment more: all it got)."""
    for _ in range(400):
        if len(await _records(path, run_id)) > count:
            await asyncio.sleep(0.5)
            return await _records(path, run_id)
        await asyncio.sleep(0.05)
    raise AssertionError(f"{run_id} never got a record past its {count}")


async def _records(path: Path, run_id: str) -> list[Any]:
    async with await SQLiteStore.open(path, read_only=True) as store:
        return (await Journal(store).read(run_id)).records


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_page_names_no_outside_host_and_serves_its_own_font(demo_db: Path) -> None:
    with served(str(demo_db)) as server:
        status, _, page = fetch(server.url)
        assert status == 200
        outside = [url for url in re.findall(r'(?:href|src)="([^"]+)"', page) if not url.startswith(server.url)]
        assert outside == [] and "googleapis" not in page
        font = re.search(r'url\("([^"]+\.ttf)"\)', page)
        assert font is not None and font.group(1).startswith(server.url)
        with urllib.request.urlopen(font.group(1), timeout=10) as served_font:
            assert served_font.status == 200 and served_font.read(4) == b"\x00\x01\x00\x00"  # a TrueType font


async def test_tabs_are_capped(demo_db: Path) -> None:
    """Each tab is an app of its own: past ``--max-tabs`` a page is told to close one, and no app
    is started for it."""
    import aiohttp

    with served(str(demo_db), "--max-tabs", "2") as server:
        async with aiohttp.ClientSession() as session:
            first, second = [await session.ws_connect(f"ws://127.0.0.1:{server.port}/ws") for _ in range(2)]
            status, _, said = await asyncio.to_thread(fetch, server.url)
            assert status == 503 and "2 tabs are open already: close one" in said
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(f"ws://127.0.0.1:{server.port}/ws")
            assert refused.value.status == 503
            assert len(server.tab_processes()) <= 3  # the two tabs' apps and the spare
            await first.close()
            await second.close()


def test_a_server_on_every_address_prints_a_url_a_browser_can_open(demo_db: Path) -> None:
    with served(str(demo_db), "--host", "0.0.0.0", env={"AGENTTUI_SERVE_TOKEN": "s3cret-token"}) as server:
        time.sleep(0.5)
    printed = server.output()
    assert "0.0.0.0" not in printed, printed
    assert f"http://{socket.getfqdn()}:{server.port}/" in printed


async def test_keys_reach_the_app_without_a_click(demo_db: Path, browser: Any) -> None:
    with served(str(demo_db)) as server:
        tab = await Tab.open(browser, server.url)
        await tab.until("17 runs")
        for key in ("/", *"refund-a1005", "Enter"):  # typed at the page, never focused by hand
            await tab.page.keyboard.press(key)
        await tab.until("/refund-a1005")
