"""README's library example runs as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_library_example_runs(tmp_path: Path) -> None:
    example = README.read_text().split("## The library", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    for _ in range(2):  # the second time, the run is resumed from its journal: the same answer
        child = subprocess.run(
            [sys.executable, "-c", example], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert child.returncode == 0, child.stderr
        assert child.stdout.startswith("A-1 was delivered. complete\nflowchart TD\n")
        assert '  n2["tool: lookup_order"]\n' in child.stdout


def test_readme_lists_every_exit_code_the_cli_uses() -> None:
    from agenttui.cli import EXIT_CODES

    rows = {
        int(line.split("|")[1]): line.split("|")[2].strip()
        for line in README.read_text().splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    }
    assert rows == EXIT_CODES


def test_ci_runs_exactly_the_readme_test_command() -> None:
    blocks = README.read_text().split("```sh\n")[1:]
    test_command = next(block.split("```", 1)[0].strip() for block in blocks if "pytest" in block.split("```", 1)[0])
    ci_script = (README.parent / ".ci" / "run").read_text().splitlines()
    assert ci_script[-1] == test_command
    assert "ruff check" in test_command and "ruff format --check" in test_command and "mypy" in test_command


def test_readme_counts_the_demo_runs_as_the_demo_writes_them(tmp_path: Path) -> None:
    import asyncio
    import re

    from agenttui.demo.build import build_demo
    from agenttui.journal.keys import parent_run_id
    from agenttui.stores.sqlite import SQLiteStore

    async def listed() -> list[str]:
        store = await SQLiteStore.open(tmp_path / "demo.db")
        try:
            await build_demo(store, bulk_turns=2)
            return [run_id async for run_id in store.runs()]
        finally:
            await store.close()

    runs = asyncio.run(listed())
    roots = [run_id for run_id in runs if parent_run_id(run_id) is None]
    text = README.read_text()
    screenshot = text.split("```\n", 2)[1]
    assert re.match(rf" {len(roots)} runs ", screenshot), screenshot.splitlines()[0]  # the list counts roots
    assert f"It holds {len(runs)} runs: the list above counts the {len(roots)} at the top" in text
