"""Memory's record of an event: its blocks and the stable IDs that let them move between L1 and L2.

A record is derived, never authored: the session log's event is the conversation item, and
`hologram.memory.session_records.record_of` builds its record from the event's chat message. L2 stores the
record (it must survive the log being read differently later — hence content-hash IDs).

An event (one user input, one model response with its reasoning, one tool call with its result...) is made of
*blocks*: input, reasoning, response, tool_call, tool_result, media. Blocks move between holders (an L1
session, cold context L2, later the L3 graph) but their IDs never change, and a block has exactly one holder at
a time: the store whose table contains it. There is no reference counting, so a move is always *copy to the
new holder, then delete from the old one* (a crash in between leaves a duplicate that ``ColdStore.reconcile``
resolves — never a loss).

IDs are content hashes over the block's content and the event's **normalised timestamp**. Timestamps arrive
as float seconds, integer milliseconds, ISO strings, datetimes — or as 0/None when a channel did not say. If
the ID used "now" for a missing time, or hashed ``1.7e9`` and ``1700000000000`` differently, the same event
would get a new ID every time it was rebuilt and the single-holder check would see two blocks. So every form
normalises to integer UTC milliseconds, and every missing/zero/invalid form to the fixed sentinel
:data:`NO_TIME`. An optional ``origin`` (e.g. ``"session:seq"``) separates genuinely identical events (two
"ok" inputs without time).

Reasoning is its own block (never merged into the response) and part of the event's text, so it counts toward
the event's tokens and vectors (issue 5 §6).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, get_args

from hologram.memory.embed.vectors import DenseVector
from hologram.memory.rank.events import MemoryEvent
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokens import estimate_tokens

__all__ = [
    "BLOCK_KINDS",
    "NO_TIME",
    "Block",
    "BlockKind",
    "EventRecord",
    "block_id",
    "build_event",
    "event_id",
    "normalise_timestamp",
]

BlockKind = Literal["input", "reasoning", "response", "tool_call", "tool_result", "media"]
BLOCK_KINDS: tuple[BlockKind, ...] = get_args(BlockKind)

#: The normalised form of a missing, zero, negative or unparseable timestamp: fixed, never "now".
NO_TIME = 0

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)
# Magnitude cut-offs between units: 1e11 s is the year 5138, 1e11 ms is 1973 — no real timestamp is ambiguous.
_MS_FROM, _US_FROM, _NS_FROM = 1e11, 1e14, 1e17


def normalise_timestamp(value: float | int | str | datetime | None) -> int:
    """Integer UTC milliseconds for any common timestamp form; :data:`NO_TIME` when absent or invalid.

    Numbers are seconds, milliseconds, microseconds or nanoseconds by magnitude; strings are numbers or ISO
    8601 (``Z`` accepted; a naive time is taken as UTC); datetimes likewise. Sub-millisecond parts round.
    """
    if value is None or isinstance(value, bool):
        return NO_TIME
    if isinstance(value, datetime):
        dt = value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
        ms = round(((dt - _EPOCH) // _MICROSECOND) / 1000)
        return ms if ms > 0 else NO_TIME
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return NO_TIME
        try:
            return normalise_timestamp(float(text))
        except ValueError:
            pass
        try:
            return normalise_timestamp(datetime.fromisoformat(text[:-1] + "+00:00" if text[-1] in "Zz" else text))
        except ValueError:
            return NO_TIME
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        return NO_TIME
    if x < _MS_FROM:
        ms = round(x * 1000)
    elif x < _US_FROM:
        ms = round(x)
    elif x < _NS_FROM:
        ms = round(x / 1000)
    else:
        ms = round(x / 1_000_000)
    return max(ms, NO_TIME)


def _canon(meta: Mapping[str, Any]) -> str:
    return json.dumps(meta, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()[:32]


def event_id(ts_ms: int, parts: Sequence[tuple[str, str, Mapping[str, Any]]], origin: str | None = None) -> str:
    """The ID of an event: its normalised time, origin and every block's (kind, text, meta), in order."""
    flat = [str(ts_ms), origin or ""]
    for kind, text, meta in parts:
        flat += [kind, text, _canon(meta)]
    return "ev_" + _digest(*flat)


def block_id(event: str, ordinal: int, kind: str, text: str, meta: Mapping[str, Any]) -> str:
    """The ID of a block: its event's ID (hence the time), its position and its own content."""
    return "blk_" + _digest(event, str(ordinal), kind, text, _canon(meta))


