"""The config file (issue 51): where it is read from, every problem one line naming the file, the
line and the key, nothing in it stopping a command; named stores opened by name on SQLite and on
PostgreSQL, their passwords from a ``password_command`` and never shown."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

import pytest

from agenttui.config import CONFIG_ENV, config_path, read_config, user_config
from agenttui.errors import ConfigError, StoreURLError
from agenttui.stores import open_store
from agenttui.stores.postgres.connection import parse_dsn
from tests.pg import PostgresCluster
from tests.processes import agenttui


def written(path: Path, text: str) -> Path:
    path.write_text(text)
    user_config.cache_clear()
    return path


def test_the_file_is_read_from_the_platforms_config_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(CONFIG_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert config_path() == tmp_path / "agenttui" / "config.toml"
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/is/ignored")
    assert config_path() == Path.home() / ".config" / "agenttui" / "config.toml"
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "team.toml"))
    assert config_path() == tmp_path / "team.toml"


def test_no_file_is_an_empty_config(no_user_config: Path) -> None:
    read = read_config(no_user_config)
    assert not read.exists and not read.problems and not read.stores


def test_each_problem_is_one_line_naming_the_file_the_line_and_the_key(no_user_config: Path) -> None:
    path = written(
        no_user_config,
        """theme = 3
colours = "no"

[stores.prod]
url = "postgresql://agent@db/agents?schema=bide"
password_command = "pass show db/agent"

[stores.leaky]
url = "postgresql://agent:hunter2@db/agents"

[stores.query]
url = "postgresql://agent@db/agents?password=hunter2"

[stores."two words"]
url = "x.db"

[stores.odd]
url = "odd.db"
colour = "red"

[stores.nourl]
password_command = "true"
""",
    )
    read = read_config(path)
    assert list(read.stores) == ["prod", "odd"]
    assert read.stores["prod"].password_command == "pass show db/agent"
    lines = sorted(str(problem) for problem in read.problems)
    assert lines == sorted([
        f"{path}:1: theme: should be a theme's name, in quotes",
        f"{path}:2: colours: not a key agenttui reads (it reads theme, stores)",
        f"{path}:9: stores.leaky.url: holds a password: the store is ignored. Keep it in ~/.pgpass, PGPASSWORD or"
        " PGSERVICE, or give a password_command",
        f"{path}:12: stores.query.url: holds a password: the store is ignored. Keep it in ~/.pgpass, PGPASSWORD or"
        " PGSERVICE, or give a password_command",
        f"{path}:14: stores.two words: a store's name is letters, digits, '-' and '_' (what no path or URL looks"
        " like)",
        f"{path}:19: stores.odd.colour: not a key of a store (it has url, password_command)",
        f"{path}:21: stores.nourl.url: the store's URL is missing, or not in quotes: the store is ignored",
    ])  # fmt: skip
    assert all("hunter2" not in line for line in lines)


def test_a_file_that_is_not_toml_is_ignored_whole_and_says_where(no_user_config: Path) -> None:
    path = written(no_user_config, '[stores.prod]\nurl = "x.db"\nurl = "y.db"\n')
    (problem,) = read_config(path).problems
    assert problem.line == 3 and str(problem).startswith(f"{path}:3: not TOML, so all of it is ignored")


def test_config_check_lists_every_problem_and_exits_2(no_user_config: Path) -> None:
    written(no_user_config, '[stores.prod]\nurl = "prod.db"\nflavour = 1\n')
    done = agenttui("config", "check")
    assert done.returncode == 2
    assert done.stderr == f"agenttui: {no_user_config}:3: stores.prod.flavour: not a key of a store (it has url," \
        " password_command)\n"  # fmt: skip
    written(no_user_config, '[stores.prod]\nurl = "prod.db"\n')
    done = agenttui("config", "check")
    assert (done.returncode, done.stdout) == (0, f"{no_user_config}: fine; named stores: prod\n")
    assert agenttui("config", "path").stdout == f"{no_user_config}\n"


def test_a_bad_file_never_stops_a_command(no_user_config: Path, demo_db: Path) -> None:
    written(no_user_config, "this is not toml\n")
    done = agenttui("runs", str(demo_db), "--count")
    assert done.returncode == 0 and "total" in done.stdout


def test_a_named_sqlite_store_opens_by_its_name_everywhere(no_user_config: Path, demo_db: Path) -> None:
    written(no_user_config, f"[stores.local]\nurl = {str(demo_db)!r}\n")
    by_name, by_path = agenttui("runs", "local", "--json"), agenttui("runs", str(demo_db), "--json")
    assert by_name.returncode == 0 and by_name.stdout == by_path.stdout
    assert agenttui("runs", "lokal").returncode == 2  # a name the config does not give is a missing file

    async def shown() -> str:
        store = await open_store("local", read_only=True)
        try:
            return store.display_url
        finally:
            await store.close()

    assert asyncio.run(shown()) == "local"


def test_a_name_that_is_also_a_file_here_is_refused(
    no_user_config: Path, demo_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written(no_user_config, f"[stores.demo]\nurl = {str(demo_db)!r}\n")
    monkeypatch.chdir(demo_db.parent)
    (demo_db.parent / "demo").write_text("")
    with pytest.raises(StoreURLError, match="both a file here and a store"):
        asyncio.run(open_store("demo", read_only=True))


@pytest.mark.postgres
def test_a_postgres_store_takes_its_password_from_its_command_and_never_shows_it(
    no_user_config: Path, postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = asyncio.run(postgres_cluster.demo_schema("named", bulk_turns=1))
    password = parse_dsn(url).target.password
    assert password
    bare = url.replace(f":{password}@", "@")
    secret = tmp_path / "secret"
    secret.write_text(password + "\n")
    command = shlex.join(["cat", str(secret)])
    written(no_user_config, f"[stores.pg]\nurl = {bare!r}\npassword_command = {command!r}\n")
    done = agenttui("runs", "pg", "--count", "--json", env={"PGPASSWORD": ""})
    assert done.returncode == 0, done.stderr
    secret.write_text("wrong\n")
    refused = agenttui("runs", "pg", "--count", env={"PGPASSWORD": ""})
    assert refused.returncode == 2 and "password authentication failed" in refused.stderr
    assert "wrong" not in refused.stderr
    script = tmp_path / "failing.py"
    script.write_text("import sys\nprint('oops')\nsys.exit(3)\n")
    failing = shlex.join([sys.executable, str(script)])
    written(no_user_config, f"[stores.pg]\nurl = {json.dumps(bare)}\npassword_command = {json.dumps(failing)}\n")
    with pytest.raises(ConfigError, match="its password_command exited 3") as raised:
        asyncio.run(open_store("pg", read_only=True))
    assert "oops" not in str(raised.value)
