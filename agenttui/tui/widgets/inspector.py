"""RecordInspector and ConversationView: one record in full, and the conversation as of a record."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import Static

from agenttui.journal.describe import kind_icon, printable, raw_json_text
from agenttui.journal.record import (
    ImagePart,
    Message,
    ReasoningPart,
    Record,
    StepKind,
    TextPart,
    ToolUsePart,
    UnknownPart,
)
from agenttui.runs.reading.view import Utterance
from agenttui.tui.widgets.scrolling_pane import ScrollingPane

if TYPE_CHECKING:
    from agenttui.runs.cost.lens import PriceBook

#: Characters of one value shown before it is cut; ``e`` in the inspector expands it in place.
VALUE_LIMIT = 4000
#: Characters of one value ``e`` and ``r`` show. The pane lays out everything it holds, about 0.2 s
#: per 100,000 characters: a 10 MB value took minutes, the app frozen. The CLI prints every byte.
FULL_LIMIT = 200_000


def _value(text: str, *, full: bool) -> Text:
    """Untrusted text, made inert and cut to a readable length (a longer one when ``full``); the
    pane wraps its long lines."""
    shown = printable(text, multiline=True)
    limit = FULL_LIMIT if full else VALUE_LIMIT
    if len(shown) > limit:
        cut = Text(shown[:limit])
        more = "all of them: agenttui show --json" if full else "e: expand in place"
        cut.append(f"\n… {len(shown) - limit:,} more characters ({more})", style="italic")
        return cut
    return Text(shown)


def _heading(text: str) -> Text:
    return Text(text, style="bold")


def _parts(message: Message, *, full: bool) -> list[RenderableType]:
    out: list[RenderableType] = []
    for part in message.parts:
        match part:
            case TextPart(text=text):
                out.append(_value(text, full=full))
            case ReasoningPart(text=text, redacted=redacted):
                out += [
                    Text("reasoning", style="italic"),
                    _value(text or "(redacted)" if redacted else text, full=full),
                ]
            case ToolUsePart(id=call_id, name=name, args=args):
                out += [
                    _heading(f"→ call {printable(name)} ({printable(call_id)})"),
                    _value(raw_json_text(args, indent=2), full=full),
                ]
            case ImagePart(mime=mime, data=data, url=url):
                out.append(Text(f"[image {printable(mime)} {len(data):,} bytes {printable(url)}]", style="italic"))
            case UnknownPart(type=kind, raw=raw):
                out.append(_value(f"[{kind} part] " + raw.decode("utf-8", "replace"), full=full))
            case _:
                out.append(_value(repr(part), full=full))
    return out


def describe_record(
    record: Record,
    index: int,
    seq_names: dict[str, str],
    *,
    full: bool = False,
    raw: bool = False,
    prices: PriceBook | None = None,
) -> RenderableType:
    """Everything a record holds, as inert text: the inspector's content; with ``prices``, what
    a model turn cost and what its dropped requests wasted."""  # fmt: skip
    title = Text(f"#{index}  {kind_icon(record)} {printable(record.name)}", style="bold")
    title.append(f"   {record.kind or '?'}", style="italic")
    body: list[RenderableType] = [title]
    if record.unreadable:
        body += [Text(f"unreadable: {printable(record.unreadable)}", style="bold"), _heading("stored bytes"),
                 _value(record.raw.decode("utf-8", "replace"), full=full)]  # fmt: skip
        return Group(*body)
    if record.tombstone is not None:
        body.append(Text(f"redacted at {record.tombstone.at_ms} ms, leaf hash {printable(record.tombstone.leaf_hash)}"))
        return Group(*body)
    facts = []
    if record.tool_use_id:
        facts.append(f"call {record.tool_use_id} ({seq_names.get(record.tool_use_id, '?')})")
    if record.kind == StepKind.TOOL_RESULT:
        facts.append("error" if record.is_error else "ok")
    if record.kind == StepKind.APPROVAL:
        facts.append(
            ("approved" if record.approved else "denied") + (f" by {record.approver}" if record.approver else "")
        )
    for flag in ("reconciled", "outcome_unknown"):
        if getattr(record, flag):
            facts.append(flag.replace("_", " "))
    if record.finish:
        facts.append(f"finish {record.finish}")
    if record.model:
        facts.append(f"model {record.model.provider}/{record.model.model}")
    if record.attempted_at:
        facts.append(
            "attempted " + datetime.fromtimestamp(record.attempted_at / 1000, UTC).isoformat(timespec="seconds")
        )
    if record.safety:
        facts.append("safety " + ", ".join(k for k in ("read_only", "idempotent") if getattr(record.safety, k)))
    if record.approval:
        facts.append(
            "approval gate "
            + ("single" if record.approval.single else f"{record.approval.need} of {len(record.approval.approvers)}")
        )
    if record.format:
        facts.append(f"format {record.format}")
    if facts:
        body.append(Text(printable(" · ".join(facts))))
    if record.usage:
        u = record.usage
        body.append(
            Text(
                f"usage: {u.input_tokens} in · {u.output_tokens} out · {u.cache_read_tokens} cache read · {u.cache_write_tokens} cache write"
            )
        )
    if prices is not None and (line := _cost_line(record, prices)):
        body.append(Text(printable(line)))
    if record.message is not None:
        body += [_heading(f"message ({record.message.role})"), *_parts(record.message, full=full)]
    if record.result is not None:
        body += [_heading("result"), _value(raw_json_text(record.result, indent=2), full=full)]
    if record.evidence is not None:
        body += [_heading("evidence"), _value(raw_json_text(record.evidence, indent=2), full=full)]
    if raw:
        body += [
            _heading(f"stored bytes ({len(record.raw):,})"),
            _value(record.raw.decode("utf-8", "replace"), full=full),
        ]
    return Group(*body)


def _cost_line(record: Record, prices: PriceBook) -> str:
    """A model turn's cost and the context it sent; the spend a dropped request wasted."""
    from agenttui.runs.cost.lens import format_cost, model_name, sent_tokens, spend_of

    wasted = record.discarded_usage
    if record.kind == StepKind.MODEL and record.name.startswith("@llm/"):
        spend = spend_of(prices, record.model, record.usage, wasted)
        line = f"cost {format_cost(spend)} · context {sent_tokens(spend.usage):,} tokens"
        if spend.unpriced:
            line += f" · no price known for {model_name(record.model)} (agenttui cost --prices)"
        if wasted:
            line += f" · wasted {wasted.total:,} tokens, {format_cost(spend, wasted=True)} (dropped requests)"
        return line
    if wasted and record.name.startswith(("@spend/", "@spend-late/")):
        counted = "the turn that retried it" if record.name.startswith("@spend/") else "the turn before it"
        return f"wasted {wasted.total:,} tokens: a dropped request's usage, counted on {counted} (agenttui cost)"
    return ""


