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
        f"{path}:2: colours: not a key agenttui reads (it reads theme, stores, views, keys)",
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


def test_keys_are_read_by_binding_id_and_what_is_not_a_key_is_said(no_user_config: Path) -> None:
    path = written(
        no_user_config,
        """[keys]
"runs.mark" = "space"
runs.diff = "D"
"list.down" = ["j", "down"]
"Mark" = "m"
"run.back" = 3
"run.copy" = ""
""",
    )
    read = read_config(path)
    assert read.keys == {"runs.mark": "space", "runs.diff": "D", "list.down": "j,down"}
    assert [str(problem) for problem in read.problems] == [
        f'{path}:5: keys.Mark: not a binding\'s id, as "runs.mark" (agenttui config keys lists them)',
        f'{path}:6: keys.run.back: should be a key, as "space", or keys, as "j,down" or ["j", "down"]',
        f'{path}:7: keys.run.copy: should be a key, as "space", or keys, as "j,down" or ["j", "down"]',
    ]


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
    assert (done.returncode, done.stdout) == (0, f"{no_user_config}: fine; named stores: prod; views: none\n")
    assert agenttui("config", "path").stdout == f"{no_user_config}\n"


def test_a_bad_file_never_stops_a_command(no_user_config: Path, demo_db: Path) -> None:
    written(no_user_config, "this is not toml\n")
    done = agenttui("runs", str(demo_db), "--count")
    assert done.returncode == 0 and "total" in done.stdout


def test_a_named_sqlite_store_opens_by_its_name_everywhere(no_user_config: Path, demo_db: Path) -> None:
    written(no_user_config, f"[stores.local]\nurl = {str(demo_db)!r}\n")
    by_name, by_path = agenttui("runs", "local", "--json"), agenttui("runs", str(demo_db), "--json")
    assert by_name.returncode == 0 and by_name.stdout == by_path.stdout
    for command in (["runs"], ["open"]):  # a name the config does not give is a missing file
        missing = agenttui(*command, "lokal")
        assert missing.returncode == 2 and "nor a store the config file names (it names local)" in missing.stderr

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


async def test_the_tui_says_what_the_config_file_ignored(no_user_config: Path, demo_db: Path) -> None:
    from agenttui.tui.app import AgentTuiApp
    from tests.tui.conftest import notices, settle

    written(no_user_config, '[stores.local]\nurl = "local.db"\nflavour = "x"\n')
    app = AgentTuiApp(str(demo_db))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        said = [notice for notice in notices(app) if notice.startswith("config: ")]
    assert said == [
        f"config: {no_user_config}:3: stores.local.flavour: not a key of a store (it has url, password_command)"
    ]


VIEWS = """
[views.halted]
where = "status=halted"

[views.refunds]
where = "tool=refund_payment"
store = "local"

[views.broken]
where = "status=nosuch"

[views.odd]
where = "sub"
sort = "price"

[views.costly]
sort = "cost"
columns = ["cost", "tokens"]

[views.empty]
store = "local"
"""


def test_config_check_says_which_views_do_not_parse(no_user_config: Path) -> None:
    written(no_user_config, VIEWS)
    done = agenttui("config", "check")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"agenttui: {no_user_config}:10: views.broken.where: does not parse, ")
    assert (
        lines[1]
        == f"agenttui: {no_user_config}:14: views.odd.sort: should be one of listing, cost: the view is ignored"
    )
    assert lines[2] == (
        f"agenttui: {no_user_config}:20: views.empty: a view needs a filter (where), a sort or columns: the view is ignored"
    )
    assert len(lines) == 3
    costly = read_config(no_user_config).views["costly"]
    assert (costly.where, costly.sort, costly.columns) == ("", "cost", ("tokens", "cost"))  # the list's own order


