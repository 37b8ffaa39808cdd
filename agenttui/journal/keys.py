"""Step names (journal keys) and run ids of the newest key scheme (format section 3)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

_PLAIN = re.compile(rb"[A-Za-z0-9._-]")
_ALL_PLAIN = re.compile(rb"[A-Za-z0-9._-]*")
_MAX_ENCODED = 96

HEADER = "@journal"
RUN_START = "run:start"
RUN_COMPLETE = "run:complete"
RUN_ABORTED = "run:aborted"
RUN_CANCELLED = "run:cancelled"
RUN_CANCEL_REQUESTED = "run:cancel-requested"

#: The end markers; since v0.10 the first of them in journal order ends the run.
END_MARKERS = (RUN_COMPLETE, RUN_ABORTED, RUN_CANCELLED)

#: Prefixes a user ``Step`` name may not start with.
RESERVED_PREFIXES = (
    "@", "run:", "tool:", "attempt:", "approval:", "approval-tally:", "signal:", "await-timeout:",
    "await-resolved:", "timer:", "interrupt:", "chan:", "chanack:", "turn/", "start/", "from/",
    "audit:", "node:", "switch:", "flow:",
)  # fmt: skip


def encode_id(raw_id: str) -> str:
    """A provider id made safe for a key: ``[A-Za-z0-9._-]`` kept, other bytes ``%XX``.

    An escaped form longer than 96 bytes becomes ``~`` + the SHA-256 hex of the raw id.
    """
    raw = raw_id.encode()
    if _ALL_PLAIN.fullmatch(raw):  # most ids: nothing to escape (a match a byte was 1 µs each)
        escaped = raw_id
    else:
        escaped = "".join(chr(b) if _PLAIN.fullmatch(bytes((b,))) else f"%{b:02X}" for b in raw)
    if len(escaped) > _MAX_ENCODED:
        return "~" + hashlib.sha256(raw).hexdigest()
    return escaped


def llm_key(turn: int) -> str:
    """The n-th model turn, counting model records from 0."""
    return f"@llm/{turn}"


TOOL_PREFIX = "tool:"
_RETRY_ATTEMPT = re.compile(r"attempt:retry:[0-9]+:tool:")


def tool_key(tool_use_id: str) -> str:
    return TOOL_PREFIX + encode_id(tool_use_id)


def attempt_key(tool_use_id: str) -> str:
    """The first attempt marker of a non-retry-safe call."""
    return "attempt:tool:" + encode_id(tool_use_id)


def retry_attempt_key(generation: int, tool_use_id: str) -> str:
    return f"attempt:retry:{generation}:tool:{encode_id(tool_use_id)}"


def is_tool_attempt_key(name: str) -> bool:
    """Whether ``name`` is a tool call's attempt marker, first (``attempt:tool:``) or a retry."""
    return name.startswith("attempt:tool:") or _RETRY_ATTEMPT.match(name) is not None


def step_attempt_key(step_name: str, generation: int = 0) -> str:
    if generation:
        return f"attempt:retry:{generation}:step:{step_name}"
    return "attempt:step:" + step_name


def not_started_key(claim: str, marker_key: str) -> str:
    """Voids the attempt ``marker_key`` whose claim is ``claim``: its effect never fired."""
    return f"attempt:not-started:{claim}:{marker_key}"


def approval_key(tool_use_id: str) -> str:
    """A single approver's decision on a call."""
    return "approval:" + encode_id(tool_use_id)


def approver_decision_key(tool_use_id: str, approver_id: str, approved: bool, alg: str, signature: bytes) -> str:
    """One m-of-n decision; the hash covers (approved byte, 4-byte big-endian len of alg, alg, signature)."""
    digest = hashlib.sha256(bytes((int(approved),)) + len(alg.encode()).to_bytes(4, "big") + alg.encode() + signature)
    return f"approval:{encode_id(tool_use_id)}:{approver_id}:{digest.hexdigest()}"


def approval_tally_key(tool_use_id: str) -> str:
    return "approval-tally:" + encode_id(tool_use_id)


def run_limits_key(amendment: int) -> str:
    return f"run:limits:{amendment}"


def timer_key(name: str) -> str:
    return "timer:" + name


def interrupt_key(name: str) -> str:
    return "interrupt:" + name


def signal_key(name: str) -> str:
    return "signal:" + name


def chan_key(channel: str, key: str) -> str:
    return f"chan:{len(channel.encode())}:{channel}:{key}"


def chanack_key(channel: str, key: str) -> str:
    return f"chanack:{len(channel.encode())}:{channel}:{key}"


def await_timeout_key(name: str) -> str:
    return "await-timeout:" + name


def await_resolved_key(name: str) -> str:
    return "await-resolved:" + name


def spend_key(request_id: str) -> str:
    return "@spend/" + request_id


def spend_late_key(request_id: str) -> str:
    return "@spend-late/" + request_id


def is_reserved(name: str) -> bool:
    """Whether a user ``Step`` may not use ``name``."""
    return name.startswith(RESERVED_PREFIXES)


def first_end_marker(names: Iterable[str]) -> str | None:
    """The run's end: the first end marker in journal order, or None while the run is open."""
    for name in names:
        if name in END_MARKERS:
            return name
    return None


# -- run ids (section 3.3) ---------------------------------------------------------------------


def sub_run_id(parent_run_id: str, call_id: str) -> str:
    """The run id of the sub-agent a tool call starts."""
    return f"{parent_run_id}>{encode_id(call_id)}"


def step_sub_run_id(scope: str, step_name: str) -> str:
    """The run id of a programmatic sub-run started inside ``scope``."""
    return f"{scope}>step:{encode_id(step_name)}"


def is_sub_run(run_id: str) -> bool:
    """A sub-agent or programmatic sub-run: the segment after the last ``>`` does not start with ``@``."""
    _, sep, last = run_id.rpartition(">")
    return bool(sep) and not last.startswith("@")


def is_session_run(run_id: str) -> bool:
    return ">" in run_id and not is_sub_run(run_id)


def is_session_journal(run_id: str) -> bool:
    """A session's own journal (``<id>>@session``), which holds its turns' links, not a loop."""
    return run_id.endswith(">@session")


def parent_run_id(run_id: str) -> str | None:
    """The run that started this sub-run, or None for a root run."""
    parent, sep, _ = run_id.rpartition(">")
    return parent if sep else None


def root_run_id(run_id: str) -> str:
    """The lease/tree root: the part before the first ``>``; a session turn keeps its turn segment."""
    root, sep, rest = run_id.partition(">")
    if sep and rest.startswith(("@turn/", "@event/")):
        return f"{root}>{rest.partition('>')[0]}"
    return root
