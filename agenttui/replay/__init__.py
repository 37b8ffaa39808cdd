"""Journal projections: replay, replay events, run status, recovery and leases."""

from agenttui.replay.events import events_of, replay_events
from agenttui.replay.lease import LeaseHeld, LeaseLost, lease
from agenttui.replay.model import NoRecordedOutput, ReplayModel, replay
from agenttui.replay.recover import RecoverReport, recover, recover_runs
from agenttui.replay.status import RunState, RunStatus, is_complete, run_status, status_of
from agenttui.replay.verdict import Verdict, VerdictKind

__all__ = [
    "LeaseHeld", "LeaseLost", "NoRecordedOutput", "RecoverReport", "ReplayModel", "RunState",
    "RunStatus", "Verdict", "VerdictKind", "events_of", "is_complete", "lease", "recover", "recover_runs", "replay", "replay_events",
    "run_status", "status_of",
]  # fmt: skip
