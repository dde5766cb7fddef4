"""Session events as memory events: the record of each session-log event, token costs, the note, and the
:class:`Prepared` result of :meth:`~hologram.memory.session_memory.SessionMemory.prepare`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hologram.llm import Message
from hologram.memory.cold.blocks import EventRecord, build_event
from hologram.memory.cold.overflow import describe_moved, overflow_note
from hologram.sessions import Event, message_of

__all__ = [
    "MESSAGE_OVERHEAD",
    "Prepared",
    "memory_note",
    "prune_note",
    "recall_note",
    "record_of",
    "token_cost",
]

#: Tokens a chat message costs beyond its text (role, separators): counted per memory event.
MESSAGE_OVERHEAD = 4


@dataclass(frozen=True, slots=True)
class Prepared:
    """What to send: the kept L1 history and, when this call moved anything to L2, one note for the model."""

    messages: list[Message]
    """The history (L1, log order) as chat messages; the system prompt is not included."""
    note: Message | None
    """A short system message naming what moved to cold context (None when nothing moved)."""
    pruned: list[str]
    """Event ids (``ev_…``) moved to L2 by this call, in time order."""
    pruned_seqs: list[int] = field(default_factory=list)
    """The same events as session-log sequence numbers."""
    kept_tokens: int = 0
    budget_tokens: int = 0
    over_budget: bool = False
    """The newest event alone exceeds the budget (the overflow guard decides what happens then)."""
    seqs: list[int] = field(default_factory=list)
    """Session-log sequence numbers of the events behind `messages`, in order (what the model will see)."""
    recalled: list[str] = field(default_factory=list)
    """Event ids held in L2 that this request sends (they won the ranking), in time order."""
    recalled_seqs: list[int] = field(default_factory=list)
    held: int = 0
    """Events of the session held in L2 once this request is sent (what `SessionMemory.cold_ids` would
    count, without a second read of the log per request)."""
    l3_events: list[str] = field(default_factory=list)
    """Source event ids of what the L3 note (part of `note`) carries, in time order."""
    across: list[str] = field(default_factory=list)
    """Event ids of other sessions' inputs the note carries (memory/across/store.py), in time order."""

    def request_messages(self, system: str) -> list[Message]:
        """``[system prompt, note?, *history]``: the message list of an LLM request."""
        head = [Message.system(system)]
        if self.note is not None:
            head.append(self.note)
        return [*head, *self.messages]


def prune_note(moved: Sequence[EventRecord]) -> str:
    """The note after a regular prune: how much moved, a few snippets, how to bring it back."""
    if not moved:
        return ""
    amount, snippets = describe_moved(moved)
    return (
        f"[memory] {amount} less related to the current request were moved to cold context: {snippets}. "
        "Call coldcontext_query to bring any of them back."
    )


def recall_note(recalled: Sequence[EventRecord], *, count: int | None = None, tokens: int | None = None) -> str:
    """The one line that tells the model what came back from cold context for this request. `count` and
    `tokens`: of all the recalled events when `recalled` holds only the quoted first ones (`describe_moved`)."""
    if not (len(recalled) if count is None else count):
        return ""
    amount, snippets = describe_moved(recalled, count=count, tokens=tokens)
    return f"[memory] Recalled from cold context for this request, shown at their place in time: {amount}: {snippets}."


def memory_note(
    moved: Sequence[EventRecord],
    recalled: Sequence[EventRecord],
    *,
    overflow: bool = False,
    recalled_count: int | None = None,
    recalled_tokens: int | None = None,
) -> str:
    """The request's one memory note: what moved out (regular prune or overflow) and what came back
    (`recalled_count` / `recalled_tokens`: see :func:`recall_note`)."""
    parts = []
    if moved:
        parts.append(overflow_note(moved) if overflow else prune_note(moved))
    if recalled or recalled_count:
        parts.append(recall_note(recalled, count=recalled_count, tokens=recalled_tokens))
    return "\n".join(parts)


def record_of(event: Event, *, lexical: bool = True) -> EventRecord | None:
    """Memory's record of one session event: its chat message (`hologram.sessions.message_of`, the one
    reading of a stored event) split into blocks with stable ids. None for kinds that produce no message
    (``output``), which therefore never move. `lexical` False: without the term vector (see `build_event`)."""
    message = message_of(event)
    if message is None:
        return None
    common: dict[str, Any] = {
        "timestamp": event.ts,
        "session": event.session,
        "origin": f"{event.session}:{event.seq:012d}",
        "channel": event.channel,
        "lexical": lexical,
    }
    if message.role == "user":
        # the partner the channel named (hologram.agent.identity) is the speaker of these words for L3
        # distillation (`speaker_of`: "user" without it); an input stored before it existed has none
        partner = event.data.get("partner")
        return build_event(input=message.content or "", partner=partner if isinstance(partner, str) else None, **common)
    if message.role == "assistant":
        calls = [c.to_dict() for c in message.tool_calls]
        return build_event(
            reasoning=message.reasoning_content or "",
            response=message.content or "",
            tool_calls=calls,
            group=f"call:{event.seq}" if calls else None,
            **common,
        )
    result = {"call_id": message.tool_call_id, "name": message.name, "content": message.content or ""}
    group = f"call:{event.call_of}" if event.call_of is not None else None
    return build_event(tool_results=[result], group=group, **common)


def token_cost(record: EventRecord) -> int:
    return record.tokens + MESSAGE_OVERHEAD
