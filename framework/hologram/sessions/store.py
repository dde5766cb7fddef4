"""Sessions on disk: one SQLite database in WAL mode, conversations stored as append-only events.

Why events and not messages: an event records what *happened* (the user's input, one LLM response with its
own reasoning and usage, one tool result, what was delivered) with its time and channel; the messages sent
to a model are derived from them (`history.messages_from_events`) and can change shape per vendor.

The call/result invariant is held by the database itself: a ``tool_result`` row names the response row
that made the call (``call_of``) and the call's id, a unique index allows one result per call, and
`add_result` refuses a result whose call is not in that response. `repair` gives calls that never got a
result (the kernel was killed mid-turn) a synthetic error result, so every call has exactly one result and
every result its call, on disk.

WAL with ``synchronous=NORMAL``: a commit survives the kernel process dying (kill -9, a crash); only an OS
crash or power loss can take the last commits. Older databases are migrated in place on open: columns
added since are added, and rows missing newer JSON fields are read with defaults.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2
DB_NAME = "sessions.db"
NO_RESULT = "error: no result was recorded for this call (the turn was interrupted)"

_TABLES = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, created REAL NOT NULL, updated REAL NOT NULL, channel TEXT
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, kind TEXT NOT NULL, ts REAL NOT NULL,
    data TEXT NOT NULL DEFAULT '{}'
);
"""
# columns added after the first layout: (name, SQL type); `_migrate` adds any that is missing
_ADDED_COLUMNS = (("turn", "TEXT"), ("channel", "TEXT"), ("call_of", "INTEGER"), ("call_id", "TEXT"))
_INDEXES = """
CREATE INDEX IF NOT EXISTS events_by_session ON events (session, seq);
CREATE UNIQUE INDEX IF NOT EXISTS one_result_per_call ON events (call_of, call_id) WHERE kind = 'tool_result';
"""


class SessionError(Exception):
    """A write that would break the session's invariants (a result without its call)."""


@dataclass(frozen=True)
class Event:
    seq: int
    session: str
    kind: str  # input | response | tool_result | output
    ts: float
    data: dict[str, Any]
    turn: str | None = None
    channel: str | None = None
    call_of: int | None = None
    call_id: str | None = None


