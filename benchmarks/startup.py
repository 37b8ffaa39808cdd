"""Start-up: from the process's start to the first rows painted, in a real terminal, beside the floor and the peers.

    python benchmarks/startup.py [--repeats 7] [--runs 100000] [--cache DIR] [--size 120x40]
                                 [--peers DIR] [--against CHECKOUT] [--instructions] [--json] [--smoke]

**The first run builds two large stores** and caches them under ``--cache`` (default
``/tmp/agenttui-bench-cache``), reused after: the production-shaped one of ``--runs`` runs
(``benchmarks/shapes.py``, ``v1-production-<runs>.db``, 1.4 GB: 19 minutes on this 2-core machine
at load 5.6, 48 minutes at load 4.7, as its ``.shape.json`` records; count 20-50 minutes) and
the uniform one (``v1-runs-<runs>.db``, about a minute). Later runs take a minute or two.

Target (issue 29): ``agenttui STORE``'s first rows painted at most 150 ms after a bare Textual
app's first paint (one ``Static``), both measured in the same run; and sooner than the peers'
first useful screens.

Every figure is one whole process, the real command as a user starts it (``python -m agenttui``,
what the console script runs), timed from just before the benchmark spawns it:

- the TUI (``agenttui STORE``) runs in a pseudo-terminal of ``--size``; it counts as painted when
  the terminal has been sent a frame holding one of the store's run ids (a row of the runs list),
  read from the terminal's side, with the escape sequences taken out (a style change inside a
  row does not move the cursor, so the row's text reads whole). Its peak RSS (``VmHWM``) and CPU
  time are read at that moment; then ``q`` quits it. On a demo store (``agenttui demo
  --no-tui``, built afresh) and on the two stores of ``--runs`` runs the other benchmarks use:
  the uniform one (copies of one 10-record run, ``benchmarks/tui.py``) and the production-shaped
  one (``benchmarks/shapes.py``).
- the floors, measured the same way in the same run: ``python -c pass``, and a bare Textual app
  that paints one ``Static`` (and one a one-row ``DataTable``): Textual's own import and first
  frame, which no Textual app starts faster than.
- the peers, each to its first useful screen, if installed (on ``PATH``, or in a virtual
  environment ``--peers DIR/<name>``, default ``/tmp/agenttui-peers``: ``python -m venv
  /tmp/agenttui-peers/toolong && /tmp/agenttui-peers/toolong/bin/pip install toolong``, and the
  same for ``posting`` and ``harlequin``, a minute each): Toolong (``tl``) on a log of 10,000
  lines, to its last lines (it opens at the end); Posting on a collection of one request, to the
  request's name in the collection; Harlequin on a DuckDB file, to the database in its data
  catalog. Each gets a home and XDG directories of its own, under the benchmark's temp directory.
  They run on their own Textual (each pins one), so they are compared by their time only.
- the imports alone, timed to exit: Textual's app module, and what ``agenttui STORE`` imports
  before it runs the app (``agenttui.cli``, ``agenttui.tui.app``).
- the command line, timed to its exit: ``agenttui --help`` and ``agenttui runs DEMO --json``.
- ``--against CHECKOUT``: the TUI cases again with another checkout's agenttui (the commit before
  a change, say), in the same run; the report gives this tree's time over that one's.
- ``--instructions``: after the timed runs, each TUI and floor once more under valgrind's
  callgrind, stopped at the frame after its first rows: the CPU instructions it took, every
  thread's, a figure the machine's load does not move.

The children get a bytecode cache of their own (as an installed package has its ``.pyc`` files;
this machine sets ``PYTHONDONTWRITEBYTECODE``); one more case shows the demo without one. They run
in an empty directory, so ``-m agenttui`` imports the checkout on ``PYTHONPATH``, not the current
directory's. After one warm-up round, each round runs every case once, in an order shuffled
afresh (seeded), so a change in the machine's load, or a case that warms the page cache for the
next, hits all alike; each row gives the median, min and max of ``--repeats`` runs, the median CPU
time (user + system) and the largest peak RSS.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import random
import re
import select
import shutil
import signal
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

SMOKE_RUNS = 300
"""``--smoke``'s large stores: runs in each."""
TARGET_OVER_FLOOR_SECONDS = 0.15
"""Issue 29: first rows painted at most this long after the bare Textual app's first paint."""
ESCAPES = re.compile(rb"\x1b\[[0-9;:?<>=$ ]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
"""CSI sequences (styles, cursor moves) and OSC strings (titles), taken out before a frame is searched."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

SPAWNER = """
import os, sys, time
out = os.open(sys.argv[1], os.O_WRONLY)
started = time.perf_counter()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ, file_actions=[
    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, out, 1), (os.POSIX_SPAWN_DUP2, out, 2)])
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - started
print(wall, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, usage.ru_maxrss)
"""
"""Spawns a command and reports its wall time, exit code, CPU time and peak RSS (KiB). A process's
peak RSS counts the memory of the process that forked it, up to its exec: this spawner (python
-I -S, 8 MB) is smaller than any command timed, the benchmark itself (30 MB) is not."""

BARE_STATIC = """
import os, sys
from textual.app import App
from textual.widgets import Static

