"""The command palette: every action of every screen, and opening any run the list knows, by id."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from importlib import import_module
from typing import TYPE_CHECKING, Any, cast

from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Matcher, Provider
from textual.content import Content

from agenttui.tui.host import TuiHost, host_of
from agenttui.tui.keymap import key_of, keys_bound

if TYPE_CHECKING:
    from textual.screen import Screen


#: Palette titles of bound actions, "category: Action", by binding id.
TITLES: dict[str, str] = {
    "app.quit": "app: Quit",
    "app.help": "app: Keys and help",
    "app.theme": "app: Next theme",
    "runs.filter": "runs: Filter",
    "runs.status-filter": "runs: Cycle status filter",
    "runs.open-view": "runs: Open a saved view (the config file's)…",
    "runs.save-view": "runs: Save this view (filter, order, columns) in the config file…",
    "runs.switch-store": "runs: Switch to another store the config file names…",
    "runs.reload": "runs: Reload",
    "runs.copy": "runs: Copy the selected run id",
    "run.back": "run: Back to runs",
    "run.follow": "run: Toggle follow newest record",
    "run.inspector": "view: Inspector",
    "run.conversation": "view: State at step (time travel)",
    "run.toggle-panes": "view: Toggle side panes",
    "run.copy": "run: Copy the record's name (its value, from the inspector)",
    "list.first": "journal: First record",
    "list.last": "journal: Last record",
    "list.choose": "run: Open",
    "run.events": "view: Events",
    "run.flowchart": "view: Flowchart",
    "run.cost": "view: Cost, turn by turn (context, waste)",
    "run.replay": "run: Replay (recorded tools)",
    "run.replay-agent": "run: Replay with your agent (side effects served from the recording)",
    "run.replay-live": "run: Replay with your agent, side effects live…",
    "run.operate": "action: Act on this run…",
    "run.approve": "action: Approve the pending call",
    "run.deny": "action: Deny the pending call",
    "runs.operate": "action: Act on the selected run, or on every marked run…",
    "runs.approve": "action: Approve the selected run's pending call (every marked run's, when marked)",
    "runs.deny": "action: Deny the selected run's pending call (every marked run's, when marked)",
    "runs.mark": "runs: Mark or unmark the selected run",
    "runs.mark-shown": "runs: Mark every run shown",
    "runs.clear-marks": "runs: Clear the marks",
    "runs.diff": "runs: Diff the two newest marked runs",
    "runs.recover-all": "action: Recover every unfinished run",
    "runs.export": "action: Export runs to a bundle file…",
    "runs.sort-cost": "runs: Sort by cost, the largest first (again: the listing's order)",
    "run.export": "action: Export this run to a bundle file…",
    "runs.fold": "runs: Fold sub-runs",
    "runs.unfold": "runs: Unfold sub-runs",
    "replay.next": "replay: Next turn",
    "replay.end": "replay: Run to the end",
    "replay.previous": "replay: Back one turn",
    "replay.jump": "replay: Jump to turn…",
    "replay.events": "view: Events",
    "replay.diff": "view: Diff",
    "replay.flowchart": "view: Flowchart",
    "replay.back": "replay: Leave",
    "replay.copy": "replay: Copy the step name",
    "replay.fork": "replay: Fork here: edit this model turn or tool result, replay on (what-if)…",
    "replay.until": "replay: Set a breakpoint for run to the end…",
    "replay.save-fork": "replay: Save the fork…",
    "replay.compare": "replay: Compare the fork with the recording",
    "diff.back": "diff: Leave",
    "diff.copy": "diff: Copy the step name",
    "runs.compare": "runs: Compare the marked run with this one (side by side, by turn)",
    "compare.back": "compare: Leave",
    "compare.next": "compare: Next difference",
    "compare.previous": "compare: Previous difference",
    "compare.differing": "compare: Differing turns only / every turn",
    "compare.layout": "compare: Two columns / one, interleaved",
    "compare.copy": "compare: Copy the step name",
    "flow.fold": "flowchart: Fold or unfold",
    "inspector.raw": "view: Raw bytes / show all",
    "run.search": "journal: Search names and content…",
    "run.next-hit": "journal: Next search hit",
    "run.previous-hit": "journal: Previous search hit",
    "run.jump": "journal: Go to record number…",
    "run.expand": "view: Expand long values in place",
}

#: The screens whose actions the palette offers from any other: the screen opens first, on the
#: selected run (the runs list) or the run shown (a run, a replay). Imported when the palette
#: asks, not at start-up (see ``AgentTuiApp.open_run``).
SCREENS: dict[str, tuple[str, str]] = {
    "runs": ("agenttui.tui.screens.runs", "RunsScreen"),
    "run": ("agenttui.tui.screens.run", "RunScreen"),
    "replay": ("agenttui.tui.screens.replay", "ReplayScreen"),
}
#: Bindings that mean something only on their own screen: leaving it, or closing a prompt on it.
LOCAL_ONLY = frozenset(
    {"run.back", "replay.back", "diff.back", "compare.back", "runs.filter-done", "runs.clear-filter", "replay.jump-done",
     "replay.jump-cancel"}
)  # fmt: skip
#: Actions whose screens need a run: offered without one, they say so instead.
NEEDS_RUN = frozenset({"run", "replay"})
#: How many runs the palette offers to open by name when nothing is typed, and how many of those
#: the typed text matches it scores (the runs list has the rest; typing narrows them).
MAX_RUNS = 2000
OPEN_BY_ID = "run: Open run by id "
"""The title of the command that opens whatever id was typed, known to the list or not."""

#: Typed text that looks like a run id rather than an action's name (a digit, a dash, a sub-run's
#: ">"...): the palette offers to open it as typed. Text after "open " always is offered.
LIKE_AN_ID = re.compile(r"[\d\-_>@/.]")

Command = tuple[str, Callable[[], object], str]


def kind_of(screen: Screen[Any]) -> str | None:
    """Which of ``SCREENS`` (or "diff", "compare") ``screen`` is, by class name: no screen module is imported."""
    return {
        "RunsScreen": "runs",
        "RunScreen": "run",
        "ReplayScreen": "replay",
        "DiffScreen": "diff",
        "CompareScreen": "compare",
    }.get(type(screen).__name__)


def run_of(screen: Screen[Any]) -> str | None:
    """The run a screen's actions would act on: the one selected in the list, or the one shown."""
    selected = getattr(screen, "selected_run", None)
    if selected is not None:
        return cast("str | None", selected())
    return cast("str | None", getattr(screen, "run_id", None))