@dataclass(frozen=True, slots=True)
class Block:
    """One part of an event. ``meta`` is JSON-serialisable (tool name, call id, media mime/ref...)."""

    id: str
    kind: BlockKind
    text: str
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False)
class EventRecord:
    """An event with its blocks, as L1 and L2 both hold it (see module docstring).

    ``access_count`` / ``last_access`` travel with the record: an event recalled to L1 and pruned again keeps
    its history of use, which distillation eligibility (≤ 2 accesses, 72 h idle) depends on.
    """

    id: str
    ts_ms: int
    blocks: tuple[Block, ...]
    session: str | None = None
    origin: str | None = None
    channel: str | None = None
    partner: str | None = None
    scene: str | None = None
    group: str | None = None
    dense: DenseVector | None = field(default=None, repr=False)
    terms: TermVector | None = field(default=None, repr=False)
    access_count: int = 0
    last_access: float | None = None

    @property
    def timestamp(self) -> float:
        """Seconds since the epoch (0.0 for :data:`NO_TIME`), the form :class:`MemoryEvent` orders by."""
        return self.ts_ms / 1000.0

    @property
    def text(self) -> str:
        """Every block's text in order, reasoning included: what vectors and token estimates are made of."""
        return "\n".join(b.text for b in self.blocks if b.text)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    def block(self, kind: BlockKind) -> list[Block]:
        return [b for b in self.blocks if b.kind == kind]

    def sort_key(self) -> tuple[int, str, str]:
        """Time position: normalised time, then origin (session order for untimed events), then id."""
        return (self.ts_ms, self.origin or "", self.id)

    def expected_id(self) -> str:
        return event_id(self.ts_ms, [(b.kind, b.text, b.meta) for b in self.blocks], self.origin)

    def ids_consistent(self) -> bool:
        """True when the event and block IDs are what the content derives (nothing was edited in place)."""
        if self.id != self.expected_id():
            return False
        return all(b.id == block_id(self.id, i, b.kind, b.text, b.meta) for i, b in enumerate(self.blocks))

    def accessed(self, now: float) -> EventRecord:
        """The same event with one more access at `now` (IDs untouched)."""
        return replace(self, access_count=self.access_count + 1, last_access=now)

    def with_vectors(self, dense: DenseVector | None) -> EventRecord:
        return replace(self, dense=dense, terms=self.terms or TermVector.from_text(self.text))

    def to_memory_event(self, *, timestamp: float | None = None, tokens: int | None = None) -> MemoryEvent:
        """The scoring view ``prune`` works on (same id, so pruned ids map straight back to records).
        ``timestamp`` / ``tokens``: instead of the record's own (a caller that orders by log position, or
        that already estimated the tokens: `text` is joined and estimated anew on every access)."""
        text = self.text
        return MemoryEvent(
            id=self.id,
            timestamp=self.timestamp if timestamp is None else timestamp,
            text=text,
            tokens=estimate_tokens(text) if tokens is None else tokens,
            group=self.group,
            dense=self.dense,
            terms=self.terms if self.terms is not None else TermVector.from_text(text),
        )


def _call_text(call: Mapping[str, Any]) -> str:
    args = call.get("arguments", "")
    if not isinstance(args, str):
        args = json.dumps(args, sort_keys=True, ensure_ascii=False)
    return f"{call.get('name', '')}({args})"


def build_event(
    *,
    timestamp: float | int | str | datetime | None,
    input: str = "",
    reasoning: str = "",
    response: str = "",
    tool_calls: Sequence[Mapping[str, Any]] = (),
    tool_results: Sequence[Mapping[str, Any]] = (),
    media: Sequence[Mapping[str, Any]] = (),
    session: str | None = None,
    origin: str | None = None,
    channel: str | None = None,
    partner: str | None = None,
    scene: str | None = None,
    group: str | None = None,
    dense: DenseVector | None = None,
    terms: TermVector | None = None,
    lexical: bool = True,
) -> EventRecord:
    """Make an event and its blocks with stable IDs, in reading order input → reasoning → response → calls →
    results → media. Empty parts make no block.

    ``tool_calls`` items: ``{"id", "name", "arguments"}``; ``tool_results``: ``{"call_id", "name", "content"}``;
    ``media``: ``{"text": caption/transcript, ...meta: mime, ref}``. The lexical vector is computed here unless
    given; the dense one comes from the embedder (batched, off the event loop) and may be added later with
    :meth:`EventRecord.with_vectors`. `lexical` False: no term vector (a record read back only to be sent or
    named: tokenising is the costly part, and whoever stores it computes the terms when they are missing).
    """
    parts: list[tuple[BlockKind, str, Mapping[str, Any]]] = []
    if input:
        parts.append(("input", input, {}))
    if reasoning:
        parts.append(("reasoning", reasoning, {}))
    if response:
        parts.append(("response", response, {}))
    for call in tool_calls:
        parts.append(("tool_call", _call_text(call), {"call_id": str(call.get("id", "")), "name": call.get("name")}))
    for res in tool_results:
        meta = {"call_id": str(res.get("call_id", "")), "name": res.get("name")}
        parts.append(("tool_result", str(res.get("content", "")), meta))
    for item in media:
        parts.append(("media", str(item.get("text", "")), {k: v for k, v in item.items() if k != "text"}))
    ts_ms = normalise_timestamp(timestamp)
    eid = event_id(ts_ms, parts, origin)
    blocks = tuple(Block(block_id(eid, i, k, t, m), k, t, dict(m)) for i, (k, t, m) in enumerate(parts))
    record = EventRecord(
        id=eid,
        ts_ms=ts_ms,
        blocks=blocks,
        session=session,
        origin=origin,
        channel=channel,
        partner=partner,
        scene=scene,
        group=group,
        dense=dense,
    )
    if terms is None and not lexical:
        return record
    return replace(record, terms=terms if terms is not None else TermVector.from_text(record.text))
