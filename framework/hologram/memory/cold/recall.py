"""Moving events from cold context (L2) back to L1, and the ``coldcontext_query`` tool's name and schema.

A move back is **copy, then delete** — never fetch-and-delete in one step (:func:`recall`): **peek** the
candidates (read the full records; whatever a concurrent recall already took is simply absent), hand them to
the caller's ``reinsert`` (which must make them part of L1 and return only once that is done), and only then
**remove** them from L2. If ``reinsert`` raises, nothing is removed and :class:`RecallError` says so. A crash
between copy and delete leaves the event in both layers, which ``ColdStore.reconcile`` repairs on the next
start; it never leaves it in neither. Tool-call groups move whole: a recalled call brings its results.

The other direction, L1 → L2, is one durable ``ColdStore.put`` in
:meth:`~hologram.memory.session_memory.SessionMemory.prepare` (L1 is derived from L2 membership, so there is
nothing to delete). The search and the tool's handler are SessionMemory's
(:meth:`~hologram.memory.session_memory.SessionMemory.tool_handler`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from hologram.memory.cold.blocks import NO_TIME, EventRecord
from hologram.memory.cold.store import ColdStore

__all__ = [
    "AUTO_RECALL_MIN_SCORE",
    "COLDCONTEXT_QUERY_DESCRIPTION",
    "COLDCONTEXT_QUERY_NAME",
    "COLDCONTEXT_QUERY_PARAMETERS",
    "RecallError",
    "RecallResult",
    "Reinsert",
    "recall",
    "render_events",
]

COLDCONTEXT_QUERY_NAME = "coldcontext_query"
COLDCONTEXT_QUERY_DESCRIPTION = (
    "Search cold context: earlier parts of this conversation moved out of your context window. Matches are put "
    "back into the history at their place in time (with tool calls and results), visible from your next step. "
    "Use it when the user refers to something you no longer see, or a system note says events were moved."
)
COLDCONTEXT_QUERY_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "Words likely to occur in it (names, topics, numbers); optional if since/until/tool narrow",
        },
        "since": {"type": "string", "description": "ISO 8601, e.g. 2026-05-01T14:00"},
        "until": {"type": "string", "description": "ISO 8601, exclusive"},
        "tool": {"type": "string", "description": "Only calls of this tool, with results"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "Events to bring back"},
    },
    "additionalProperties": False,
}

#: Automatic recall brings back only clear matches: fused z-score at least one standard deviation above the
#: mean (measured on the dev split at 4k: the same evidence in context as no threshold, 0.902).
AUTO_RECALL_MIN_SCORE = 1.0


class Reinsert(Protocol):
    """Makes `records` (time-ordered, whole tool groups) part of L1; returns only when done (durably, if L1
    is persisted), raises otherwise."""

    def __call__(self, records: Sequence[EventRecord], /) -> None: ...


class RecallError(RuntimeError):
    """Re-inserting into L1 failed; nothing was removed from L2."""


@dataclass(frozen=True, slots=True)
class RecallResult:
    recalled: list[EventRecord]
    """Now in L1 (and no longer in L2), time order, access counted."""
    missing: list[str] = field(default_factory=list)
    """Candidates that vanished between search and peek (a concurrent recall took them)."""

    def tool_text(self) -> str:
        if not self.recalled:
            return "Nothing in cold context matched."
        head = f"Brought back {len(self.recalled)} event(s) from cold context; they are in the history now:"
        return head + "\n" + render_events(self.recalled)


def recall(
    store: ColdStore, ids: Sequence[str], reinsert: Reinsert, *, now: float | None = None
) -> tuple[list[EventRecord], list[str]]:
    """Peek → reinsert → remove for `ids` (plus their tool-group mates). Returns (recalled, missing).

    Raises :class:`RecallError` if `reinsert` fails; L2 is then untouched.
    """
    if not ids:
        return [], []
    at = time.time() if now is None else now
    wanted = store.group_mates(ids)
    peeked = store.peek(wanted)
    found = {r.id for r in peeked}
    missing = [i for i in ids if i not in found]
    if not peeked:
        return [], missing
    moving = [r.accessed(at) for r in peeked]
    try:
        reinsert(moving)
    except Exception as exc:
        raise RecallError(f"re-inserting {len(moving)} event(s) into L1 failed; cold context unchanged: {exc}") from exc
    store.remove([r.id for r in moving])
    return moving, missing


def render_events(records: Sequence[EventRecord], *, per_block: int = 200) -> str:
    """One line per block, grouped by event with its time — for tool results and prompt injection."""
    lines: list[str] = []
    for r in records:
        when = "time unknown"
        if r.ts_ms != NO_TIME:
            when = datetime.fromtimestamp(r.timestamp, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        lines.append(f"[{when}{' · ' + r.channel if r.channel else ''}] {r.id}")
        for b in r.blocks:
            text = b.text if len(b.text) <= per_block else b.text[: per_block - 1] + "…"
            lines.append(f"  {b.kind}: {text}")
    return "\n".join(lines)
