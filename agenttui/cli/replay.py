"""``agenttui replay``: re-drive a run offline against its recording and judge it."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from agenttui.cli.app import agent_option, fail, main, run_async, with_store
from agenttui.journal.inert import printable, safe_json

if TYPE_CHECKING:
    from agenttui.agent.factory import AgentSetup


@main.command("replay")
@click.argument("store")
@click.argument("run_id")
@agent_option
@click.option("--live-tool", "live_tools", multiple=True, metavar="TOOL",
              help="With --agent: run this tool for real, side effects and all (repeatable; asks first).")  # fmt: skip
@click.option("--yes", is_flag=True, help="With --live-tool: do not ask (for scripts that mean it).")
@click.option("--until", "until", multiple=True, metavar="BREAKPOINT",
              help="Stop at a breakpoint (repeatable): tool:NAME, call:NAME K=V..., kind:KIND, divergence, tokens>=N.")  # fmt: skip
@click.option("--input", "given_input", metavar="TEXT",
              help="The run's input, the user's message as text, for a journal written before v0.8 (it records none).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="The verdict, and the divergence with both records, as JSON.")
@run_async
async def replay_command(
    store: str, run_id: str, agent_spec: str | None, live_tools: tuple[str, ...], yes: bool, until: tuple[str, ...],
    given_input: str | None, as_json: bool,
) -> None:  # fmt: skip
    """Replay a run offline against its recording and judge it.

    With --agent your tools run, but those not declared read-only are served from the
    recording: a replay fires no side effect unless --live-tool names the tool.

    \b
    exit 0: it matches the recording, to its end or up to where the recording stops
    exit 3: it diverged (the first divergence is shown, both sides in full)
    exit 2: refused (not a run the agent loop re-drives: a flow, a session journal, ...)

    With --until the replay stops after the first turn that meets a breakpoint (see
    `agenttui fork --help` for the grammar); it says which, with the verdict so far.

    A journal written before v0.8 (no run:start) does not record the run's input: give it with
    --input, the user's message as text, as the run was started with it. Without it such a run
    is refused; a run that records its input refuses --input.
    """
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
            click.echo(f"not compared: {', '.join(digests)} (the SDK's digests of its tool registry and prompt)")
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
