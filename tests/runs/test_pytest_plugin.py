"""The pytest plugin (``pytest --agenttui-runs PATH --agenttui-agent module:factory``): recorded runs
collected as tests in a pytest of their own (``pytester``), failing with the divergence."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from agenttui.stores.sqlite import SQLiteStore
from tests.runs.test_bundle_cli import CHANGED_AGENT, DEMO_AGENT, cli
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401  (fixtures)

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def recorded_bundles(demo_db_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    """Two bundles of the demo's runs, exported once a session (two CLI processes): copy to use."""
    base = tmp_path_factory.mktemp("recorded-bundles")
    demo = base / "demo.db"
    shutil.copy(demo_db_template, demo)  # exported from a copy, as from the tests' own demo_db
    folder = base / "recorded"
    folder.mkdir()
    assert cli("export", demo, "refund-a1002", "refund-a1003-denied", "-o", folder / "refunds.db").returncode == 0
    assert cli("export", demo, "lookup-z0042", "-o", folder / "lookups.db").returncode == 0
    return folder


@pytest.fixture
def suite(recorded_bundles: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of two bundles of the demo's runs, the test's own copy, and the test agents
    importable from pytest's own process."""
    folder = tmp_path / "recorded"
    shutil.copytree(recorded_bundles, folder)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return folder


def test_each_recorded_run_is_a_test_named_by_bundle_and_run(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest_subprocess("--agenttui-runs", str(suite), "--agenttui-agent", DEMO_AGENT, "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*lookups.db::lookup-z0042 PASSED*", "*refunds.db::refund-a1002 PASSED*"])
    only = pytester.runpytest_subprocess("--agenttui-runs", str(suite), "--agenttui-agent", DEMO_AGENT, "-k", "denied")
    only.assert_outcomes(passed=1, deselected=2)
    listed = pytester.runpytest_subprocess("--agenttui-runs", str(suite), "--collect-only", "-q")
    listed.stdout.fnmatch_lines(["*lookups.db::lookup-z0042", "3 tests collected*"])


def test_a_changed_agent_fails_with_the_divergence_not_a_traceback(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest_subprocess("--agenttui-runs", str(suite), "--agenttui-agent", CHANGED_AGENT)
    result.assert_outcomes(failed=3)  # the lookup's result changed: every run looked an order up
    result.stdout.fnmatch_lines(["*refunds.db::refund-a1002: diverged at record 3 (tool:call_0_0)*", "*warehouse*"])
    assert "Traceback" not in result.stdout.str() and "agenttui/replay" not in result.stdout.str()


def test_strict_fails_a_run_whose_prompt_changed(pytester: pytest.Pytester, suite: Path) -> None:
    edited = (
        "--agenttui-runs",
        str(suite / "refunds.db"),
        "--agenttui-agent",
        "tests.runs.regression_agents:edited_prompt",
    )
    pytester.runpytest_subprocess(*edited).assert_outcomes(passed=2)
    strict = pytester.runpytest_subprocess(*edited, "--agenttui-strict")
    strict.assert_outcomes(failed=2)
    strict.stdout.fnmatch_lines(
        ["*refunds.db::refund-a1002: diverged at record 2 (@llm/0): the prompt changed*(--strict)*"]
    )


def test_a_filter_and_many_workers(pytester: pytest.Pytester, suite: Path) -> None:
    result = pytester.runpytest_subprocess(
        "--agenttui-runs", str(suite), "--agenttui-where", "id=refund-*", "--agenttui-agent", DEMO_AGENT, "-n", "2"
    )
    result.assert_outcomes(passed=2)


def test_runs_in_any_order_beside_a_tests_own_event_loop(pytester: pytest.Pytester, suite: Path) -> None:
    """The session's replays share an event loop and read runs ahead while items run in order;
    run backwards, each run reads itself, and a test's own ``asyncio.run`` between them works."""
    pytester.makeconftest(
        """
        import pytest

        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(items):
            items.reverse()
        """
    )
    pytester.makepyfile(
        test_own_loop="""
        import asyncio

        def test_a_loop_of_its_own():
            assert asyncio.run(asyncio.sleep(0, result=7)) == 7
        """
    )
    result = pytester.runpytest_subprocess("--agenttui-runs", str(suite), "--agenttui-agent", DEMO_AGENT, "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["*refund-a1003-denied PASSED*", "*refund-a1002 PASSED*", "*test_a_loop_of_its_own PASSED*"]
    )


def test_the_fixture_replays_one_run_in_a_hand_written_test(pytester: pytest.Pytester, suite: Path) -> None:
    pytester.makepyfile(
        test_refunds=f"""
        def test_the_refund_still_refunds(agenttui_replay):
            replayed = agenttui_replay({str(suite / "refunds.db")!r}, "refund-a1002", {DEMO_AGENT!r})
            replayed.assert_matches()
            assert replayed.verdict.kind == "matches"

        def test_the_changed_code_diverges(agenttui_replay):
            replayed = agenttui_replay({str(suite / "refunds.db")!r}, "refund-a1002", {CHANGED_AGENT!r})
            assert replayed.verdict.kind == "diverged"
        """
    )
    pytester.runpytest_subprocess().assert_outcomes(passed=2)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--agenttui-runs", "{suite}/nothing.db"], "*agenttui: */nothing.db: no such file or folder*"),
        (
            ["--agenttui-runs", "{suite}", "--agenttui-agent", "no_such_module:factory"],
            "*cannot import 'no_such_module'*",
        ),
        (["--agenttui-runs", "{suite}", "--agenttui-where", "status=(("], "*agenttui: at column 8*"),
    ],
)
def test_a_wrong_path_agent_or_filter_is_a_usage_error_not_a_traceback(
    pytester: pytest.Pytester, suite: Path, given: list[str], said: str
) -> None:
    result = pytester.runpytest_subprocess(*(arg.format(suite=suite) for arg in given))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([said])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_off_unless_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*collected 1 item*"])  # the plugin is loaded (its name in the header), idle


