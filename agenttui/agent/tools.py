"""Tools: async Python functions with typed arguments and a declared safety.

A tool's safety decides what happens when a run resumes after a crash: a retry-safe tool
(read-only, idempotent, or declaring an idempotency key) simply runs again; any other tool gets
an attempt marker before it runs, and a marker without a result halts the run (``ResumeHalt``).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Union, get_args, get_origin, get_type_hints

from agenttui.agent.model import ToolSpec
from agenttui.agent.pauses import Interrupted, RunPaused, Sleeping
from agenttui.agent.pauses import interrupt_name as interrupt_name  # where every tool's reader has found it
from agenttui.agent.safety import ToolSafety as ToolSafety  # as above
from agenttui.agent.waker import current_waker
from agenttui.journal.codec import decode_json, go_json
from agenttui.journal.keys import interrupt_key, timer_key
from agenttui.journal.record import Record, StepKind, Usage
from agenttui.journal.timefmt import format_go_time, parse_go_time

if TYPE_CHECKING:
    from agenttui.agent.loop import Agent
    from agenttui.journal.journal import Journal


@dataclass(slots=True)
class ToolContext:
    """What a running tool may ask of its run: identity, clock, durable sleep and interrupts."""

    run_id: str
    tool_use_id: str
    tool_name: str
    args: bytes
    agent: Agent
    """The agent running the call: its model, store and clock serve sub-agents."""

    @property
    def journal(self) -> Journal:
        return self.agent.journal

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.agent.clock

    @property
    def idempotency_key(self) -> str:
        """The same for every retry of this call: derived from the tool's name and arguments."""
        return hashlib.sha256(self.tool_name.encode() + b"\x00" + self.args).hexdigest()[:32]

    def now(self) -> datetime:
        return self.clock()

    async def sleep(self, name: str, duration: timedelta) -> None:
        """Sleep durably: the wake time is journaled once, so a resumed run wakes on time.

        Raises ``Sleeping`` until the wake time has passed; a bound Waker is told of the wake.
        """

        async def wake_time() -> Record:
            wake_at = self.clock() + duration
            return Record(timer_key(name), StepKind.VALUE, result=json.dumps(format_go_time(wake_at)).encode())

        record = await self.journal.do(self.run_id, timer_key(name), wake_time)
        wake_at = parse_go_time(decode_json(record.result))
        if self.clock() < wake_at:
            if (waker := current_waker()) is not None:
                waker.register(self.run_id, wake_at)
            raise Sleeping(self.run_id, name, wake_at)

    async def interrupt(self, name: str, question: str) -> Any:
        """Ask a human; returns the recorded answer, or raises ``Interrupted`` until there is one.

        A tool declared with ``interrupts=True`` asks under ``interrupt_name(ctx.tool_use_id)``,
        so a reader of the journal alone knows which name the answer goes under.
        """
        answer = await self.journal.get(self.run_id, interrupt_key(name))
        if answer is None:
            raise Interrupted(self.run_id, name, question)
        return decode_json(answer.result)


ToolFunction = Callable[..., Awaitable[Any]]

#: The result of a call a human denied, as the SDK writes it (a JSON string, ``is_error``).
DENIED_TEXT = "tool call denied by human"


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a call produced: its value (recorded as JSON), whether it failed, sub-run usage."""

    value: Any
    is_error: bool = False
    usage: Usage | None = None
    raw: bytes | None = None
    """The result's raw JSON, when it must be recorded byte for byte."""
    recorded: Record | None = None
    """A whole recorded outcome, journaled as it stands (a replay's stand-in serves these)."""

    def result_json(self) -> bytes:
        return self.raw if self.raw is not None else encode_result(self.value)


def encode_result(value: Any) -> bytes:
    """A tool's value as the raw JSON of its result record."""
    return go_json(value)