class Floor(App[None]):
    BINDINGS = [("q", "quit")]

    def compose(self):
        yield Static("floor-row-0000001")

    def on_mount(self):
        if "--exit-when-painted" in sys.argv:  # --instructions: stop at the first frame
            self.call_after_refresh(os._exit, 0)

Floor().run()
"""

BARE_DATATABLE = """
import os, sys
from textual.app import App
from textual.widgets import DataTable

class Floor(App[None]):
    BINDINGS = [("q", "quit")]

    def compose(self):
        yield DataTable()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns("RUN", "STATUS")
        table.add_row("floor-row-0000001", "complete")
        if "--exit-when-painted" in sys.argv:  # --instructions: stop at the first frame
            self.call_after_refresh(os._exit, 0)

Floor().run()
"""

EXIT_WHEN_PAINTED = """
import os, sys
from agenttui.tui.widgets.runs_table import RunsTable

def exit_when_painted(table, y, draw=RunsTable.render_line):
    if table.items:  # a run's row: stop once the frame that holds it is written
        table.app.call_after_refresh(os._exit, 0)
    return draw(table, y)

RunsTable.render_line = exit_when_painted
from agenttui.cli import entry
entry()
"""
"""``agenttui`` (its arguments after ``-c``), stopped at the frame after its first rows: what
``--instructions`` counts, as the benchmark of the TUI times it (``benchmarks/tui.py``, Paints)."""


@dataclass
class Case:
    """One command to time: to its exit, or (with ``painted``) to the frame holding a match."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    painted: re.Pattern[bytes] | None = None
    """Bytes the terminal receives once the first rows are on screen; None: timed to its exit."""
    floor: bool = False
    peer: bool = False
    against: Case | None = None
    """The same command with this tree's agenttui, when this one runs another checkout's."""
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    peaks_mb: list[float] = field(default_factory=list)
    instructions: int | None = None
    """Instructions to the first rows (``--instructions``), every thread's."""

    def forget(self) -> None:
        self.walls.clear()
        self.cpus.clear()
        self.peaks_mb.clear()


