"""A real OTLP receiver for the trace export's tests: Arize Phoenix, started on loopback once a
session (a worker) with a working directory of its own, read back through its REST API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.pg import free_port

#: How long Phoenix may take to start (its first start migrates its database: 10-20 s on CI's two cores).
START_SECONDS = 120


@dataclass(frozen=True)
class Phoenix:
    url: str

    @property
    def otlp(self) -> str:
        return self.url  # its OTLP/HTTP endpoint is <url>/v1/traces

    def spans(self, project: str, *, expect: int, within: float = 30.0) -> list[dict[str, Any]]:
        """Every span of ``project``, once it holds ``expect`` of them (it ingests a request
        after answering it) or ``within`` seconds passed: then what it holds."""
        deadline = time.monotonic() + within
        while True:
            spans = self._all_spans(project)
            if len(spans) >= expect or time.monotonic() > deadline:
                return spans
            time.sleep(0.1)

    def _all_spans(self, project: str) -> list[dict[str, Any]]:
        spans: list[dict[str, Any]] = []
        cursor = ""
        while True:
            query = f"limit=1000{f'&cursor={cursor}' if cursor else ''}"
            try:
                with urllib.request.urlopen(f"{self.url}/v1/projects/{project}/spans?{query}", timeout=10) as answer:
                    page = json.load(answer)
            except urllib.error.HTTPError as exc:
                if exc.code == 404:  # no span of the project has arrived yet
                    return []
                raise
            spans += page["data"]
            cursor = page.get("next_cursor") or ""
            if not cursor:
                return spans


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    home = tmp_path_factory.mktemp("phoenix")
    port = free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(home),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(free_port()),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = (home / "phoenix.log").open("wb")
    server = subprocess.Popen([sys.executable, "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, server, home / "phoenix.log")
        yield Phoenix(url)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def _wait_until_up(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"Phoenix exited ({server.returncode}):\n{log.read_text(errors='replace')[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    pytest.fail(f"Phoenix did not answer within {START_SECONDS} s:\n{log.read_text(errors='replace')[-3000:]}")
