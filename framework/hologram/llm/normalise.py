"""The history normaliser, run on the messages of every request before they are serialised.

Vendors reject a history in which an assistant ``tool_calls`` message is not followed by one tool
message per call id, or a tool message has no preceding call (see hologram/testing/mock_llm). Such histories happen:
a turn cancelled between the call and its result, a crash, a session written by an older version, a
pruning step. Rather than let one bad turn make a session unusable, the normaliser repairs the structure:

- a tool message whose call is not in an earlier assistant message is dropped (an orphan);
- a call with no result gets a synthetic error result, so the model learns the call did not complete;
- results are moved directly after their assistant message, in call order; a second result for the
  same call is dropped (every call has exactly one result).

Field stripping (what the target vendor rejects) happens per adapter in `wire.build_body`.
"""

from __future__ import annotations

from collections.abc import Sequence

from hologram.llm.shapes import Message

MISSING_RESULT = "error: no result was recorded for this call"


def normalise_history(messages: Sequence[Message], notes: list[str] | None = None) -> list[Message]:
    """A repaired copy of ``messages``; ``notes`` (if given) receives one line per repair."""
    # Positions of the tool messages answering each call id, in order.
    results: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        if m.role == "tool" and m.tool_call_id is not None:
            results.setdefault(m.tool_call_id, []).append(i)
    # Where each call id is (re)issued, so a result is never claimed across a later call of the same id.
    issued: dict[str, list[int]] = {}
    for i, m in enumerate(messages):
        for call in m.tool_calls if m.role == "assistant" else ():
            issued.setdefault(call.id, []).append(i)

    used: set[int] = set()
    out: list[Message] = []
    for i, m in enumerate(messages):
        if m.role == "tool":
            if i not in used and notes is not None:
                notes.append(f"dropped orphan tool result at index {i} (call id {m.tool_call_id!r})")
            continue
        out.append(m)
        if m.role != "assistant" or not m.tool_calls:
            continue
        for call in m.tool_calls:
            limit = next((k for k in issued.get(call.id, ()) if k > i), len(messages))
            j = next((k for k in results.get(call.id, ()) if i < k < limit and k not in used), None)
            if j is None:
                out.append(Message.tool(call.id, MISSING_RESULT, name=call.name or None))
                if notes is not None:
                    notes.append(f"added a synthetic error result for call {call.id!r} ({call.name})")
                continue
            used.add(j)
            out.append(messages[j])
    return out