#: What no line pytest prints may hold: a terminal acts on it (tab and newline are text).
TERMINAL_ACTIVE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
HOSTILE_IDS = [
    "osc52-\x1b]52;c;cm0gLXJmIH4gIw==\x07",  # the clipboard set to `rm -rf ~ #`
    "csi-\x9b2J",
    "bidi-\u202eevil",
    "bel-\x07",
]


@pytest.fixture
def hostile_store(demo_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: F811
    """A store holding the demo's refund under run ids a terminal would act on."""
    path = tmp_path / "hostile.db"

    async def build() -> None:
        source, target = await SQLiteStore.open(demo_db, read_only=True), await SQLiteStore.open(path)
        try:
            entries = [(entry.name, entry.data) async for entry in source.load("refund-a1002")]
            for run_id in HOSTILE_IDS:
                for name, data in entries:
                    await target.insert(run_id, name, data)
        finally:
            await source.close()
            await target.close()

    asyncio.run(build())
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return path


@pytest.mark.parametrize("agent", [DEMO_AGENT, CHANGED_AGENT])
def test_the_plugin_prints_hostile_run_ids_inert(pytester: pytest.Pytester, hostile_store: Path, agent: str) -> None:
    """Run ids are the store's text: in -v lines, failures and the summary they show escaped."""
    result = pytester.runpytest_subprocess(
        "--agenttui-runs", str(hostile_store), "--agenttui-agent", agent, "-v", "-rA"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == len(HOSTILE_IDS), result.stdout.str()
    printed = result.stdout.str() + result.stderr.str()
    assert not TERMINAL_ACTIVE.search(printed), TERMINAL_ACTIVE.findall(printed)
    assert "osc52-\\x1b]52;c;cm0gLXJmIH4gIw==\\x07" in printed and "bidi-\\u202eevil" in printed
    listed = pytester.runpytest_subprocess("--agenttui-runs", str(hostile_store), "--collect-only", "-q")
    assert not TERMINAL_ACTIVE.search(listed.stdout.str() + listed.stderr.str())
