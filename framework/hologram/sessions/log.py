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
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict

from hologram.sessions.store import Event, SessionStore

#: Sessions whose events stay in memory (least recently used beyond this are read again on next use).
MAX_SESSIONS = 64


class _Held:
    """One session's events as read so far, and the tuple handed out for them (made when first asked)."""

    __slots__ = ("events", "last", "snapshot", "start")

    def __init__(self, start: int = 0) -> None:
        self.events: list[Event] = []
        self.snapshot: tuple[Event, ...] | None = ()
        self.start = start
        """Events with a seq up to this one are not held (trimmed, or never read: the reader began later)."""
        self.last = start
        """The highest seq read."""


class SessionLog:
    """The events of up to ``max_sessions`` recently used sessions, extended incrementally (module docstring)."""

    def __init__(self, store: SessionStore, max_sessions: int = MAX_SESSIONS) -> None:
        self.store = store
        self.max_sessions = max_sessions
        self._held: OrderedDict[str, _Held] = OrderedDict()

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

    def trim(self, sid: str, below: int) -> None:
        """Stop holding the session's events with a seq below `below` (memory sealed them into its index)."""
        held = self._held.get(sid)
        if held is None or below - 1 <= held.start:
            return
        held.events = held.events[bisect_right(held.events, below - 1, key=_seq) :]
        held.start = below - 1
        held.snapshot = None

    def forget(self, sid: str) -> None:
        """Drop a session's events (a deleted session; they are read again on next use)."""
        self._held.pop(sid, None)

    def _read(self, sid: str, start: int = 0) -> _Held:
        held = self._held.pop(sid, None) or _Held(start)
        new = self.store.events(sid, after=held.last)
        if new:
            held.events.extend(new)
            held.last = new[-1].seq
            held.snapshot = None
        self._held[sid] = held
        while len(self._held) > self.max_sessions:
            self._held.popitem(last=False)
        return held


def _seq(event: Event) -> int:
    return event.seq
