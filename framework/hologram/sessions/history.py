"""From stored events to the messages a model is sent, and the check of the call/result invariant.

Each assistant message takes its reasoning from the ``response`` event that produced it and from nowhere
else: a step stored without reasoning (an older version, a vendor without thinking) gets none, and the
DeepSeek adapter decides what to send for it. Nothing is inherited from a neighbouring step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hologram.llm import Message, ToolCall
from hologram.sessions.store import Event


def response_message(data: dict[str, Any]) -> Message:
    calls = tuple(ToolCall.from_dict(c) for c in data.get("tool_calls") or [] if isinstance(c, dict))
    content = data.get("content")
    reasoning = data.get("reasoning")
    if reasoning is None:
        reasoning = data.get("reasoning_content")  # the vendor's field name, should a writer have used it
    return Message.assistant(
        None if content is None and calls else (content or ""),
        calls,
        reasoning_content=None if reasoning is None else str(reasoning),
    )


def messages_from_events(events: Iterable[Event]) -> list[Message]:
    """The conversation as chat messages, in event order (results follow their response)."""
    out: list[Message] = []
    for event in events:
        data = event.data
        if event.kind == "input":
            out.append(Message.user(str(data.get("text", ""))))
        elif event.kind == "response":
            out.append(response_message(data))
        elif event.kind == "tool_result" and event.call_id:
            out.append(Message.tool(event.call_id, str(data.get("content", "")), name=data.get("name")))
    return out


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
