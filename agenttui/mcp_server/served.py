"""What every tool of ``agenttui mcp`` shares: the store it serves, the budget of its answers,
and the one way an answer or a failure reaches the agent (``answered``)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import wraps
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from agenttui.errors import AgentTuiError
from agenttui.journal.inert import printable, safe_json
from agenttui.mcp_server.answers import DEFAULT_BUDGET, LEAST_BUDGET
from agenttui.mcp_server.reading import RunRecords, given_run_id
from agenttui.stores.base import Store

if TYPE_CHECKING:
    from agenttui.runs.cost.lens import PriceBook

P = ParamSpec("P")

#: What every tool takes to size its answer.
Budget = Annotated[
    int | None,
    Field(
        description=f"The answer's size at most, in bytes of JSON (default {DEFAULT_BUDGET:,}, least {LEAST_BUDGET:,})."
    ),
]
RunId = Annotated[str, Field(description="The run's id, as list_runs gives it (its run_ref where it gives one).")]
RecordRef = Annotated[
    str,
    Field(
        description="A record: its index in the run (as run_records numbers it) or its step name (@llm/2, tool:toolu_1)."
    ),
]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


@dataclass
class Served:
    """What every tool reads: the store (opened read-only), the runs kept between calls, the budget."""

    store: Store
    store_url: str
    """The URL as given, its password included: only ever opened, never put in an answer."""
    records: RunRecords
    budget: int
    prices: PriceBook | None = None

    @property
    def shown_url(self) -> str:
        """The store's URL as an answer may name it (a command to run): its password masked."""
        from agenttui.stores import describe_url

        return describe_url(self.store_url)

    async def read_prices(self) -> PriceBook:
        """The model prices, read in a thread the first time (0.2 s), then kept."""
        if self.prices is None:
            from agenttui.runs.cost.lens import PriceBook

            self.prices = await asyncio.to_thread(PriceBook().warm)
        return self.prices


def budget_of(served: Served, asked: int | None) -> int:
    return served.budget if asked is None else max(LEAST_BUDGET, asked)


#: The arguments that name a run: each takes a run id, or the ``run_ref`` ``list_runs`` gives.
RUN_ARGUMENTS = frozenset({"run_id", "run_a", "run_b"})


def answered(tool: Callable[P, Awaitable[dict[str, Any]]]) -> Callable[P, Awaitable[CallToolResult]]:
    """A tool whose answer (fitted already) is compact JSON text, the one thing an agent reads
    and the budget counts (registered with ``structured_output=False``: the same value again as
    structured content would double every answer), and whose failures reach the agent as one
    inert line (``ToolError``), never a traceback, and never a byte of the store's raw."""

    @wraps(tool)
    async def answer(*args: P.args, **kwargs: P.kwargs) -> CallToolResult:
        try:
            for name in RUN_ARGUMENTS & kwargs.keys():  # a run given by the run_ref list_runs gave
                if isinstance(given := kwargs[name], str):
                    kwargs[name] = given_run_id(given)
            found = await tool(*args, **kwargs)
            return CallToolResult(content=[TextContent(type="text", text=safe_json(found, indent=None))])
        except ToolError:
            raise
        except AgentTuiError as exc:
            raise ToolError(printable(exc.message)) from None
        except Exception as exc:  # the one place an unexpected error becomes a line the agent reads
            print(
                f"agenttui mcp: {tool.__name__}: unexpected {type(exc).__name__}: {printable(str(exc))}",
                file=sys.stderr,
            )
            raise ToolError(f"unexpected error ({type(exc).__name__}): {printable(str(exc))}") from None

    return answer