def known_runs(app: App[Any]) -> Iterable[str]:
    """Every run the runs list knows (it is at the bottom of the stack, whatever is on top)."""
    for screen in app.screen_stack:
        known = getattr(screen, "known_run_ids", None)
        if known is not None:
            return cast("Iterable[str]", known())
    return ()


class AgentTuiCommands(Provider):
    """Commands built from what the screens show now."""

    @property
    def tui(self) -> TuiHost:
        return host_of(self.app)

    def _commands(self) -> Iterator[Command]:
        screen = self.screen
        seen: set[str] = set()
        actions: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            actions.add(binding.action)
            title = TITLES.get(binding.id or "")
            if title is None or title in seen:
                continue
            seen.add(title)
            key = screen.app.get_key_display(binding)  # as bound: the config file's [keys] included
            yield title, partial(screen.app.run_action, binding.action, active.node), f"key: {key}"
        if "copy_run_id" not in actions and hasattr(screen, "action_copy_run_id"):
            yield (
                "run: Copy the run id",
                partial(screen.app.run_action, "copy_run_id", screen),
                f"{key_of(screen, 'runs.copy', 'screens.runs:RunsScreen')} copies it on the runs list",
            )
        here = kind_of(screen)
        if here is None:
            return  # a dialog or the help: its own keys only
        run_id = run_of(screen)
        for kind, (module, name) in SCREENS.items():
            if kind == here:
                continue
            for binding in getattr(import_module(module), name).BINDINGS:
                title = TITLES.get(binding.id or "")
                if title is None or title in seen or binding.id in LOCAL_ONLY or binding.action in actions:
                    continue
                seen.add(title)
                if kind in NEEDS_RUN and run_id is None:
                    yield title, partial(self._needs_a_run, title), "select a run first"
                    continue
                where = "the runs list" if kind == "runs" else f"this run's {'journal' if kind == 'run' else kind}"
                key = keys_bound(screen.app, binding)[0]
                yield (
                    title,
                    partial(self.tui.act_on_screen, kind, binding.action, run_id),
                    f"opens {where} first (key there: {key})",
                )

    def _needs_a_run(self, title: str) -> None:
        self.app.notify(f"{title.partition(': ')[2]}: select a run first (on the runs list)", severity="warning")

    def _open(self, run_id: str) -> Command:
        return f"run: Open {run_id}", partial(self.tui.open_run, run_id), "open this run's journal"

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(Content(title), callback, text=title, help=help_text)
        runs = getattr(self.screen, "visible_run_ids", None)
        for count, run_id in enumerate(runs() if runs is not None else ()):
            if count >= MAX_RUNS:
                break
            title, callback, help_text = self._open(run_id)
            yield DiscoveryHit(Content(title), callback, text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            if (score := matcher.match(title)) > 0:
                yield Hit(score, _highlight(matcher, title), callback, text=title, help=help_text)
        asked = re.match(r"\s*(run:\s*)?open\s", query, flags=re.IGNORECASE)
        typed = query[asked.end() :].strip() if asked else query.strip()
        known = False
        for run_id in self._runs_like(query):
            title, callback, help_text = self._open(run_id)
            known = known or run_id == typed
            if (score := matcher.match(title)) > 0:
                yield Hit(score, _highlight(matcher, title), callback, text=title, help=help_text)
        if typed and not known and (asked or LIKE_AN_ID.search(typed)):
            # An id the list does not know (yet): a run being written, or one the list has not read.
            title = OPEN_BY_ID + typed
            yield Hit(0.01, Content(title), partial(self.tui.open_run, typed), text=title,
                      help="opens the journal of this id, as typed")  # fmt: skip

    def _runs_like(self, query: str) -> Iterator[str]:
        """Known runs whose "run: Open <id>" holds the typed characters in order (which every
        fuzzy match does), at most ``MAX_RUNS``: the matcher scores only those. A plain scan, as
        the matcher's own is far slower: 100,000 ids take about 50 ms."""
        letters = [re.escape(char) for char in query if not char.isspace()]
        if not letters:
            return
        pattern = re.compile(".*?".join(letters), re.IGNORECASE)
        found = 0
        for run_id in known_runs(self.app):
            if pattern.search("run: Open " + run_id):
                yield run_id
                found += 1
                if found >= MAX_RUNS:
                    return


def _highlight(matcher: Matcher, title: str) -> Content:
    """The title with the matched characters styled. Titles hold run ids, which are untrusted:
    they are plain text, never parsed as markup (``Matcher.highlight`` would parse them)."""
    content = Content(title)
    _, offsets = matcher.fuzzy_search.match(matcher.query, title)
    for offset in offsets:
        if not title[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
