"""Replay: the recorded model, replay sessions, replay events and verdicts. Only replays:
what a run is and what a person does to it live in ``agenttui.runs``."""

from agenttui.replay.events import events_of, replay_events
from agenttui.replay.model import NoRecordedOutput, ReplayModel, replay
from agenttui.replay.verdict import Verdict, VerdictKind

__all__ = ["NoRecordedOutput", "ReplayModel", "Verdict", "VerdictKind", "events_of", "replay", "replay_events"]
