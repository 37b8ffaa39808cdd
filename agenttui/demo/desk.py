"""The refund desk: a small, realistic agent the demo store, the tests and replays share.

Its tools cover every safety class: a read-only lookup, a refund that moves money (needs
approval, not retry-safe: it gets an attempt marker), an email with an idempotency key, a
durable wait for settlement, a question to the customer (an interrupt), and a sub-agent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from agenttui.agent.loop import Agent
from agenttui.agent.model import Finish, Model, ModelDelta, ModelRequest, TextDelta
from agenttui.agent.scripted import Call, ScriptedModel, Turn
from agenttui.agent.subagent import subagent_tool
from agenttui.agent.tools import DENIED_TEXT, Tool, ToolContext, interrupt_name, tool
from agenttui.journal.record import ModelInfo, ToolResultPart, Usage
from agenttui.stores.base import Store

ORDERS: dict[str, dict[str, Any]] = {
    "A-1001": {"customer": "ada@example.com", "amount": 42.50, "item": "walnut desk lamp", "status": "delivered"},
    "A-1002": {"customer": "grace@example.com", "amount": 129.00, "item": "standing mat", "status": "damaged"},
    "A-1003": {"customer": "alan@example.com", "amount": 18.75, "item": "cable kit", "status": "lost"},
    "A-1004": {"customer": "edsger@example.com", "amount": 240.00, "item": "monitor arm", "status": "delivered"},
    "A-1005": {"customer": "barbara@example.com", "amount": 64.10, "item": "keyboard", "status": "returned"},
}

SYSTEM_PROMPT = "You are the refund desk. Look orders up, refund what policy allows, tell the customer."
SPECIALIST = "refunds_specialist"
SPECIALIST_PROMPT = "You check refund eligibility against policy."


@dataclass
class OrderRef:
    order_id: str


@dataclass
class Refund:
    order_id: str
    amount: float
    reason: str = ""


@dataclass
class Email:
    to: str
    subject: str
    body: str = ""


@dataclass
class Settlement:
    order_id: str
    hours: float = 24.0


@dataclass
class Question:
    question: str


@dataclass
class Effects:
    """Where the side-effecting tools report what they did (tests count real effects here)."""

    refunds: list[tuple[str, float]] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    on_refund: Callable[[str, float], None] | None = None


def desk_tools(effects: Effects | None = None) -> list[Tool]:
    """The refund desk's tools; ``effects`` records every refund and email actually sent."""
    effects = effects or Effects()

    @tool(read_only=True)
    async def lookup_order(args: OrderRef) -> dict[str, Any]:
        """Look an order up by id."""
        if args.order_id not in ORDERS:
            raise LookupError(f"no order {args.order_id}")
        return {"order_id": args.order_id, **ORDERS[args.order_id]}

    @tool(needs_approval=True)
    async def refund_payment(args: Refund) -> dict[str, Any]:
        """Refund money to the customer's card. Moves money: needs a human's approval."""
        if effects.on_refund is not None:
            effects.on_refund(args.order_id, args.amount)
        effects.refunds.append((args.order_id, args.amount))
        return {"refund_id": f"rf_{args.order_id.lower()}", "amount": args.amount, "state": "submitted"}

    @tool(idempotency_key=True)
    async def send_email(ctx: ToolContext, args: Email) -> dict[str, Any]:
        """Email the customer; the idempotency key de-duplicates a retried send."""
        effects.emails.append(ctx.idempotency_key)
        return {"message_id": f"msg_{ctx.idempotency_key[:12]}", "to": args.to}

    @tool(idempotent=True)
    async def wait_for_settlement(ctx: ToolContext, args: Settlement) -> dict[str, Any]:
        """Wait, durably, for the card network to settle the refund."""
        await ctx.sleep(f"settle-{args.order_id}", timedelta(hours=args.hours))
        return {"order_id": args.order_id, "settled": True}

    @tool(read_only=True, interrupts=True)
    async def ask_customer(ctx: ToolContext, args: Question) -> Any:
        """Ask the customer a question and wait for the answer."""
        return await ctx.interrupt(interrupt_name(ctx.tool_use_id), args.question)

    specialist = subagent_tool(
        SPECIALIST,
        lookup_order,
        system_prompt=SPECIALIST_PROMPT,
        description="Ask the refunds specialist whether an order is eligible.",
    )
    return [lookup_order, refund_payment, send_email, wait_for_settlement, ask_customer, specialist]