def record_value(record: Record) -> str:
    """The value a record holds, as ``y`` copies it: its result (the JSON as stored), else its
    message's text, else the whole record as stored. Unescaped: ``copy_text`` refuses what a
    terminal cannot show."""
    if record.unreadable or record.tombstone is not None:
        return record.raw.decode("utf-8", "replace")
    if record.result is not None:
        return raw_json_text(record.result)
    if record.message is not None:
        texts = [part.text for part in record.message.parts if isinstance(part, TextPart)]
        if texts:
            return "\n".join(texts)
    if record.evidence is not None:
        return raw_json_text(record.evidence)
    return record.raw.decode("utf-8", "replace")


class RecordInspector(ScrollingPane):
    """The selected record in full, long lines wrapped. ``expand`` shows cut values whole, in
    place (the run screen's ``e``); ``show_raw`` adds the stored bytes and uncuts the values (the
    run screen's ``r``, wherever the focus is)."""

    show_raw: reactive[bool] = reactive(False)
    """Show the stored bytes, and values uncut (up to ``FULL_LIMIT``)."""
    expand: reactive[bool] = reactive(False)
    """Values shown whole (up to ``FULL_LIMIT``), not cut at ``VALUE_LIMIT``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = Static("", id="inspector-content")
        self._shown: tuple[Record, int, dict[str, str]] | None = None
        self._prices: PriceBook | None = None

    def compose(self) -> ComposeResult:
        yield self._content

    def show(self, record: Record, index: int, names: dict[str, str]) -> None:
        self._shown = (record, index, names)
        self._redraw()

    def show_costs(self, prices: PriceBook) -> None:
        """Show what model turns cost, at ``prices`` (read once, off the event loop)."""
        self._prices = prices
        self._redraw()

    def _redraw(self) -> None:
        if self._shown is not None:
            record, index, names = self._shown
            full = self.show_raw or self.expand
            described = describe_record(record, index, names, full=full, raw=self.show_raw, prices=self._prices)
            self._content.update(described)

    @property
    def shown(self) -> tuple[Record, int] | None:
        """The record shown and its index in the run, once one is."""
        return None if self._shown is None else self._shown[:2]

    def watch_show_raw(self) -> None:
        self._redraw()

    def watch_expand(self) -> None:
        self._redraw()


class ConversationView(ScrollingPane):
    """Time travel: the conversation as it stood after the selected record, opened at that step
    (the newest voice), with progress while its records are read back."""

    expand: reactive[bool] = reactive(False)
    """Values shown whole (up to ``FULL_LIMIT``), not cut at ``VALUE_LIMIT``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._content = Static("", id="conversation-content")
        self._step: RenderableType | None = None
        """The newest voice: the pane scrolls to its start once laid out."""
        self._shown: tuple[Sequence[Utterance], int, int] | None = None

    def compose(self) -> ComposeResult:
        yield self._content

    def reading(self, index: int, done: int, total: int) -> None:
        """Say the conversation as of record ``index`` is being read back: ``done`` of ``total`` records."""
        self._step = self._shown = None
        lines = Text(f"as of record #{index}", style="italic")
        lines.append(f"\n\nreading the conversation back from the store: {done:,} of {total:,} records…")
        self._content.update(lines)
        self.scroll_home(animate=False)

    def show(self, said: Sequence[Utterance], index: int, left_out: int = 0) -> None:
        """The voices ``said`` as of record ``index``; ``left_out`` voices between the first and
        the second are not shown (a long run's conversation shows its start and its newest)."""
        self._shown = (said, index, left_out)
        full = self.expand
        blocks: list[RenderableType] = [Text(f"as of record #{index}", style="italic")]
        for at, voice in enumerate(said):
            if at == 1 and left_out:
                more = f"… {left_out:,} voices in between (agenttui show --at {index} prints them all)"
                blocks += [Text(""), Text(more, style="italic")]
            content = Group(*_parts(voice.message, full=full)) if voice.message else _value(voice.text, full=full)
            step = Group(Text(printable(voice.speaker + (" ✗" if voice.is_error else "")), style="bold"), content)
            blocks += [Text(""), step]
        self._step = blocks[-1] if said else None
        self._content.update(Group(*blocks))
        self.call_after_refresh(self._scroll_to_step)

    def _scroll_to_step(self) -> None:
        """Scroll to the start of the newest voice, the one the selected step said (or the last
        before it): the lines it takes, counted from the end of the content."""
        if self._step is None:
            return
        width = self._content.content_region.width
        console = self.app.console
        step_lines = len(console.render_lines(self._step, console.options.update_width(max(1, width)), pad=False))
        self.scroll_to(y=max(0, self._content.outer_size.height - step_lines), animate=False, immediate=True)

    def watch_expand(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)
