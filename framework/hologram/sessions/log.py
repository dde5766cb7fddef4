"""The session log as read so far: one in-memory copy of each recently used session's events.

Both consumers of a session's history — the request builder without memory (`HistoryCache`) and memory
(`hologram.memory.session_memory.SessionMemory`, which ranks every event before each request) — read the
log through one `SessionLog`, so a request reads SQLite once, and only what was appended since the last
look: events are append-only with increasing seqs, so the events ``≤ seq`` already held followed by those
``> seq`` are the whole session. Rebuilding from SQLite at every request cost O(session length)
(tools/bench/turn.py's long-session row: 200 turns × 10 calls, ~40 ms of the 200th turn). Only for a
single writer process — the kernel's — which is how sessions.db is used.

Memory ranks a long session from its index on disk and needs only the recent events here, so it
trims what it has sealed (:meth:`~SessionLog.trim`): a session's held events stay bounded (issue 22); an older event
is read back by seq (`SessionStore.events_at`).

What is held is bounded in bytes, all sessions together (``[memory] log_cache_bytes``; was 64 sessions by count,
whatever their size: ~0.8 MB each after a turn of 400 tool calls and a 120 KB answer, ~24 MB for the 28 sessions of
``tools/bench/http_turns.py --long``): the least recently used sessions go first, and are read again from
``sessions.db`` on their next use. An idle session is dropped sooner still (:meth:`SessionLog.forget`, called by
memory when the session has been idle ``[memory] release_idle_s``): decoded events kept after the turn that read
them pin the allocator's arenas its churn left mostly free (issue 41).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Sequence

from hologram.sessions.event import Event
from hologram.sessions.store import SessionStore

#: Bytes of events held, all sessions together (least recently used beyond this are read again on next use).
LOG_CACHE_BYTES = 8 * 1024 * 1024


def event_bytes(event: Event) -> int:
    """What one held event weighs: its object and its bytes (`Event.held_bytes`: events are held as their row's
    JSON, hologram/sessions/event.py; decoded, they weighed ~400 bytes more and ~5 small objects each)."""
    return event.held_bytes


class _Held:
    """One session's events as read so far, and the tuple handed out for them (made when first asked)."""

    __slots__ = ("events", "last", "size", "snapshot", "start")

    def __init__(self, start: int = 0) -> None:
        self.events: list[Event] = []
        self.size = 0
        """`event_bytes` of the held events."""
        self.snapshot: tuple[Event, ...] | None = ()
        self.start = start
        """Events with a seq up to this one are not held (trimmed, or never read: the reader began later)."""
        self.last = start
        """The highest seq read."""


class SessionLog:
    """The events of recently used sessions up to ``max_bytes`` in all, extended incrementally (module
    docstring). The session just read stays held whatever its size (its caller is using it)."""

    def __init__(self, store: SessionStore, max_bytes: int = LOG_CACHE_BYTES) -> None:
        self.store = store
        self.max_bytes = max_bytes
        self.size = 0
        """Bytes held, all sessions (`event_bytes`)."""
        self._held: OrderedDict[str, _Held] = OrderedDict()

    def held(self, sid: str) -> bool:
        """Whether the session's events are held (read, and not dropped since)."""
        return sid in self._held

    def events(self, sid: str) -> tuple[Event, ...]:
        """The session's held events in log order (all of them unless memory trimmed the oldest: then at
        least the last sealed chunk of its index, a few hundred events); only those appended since the last
        read are read. A tuple, replaced when the session grows: a caller's snapshot stays whole across its
        awaits."""
        held = self._read(sid)
        if held.snapshot is None:
            held.snapshot = tuple(held.events)
        return held.snapshot

    def after(self, sid: str, seq: int) -> list[Event]:
        """The session's events with a seq above `seq`, in log order: what a caller that has seen the log up
        to `seq` lacks, without copying the rest (`HistoryCache`, every turn without memory). A session not
        held yet is read from `seq` on (nothing older is needed by this caller)."""
        held = self._read(sid, start=seq)
        if seq < held.start:  # trimmed: the gap comes from the store
            return self.store.events(sid, after=seq)
        return held.events[bisect_right(held.events, seq, key=_seq) :]

    def held_at(self, sid: str, seqs: Sequence[int]) -> dict[int, Event]:
        """Those of the events with `seqs` the log holds for the session, by seq (nothing is read): memory asks
        it before the store for the sealed events a request sends — most are of the last sealed chunk, which the
        log still holds, and reading them from the store again cost each request ~50 rows (issue 39 item 7)."""
        held = self._held.get(sid)
        if held is None or not held.events:
            return {}
        events, first = held.events, held.events[0].seq
        out: dict[int, Event] = {}
        for seq in seqs:
            if seq < first:
                continue
            k = bisect_left(events, seq, key=_seq)
            if k < len(events) and events[k].seq == seq:
                out[seq] = events[k]
        return out

    def trim(self, sid: str, below: int) -> None:
        """Stop holding the session's events with a seq below `below` (memory sealed them into its index)."""
        held = self._held.get(sid)
        if held is None or below - 1 <= held.start:
            return
        cut = bisect_right(held.events, below - 1, key=_seq)
        gone = sum(event_bytes(e) for e in held.events[:cut])
        held.events = held.events[cut:]
        held.size -= gone
        self.size -= gone
        held.start = below - 1
        held.snapshot = None

    def forget(self, sid: str) -> None:
        """Drop a session's events (a deleted or idle session; they are read again on next use)."""
        held = self._held.pop(sid, None)
        if held is not None:
            self.size -= held.size

    def _read(self, sid: str, start: int = 0) -> _Held:
        held = self._held.pop(sid, None) or _Held(start)
        new = self.store.events(sid, after=held.last)
        if new:
            added = sum(event_bytes(e) for e in new)
            held.events.extend(new)
            held.size += added
            self.size += added
            held.last = new[-1].seq
            held.snapshot = None
        self._held[sid] = held
        while self.size > self.max_bytes and len(self._held) > 1:
            _, old = self._held.popitem(last=False)
            self.size -= old.size
        return held


def _seq(event: Event) -> int:
    return event.seq