class SessionStore:
    """All sessions of a data directory. Use from one thread (the kernel's event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._calls: dict[int, frozenset[str]] = {}  # call ids of responses appended by this process
        self._migrate()

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> SessionStore:
        return cls(data_dir / DB_NAME)

    def _migrate(self) -> None:
        self._db.executescript(_TABLES)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
        for name, kind in _ADDED_COLUMNS:
            if name not in have:
                self._db.execute(f"ALTER TABLE events ADD COLUMN {name} {kind}")
        if "call_of" not in have:  # an older layout: results carried the call id in their JSON only
            self._backfill_calls()
        self._db.executescript(_INDEXES)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _backfill_calls(self) -> None:
        rows = self._db.execute("SELECT seq, session, kind, data FROM events ORDER BY seq").fetchall()
        last_response: dict[str, tuple[int, set[str]]] = {}
        for seq, session, kind, data in rows:
            payload = _loads(data)
            if kind == "response":
                ids = {str(c.get("id")) for c in payload.get("tool_calls") or [] if isinstance(c, Mapping)}
                last_response[session] = (seq, ids)
            elif kind == "tool_result":
                call_id = payload.get("call_id") or payload.get("tool_call_id")
                owner = last_response.get(session)
                if owner is not None and call_id in owner[1]:
                    self._db.execute("UPDATE events SET call_of=?, call_id=? WHERE seq=?", (owner[0], call_id, seq))

    # -- sessions -------------------------------------------------------------------------------------

    def create_session(self, channel: str = "cli", session_id: str | None = None) -> str:
        sid = session_id or uuid.uuid4().hex[:12]
        now = time.time()
        self._db.execute(
            "INSERT OR IGNORE INTO sessions (id, created, updated, channel) VALUES (?, ?, ?, ?)",
            (sid, now, now, channel),
        )
        return sid

    def exists(self, session_id: str) -> bool:
        row = self._db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
        if row is None:  # a session known only from its events (written before the sessions table)
            row = self._db.execute("SELECT 1 FROM events WHERE session=? LIMIT 1", (session_id,)).fetchone()
        return row is not None

    def list_sessions(self) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT s.id, s.created, s.updated, s.channel, COUNT(e.seq) FROM sessions s "
            "LEFT JOIN events e ON e.session = s.id GROUP BY s.id ORDER BY s.updated DESC"
        ).fetchall()
        return [{"id": r[0], "created": r[1], "updated": r[2], "channel": r[3], "events": r[4]} for r in rows]

    # -- events ---------------------------------------------------------------------------------------

    def append(
        self,
        session: str,
        kind: str,
        data: Mapping[str, Any],
        *,
        turn: str | None = None,
        channel: str | None = None,
    ) -> int:
        now = time.time()
        cursor = self._db.execute(
            "INSERT INTO events (session, kind, ts, data, turn, channel) VALUES (?, ?, ?, ?, ?, ?)",
            (session, kind, now, _dumps(data), turn, channel),
        )
        self._db.execute("UPDATE sessions SET updated=? WHERE id=?", (now, session))
        seq = int(cursor.lastrowid or 0)
        if kind == "response":
            self._calls[seq] = frozenset(str(c.get("id")) for c in data.get("tool_calls") or [])
        return seq

    def add_result(
        self,
        session: str,
        call_of: int,
        call_id: str,
        data: Mapping[str, Any],
        *,
        turn: str | None = None,
        channel: str | None = None,
        if_missing: bool = False,
    ) -> bool:
        """Persist the result of call ``call_id`` of response ``call_of``. Returns False when the call
        already has one and ``if_missing`` is set; raises `SessionError` for a second result otherwise, or
        for a call that the response does not contain."""
        ids = self._calls.get(call_of)
        if ids is None:
            row = self._db.execute(
                "SELECT data FROM events WHERE seq=? AND session=? AND kind='response'", (call_of, session)
            ).fetchone()
            ids = frozenset(str(c.get("id")) for c in (_loads(row[0]).get("tool_calls") or [])) if row else frozenset()
        if call_id not in ids:
            raise SessionError(f"result for call {call_id!r}, which response {call_of} of {session} did not make")
        verb = "INSERT OR IGNORE" if if_missing else "INSERT"
        try:
            cursor = self._db.execute(
                f"{verb} INTO events (session, kind, ts, data, turn, channel, call_of, call_id) "
                "VALUES (?, 'tool_result', ?, ?, ?, ?, ?, ?)",
                (session, time.time(), _dumps({**data, "call_id": call_id}), turn, channel, call_of, call_id),
            )
        except sqlite3.IntegrityError:
            raise SessionError(f"call {call_id!r} of response {call_of} already has a result") from None
        return cursor.rowcount > 0

    def events(self, session: str) -> list[Event]:
        rows = self._db.execute(
            "SELECT seq, session, kind, ts, data, turn, channel, call_of, call_id FROM events "
            "WHERE session=? ORDER BY seq",
            (session,),
        ).fetchall()
        return [
            Event(r[0], r[1], r[2], float(r[3] or 0.0), _loads(r[4]), r[5], r[6], r[7], r[8] or _call_id(r[4]))
            for r in rows
        ]

    def unanswered(self, session: str) -> list[tuple[int, str, str]]:
        """(response seq, call id, tool name) of every call without a result."""
        events = self.events(session)
        answered = {(e.call_of, e.call_id) for e in events if e.kind == "tool_result"}
        missing = []
        for event in events:
            if event.kind == "response":
                for call in event.data.get("tool_calls") or []:
                    if (event.seq, str(call.get("id"))) not in answered:
                        missing.append((event.seq, str(call.get("id")), str(call.get("name", ""))))
        return missing

    def close_calls(self, session: str, calls: Iterable[tuple[int, str, str]], content: str = NO_RESULT) -> int:
        """Give each listed call a synthetic error result unless it has one; returns how many were added."""
        added = 0
        for call_of, call_id, name in calls:
            data = {"name": name, "content": content, "is_error": True, "synthetic": True}
            added += self.add_result(session, call_of, call_id, data, if_missing=True)
        return added

    def repair(self, session: str) -> int:
        """Close calls left unanswered by an interrupted turn (kernel killed mid-call)."""
        return self.close_calls(session, self.unanswered(session))

    def close(self) -> None:
        self._db.close()


def _dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {"unreadable": text}
    return value if isinstance(value, dict) else {"value": value}


def _call_id(text: str | None) -> str | None:
    value = _loads(text).get("call_id")
    return None if value is None else str(value)