def test_a_view_selects_as_its_filter_does_with_runs_and_a_bulk_action(no_user_config: Path, demo_db: Path) -> None:
    written(no_user_config, VIEWS + f"\n[stores.local]\nurl = {str(demo_db)!r}\n")
    by_view = agenttui("runs", str(demo_db), "--view", "halted", "--json")
    assert (
        by_view.returncode == 0
        and by_view.stdout == agenttui("runs", str(demo_db), "--where", "status=halted", "--json").stdout
    )
    both = agenttui("runs", "local", "--view", "refunds", "--where", "status=halted", "--json")
    assert both.stdout == agenttui("runs", "local", "--where", "tool=refund_payment and status=halted", "--json").stdout
    preview = agenttui("cancel", str(demo_db), "--view", "halted")
    assert (
        preview.returncode == 0
        and preview.stdout == agenttui("cancel", str(demo_db), "--where", "status=halted").stdout
    )
    # A view saved for one store is not offered for another; one that is not saved names those that are.
    elsewhere = agenttui("runs", str(demo_db), "--view", "refunds")
    assert elsewhere.returncode == 2 and "no view 'refunds' for this store" in elsewhere.stderr
    assert "views for it: broken, costly, halted" in elsewhere.stderr  # a filter that does not parse says so when used
    # cost, export, release and the replay suite take views too; a view with no filter selects every run.
    assert (
        agenttui("cost", str(demo_db), "--view", "halted", "--json").stdout
        == agenttui("cost", str(demo_db), "--where", "status=halted", "--json").stdout
    )
    assert (
        agenttui("cost", str(demo_db), "--view", "costly", "--json").stdout
        == agenttui("cost", str(demo_db), "--json").stdout
    )
    exported = agenttui("export", str(demo_db), "--view", "halted", "-o", str(demo_db.parent / "halted.db"))
    assert exported.returncode == 0 and "1 run," in exported.stdout, exported.stderr
    suite = agenttui("replay", str(demo_db), "--view", "halted")
    assert suite.stdout == agenttui("replay", str(demo_db), "--where", "status=halted").stdout
    released = agenttui("release", str(demo_db), "--view", "halted")
    assert released.stdout == agenttui("release", str(demo_db), "--where", "status=halted").stdout


async def test_colon_opens_a_saved_view_in_the_tui(no_user_config: Path, demo_db: Path) -> None:
    from textual.widgets import Input

    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.dialogs import ChoiceDialog
    from agenttui.tui.screens.runs import RunsScreen
    from tests.tui.conftest import notices, screen_of, settle, wait_for_screen

    app = AgentTuiApp(str(demo_db))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon")
        assert any("saves no view for this store" in notice for notice in notices(app))
    written(no_user_config, '[views.halted]\nwhere = "status=halted"\n')
    app = AgentTuiApp(str(demo_db))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("colon")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("enter")
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        assert screen.query_one("#runs-filter", Input).value == "status=halted"
        assert {row.line.state.value for row in screen.table.items if row.line} == {"halted"}


async def test_a_view_sets_the_lists_order_and_columns_and_the_list_saves_as_a_view(
    no_user_config: Path, demo_db: Path
) -> None:
    from textual.widgets import Input

    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.dialogs import ChoiceDialog, PromptDialog
    from agenttui.tui.screens.runs import RunsScreen
    from tests.tui.conftest import notices, screen_of, settle, until, wait_for_screen

    written(no_user_config, '# my views\n[views.costly]\nsort = "cost"\ncolumns = ["tokens", "cost"]')
    app = AgentTuiApp(str(demo_db), tail=False)
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        screen = screen_of(app, RunsScreen)
        await pilot.press("colon")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("enter")
        await until(
            pilot, lambda: screen.model.by_cost and screen.table.columns.counts == ("tokens", "cost"), "the view"
        )
        assert screen.table.columns.header().split()[:4] == ["RUN", "STATUS", "TOKENS", "COST"]
        # Saved back: the filter typed, by cost, two columns; a taken name and a bad one are asked again.
        field = screen.query_one("#runs-filter", Input)
        field.value = "status=complete"
        await pilot.press("V")
        await wait_for_screen(pilot, PromptDialog)
        await pilot.press(*"costly", "enter")
        await until(pilot, lambda: "already" in str(app.screen.query_one("#prompt-problem").render()), "refused")
        await pilot.press(*(["backspace"] * 6), *"two words", "enter")
        await until(pilot, lambda: "letters, digits" in str(app.screen.query_one("#prompt-problem").render()), "bad")
        await pilot.press(*(["backspace"] * 9), *"big-done", "enter")
        await until(pilot, lambda: any("saved view big-done" in n for n in notices(app)), "the save")
    assert no_user_config.read_text() == (
        '# my views\n[views.costly]\nsort = "cost"\ncolumns = ["tokens", "cost"]\n\n'
        '[views.big-done]\nwhere = "status=complete"\nsort = "cost"\ncolumns = ["tokens", "cost"]\n'
    )
    saved = read_config(no_user_config).views["big-done"]
    assert (saved.where, saved.sort, saved.columns) == ("status=complete", "cost", ("tokens", "cost"))


