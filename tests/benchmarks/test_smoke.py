"""Every benchmark still runs: each one's ``--smoke`` (tiny sizes, seconds), as a process from the
repository's root, so a changed interface fails the suite instead of waiting for the next time
someone measures. A benchmark is found by its file (``benchmarks/*.py``, not ``_*.py``): a new
one is covered by being there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = sorted(path for path in (ROOT / "benchmarks").glob("*.py") if not path.name.startswith("_"))
#: A smoke run takes seconds (up to about 40 with PostgreSQL); this is for a loaded CI machine.
SMOKE_TIMEOUT_S = 240.0
HELP_TIMEOUT_S = 60.0
TAIL_CHARS = 3000


def environment(tmp_path: Path) -> dict[str, str]:
    """This checkout's agenttui, and a cache of the test's own (the status index, never the user's)."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(tmp_path / "xdg-cache")}


def tail(text: str) -> str:
    return text if len(text) <= TAIL_CHARS else "…" + text[-TAIL_CHARS:]


@pytest.mark.slow
# Not named ``benchmark``: pytest-benchmark, where installed, owns a fixture of that name.
@pytest.mark.parametrize("script", BENCHMARKS, ids=[path.stem for path in BENCHMARKS])
def test_the_benchmark_runs_at_smoke_sizes(script: Path, tmp_path: Path) -> None:
    # Its output goes to files, not pipes: a process it leaves behind (a database server, a
    # writer) cannot keep the test waiting on a pipe it still holds.
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(script.relative_to(ROOT)), "--smoke"],
            cwd=ROOT,
            env=environment(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # its own process group: a timeout ends its children too
        )
        try:
            code: int | None = process.wait(timeout=SMOKE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            code = None
    if code != 0:
        what = f"exited {code}" if code is not None else f"was still running after {SMOKE_TIMEOUT_S:.0f} s"
        pytest.fail(
            f"benchmarks/{script.name} --smoke {what}\n"
            f"--- stdout (its end) ---\n{tail(out.read_text(errors='replace'))}\n"
            f"--- stderr (its end) ---\n{tail(err.read_text(errors='replace'))}",
            pytrace=False,
        )


def test_every_benchmark_says_it_has_a_smoke_run(tmp_path: Path) -> None:
    assert BENCHMARKS, "no benchmark found under benchmarks/"
    processes = {
        benchmark.name: subprocess.Popen(
            [sys.executable, str(benchmark.relative_to(ROOT)), "--help"],
            cwd=ROOT,
            env=environment(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for benchmark in BENCHMARKS
    }  # all at once: each is mostly its imports
    missing = []
    for name, process in processes.items():
        stdout, stderr = process.communicate(timeout=HELP_TIMEOUT_S)
        if process.returncode != 0 or "--smoke" not in stdout:
            missing.append(
                f"{name} (exit {process.returncode}): {tail(stderr) or 'its --help does not mention --smoke'}"
            )
    assert not missing, "benchmarks whose --help mentions no --smoke:\n" + "\n".join(missing)
