"""The OpenTelemetry names a run's trace is written with, pinned to one version of the GenAI
semantic conventions.

The GenAI conventions are still in development (every name here is "Development" status), and
they moved out of the main semantic conventions after release 1.41.0, the last whose Python
package (``opentelemetry-semantic-conventions`` 0.64b0) defines them. agenttui pins that
release: every ``gen_ai.*`` name below is spelled as it defines it, and the spans carry its
schema URL, so a backend that reads schemas can translate them when the names change.

The package keeps these names in a private module (``semconv._incubating``), so they are written
out here rather than imported: a rename upstream changes nothing until this module is moved to a
newer release on purpose.

Names in the ``agenttui.`` namespace are agenttui's own: what the journal records that the
conventions have no name for (a run's status, approvals, timers, attempts, recovery).
"""

from __future__ import annotations

from typing import Final

#: The semantic conventions release the names below are pinned to.
SEMCONV_VERSION: Final = "1.41.0"
SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

# -- gen_ai.operation.name and its values --------------------------------------------------------
OPERATION: Final = "gen_ai.operation.name"
INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

# -- agent spans ---------------------------------------------------------------------------------
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"

# -- model spans ---------------------------------------------------------------------------------
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
"""The model a turn recorded (the journal keeps one: the one that answered)."""
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
"""Every input token, cached ones included (the conventions say so; the journal counts the
three kinds apart, so agenttui adds them up). The two cache counts are written when not zero."""
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"

# -- tool spans ----------------------------------------------------------------------------------
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
ERROR_TYPE: Final = "error.type"
"""Stable, in the general conventions: why an operation failed, low in cardinality."""

# -- agenttui's own ------------------------------------------------------------------------------
RUN_ID: Final = "agenttui.run.id"
RUN_KIND: Final = "agenttui.run.kind"
RUN_STATUS: Final = "agenttui.run.status"
RUN_STATUS_DETAIL: Final = "agenttui.run.status_detail"
RUN_TURNS: Final = "agenttui.run.turns"
RUN_TOKENS: Final = "agenttui.run.tokens"
"""Every token of the run's own turns, wasted ones included, as ``agenttui runs`` counts them."""
COST: Final = "agenttui.cost.usd"
"""What the run and every run below it cost, as ``agenttui cost`` prices it."""
OWN_COST: Final = "agenttui.cost.own_usd"
UNPRICED_MODELS: Final = "agenttui.cost.unpriced_models"
STEP: Final = "agenttui.step"
"""The journal record a span or an event was made from (its step name; a tool span's only where
it is not ``tool:<call id>``)."""
TIME: Final = "agenttui.time"
"""How a span's or an event's time was found (``Moment.how``)."""
DISCARDED_TOKENS: Final = "agenttui.usage.discarded_tokens"
RECORDED_TOKENS: Final = "agenttui.usage.recorded_tokens"
"""A fork's turn served from its recording: the tokens the recording spent, not spent again."""
TOOL_SAFETY: Final = "agenttui.tool.safety"
"""A call's safety as its result recorded it: ``read-only``, ``idempotent``, both, or ``side effect``."""
TOOL_APPROVAL: Final = "agenttui.tool.approval"
TOOL_RECONCILED: Final = "agenttui.tool.reconciled"
REPLAY_VERDICT: Final = "agenttui.replay.verdict"
REPLAY_DETAIL: Final = "agenttui.replay.detail"
REPLAY_AGENT: Final = "agenttui.replay.agent"
FORK_OF: Final = "agenttui.fork.of"
FORK_AT: Final = "agenttui.fork.at"
LINK: Final = "agenttui.link"
