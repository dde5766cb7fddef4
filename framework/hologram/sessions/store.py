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
crash or power loss can take the last commits. Measured and not adopted: committing the end of each turn
with ``synchronous=FULL`` (an fsync of the WAL) cost +0.3–0.5 ms CPU and +0.4–0.7 ms wall per turn on the
development VM, and the fsync blocks the event loop — every session and every plugin RPC — for as long as
the disk takes (milliseconds on a busy or rotating disk). Older databases are migrated in place on open: columns
added since are added, and rows missing newer JSON fields are read with defaults.

Group commit (`deferred`): the results of one tool batch are written into one open transaction, committed
when the batch is finalised, or at most ``commit_delay_s`` after its first write (an event-loop timer), so
a slow tool never holds finished results uncommitted for long. One commit per result cost ~0.2 ms each
(tools/bench/turn.py, 50 calls: most of the turn). What a crash can lose: results written less than
``commit_delay_s`` before it, which then count as unanswered calls — exactly the state of a kill in the
middle of a call, and `repair` (run when a session is loaded: a turn starts, a client reads it) gives them
a synthetic error result. Writes of other sessions made while a batch is open join its transaction; they
are delayed by at most ``commit_delay_s`` too. Everything else (input, responses, output) commits at once.
Inside a group, the result of a call this process knows to be open (its response was appended here and
it has no result yet) is buffered and the group's results go in by one ``executemany`` — before the
commit, before any other write (so seq order is the order things happened) and before any read; a
result that might be a duplicate takes the single-INSERT path, where the unique index decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hologram import _json
from hologram.sessions.checkpoint import WalCheckpointer

SCHEMA_VERSION = 2
DB_NAME = "sessions.db"
COMMIT_DELAY_S = 0.05  # the longest a finished tool result waits for its batch's commit
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


