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

from bisect import bisect_right
from collections import OrderedDict

from hologram.sessions.store import Event, SessionStore

#: Sessions whose events stay in memory (least recently used beyond this are read again on next use).
MAX_SESSIONS = 64


class _Held:
    """One session's events as read so far, and the tuple handed out for them (made when first asked)."""

    __slots__ = ("events", "snapshot")

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.snapshot: tuple[Event, ...] | None = ()


class SessionLog:
    """The events of up to ``max_sessions`` recently used sessions, extended incrementally (module docstring)."""

    def __init__(self, store: SessionStore, max_sessions: int = MAX_SESSIONS) -> None:
        self.store = store
        self.max_sessions = max_sessions
        self._held: OrderedDict[str, _Held] = OrderedDict()

    def events(self, sid: str) -> tuple[Event, ...]:
        """The session's events in log order; only those appended since the last read are read. A tuple,
        replaced when the session grows: a caller's snapshot stays whole across its awaits."""
        held = self._read(sid)
        if held.snapshot is None:
            held.snapshot = tuple(held.events)
        return held.snapshot

    def after(self, sid: str, seq: int) -> list[Event]:
        """The session's events with a seq above `seq`, in log order: what a caller that has seen the log up
        to `seq` lacks, without copying the rest (`HistoryCache`, every turn without memory)."""
        held = self._read(sid).events
        return held[bisect_right(held, seq, key=_seq) :]

    def forget(self, sid: str) -> None:
        """Drop a session's events (a deleted session; they are read again on next use)."""
        self._held.pop(sid, None)

    def _read(self, sid: str) -> _Held:
        held = self._held.pop(sid, None) or _Held()
        new = self.store.events(sid, after=held.events[-1].seq if held.events else 0)
        if new:
            held.events.extend(new)
            held.snapshot = None
        self._held[sid] = held
        while len(self._held) > self.max_sessions:
            self._held.popitem(last=False)
        return held


def _seq(event: Event) -> int:
    return event.seq
