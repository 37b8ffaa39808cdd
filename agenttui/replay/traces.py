"""A replay as a trace (``agenttui export --otel/--otlp --replay``): a replay of each run, offline,
exported as a trace of its own beside the recording's (``runs.telemetry``: its ``Replayer``)."""

from __future__ import annotations

from dataclasses import dataclass

from agenttui.runs.statuses.status import status_of
from agenttui.runs.telemetry.export import TraceOptions, redactor_of
from agenttui.runs.telemetry.spans import ReplayOf, Span, TracedRun, spans_of_tree
from agenttui.stores.base import Store


@dataclass(frozen=True, slots=True)
class ReplayTraces:
    """Makes a replay's trace with ``agent`` (``module:factory``; None: the recorded one)."""

    agent: str | None = None

    async def __call__(self, store: Store, run_id: str, options: TraceOptions) -> list[Span]:
        """A replay of ``run_id`` (the recorded model's outputs, side effects served from the
        recording) as a trace of its own: its verdict on its span, linked to the recording's."""
        from agenttui.agent.factory import load_factory
        from agenttui.replay.session import replay_verdict

        setup = load_factory(self.agent)(run_id) if self.agent else None
        session, verdict = await replay_verdict(store, run_id, setup)
        redactor = redactor_of(options.redact)
        records = [redactor.redact_record(r) if redactor else r for r in await session.replayed()]
        of = ReplayOf(verdict.kind.value, verdict.reason, self.agent or "recorded",
                      frozenset(session.served) if setup is not None else None)  # fmt: skip
        traced = TracedRun(run_id, records, status_of(run_id, records, forks=False), replay=of)
        return spans_of_tree([traced], content=options.content, anchor_ns=options.anchor_ns)
