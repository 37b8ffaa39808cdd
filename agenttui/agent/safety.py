"""What a tool promises about repeating it (``ToolSafety``): read by a run's status, its start
record and its re-drives without the tools' machinery (``agenttui.agent.tools`` gives it too)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from agenttui.journal.record import ApprovalPolicy, Safety


@dataclass(frozen=True, slots=True)
class ToolSafety:
    """What a tool promises about repeating it, and whether a human must approve each call."""

    read_only: bool = False
    idempotent: bool = False
    idempotency_key: bool = False
    """The tool sends ``ToolContext.idempotency_key`` downstream, which de-duplicates retries."""
    needs_approval: bool = False
    interrupts: bool = False
    """The tool may ask a human a question (``ToolContext.interrupt``); it must be retry-safe."""
    approval_tally: bool = False
    """The gate is m-of-n: its decision is the terminal ``approval-tally:<c>``, not ``approval:<c>``."""

    @property
    def retry_safe(self) -> bool:
        return self.read_only or self.idempotent or self.idempotency_key

    def recorded(self) -> Safety:
        """The ``safety`` member written on this tool's results: always present, as the SDK writes
        it (``{}`` for a tool with side effects)."""
        return Safety(self.read_only, self.idempotent)

    def approval_policy(self) -> ApprovalPolicy | None:
        return ApprovalPolicy(single=True) if self.needs_approval else None

    def at_least(self, floor: ToolSafety | None) -> ToolSafety:
        """This policy, made as strict as ``floor`` (the one a run recorded) where it is looser.

        Whoever drives a run may bring code that loosens a tool (drops its gate, calls it retry-safe
        or read-only): the run's recorded policy still holds. A gate ``floor`` has is kept (this
        policy's m-of-n tally where it has one); a call is retry-safe, or read-only, only where both
        say so. Nothing else changes, so a policy as strict as ``floor`` is returned as it is."""
        if floor is None:
            return self
        gated = self.needs_approval or floor.needs_approval
        retry_safe = self.retry_safe and floor.retry_safe
        read_only = self.read_only and floor.read_only
        if (gated, retry_safe, read_only) == (self.needs_approval, self.retry_safe, self.read_only):
            return self
        return dataclasses.replace(
            self,
            read_only=read_only,
            # Retry-safe by the floor's word only (it recorded read-only or idempotent): idempotent.
            idempotent=retry_safe and (self.idempotent or not self.idempotency_key),
            idempotency_key=retry_safe and self.idempotency_key,
            needs_approval=gated,
            approval_tally=self.approval_tally and self.needs_approval,
        )