async def test_a_view_is_never_saved_through_a_link_nor_into_a_new_files_place_taken(
    no_user_config: Path, tmp_path: Path
) -> None:
    from agenttui.config import View
    from agenttui.stores.files import FileRefusedError
    from agenttui.tui.saved_views import ViewTakenError, save_view

    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text('[views.a]\nwhere = "status=halted"')
    link = tmp_path / "linked.toml"
    link.symlink_to(real)
    with pytest.raises(FileRefusedError, match="symbolic link"):
        await save_view(View("b", "status=complete"), link)
    with pytest.raises(ViewTakenError):
        await save_view(View("a", "status=complete"), real)
    path, line = await save_view(View("b", "status=complete"), real)
    assert (path, line) == (real, 4) and real.read_text().endswith('\n\n[views.b]\nwhere = "status=complete"\n')
    fresh = tmp_path / "new" / "dir" / "config.toml"
    assert await save_view(View("c", "", sort="cost"), fresh) == (fresh, 1)
    assert fresh.read_text() == '[views.c]\nwhere = ""\nsort = "cost"\n'


@pytest.mark.postgres
def test_a_postgres_store_takes_its_password_from_pgpass(
    no_user_config: Path, postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = asyncio.run(postgres_cluster.demo_schema("pgpass", bulk_turns=1))
    target = parse_dsn(url).target
    assert target.password
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"{target.host}:{target.port}:{target.database}:{target.user}:{target.password}\n")
    passfile.chmod(0o600)
    written(no_user_config, f"[stores.pg]\nurl = {json.dumps(url.replace(f':{target.password}@', '@'))}\n")
    done = agenttui("runs", "pg", "--count", env={"PGPASSFILE": str(passfile)})
    assert done.returncode == 0 and "total" in done.stdout, done.stderr
    assert target.password not in done.stdout + done.stderr


async def test_the_tui_switches_to_another_named_store_without_restarting(
    no_user_config: Path, demo_db: Path, tmp_path: Path
) -> None:
    from agenttui.journal import Journal, Record, StepKind
    from agenttui.stores.sqlite import SQLiteStore
    from agenttui.tui.app import AgentTuiApp
    from agenttui.tui.screens.dialogs import ChoiceDialog, ErrorDialog
    from agenttui.tui.screens.runs import RunsScreen
    from tests.tui.conftest import screen_of, settle, until, wait_for_screen

    other = tmp_path / "other.db"
    writer = await SQLiteStore.open(other)
    try:
        await Journal(writer).append("only-run", Record("note", StepKind.VALUE, result=b'"here"'))
    finally:
        await writer.close()
    written(no_user_config, f"[stores.demo]\nurl = {json.dumps(str(demo_db))}\n"
                            f"[stores.other]\nurl = {json.dumps(str(other))}\n"
                            f"[stores.gone]\nurl = {json.dumps(str(tmp_path / 'gone.db'))}\n")  # fmt: skip
    app = AgentTuiApp("demo")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert len(screen_of(app, RunsScreen).table.items) > 1 and app.store_label == "demo"
        await pilot.press("S")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("j", "enter")  # gone, other: the second
        await until(pilot, lambda: app.store_label == "other", "the switch")
        await settle(pilot)
        assert [row.run_id for row in screen_of(app, RunsScreen).table.items] == ["only-run"]
        await pilot.press("S")
        await wait_for_screen(pilot, ChoiceDialog)
        await pilot.press("j", "enter")  # demo, gone: gone, whose file is missing
        await wait_for_screen(pilot, ErrorDialog)
        assert app.store_label == "other" and app.connection == "connected"
        await pilot.press("escape")
        await settle(pilot)
        assert [row.run_id for row in screen_of(app, RunsScreen).table.items] == ["only-run"]