def environment(root: Path, bytecode: Path | None) -> dict[str, str]:
    """The children's: ``root``'s agenttui first on the path, a colour terminal, no Textual
    developer settings; compiled modules kept under ``bytecode`` (None: compiled afresh each time)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "PYTHONDONTWRITEBYTECODE"))}
    env |= {"PYTHONPATH": str(root), "TERM": "xterm-256color", "COLORTERM": "truecolor"}
    if bytecode is None:
        return env | {"PYTHONDONTWRITEBYTECODE": "1"}
    return env | {"PYTHONPYCACHEPREFIX": str(bytecode)}


def to_exit(case: Case, size: tuple[int, int]) -> None:
    """Time ``case`` to its exit, spawned by ``SPAWNER``; its output goes to a file."""
    with tempfile.NamedTemporaryFile() as out:
        spawned = subprocess.run(
            [sys.executable, "-I", "-S", "-c", SPAWNER, out.name, *case.argv], cwd=case.cwd,
            env=case.env | {"COLUMNS": str(size[0]), "LINES": str(size[1])}, capture_output=True, text=True, check=True,
        )  # fmt: skip
        wall, code, cpu, peak_kb = spawned.stdout.split()
        text = Path(out.name).read_bytes()
    if int(code) != 0:
        raise SystemExit(f"{case.name}: exit {code}: {text[-2000:].decode(errors='replace')}")
    case.walls.append(float(wall))
    case.cpus.append(float(cpu))
    case.peaks_mb.append(int(peak_kb) / 1024)


def spawn_in_terminal(
    argv: list[str], size: tuple[int, int], env: dict[str, str], cwd: Path | str | None
) -> tuple[subprocess.Popen[bytes], int]:
    """``argv`` in a new session on a pseudo-terminal of ``size`` (columns, rows): the process
    and the terminal's master end, which the caller reads (a full terminal would block it)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, start_new_session=True)
    os.close(slave)
    return process, master


