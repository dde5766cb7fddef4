"""From stored events to the messages a model is sent, and the check of the call/result invariant.

Each assistant message takes its reasoning from the ``response`` event that produced it and from nowhere
else: a step stored without reasoning (an older version, a vendor without thinking) gets none, and the
DeepSeek adapter decides what to send for it. Nothing is inherited from a neighbouring step.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from hologram.llm import Message, ToolCall
from hologram.sessions.event import Event
from hologram.sessions.log import SessionLog


def _name(value: Any) -> Any:
    """A tool's name as the one interned string: an event's data is decoded anew for each request
    (hologram/sessions/event.py), and a long turn's ~400 calls and results repeat a few names."""
    return sys.intern(value) if type(value) is str and len(value) <= 64 else value


def response_message(data: dict[str, Any]) -> Message:
    calls = tuple(_call(c) for c in data.get("tool_calls") or [] if isinstance(c, dict))
    content = data.get("content")
    reasoning = data.get("reasoning")
    if reasoning is None:
        reasoning = data.get("reasoning_content")  # the vendor's field name, should a writer have used it
    return Message.assistant(
        None if content is None and calls else str(content or ""),
        calls,
        reasoning_content=None if reasoning is None else str(reasoning),
    )


def message_of(event: Event) -> Message | None:
    """The chat message of one stored event, or None for a kind the model never reads (``output``).

    The only reading of an event's ``data``: the request builder (`messages_from_events`) and memory (its
    records, `hologram.memory.session_records.record_of`) both start from this message, so what the model
    is sent and what memory scores, moves and recalls cannot drift apart."""
    data = event.data
    if event.kind == "input":
        return Message.user(str(data.get("text", "")))
    if event.kind == "response":
        return response_message(data)
    if event.kind == "tool_result" and event.call_id:
        return Message.tool(event.call_id, str(data.get("content", "")), name=_name(data.get("name")))
    return None


def _call(data: dict[str, Any]) -> ToolCall:
    call = ToolCall.from_dict(data)
    return call if call.name is (name := _name(call.name)) else ToolCall(call.id, name, call.arguments)


def messages_from_events(events: Iterable[Event]) -> list[Message]:
    """The conversation as chat messages, in event order (results follow their response)."""
    return [m for event in events if (m := message_of(event)) is not None]


class HistoryCache:
    """The chat messages of recently used sessions, extended incrementally from the shared `SessionLog`.

    `message_of` maps each event on its own, so the messages of the events ``≤ seq`` followed by those of the
    events ``> seq`` are the messages of all events: a turn maps only what was appended since it last looked
    (its own previous turn, synthetic results from a repair, …). Callers get a fresh list (`Message` is
    frozen) and may append to it. At most ``max_sessions`` sessions are kept (least recently used out).

    Mutation check (done): not advancing ``last seq`` after a read turns tests/agent/test_sessions.py's
    cache test red (every message comes twice)."""

    def __init__(self, log: SessionLog, max_sessions: int = 64) -> None:
        self.log = log
        self.max_sessions = max_sessions
        self._cached: OrderedDict[str, tuple[int, list[Message]]] = OrderedDict()

    def messages(self, session: str) -> list[Message]:
        last, messages = self._cached.pop(session, (0, []))
        new = self.log.after(session, last)
        if new:
            messages = messages + messages_from_events(new)
            last = new[-1].seq
        self._cached[session] = (last, messages)
        while len(self._cached) > self.max_sessions:
            self._cached.popitem(last=False)
        return list(messages)


def pairing_problems(events: Sequence[Event]) -> list[str]:
    """Every way the persisted session breaks "each call has exactly one result and each result its call"."""
    problems: list[str] = []
    calls: dict[tuple[int, str], int] = {}
    for event in events:
        if event.kind == "response":
            for call in event.data.get("tool_calls") or []:
                calls[(event.seq, str(call.get("id")))] = 0
    for event in events:
        if event.kind != "tool_result":
            continue
        key = (event.call_of or -1, str(event.call_id))
        if key not in calls:
            problems.append(f"result #{event.seq} answers call {event.call_id!r}, which no response made")
        else:
            calls[key] += 1
    for (seq, call_id), count in calls.items():
        if count != 1:
            problems.append(f"call {call_id!r} of response #{seq} has {count} results")
    return problems
