"""``agenttui replay``: re-drive a run offline against its recording and judge it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from agenttui.cli.app import agent_option, fail, main, run_async, takes_view, with_store
from agenttui.journal.inert import printable, safe_json

if TYPE_CHECKING:
    from agenttui.agent.factory import AgentSetup


@main.command("replay")
@click.argument("words", nargs=-1, required=True, metavar="STORE RUN_ID | SOURCE... --all|--where EXPR")
@agent_option
@click.option("--all", "every_run", is_flag=True, help="Every run of every SOURCE: a regression suite (see below).")
@click.option(
    "--where",
    "where_text",
    metavar="EXPR",
    help="The runs of every SOURCE this filter selects (docs/guide/filters.md).",
)
@takes_view(store=lambda params: params["words"][0])
@click.option("--junit", "junit", metavar="FILE", help="With --all or --where: the suite as JUnit XML, for CI to show.")
@click.option("--jobs", type=click.IntRange(1, 64), default=4, show_default=True,
              help="With --all or --where: runs replayed at a time.")  # fmt: skip
@click.option("--live-tool", "live_tools", multiple=True, metavar="TOOL",
              help="With --agent: run this tool for real, side effects and all (repeatable; asks first).")  # fmt: skip
@click.option("--yes", is_flag=True, help="With --live-tool: do not ask (for scripts that mean it).")
@click.option("--until", "until", multiple=True, metavar="BREAKPOINT",
              help="Stop at a breakpoint (repeatable): tool:NAME, call:NAME K=V..., kind:KIND, divergence, tokens>=N.")  # fmt: skip
@click.option("--input", "given_input", metavar="TEXT",
              help="The run's input, the user's message as text, for a journal written before v0.8 (it records none).")  # fmt: skip
@click.option("--strict", is_flag=True,
              help="Fail when your prompt or tool list is not the recording's (reported and tolerated without).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="The verdict, and the divergence with both records, as JSON.")
@run_async
async def replay_command(
    words: tuple[str, ...], agent_spec: str | None, every_run: bool, where_text: str | None, junit: str | None,
    jobs: int, live_tools: tuple[str, ...], yes: bool, until: tuple[str, ...], given_input: str | None,
    strict: bool, as_json: bool,
) -> None:  # fmt: skip
    """Replay a run offline against its recording and judge it; or, with --all or --where, every
    run (or a filter's) of stores, bundles and folders of bundles: a regression suite of recorded
    runs against your agent's code (--agent).

    With --agent your tools run, but those not declared read-only are served from the
    recording: a replay fires no side effect unless --live-tool names the tool.

    \b
    exit 0: it matches the recording, to its end or up to where the recording stops
    exit 3: it diverged (the first divergence is shown, both sides in full)
    exit 2: refused (not a run the agent loop re-drives: a flow, a session journal, ...)

    With --agent, a prompt or tool list that is not the recording's (their digests on each
    model turn differ) is tolerated and reported: the recorded outputs were served to a request
    the model never saw. --strict fails on it (exit 3).

    With --until the replay stops after the first turn that meets a breakpoint (see
    `agenttui fork --help` for the grammar); it says which, with the verdict so far.

    A journal written before v0.8 (no run:start) does not record the run's input: give it with
    --input, the user's message as text, as the run was started with it. Without it such a run
    is refused; a run that records its input refuses --input.

    \b
    A suite (--all, --where): a line a run and a summary; --json one verdict a line;
    exit 3 if any run diverged, else 2 if any was refused, else 0.
      agenttui replay tests/runs/ --all --agent myagent:factory --junit replays.xml
    """
    if every_run or where_text is not None:
        await _replay_suite(words, agent_spec, where_text, junit, jobs, strict, as_json,
                            refused={"--live-tool": bool(live_tools), "--yes": yes, "--until": bool(until),
                                     "--input": given_input is not None})  # fmt: skip
        return
    if junit is not None:
        fail("--junit goes with --all or --where: it reports a suite")
    if len(words) != 2:
        fail("give STORE RUN_ID, or sources with --all or --where EXPR to replay many runs")
    store, run_id = words
    from agenttui.agent.factory import load_factory
    from agenttui.render.diff import payload_diff
    from agenttui.replay.breakpoints import parse_breakpoints
    from agenttui.replay.reports import verdict_json
    from agenttui.replay.session import replay_verdict

    breakpoints = parse_breakpoints(until)
    setup = load_factory(agent_spec)(run_id) if agent_spec else None
    if live_tools:
        _confirm_live_tools(setup, live_tools, yes)
    session, verdict = await with_store(
        store,
        lambda opened: replay_verdict(
            opened, run_id, setup, live_tools=live_tools, until=breakpoints, input=given_input
        ),
    )
    if strict:
        verdict = verdict.strictly()
    progress = session.progress
    hit = progress.breakpoint if not session.done else None
    if as_json:
        found = verdict_json(run_id, session.mode, progress.turn, progress.recorded_turns, verdict)
        found["breakpoint"] = (
            None if hit is None else {"breakpoint": hit.breakpoint.text, "turn": hit.turn, "why": hit.why}
        )
        click.echo(safe_json(found))
    else:
        click.echo(f"replayed {progress.turn} of {progress.recorded_turns} turns with {session.mode}")
        if verdict.input_given:
            click.echo("input from --input, the journal has none (written before v0.8)")
        if hit is not None:
            click.echo(printable(hit.summary()))
        click.echo(printable(verdict.summary()))
        if digests := [m for m in verdict.not_compared if m not in verdict.redacted]:
            click.echo(f"not compared: {', '.join(digests)} (digests of the prompt and tool list the model was sent:"
                       f" {'recorded tools cannot make them' if setup is None else 'the recording holds none'})")  # fmt: skip
        if verdict.redacted:
            click.echo(
                f"not compared: {printable(', '.join(verdict.redacted))} (redacted when the bundle was exported)"
            )
        if verdict.served:
            click.echo(f"served from the recording, not run (not read-only): {', '.join(verdict.served)}")
        if verdict.live:
            click.echo(f"ran for real, side effects and all: {', '.join(verdict.live)}")
        if verdict.divergence is not None:
            for line in payload_diff(verdict.divergence.recorded, verdict.divergence.replayed, context=1_000):
                click.echo("  " + printable(line))
    sys.exit(verdict.exit_code)


def _confirm_live_tools(setup: AgentSetup | None, names: tuple[str, ...], yes: bool) -> None:
    """Ask before a replay runs side effects for real, naming each tool; refuse what cannot be."""
    if setup is None:
        fail("--live-tool needs --agent: recorded tools never run anything")
    side_effects = {t.name for t in setup.tools if not t.safety.read_only}
    if unknown := [n for n in names if n not in {t.name for t in setup.tools}]:
        fail(f"--live-tool: your agent has no tool {', '.join(map(repr, unknown))}")
    if harmless := [n for n in names if n not in side_effects]:
        fail(f"--live-tool: {', '.join(harmless)} is read-only and runs anyway")
    if yes:
        return
    if not sys.stdin.isatty():
        fail("--live-tool runs side effects for real: confirm at a terminal, or add --yes")
    question = (
        "This replay will run these tools for real, with their side effects:\n"
        + "".join(f"  {n}\n" for n in names)
        + "Go on?"
    )
    if not click.confirm(question, default=False, err=True):
        fail("nothing replayed")


async def _replay_suite(
    sources: tuple[str, ...], agent_spec: str | None, where_text: str | None, junit: str | None, jobs: int,
    strict: bool, as_json: bool, *, refused: dict[str, bool],
) -> None:  # fmt: skip
    """Every selected run of ``sources`` replayed: a line each as it is judged, a summary, JUnit XML."""
    from agenttui.agent.factory import load_factory
    from agenttui.replay.reports import verdict_json
    from agenttui.replay.suite import SuiteTally, junit_xml, replay_suite, sources_of
    from agenttui.runs.selection.where import parse_where

    if given := [option for option, present in refused.items() if present]:
        fail(f"{', '.join(given)}: one run's options, not a suite's")
    where = parse_where(where_text) if where_text is not None else None
    factory = load_factory(agent_spec) if agent_spec else None
    stores = sources_of(sources)  # a missing source is refused before any run is replayed
    target = None
    if junit is not None:
        from agenttui.stores.files import check_replaceable

        target = await check_replaceable(junit, force=True, protect=stores)
    tally, results = SuiteTally(), []
    async for replayed in replay_suite(stores, factory, where=where, at_once=jobs, strict=strict):
        tally.add(replayed)
        results.append(replayed)
        if as_json:
            progress = verdict_json(
                replayed.run_id, replayed.tools, replayed.turns, replayed.recorded_turns, replayed.verdict
            )
            click.echo(safe_json({"source": replayed.source} | progress, indent=None))
        else:
            divergence = replayed.verdict.divergence
            what = f" [{divergence.kind()}]" if divergence is not None else ""
            click.echo(
                printable(f"{_MARKS[replayed.verdict.kind]} {replayed.name}  {replayed.verdict.summary()}{what}")
            )
    if not results:
        what = f"no run of {', '.join(stores)}" + (f" matches {where_text!r}" if where_text else "")
        fail(f"{what}: no run to replay", 1)
    if target is not None:
        from agenttui.stores.files import write_whole

        write_whole(target, junit_xml(results, tally), force=True)
    summary = tally.summary() + (f"; JUnit XML in {junit}" if junit else "")
    click.echo(
        safe_json({"summary": summary, "exit_code": tally.exit_code}, indent=None) if as_json else printable(summary)
    )
    sys.exit(tally.exit_code)


#: A suite's line begins with its verdict at a glance.
_MARKS = {"matches": "✓", "matches-so-far": "✓", "diverged": "✗", "refused": "⊘"}