@dataclass(frozen=True, slots=True)
class Tool:
    """A tool the agent may call.

    ``fn`` is ``async def fn(args)`` or ``async def fn(ctx, args)``; ``args`` is an instance of
    ``args_type`` (a dataclass, whose fields make the JSON schema) or a dict when it is None.
    Whatever it returns is recorded as JSON; an exception is recorded as an error result.
    """

    name: str
    fn: ToolFunction
    description: str = ""
    args_type: type | None = None
    safety: ToolSafety = field(default_factory=ToolSafety)

    spec: ToolSpec = field(init=False, compare=False)
    """The tool as a model sees it; derived once (type hints are costly to evaluate per turn)."""
    wants_context: bool = field(init=False, compare=False)
    """Whether ``fn`` takes the ``ToolContext`` before its arguments."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "spec", ToolSpec(self.name, self.description, json_schema(self.args_type)))
        object.__setattr__(self, "wants_context", _by_code(_takes_context, self.fn))

    def safety_for(self, tool_use_id: str) -> ToolSafety:
        """The safety one call runs under (a replay's stand-in takes each call's from the recording)."""
        return self.safety

    def denied(self, tool_use_id: str) -> ToolOutput:
        """What a call a human denied records as its result."""
        return ToolOutput(DENIED_TEXT, is_error=True)

    def parse_args(self, raw: bytes) -> Any:
        value = json.loads(raw or b"{}")
        if self.args_type is None:
            return value
        if not isinstance(value, dict):
            raise ValueError(f"{self.name} takes an object of arguments, not {type(value).__name__}")
        unknown = sorted(value.keys() - _argument_names(self.args_type))
        if unknown:
            raise ValueError(f"{self.name} got unknown arguments: {', '.join(unknown)}")
        return self.args_type(**value)

    async def run(self, ctx: ToolContext) -> ToolOutput:
        """Call the tool. Its failure becomes an error output; a pause propagates to the loop."""
        try:
            args = self.parse_args(ctx.args)
            value = await (self.fn(ctx, args) if self.wants_context else self.fn(args))
        except RunPaused:
            raise
        except Exception as exc:  # a tool's failure is data for the model, recorded as such
            return ToolOutput(str(exc) or type(exc).__name__, is_error=True)
        return value if isinstance(value, ToolOutput) else ToolOutput(value)


def tool(
    *,
    name: str | None = None,
    read_only: bool = False,
    idempotent: bool = False,
    idempotency_key: bool = False,
    needs_approval: bool = False,
    interrupts: bool = False,
) -> Callable[[ToolFunction], Tool]:
    """Make a Tool of an async function; its docstring describes it, its ``args`` annotation types it."""

    def wrap(fn: ToolFunction) -> Tool:
        return Tool(
            name or fn.__name__,
            fn,
            inspect.getdoc(fn) or "",
            _by_code(_args_type, fn),
            ToolSafety(read_only, idempotent, idempotency_key, needs_approval, interrupts),
        )

    return wrap


# -- JSON schema of an argument dataclass ----------------------------------------------------------

_SCALARS: Mapping[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema_of(annotation: Any) -> dict[str, Any]:
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin = get_origin(annotation)
    if origin in (list, tuple, typing.Sequence):
        (item, *_) = get_args(annotation) or (Any,)
        return {"type": "array", "items": _schema_of(item)}
    if origin in (dict, typing.Mapping):
        return {"type": "object"}
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return _schema_of(options[0]) if len(options) == 1 else {"anyOf": [_schema_of(a) for a in options]}
    if origin is typing.Literal:
        return {"enum": list(get_args(annotation))}
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return json_schema(annotation)
    return {}


def _args_type(fn: ToolFunction) -> type | None:
    """The dataclass ``fn``'s last parameter is annotated with, if any."""
    params = list(inspect.signature(fn).parameters)
    args_type: type | None = get_type_hints(fn).get(params[-1]) if params else None
    return args_type if args_type is not None and dataclasses.is_dataclass(args_type) else None


def _takes_context(fn: ToolFunction) -> bool:
    return len(inspect.signature(fn).parameters) >= 2


T = typing.TypeVar("T")
_read_by_code: dict[tuple[object, ...], object] = {}
"""What ``_by_code`` read, by reader and function."""


def _by_code(read: Callable[[ToolFunction], T], fn: ToolFunction) -> T:
    """``read(fn)``, kept by ``fn``'s code, annotations and module: an agent's factory makes its
    tools afresh for each run (closures of the same code), and a replay serves them through
    stand-ins made per run; reading signatures and type hints again took a tenth of a replay. A
    function whose signature is not its code's (wrapped, or given one) is read each time."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__"):
        return read(fn)
    try:
        key = (read, fn.__code__, id(fn.__globals__), fn.__defaults__, tuple(fn.__annotations__.items()))
        found = _read_by_code.get(key, _read_by_code)
    except TypeError:  # an annotation that is not hashable
        return read(fn)
    if found is _read_by_code:
        if len(_read_by_code) >= 4096:
            _read_by_code.clear()
        found = _read_by_code[key] = read(fn)
    return typing.cast(T, found)


@functools.lru_cache(maxsize=256)
def _argument_names(args_type: type) -> frozenset[str]:
    """The fields of an argument dataclass by name, read once a type: ``dataclasses.fields`` walks
    every field on each call, and each tool call parses its arguments (a third of the parsing)."""
    return frozenset(f.name for f in dataclasses.fields(args_type))


@functools.lru_cache(maxsize=256)
def json_schema(args_type: type | None) -> dict[str, Any]:
    """The JSON schema of a dataclass's fields (an open object when there is no type). Cached
    (type hints are costly to evaluate, and tools are made per run): never change what it returns."""
    if args_type is None:
        return {"type": "object"}
    hints = get_type_hints(args_type)
    fields = dataclasses.fields(args_type)
    required = [f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    return {
        "type": "object",
        "properties": {f.name: _schema_of(hints[f.name]) for f in fields},
        "required": required,
    }