def to_first_paint(case: Case, size: tuple[int, int]) -> None:
    """Spawn ``case`` in a pseudo-terminal, time it to the first frame that matches, read its CPU
    time and peak RSS at that moment, then quit it."""
    assert case.painted is not None
    started = time.perf_counter()
    process, master = spawn_in_terminal(case.argv, size, case.env, case.cwd)
    seen = b""
    try:
        while not case.painted.search(ESCAPES.sub(b"", seen)):
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                raise SystemExit(f"{case.name}: nothing painted in 30 s; the screen so far: {seen[-2000:]!r}")
            try:
                seen += os.read(master, 1 << 16)
            except OSError as exc:  # the child closed the terminal: it exited before painting
                raise SystemExit(f"{case.name}: exited before painting: {seen[-2000:]!r}") from exc
        case.walls.append(time.perf_counter() - started)
        case.cpus.append(cpu_seconds(process.pid))
        case.peaks_mb.append(peak_rss_mb(process.pid))
        os.write(master, b"q")
        quit_and_drain(process, master)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def instructions_to_first_paint(case: Case, size: tuple[int, int], log: Path) -> None:
    """Count the instructions ``case`` runs up to the frame after its first rows, every thread's,
    under callgrind: the floors and ``agenttui`` (``EXIT_WHEN_PAINTED``) stop there by themselves."""
    python, *rest = case.argv
    argv = [python, *rest, "--exit-when-painted"] if case.floor else [python, "-c", EXIT_WHEN_PAINTED, *rest[2:]]
    valgrind = ["valgrind", f"--log-file={log}", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    process, master = spawn_in_terminal([*valgrind, *argv], size, case.env, case.cwd)
    try:
        quit_and_drain(process, master, wait=900)
    finally:
        os.close(master)
    collected = re.search(r"Collected : (\d+)", log.read_text())
    if collected is None:
        raise SystemExit(f"{case.name}: callgrind counted nothing: {log.read_text()[-2000:]}")
    case.instructions = int(collected.group(1))


def quit_and_drain(process: subprocess.Popen[bytes], master: int, wait: float = 10) -> None:
    """Read what the app still writes (a full terminal would block it) until it exits; after
    ``wait`` seconds, SIGTERM, then SIGKILL."""
    deadline = time.monotonic() + wait
    while process.poll() is None and time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                os.read(master, 1 << 16)
            except OSError:
                break
    for stop in (signal.SIGTERM, signal.SIGKILL):
        if process.poll() is None:
            process.send_signal(stop)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                continue


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process so far (in clock ticks, 10 ms on Linux)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime: fields 14 and 15


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024  # kB


def run_ids_pattern(store: Path) -> re.Pattern[bytes]:
    """The first run ids of the store as the runs list shows them: it lists them in byte order and
    clips a long id (a UUID) to its column, cutting it in the middle (``0002b60c-cd…fb97ca296ec``
    at 120 columns, its cost column beside it), so the first 8 characters of the first 200: what
    any clip leaves."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as conn:
        ids = [row[0] for row in conn.execute("SELECT DISTINCT run_id FROM bide_steps ORDER BY run_id LIMIT 200")]
    return re.compile(b"|".join(re.escape(i[:8].encode()) for i in ids))


#: The peers: (name, the venv's executable, what its first useful screen shows).
PEERS = [
    ("toolong", "tl", rb"peer-log-line-00099"),
    ("posting", "posting", rb"peer-request-0001"),
    ("harlequin", "harlequin", rb"peer db"),
]


def peer_cases(peers_dir: Path, work: Path) -> list[Case]:
    """A case for each peer found (on ``PATH`` or in ``peers_dir/<name>``), over data of its own
    in ``work``, with a home and XDG directories of its own."""
    home = work / "peer-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEXTUAL", "PYTHON", "XDG_"))}
    env |= {"TERM": "xterm-256color", "COLORTERM": "truecolor", "HOME": str(home)}
    env |= {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "DATA", "CACHE", "STATE")}
    cases = []
    for name, command, painted in PEERS:
        venv = peers_dir / name / "bin" / command
        executable = str(venv) if venv.exists() else shutil.which(command)
        if executable is None:
            continue
        argv = [executable, *peer_arguments(name, Path(executable).parent, work)]
        cases.append(Case(f"peer: {name}", argv, env, work, re.compile(painted), peer=True))
    return cases


def peer_arguments(name: str, bin_dir: Path, work: Path) -> list[str]:
    """The data a peer opens, written into ``work``: a log, a collection, a database."""
    if name == "toolong":
        log = work / "app.log"
        with log.open("w") as out:
            for n in range(10_000):
                out.write(
                    f"2026-12-02T07:{n // 600 % 60:02d}:{n // 10 % 60:02d} INFO peer-log-line-{n:07d} handled in {n % 900} ms\n"
                )
        return [str(log)]
    if name == "posting":
        collection = work / "collection"
        collection.mkdir(exist_ok=True)
        request = "name: peer-request-0001\nmethod: GET\nurl: http://127.0.0.1:9/orders\n"
        (collection / "peer-request.posting.yaml").write_text(request)
        return ["--collection", str(collection)]
    database = work / "peer.duckdb"
    if not database.exists():  # with the peer's own duckdb
        script = f"import duckdb; duckdb.connect({str(database)!r}).execute('CREATE TABLE peer_table (id INTEGER)')"
        subprocess.run([str(bin_dir / "python"), "-c", script], check=True)
    return [str(database)]


def checked_interpreter(root: Path, env: dict[str, str], cwd: Path) -> None:
    """The children must import ``root``'s agenttui, not another install of it."""
    found = subprocess.run(
        [sys.executable, "-c", "import agenttui; print(agenttui.__file__)"],
        cwd=cwd, env=env, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if not Path(found).is_relative_to(root):
        raise SystemExit(f"the children would import {found}, not {root}'s agenttui")


def report(
    cases: list[Case],
    repeats: int,
    size: tuple[int, int],
    loads: list[tuple[float, ...]],
    judged: bool = True,
    peers_left_out: bool = False,
) -> str:
    from tui import table  # the other benchmarks' Markdown table (benchmarks/ is on sys.path)

    floor = next(c for c in cases if c.floor and c.painted is not None)
    floor_median = statistics.median(floor.walls)
    rows = []
    for case in cases:
        median = statistics.median(case.walls)
        versus = ""
        if case.painted is not None and case is not floor:
            versus = f"{median / floor_median:.2f}x, +{(median - floor_median) * 1000:.0f} ms"
        walls, until = case.walls, "first rows" if case.painted else "exit"
        cpu, peak = ms(statistics.median(case.cpus)), f"{max(case.peaks_mb):.0f} MB"
        rows.append([case.name, until, ms(median), ms(min(walls)), ms(max(walls)), cpu, peak, versus])
    headers = [
        "process",
        "until",
        "median",
        "min",
        "max",
        "CPU",
        "peak RSS",
        f"vs {floor.name.removeprefix('floor: ')}",
    ]
    lines = [
        f"Start-up, {repeats} runs of each, rounds shuffled; terminal {size[0]}x{size[1]}; {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}; load average {' -> '.join(f'{load[0]:.1f}' for load in loads)}",
        "",
        table(headers, rows),
        "",
    ]
    for case in cases:
        median = statistics.median(case.walls)
        if case.against is not None:
            ours = statistics.median(case.against.walls)
            lines.append(f"{case.against.name} / {case.name}: {ours / median:.2f} ({ms(ours)} / {ms(median)})")
        elif case.painted is not None and not case.floor and not case.peer:
            over = median - floor_median
            met = ("met" if over <= TARGET_OVER_FLOOR_SECONDS else "MISSED") if judged else "smoke: not judged"
            lines.append(
                f"{case.name}: first rows {over * 1000:+.0f} ms after the bare app's first paint ({ms(median)} - "
                f"{ms(floor_median)}, medians), target ≤ +{TARGET_OVER_FLOOR_SECONDS * 1000:.0f} ms: {met}"
            )
    peers = [case for case in cases if case.peer]
    ours = [case for case in cases if case.painted is not None and not (case.floor or case.peer or case.against)]
    if peers and ours:
        slowest = max(ours, key=lambda case: statistics.median(case.walls))
        fastest_peer = min(peers, key=lambda case: statistics.median(case.walls))
        ahead = statistics.median(slowest.walls) < statistics.median(fastest_peer.walls)
        lines.append(
            f"slowest agenttui case ({slowest.name}, {ms(statistics.median(slowest.walls))}) against the fastest peer "
            f"({fastest_peer.name}, {ms(statistics.median(fastest_peer.walls))}): {'faster: met' if ahead else 'not faster: MISSED'}"
        )
    elif peers_left_out:
        lines.append("peers left out (--no-peers; --smoke leaves them out too)")
    elif not peers:
        lines.append("no peer installed (Toolong, Posting, Harlequin): see --help")
    counted = [case for case in cases if case.instructions is not None]
    if counted:
        floor_count = floor.instructions or 1
        lines += ["", "Instructions to the first rows (valgrind --tool=callgrind, every thread), one run each:", ""]
        rows = [[c.name, f"{c.instructions / 1e6:,.0f} M", f"{c.instructions / floor_count:.2f}x"] for c in counted]
        lines.append(table(["process", "instructions", f"vs {floor.name.removeprefix('floor: ')}"], rows))
    return "\n".join(lines)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="\n\n".join(__doc__.split("\n\n")[2:4]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the large stores (benchmarks/tui.py's)")
    parser.add_argument("--cache", default="/tmp/agenttui-bench-cache", help="where the large stores are cached")
    parser.add_argument("--size", default="120x40", help="the terminal, COLUMNSxROWS")
    parser.add_argument("--against", type=Path, help="another checkout, whose TUI is timed too")
    parser.add_argument(
        "--instructions", action="store_true", help="also count each TUI's instructions to its first rows (valgrind)"
    )
    parser.add_argument("--json", action="store_true", help="print every figure as JSON after the table")
    parser.add_argument(
        "--peers", type=Path, default=Path("/tmp/agenttui-peers"), help="where the peers' virtual environments are"
    )
    parser.add_argument("--no-peers", action="store_true", help="leave the peers out")
    parser.add_argument("--seed", type=int, default=29, help="seeds each round's shuffled order")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"every case once, no warm-up, the large stores at {SMOKE_RUNS} runs and the demo's long run at 50 "
        "turns, built (with the status index's cache) in a fresh temporary directory, no peers: seconds",
    )
    args = parser.parse_args()
    if args.smoke:
        args.repeats, args.runs, args.no_peers = 1, SMOKE_RUNS, True
        with tempfile.TemporaryDirectory(prefix="agenttui-startup-smoke-") as temporary:
            args.cache = str(Path(temporary) / "stores")
            os.environ["XDG_CACHE_HOME"] = str(Path(temporary) / "xdg-cache")  # the children's, by environment()
            measure(args)
    else:
        measure(args)


def measure(args: argparse.Namespace) -> None:
    columns, rows = (int(n) for n in args.size.split("x"))
    size = (columns, rows)
    from shapes import LONGEST_RECORDS, SMOKE_LONGEST, production_store
    from tui import runs_store

    longest = SMOKE_LONGEST if args.smoke else LONGEST_RECORDS
    uniform = runs_store(Path(args.cache), args.runs)
    production = production_store(Path(args.cache), args.runs, longest=longest)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="agenttui-startup-") as temporary:
        work = Path(temporary)
        here = work / "here"  # the children's working directory: empty
        here.mkdir()
        env, uncompiled = environment(ROOT, work / "bytecode"), environment(ROOT, None)
        checked_interpreter(ROOT, env, here)
        demo = work / "demo.db"
        shorter = ["--bulk-turns", "50"] if args.smoke else []  # its long run: 2,000 turns otherwise
        subprocess.run([python, "-m", "agenttui", "demo", "--path", str(demo), "--no-tui", *shorter], cwd=here, env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        agenttui = [python, "-m", "agenttui"]
        floor_row = re.compile(b"floor-row")
        demo_rows, uniform_rows, production_rows = (run_ids_pattern(store) for store in (demo, uniform, production))
        imports = "import agenttui.cli, agenttui.tui.app"
        static, datatable = [python, "-c", BARE_STATIC], [python, "-c", BARE_DATATABLE]
        cases = [
            Case("python -c pass", [python, "-c", "pass"], env, here, floor=True),
            Case("floor: bare Textual app, one Static", static, env, here, floor_row, floor=True),
            Case("floor: bare Textual app, a DataTable", datatable, env, here, floor_row, floor=True),
            Case("import textual.app", [python, "-c", "import textual.app"], env, here, floor=True),
            Case("import agenttui.cli, agenttui.tui.app", [python, "-c", imports], env, here),
            Case("agenttui DEMO (17 runs)", [*agenttui, str(demo)], env, here, demo_rows),
            Case(f"agenttui UNIFORM ({args.runs:,} runs)", [*agenttui, str(uniform)], env, here, uniform_rows),
            Case(f"agenttui PRODUCTION ({args.runs:,} runs)", [*agenttui, str(production)], env, here, production_rows),
            Case("agenttui DEMO, no bytecode cache", [*agenttui, str(demo)], uncompiled, here, demo_rows),
            Case("agenttui --help", [*agenttui, "--help"], env, here),
            Case("agenttui runs DEMO --json", [*agenttui, "runs", str(demo), "--json"], env, here),
        ]  # fmt: skip
        if not args.no_peers:
            peers_work = work / "peers"
            peers_work.mkdir()
            cases += peer_cases(args.peers, peers_work)
        if args.against is not None:
            against = args.against.resolve()
            other = environment(against, work / "bytecode-against")
            checked_interpreter(against, other, here)
            for ours in [c for c in cases if c.painted is not None and c.name.startswith("agenttui") and c.env is env]:
                name = ours.name.replace("agenttui", f"agenttui of {against.name}", 1)
                cases.append(Case(name, ours.argv, other, here, ours.painted, against=ours))
        loads = [os.getloadavg()]
        shuffled = random.Random(args.seed)
        warm_up = 0 if args.smoke else 1
        for round in range(args.repeats + warm_up):
            for case in shuffled.sample(cases, len(cases)):
                if case.painted is None:
                    to_exit(case, size)
                else:
                    to_first_paint(case, size)
                if round < warm_up:  # a warm-up: the bytecode cache filled, the files in the page cache
                    case.forget()
        loads.append(os.getloadavg())
        if args.instructions:
            for case in cases:
                if case.painted is not None and case.env is not uncompiled and not case.peer:
                    instructions_to_first_paint(case, size, work / "callgrind.log")
    print(report(cases, args.repeats, size, loads, judged=not args.smoke, peers_left_out=args.no_peers))
    if args.json:
        figures = {c.name: {"wall_s": c.walls, "cpu_s": c.cpus, "peak_rss_mb": c.peaks_mb} for c in cases}
        for case in cases:
            if case.instructions is not None:
                figures[case.name]["instructions"] = case.instructions
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