_RESULT_COLUMNS = (
    "INTO events (session, kind, ts, data, turn, channel, call_of, call_id) VALUES (?, 'tool_result', ?, ?, ?, ?, ?, ?)"
)
_INSERT_RESULT = f"INSERT {_RESULT_COLUMNS}"
_INSERT_RESULT_IF_MISSING = f"INSERT OR IGNORE {_RESULT_COLUMNS}"


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

    def __init__(self, path: Path, *, commit_delay_s: float = COMMIT_DELAY_S) -> None:
        self.path = path
        self.commit_delay_s = commit_delay_s
        self.commits = 0  # transactions committed by this store (tests and the benchmark read it)
        self._deferring = 0  # open `deferred` blocks
        self._timer: asyncio.TimerHandle | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        wal = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        # checkpoints run in a thread of their own, never in a commit on the event loop (checkpoint.py)
        self._checkpointer = WalCheckpointer(path) if wal else None
        if self._checkpointer is not None:
            self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._calls: dict[int, frozenset[str]] = {}  # call ids of responses appended by this process
        # calls without a result, per session, for the sessions `repair` has checked in this process: from
        # then on every write goes through this object, so the open calls are known without a scan
        self._open: dict[str, dict[tuple[int, str], str]] = {}
        self._checked: set[str] = set()
        self._buffered: list[tuple[Any, ...]] = []  # results of the open group not inserted yet (`add_result`)
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

    # -- transactions ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Group the writes made inside (across awaits) into one commit at the end of the block, or at most
        ``commit_delay_s`` after the first of them, whichever comes first. Blocks may nest and overlap (two
        turns' batches): the commit happens when the last one ends. Leaving by an exception commits too:
        what was written is true.

        Mutation checks (done): `_begin` not starting its timer turns tests/agent/test_crash_recovery.py
        (``[timer]``: results finished before the kill are lost) and the group-commit test of
        tests/agent/test_sessions.py red; `_begin` not opening a transaction turns the latter red too
        (results visible to another connection one by one)."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1
            if self._deferring == 0:
                self.commit()

    def commit(self) -> None:
        """Commit the open group, if any."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flush()
        if self._db.in_transaction:
            self._db.execute("COMMIT")
            self._committed()

    def _flush(self) -> None:
        """Insert the buffered results of the open group, in the order they came (one executemany)."""
        if self._buffered:
            rows, self._buffered = self._buffered, []
            self._db.executemany(_INSERT_RESULT_IF_MISSING, rows)

    def _committed(self) -> None:
        self.commits += 1
        checkpointer = self._checkpointer
        if checkpointer is not None:
            checkpointer.committed()
            if checkpointer.failed:  # no checkpoint thread: automatic checkpoints again, on this connection
                self._db.execute("PRAGMA wal_autocheckpoint=1000")
                self._checkpointer = None

    def _execute_write(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        """One logical write, one statement: joins the open group if there is one, else commits by itself
        (autocommit: a single statement is its own transaction — no BEGIN/COMMIT round trips)."""
        if self._deferring:
            self._begin()
        self._flush()  # buffered results first: seq order is the order events happened
        cursor = self._db.execute(sql, params)
        if not self._db.in_transaction:
            self._committed()
        return cursor

    def _begin(self) -> None:
        if self._db.in_transaction:
            return
        self._db.execute("BEGIN")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a script, a test): the block's end commits
            return
        self._timer = loop.call_later(self.commit_delay_s, self.commit)

    # -- sessions -------------------------------------------------------------------------------------

    def create_session(self, channel: str = "cli", session_id: str | None = None) -> str:
        sid = session_id or uuid.uuid4().hex[:12]
        now = time.time()
        self._execute_write(
            "INSERT OR IGNORE INTO sessions (id, created, updated, channel) VALUES (?, ?, ?, ?)",
            (sid, now, now, channel),
        )
        return sid

    def exists(self, session_id: str) -> bool:
        self._flush()  # reads see the buffered results
        row = self._db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
        if row is None:  # a session known only from its events (written before the sessions table)
            row = self._db.execute("SELECT 1 FROM events WHERE session=? LIMIT 1", (session_id,)).fetchone()
        return row is not None

    def list_sessions(self) -> list[dict[str, Any]]:
        """Every session, most recently active first. "updated" is the time of the newest event, computed
        here rather than stored by every append (an UPDATE per event was one more page per commit)."""
        self._flush()  # reads see the buffered results
        rows = self._db.execute(
            "SELECT s.id, s.created, MAX(s.updated, COALESCE(MAX(e.ts), 0)) AS updated, s.channel, COUNT(e.seq) "
            "FROM sessions s "
            "LEFT JOIN events e ON e.session = s.id GROUP BY s.id ORDER BY updated DESC"
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
        ts: float | None = None,
    ) -> int:
        """Append one event; ``ts``: when it happened (default now), for imported history and benchmarks."""
        cursor = self._execute_write(
            "INSERT INTO events (session, kind, ts, data, turn, channel) VALUES (?, ?, ?, ?, ?, ?)",
            (session, kind, time.time() if ts is None else ts, _dumps(data), turn, channel),
        )
        seq = int(cursor.lastrowid or 0)
        if kind == "response":
            calls = [c for c in data.get("tool_calls") or [] if isinstance(c, Mapping)]
            self._calls[seq] = frozenset(str(c.get("id")) for c in calls)
            if calls:
                opened = self._open.setdefault(session, {})
                opened.update({(seq, str(c.get("id"))): str(c.get("name", "")) for c in calls})
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
        row = (session, time.time(), _dumps({**data, "call_id": call_id}), turn, channel, call_of, call_id)
        opened = self._open.get(session)
        if self._deferring and opened is not None and opened.pop((call_of, call_id), None) is not None:
            # a call this process knows to be open cannot have a result yet (every write of the session goes
            # through this object): buffered, and inserted with the group's other results by one executemany
            self._begin()
            self._buffered.append(row)
            return True
        try:
            cursor = self._execute_write(_INSERT_RESULT_IF_MISSING if if_missing else _INSERT_RESULT, row)
        except sqlite3.IntegrityError:
            raise SessionError(f"call {call_id!r} of response {call_of} already has a result") from None
        self._open.get(session, {}).pop((call_of, call_id), None)
        return cursor.rowcount > 0

    def events(self, session: str, *, after: int = 0) -> list[Event]:
        """The session's events in order; ``after``: only those with a greater seq (an incremental read)."""
        self._flush()  # reads see the buffered results
        rows = self._db.execute(
            "SELECT seq, session, kind, ts, data, turn, channel, call_of, call_id FROM events "
            "WHERE session=? AND seq>? ORDER BY seq",
            (session, after),
        ).fetchall()
        return [_event(r) for r in rows]

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
        with self.deferred():  # one commit for all of them
            for call_of, call_id, name in calls:
                data = {"name": name, "content": content, "is_error": True, "synthetic": True}
                added += self.add_result(session, call_of, call_id, data, if_missing=True)
        return added

    def repair(self, session: str, content: str = NO_RESULT) -> int:
        """Close calls left unanswered by an interrupted turn (kernel killed mid-call), with ``content`` as
        their result. Run at every turn start, so it must not cost O(session): the first call per session in
        this process checks the database (an SQL aggregate, then the full scan only if it finds open calls);
        later calls close just the calls this process knows to be open (normally none: a turn closes its own
        in ``finally``, by this method). Another process writing the same session meanwhile is not supported
        (one kernel per data dir)."""
        if session in self._checked:
            opened = self._open.get(session, {})
            return self.close_calls(session, [(s, c, n) for (s, c), n in opened.items()], content)
        added = (
            self.close_calls(session, self.unanswered(session), content) if self._may_have_open_calls(session) else 0
        )
        self._open.pop(session, None)  # all closed now; from here on tracked by append/add_result
        self._checked.add(session)
        return added

    def _may_have_open_calls(self, session: str) -> bool:
        """Pre-check for `repair`'s first look at a session in this process: calls made vs results linked
        to a call, counted in SQL (no Python objects per event; ~2 ms at 2 800 events). Results are unique
        per call and always belong to a call (`add_result`), so equal counts mean nothing is open. Rows that
        are not valid JSON count as open, for the full check to look at.
        Mutation check (done): always answering False turns tests/agent/test_crash_recovery.py and the
        repair test of test_sessions.py red."""
        self._flush()  # reads see the buffered results
        row = self._db.execute(
            "SELECT COALESCE(SUM(CASE WHEN kind='response' THEN (CASE WHEN json_valid(data) "
            "THEN COALESCE(json_array_length(data, '$.tool_calls'), 0) ELSE 1 END) "
            "WHEN kind='tool_result' AND call_of IS NOT NULL THEN -1 ELSE 0 END), 0) "
            "FROM events WHERE session=?",
            (session,),
        ).fetchone()
        return int(row[0]) != 0

    def close(self) -> None:
        self.commit()
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._db.close()


def _dumps(data: Mapping[str, Any]) -> str:
    return _json.dumps(data)  # orjson: ~4 µs less per event than the stdlib (hologram/_json.py)


def _loads(text: str | None) -> dict[str, Any]:
    try:
        value = _json.loads(text or "{}")
    except _json.JSONDecodeError:
        return {"unreadable": text}
    return value if isinstance(value, dict) else {"value": value}


def _event(row: tuple[Any, ...]) -> Event:
    """An `Event` from a row of `events`; its JSON decoded once. A row with no ``call_id`` in its column
    (written before the column existed) takes the one in its data."""
    seq, session, kind, ts, text, turn, channel, call_of, call_id = row
    data = _loads(text)
    if not call_id:
        value = data.get("call_id")
        call_id = None if value is None else str(value)
    return Event(seq, session, kind, float(ts or 0.0), data, turn, channel, call_of, call_id)
