"""The session log as read so far: one in-memory copy of each recently used session's events.

Both consumers of a session's history — the request builder without memory (`HistoryCache`) and memory
(`hologram.memory.session_memory.SessionMemory`, which ranks every event before each request) — read the
log through one `SessionLog`, so a request reads SQLite once, and only what was appended since the last
look: events are append-only with increasing seqs, so the events ``≤ seq`` already held followed by those
``> seq`` are the whole session. Rebuilding from SQLite at every request cost O(session length)
(tools/bench/turn.py's long-session row: 200 turns × 10 calls, ~40 ms of the 200th turn). Only for a
single writer process — the kernel's — which is how sessions.db is used.
"""

from __future__ import annotations

from collections import OrderedDict

from hologram.sessions.store import Event, SessionStore

#: Sessions whose events stay in memory (least recently used beyond this are read again on next use).
MAX_SESSIONS = 64


class SessionLog:
    """The events of up to ``max_sessions`` recently used sessions, extended incrementally (module docstring)."""

    def __init__(self, store: SessionStore, max_sessions: int = MAX_SESSIONS) -> None:
        self.store = store
        self.max_sessions = max_sessions
        self._events: OrderedDict[str, tuple[Event, ...]] = OrderedDict()

    def events(self, sid: str) -> tuple[Event, ...]:
        """The session's events in log order; only those appended since the last call are read. A tuple,
        replaced when it grows: a caller's snapshot stays whole across its awaits."""
        held = self._events.pop(sid, ())
        new = self.store.events(sid, after=held[-1].seq if held else 0)
        if new:
            held = (*held, *new)
        self._events[sid] = held
        while len(self._events) > self.max_sessions:
            self._events.popitem(last=False)
        return held

    def forget(self, sid: str) -> None:
        """Drop a session's events (a deleted session; they are read again on next use)."""
        self._events.pop(sid, None)
