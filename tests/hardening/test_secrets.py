"""Secrets: a DSN's password is never shown, logged or put in an error; every way to give one works."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from agenttui.cli import main
from agenttui.stores import describe_url, open_store
from agenttui.tui.app import AgentTuiApp
from agenttui.tui.widgets.status_bar import StatusBar
from tests.pg import PostgresCluster
from tests.tui.conftest import settle

pytestmark = pytest.mark.postgres


@pytest.fixture
def schema(postgres_cluster: PostgresCluster) -> str:
    """A schema holding a journal with one run."""
    import asyncio

    from agenttui.journal import Journal, Record, StepKind
    from agenttui.stores.postgres import PostgresStore

    name = "secrets_" + uuid.uuid4().hex[:10]

    async def make() -> None:
        store = await PostgresStore.open(postgres_cluster.dsn, schema=name)
        await Journal(store).append("r", Record("run:start", StepKind.VALUE, result=b'{"input":"x"}'))
        await store.close()

    asyncio.run(make())
    return name


def bare_url(cluster: PostgresCluster) -> str:
    return f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}/{cluster.database}"


def url_with(cluster: PostgresCluster, password: str) -> str:
    return f"postgresql://{cluster.user}:{password}@{cluster.host}:{cluster.port}/{cluster.database}"


def test_a_pgpass_file_works(
    postgres_cluster: PostgresCluster, schema: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = postgres_cluster
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"{cluster.host}:{cluster.port}:*:{cluster.user}:{cluster.password}\n")
    pgpass.chmod(0o600)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    result = CliRunner().invoke(main, ["runs", bare_url(cluster) + f"?schema={schema}"])
    assert result.exit_code == 0 and result.output.startswith("r "), result.output


def test_the_cli_never_prints_a_password(postgres_cluster: PostgresCluster, caplog: pytest.LogCaptureFixture) -> None:
    wrong = "wrong-" + uuid.uuid4().hex
    caplog.set_level(logging.DEBUG)
    for args in (["runs", url_with(postgres_cluster, wrong)], ["show", url_with(postgres_cluster, wrong), "r"],
                 ["approve", url_with(postgres_cluster, wrong), "r", "c"]):  # fmt: skip
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and "password authentication failed" in result.output
        assert wrong not in result.output and postgres_cluster.password not in result.output
    assert wrong not in caplog.text


@pytest.mark.parametrize("where", ["user-info", "query"])
def test_the_tui_shows_the_store_with_its_password_masked(
    postgres_cluster: PostgresCluster, schema: str, where: str
) -> None:
    import asyncio

    asyncio.run(_tui_masks(postgres_cluster, schema, where))


async def _tui_masks(postgres_cluster: PostgresCluster, schema: str, where: str) -> None:
    cluster = postgres_cluster
    if where == "user-info":
        url, masked = url_with(cluster, cluster.password) + f"?schema={schema}", ":***@"
    else:
        url = f"postgresql://{cluster.user}@{cluster.host}:{cluster.port}/{cluster.database}?schema={schema}&password={cluster.password}"
        masked = "password=***"
    app = AgentTuiApp(url, tail=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        bar = app.screen.query_one(StatusBar)
        shown = str(bar.render())
        assert masked in shown and postgres_cluster.password not in shown
        assert postgres_cluster.password not in str(app.screen.query_one("#runs-counts").render())
    assert describe_url(url).count("***") == 1


def test_a_store_opened_from_the_url_hides_the_password(postgres_cluster: PostgresCluster, schema: str) -> None:
    import asyncio

    async def check() -> None:
        store = await open_store(
            url_with(postgres_cluster, postgres_cluster.password) + f"?schema={schema}", read_only=True
        )
        try:
            assert postgres_cluster.password not in store.display_url and postgres_cluster.password not in repr(store)
        finally:
            await store.close()

    asyncio.run(check())


def test_a_password_on_the_command_line_is_masked_in_the_process_title() -> None:
    import subprocess
    import sys

    probe = ("import sys; sys.argv = ['agenttui', 'postgresql://ana:s3cret@db.example/j?password=other']\n"
             "from agenttui.cli import mask_process_title; mask_process_title()\n"
             "print(open('/proc/self/cmdline', 'rb').read().rstrip(b'\\0').decode())")  # fmt: skip
    title = subprocess.run(
        [sys.executable, "-c", probe], check=False, capture_output=True, text=True, timeout=30
    ).stdout
    assert title.strip() == "agenttui postgresql://ana:***@db.example/j?password=***"
