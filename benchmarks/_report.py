"""What every benchmark's report prints the same way: the machine, the checkout, a table of
figures with its verdicts, and progress on stderr."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def machine() -> str:
    """The cores, the CPU, Python and the load average now: the line under a report's title."""
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}"


def checkout() -> str:
    """This checkout's commit, and whether its tree has changes (read-only git)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()  # fmt: skip
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                 capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return head + (" with uncommitted changes" if changed else "")


def met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def table(headers: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: the first column left-aligned, the figures right-aligned."""
    widths = [max(len(header), *(len(row[i]) for row in rows)) for i, header in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))) + " |"  # fmt: skip

    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(r) for r in rows)])


def process_figures(figures: dict[str, list[tuple[float, float, float]]], width: int) -> dict[str, float]:
    """Print each command's whole-process rounds, (wall s, CPU s, peak RSS MB) each: the median,
    min and max wall time, the median CPU time and the largest peak; return the medians by name."""
    import statistics

    print(f"  {'':{width}} {'median':>8} {'min':>8} {'max':>8} {'CPU':>8} {'peak RSS':>9}")
    medians = {}
    for name, each in figures.items():
        walls = [wall for wall, _, _ in each]
        medians[name] = statistics.median(walls)
        cpu = statistics.median(c for _, c, _ in each)
        rss = max(r for _, _, r in each)
        print(f"  {name:{width}} {medians[name]:7.2f}s {min(walls):7.2f}s {max(walls):7.2f}s {cpu:7.2f}s {rss:6.0f} MB")
    return medians


def say(what: str) -> None:
    """Progress, on stderr: the report itself is stdout's."""
    print(f"... {what}", file=sys.stderr, flush=True)
