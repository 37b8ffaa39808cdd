"""The command palette: every action of the current screen, and the runs it can open."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Matcher, Provider
from textual.content import Content

if TYPE_CHECKING:
    from agenttui.tui.app import AgentTuiApp

#: Palette titles of bound actions, "category: Action", by binding id.
TITLES: dict[str, str] = {
    "app.quit": "app: Quit",
    "app.help": "app: Keys and help",
    "app.theme": "app: Next theme",
    "runs.filter": "runs: Filter",
    "runs.status-filter": "runs: Cycle status filter",
    "runs.reload": "runs: Reload",
    "run.back": "run: Back to runs",
    "run.follow": "run: Toggle follow newest record",
    "run.inspector": "view: Inspector",
    "run.conversation": "view: State at step (time travel)",
    "run.toggle-panes": "view: Toggle side panes",
    "list.first": "journal: First record",
    "list.last": "journal: Last record",
    "list.choose": "run: Open",
    "run.events": "view: Events",
    "run.flowchart": "view: Flowchart",
    "run.replay": "run: Replay (recorded tools)",
    "run.replay-agent": "run: Replay with your agent (side effects served from the recording)",
    "run.replay-live": "run: Replay with your agent, side effects live…",
    "run.operate": "action: Act on this run…",
    "run.approve": "action: Approve the pending call",
    "run.deny": "action: Deny the pending call",
    "runs.operate": "action: Act on the selected run…",
    "runs.approve": "action: Approve the selected run's pending call",
    "runs.deny": "action: Deny the selected run's pending call",
    "runs.mark": "runs: Mark for diff",
    "runs.diff": "runs: Diff the two marked runs",
    "runs.recover-all": "action: Recover every unfinished run",
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
    "diff.back": "diff: Leave",
    "flow.fold": "flowchart: Fold or unfold",
    "inspector.raw": "view: Raw bytes / show all",
    "run.search": "journal: Search names and content…",
    "run.next-hit": "journal: Next search hit",
    "run.previous-hit": "journal: Previous search hit",
    "run.jump": "journal: Go to record number…",
    "run.expand": "view: Expand long values in place",
}

#: How many runs the palette offers to open by name (the runs list has the rest).
MAX_RUNS = 2000


class AgentTuiCommands(Provider):
    """Commands built from what the screen shows now."""

    def _commands(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        screen = self.screen
        seen: set[str] = set()
        for active in screen.active_bindings.values():
            binding = active.binding
            title = TITLES.get(binding.id or "")
            if title is None or title in seen:
                continue
            seen.add(title)
            yield title, partial(screen.app.run_action, binding.action, active.node), binding.description
        runs = getattr(screen, "visible_run_ids", None)
        if runs is not None:
            for count, run_id in enumerate(runs()):
                if count >= MAX_RUNS:
                    break
                yield (
                    f"run: Open {run_id}",
                    partial(cast("AgentTuiApp", self.app).open_run, run_id),
                    "open this run's journal",
                )

    async def discover(self) -> Hits:
        for title, callback, help_text in self._commands():
            yield DiscoveryHit(Content(title), callback, text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, callback, help_text in self._commands():
            if (score := matcher.match(title)) > 0:
                yield Hit(score, _highlight(matcher, title), callback, text=title, help=help_text)


def _highlight(matcher: Matcher, title: str) -> Content:
    """The title with the matched characters styled. Titles hold run ids, which are untrusted:
    they are plain text, never parsed as markup (``Matcher.highlight`` would parse them)."""
    content = Content(title)
    _, offsets = matcher.fuzzy_search.match(matcher.query, title)
    for offset in offsets:
        if not title[offset].isspace():
            content = content.stylize(matcher.match_style, offset, offset + 1)
    return content