def desk_agent(model: Model, store: Store, effects: Effects | None = None, **settings: Any) -> Agent:
    return Agent(model, store, *desk_tools(effects), name="refund_desk", system_prompt=SYSTEM_PROMPT, **settings)


# -- scripts: one per story the demo tells ------------------------------------------------------


def _usage(n: int) -> Usage:
    return Usage(input_tokens=380 + 45 * n, output_tokens=60 + 7 * n, cache_read_tokens=200 if n else 0)


def turns(*script: tuple[str, Sequence[Call]]) -> list[Turn]:
    return [Turn(text, calls, usage=_usage(n)) for n, (text, calls) in enumerate(script)]


def refund_story(order_id: str, amount: float, *, email: bool = True) -> list[Turn]:
    """Look up, refund (gated), email, answer."""
    customer = ORDERS.get(order_id, {}).get("customer", "customer@example.com")
    script: list[tuple[str, Sequence[Call]]] = [
        (f"Let me look up order {order_id}.", [Call("lookup_order", {"order_id": order_id})]),
        (f"The order qualifies. Refunding ${amount:.2f}.",
         [Call("refund_payment", {"order_id": order_id, "amount": amount, "reason": "damaged in transit"})]),
    ]  # fmt: skip
    if email:
        script.append(
            (
                "Letting the customer know.",
                [Call("send_email", {"to": customer, "subject": f"Your refund for {order_id}"})],
            )
        )
    script.append((f"Refunded ${amount:.2f} for order {order_id} and emailed the customer.", []))
    return turns(*script)


SPECIALIST_TURNS = turns(
    ("Checking the order against policy.", [Call("lookup_order", {"order_id": "A-1004"})]),
    ("Eligible: delivered within 30 days, full refund allowed.", []),
)


#: The models the demo's turns name (the cost lens prices them): the desk's, and the specialist's.
DESK_MODEL = ModelInfo("anthropic", "claude-sonnet-4-5")
SPECIALIST_MODEL = ModelInfo("anthropic", "claude-haiku-4-5")


class DeskModel(ScriptedModel):
    """The desk's script, which a reviewer's denial ends: a story is written for a refund that
    goes through, so after a denied call the desk says it was declined rather than reading on
    ("Refunded $64.10" after a deny)."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelDelta]:
        told = request.messages[-1] if request.messages else None
        denied = told is not None and any(
            isinstance(part, ToolResultPart) and part.is_error and DENIED_TEXT.encode() in (part.result or b"")
            for part in told.parts
        )
        script = self.agents.get(request.agent, self.turns)
        next_turn = script[request.turn] if request.turn < len(script) else None
        written_for_it = next_turn is not None and not next_turn.calls  # a story that tells of the denial itself
        if request.agent == SPECIALIST or not denied or written_for_it:
            async for delta in super().stream(request):
                yield delta
            return
        yield TextDelta(DECLINED)
        yield Finish("stop", _usage(request.turn), model=self.model)


#: What the desk says once a reviewer denied its call.
DECLINED = "A reviewer declined the refund: nothing was refunded."


def demo_model(script: Sequence[Turn], *, latency: float = 0.0) -> ScriptedModel:
    return DeskModel(script, agents={SPECIALIST: SPECIALIST_TURNS}, latency=latency, model=DESK_MODEL,
                     agent_models={SPECIALIST: SPECIALIST_MODEL})  # fmt: skip
