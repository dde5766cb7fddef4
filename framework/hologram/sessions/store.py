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

A damaged file (docs/memory.md, "Damaged files"): the open checks of `hologram.storage.dbfile` and two cheap reads
(both ends of ``events``) turn a smashed header, a truncated file or SQLite's "malformed" into one
`DamagedDatabaseError` naming the file and `hologram doctor --repair`; a damaged page met later does the
same for the read that met it. A *row* SQLite can read but that does not decode costs only its event
(`hologram.sessions.damaged`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from hologram.base import _fastjson as _json
from hologram.sessions import damaged
from hologram.sessions.checkpoint import WalCheckpointer
from hologram.sessions.event import Event, pack_row
from hologram.storage import idle_cache
from hologram.storage.dbfile import DamagedDatabaseError, DiskFullError, check_file, is_damage, is_disk_full
from hologram.storage.sqlmem import in_chunks, limit_cache, marks

log = logging.getLogger("hologram.sessions")

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
_ADDED_SESSION_COLUMNS = (("title", "TEXT"),)
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


class SessionStore:
    """All sessions of a data directory. Use from one thread (the kernel's event loop)."""

    def __init__(self, path: Path, *, commit_delay_s: float = COMMIT_DELAY_S) -> None:
        self.path = path
        self.commit_delay_s = commit_delay_s
        self.commits = 0  # transactions committed by this store (tests and the benchmark read it)
        self._deferring = 0  # open `deferred` blocks
        self._timer: asyncio.TimerHandle | None = None
        self._reported: set[int] = set()  # seqs of damaged rows already warned about
        path.parent.mkdir(parents=True, exist_ok=True)
        check_file(path)  # a smashed header or a truncated file: the error names the file and the fix
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        try:
            limit_cache(self._db)  # reads the schema: damage is reported here, converted below
            wal = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            if wal:
                self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._migrate()
            self._probe()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            self._raise(exc)
        # checkpoints run in a thread of their own, never in a commit on the event loop (checkpoint.py)
        self._checkpointer = WalCheckpointer(path) if wal else None
        # call ids of responses appended by this process, until their last result (`_answered`)
        self._calls: dict[int, frozenset[str]] = {}
        # calls without a result, per session, for the sessions `repair` has checked in this process: from
        # then on every write goes through this object, so the open calls are known without a scan
        self._open: dict[str, dict[tuple[int, str], str]] = {}
        self._checked: set[str] = set()
        self._buffered: list[tuple[Any, ...]] = []  # results of the open group not inserted yet (`add_result`)
        idle_cache.register(self.release_cache)

    @classmethod
    def in_data_dir(cls, data_dir: Path) -> SessionStore:
        return cls(data_dir / DB_NAME)

    def _migrate(self) -> None:
        self._db.executescript(_TABLES)
        have = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
        for name, kind in _ADDED_COLUMNS:
            if name not in have:
                self._db.execute(f"ALTER TABLE events ADD COLUMN {name} {kind}")
        have_sessions = {row[1] for row in self._db.execute("PRAGMA table_info(sessions)")}
        for name, kind in _ADDED_SESSION_COLUMNS:
            if name not in have_sessions:
                self._db.execute(f"ALTER TABLE sessions ADD COLUMN {name} {kind}")
        if "call_of" not in have:  # an older layout: results carried the call id in their JSON only
            self._backfill_calls()
        self._db.executescript(_INDEXES)
        self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _probe(self) -> None:
        """Read both ends of the main table (a few pages): a truncated file whose header does not tell, or
        a damaged root, fails here — at open, with the doctor's hint — rather than in the first turn."""
        self._db.execute("SELECT seq FROM events ORDER BY seq LIMIT 1").fetchall()
        self._db.execute("SELECT seq FROM events ORDER BY seq DESC LIMIT 1").fetchall()
        self._db.execute("SELECT rowid FROM sessions ORDER BY rowid DESC LIMIT 1").fetchall()

    def _raise(self, exc: sqlite3.DatabaseError) -> NoReturn:
        """Re-raise an sqlite3 error; one reporting damage as `DamagedDatabaseError` (file and fix)."""
        if is_damage(exc):
            raise DamagedDatabaseError(self.path, f'SQLite reports "{exc}"') from None
        if is_disk_full(exc, self.path):
            raise DiskFullError(self.path) from None
        raise exc

    def _backfill_calls(self) -> None:
        rows = self._db.execute(
            "SELECT seq, CAST(session AS BLOB), CAST(kind AS BLOB), CAST(data AS BLOB) FROM events ORDER BY seq"
        ).fetchall()
        last_response: dict[bytes, tuple[int, set[str]]] = {}
        for seq, session, raw_kind, data in rows:
            kind = bytes(raw_kind or b"").decode("utf-8", "replace")
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

    def start_checkpoints(self) -> None:
        """Start the WAL checkpoint thread now rather than at the first commit (a first turn then does not
        start a thread: issue 39 item 9). A store without WAL has none."""
        if self._checkpointer is not None:
            self._checkpointer.start()

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
        try:
            cursor = self._db.execute(sql, params)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            self._raise(exc)
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

    def create_session(self, channel: str = "cli", session_id: str | None = None, *, title: str = "") -> str:
        """A session row (nothing if ``session_id`` has one already). ``title``: the new session's title (the
        turn API gives it from the first input, `hologram.sessions.title`); "" leaves it untitled."""
        sid = session_id or uuid.uuid4().hex[:12]
        now = time.time()
        self._execute_write(
            "INSERT OR IGNORE INTO sessions (id, created, updated, channel, title) VALUES (?, ?, ?, ?, ?)",
            (sid, now, now, channel, title or None),
        )
        return sid

    def title(self, session_id: str) -> str:
        """The session's title ("" when it has none, or no row)."""
        self._flush()
        try:
            row = self._db.execute("SELECT title FROM sessions WHERE id=?", (session_id,)).fetchone()
        except sqlite3.OperationalError as exc:
            if not _undecodable(exc):
                self._raise(exc)
            return ""  # a damaged title: untitled, rather than a failed read of the session
        except sqlite3.DatabaseError as exc:
            self._raise(exc)
        return str(row[0] or "") if row else ""

    def rename_session(self, session_id: str, title: str) -> bool:
        """Give a session a title (shown by `sessions/list`); False if there is no such session."""
        if not self.exists(session_id):
            return False
        self.create_session("cli", session_id)  # a session known only from its events gets its row first
        self._execute_write("UPDATE sessions SET title=? WHERE id=?", (title, session_id))
        return True

    def delete_session(self, session_id: str) -> bool:
        """Delete a session and all its events, durably; False if there was none."""
        if not self.exists(session_id):
            return False
        self._execute_write("DELETE FROM events WHERE session=?", (session_id,))
        self._execute_write("DELETE FROM sessions WHERE id=?", (session_id,))
        self.commit()
        self._open.pop(session_id, None)
        self._checked.discard(session_id)
        return True

    def exists(self, session_id: str) -> bool:
        self._flush()  # reads see the buffered results
        try:
            row = self._db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
            if row is None:  # a session known only from its events (written before the sessions table)
                row = self._db.execute("SELECT 1 FROM events WHERE session=? LIMIT 1", (session_id,)).fetchone()
        except sqlite3.DatabaseError as exc:
            self._raise(exc)
        return row is not None

    def list_sessions(
        self, *, limit: int | None = None, after: tuple[float, str] | None = None
    ) -> list[dict[str, Any]]:
        """Every session, most recently active first (ties by id). "updated" is the time of the newest event,
        computed here rather than stored by every append (an UPDATE per event was one more page per commit).
        ``limit``/``after``: a page — at most ``limit`` sessions that come after the (updated, id) of the
        previous page's last one (keyset paging: no offset to drift when sessions are added meanwhile)."""
        self._flush()  # reads see the buffered results
        having = ""
        params: tuple[Any, ...] = ()
        if after is not None:
            # the expression, not the alias: in HAVING, `updated` would be the sessions column (creation time)
            having = f" HAVING {_ACTIVE} < ? OR ({_ACTIVE} = ? AND s.id > ?)"
            params = (after[0], after[0], after[1])
        sql = (
            f"SELECT s.id, s.created, {_ACTIVE} AS updated, s.channel, COUNT(e.seq), s.title "
            "FROM sessions s "
            f"LEFT JOIN events e ON e.session = s.id GROUP BY s.id{having} ORDER BY updated DESC, s.id"
        )
        if limit is not None:
            sql, params = sql + " LIMIT ?", (*params, limit)
        try:
            rows = self._db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if not _undecodable(exc):
                self._raise(exc)
            rows = [  # a damaged id or channel: listed with replacement characters, not a failed listing
                tuple(v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in row)
                for row in self._fetch_bytes(sql, params)
            ]
        except sqlite3.DatabaseError as exc:
            self._raise(exc)
        return [
            {"id": r[0], "title": r[5] or "", "created": r[1], "updated": r[2], "channel": r[3], "events": r[4]}
            for r in rows
        ]

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
            if calls:
                self._calls[seq] = frozenset(str(c.get("id")) for c in calls)
                if len(self._calls) > _CALLS_KEPT:  # a cache (add_result reads the row otherwise): bounded
                    del self._calls[next(iter(self._calls))]
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
            row = self._db.execute(  # as bytes: a damaged row must not fail the lookup (it makes no calls)
                "SELECT CAST(data AS BLOB) FROM events WHERE seq=? AND session=? AND kind='response'",
                (call_of, session),
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
            self._answered(opened, call_of)
            return True
        try:
            cursor = self._execute_write(_INSERT_RESULT_IF_MISSING if if_missing else _INSERT_RESULT, row)
        except sqlite3.IntegrityError:
            raise SessionError(f"call {call_id!r} of response {call_of} already has a result") from None
        if opened is not None and opened.pop((call_of, call_id), None) is not None:
            self._answered(opened, call_of)
        return cursor.rowcount > 0

    def _answered(self, opened: Mapping[tuple[int, str], str], call_of: int) -> None:
        """Forget response `call_of`'s call ids once none of its calls is open (a late second result reads
        them from its row, as for an older response). Kept until the cache's bound instead, a long turn's ids
        and sets — made one by one between the turn's ~24k short-lived objects — outlived it, scattered: with
        the turn's other survivors they kept pymalloc arenas the turn had otherwise freed (issue 41; 2,560 ids
        and 256 sets after long turns of 400 calls, ~1,450 of the ~2,300 blocks a long turn left behind,
        tracemalloc)."""
        ids = self._calls.get(call_of)
        if ids is not None and not any((call_of, call_id) in opened for call_id in ids):
            del self._calls[call_of]

    def events(self, session: str, *, after: int = 0) -> list[Event]:
        """The session's events in order; ``after``: only those with a greater seq (an incremental read).
        A row that cannot be decoded is reported once and replaced or skipped (`hologram.sessions.damaged`).

        Mutation check (done): returning the rows of the bytes re-read without the stand-ins (skipping every
        damaged row) turns tests/agent/test_damaged_rows.py red (a call without its result)."""
        return self._read_events(session, _EVENTS, (session, after))

    def events_before(self, session: str, *, before: int | None, limit: int) -> list[Event]:
        """The newest ``limit`` events of the session with a seq below ``before`` (None: the newest), in order:
        a page of ``sessions/read``, read without loading the whole session."""
        page = self._read_events(session, _EVENTS_BEFORE, (session, before or _NO_BOUND, limit))
        return page[::-1]

    def events_at(self, session: str, seqs: Iterable[int]) -> list[Event]:
        """The session's events with these seqs, in log order (a seq the log lacks is absent): how memory
        reads an old event back — its index keeps only a tail of recent events in memory (issue 22)."""
        wanted = sorted(set(seqs))
        out: list[Event] = []
        for chunk in in_chunks(wanted):  # padded: a few SQL texts, not one per count (hologram/storage/sqlmem.py)
            sql = _EVENTS_AT.format(marks=marks(len(chunk)))
            out += self._read_events(session, sql, (session, *chunk))
        return out

    def _read_events(self, session: str, sql: str, params: tuple[Any, ...]) -> list[Event]:
        self._flush()  # reads see the buffered results
        as_bytes = False
        try:
            rows = self._db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if not _undecodable(exc):
                self._raise(exc)
            rows, as_bytes = self._fetch_bytes(sql, params), True  # some text is not UTF-8: row by row
        except sqlite3.DatabaseError as exc:
            self._raise(exc)
        out: list[Event] = []
        for row in rows:
            try:
                out.append(_event(damaged.text_row(row) if as_bytes else row))
            except damaged.UnreadableRow as exc:
                event = self._stand_in(session, row, exc.reason)
                if event is not None:
                    out.append(event)
        return out

    def _fetch_bytes(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        """Run a read with every text value as bytes (the slow path, taken only for damaged rows)."""
        self._db.text_factory = bytes
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            self._raise(exc)
        finally:
            self._db.text_factory = str

    def _stand_in(self, session: str, row: tuple[Any, ...], reason: str) -> Event | None:
        """What `events` returns for a damaged row (module `damaged`): reported once, then a placeholder
        result, a response rebuilt from its results, or nothing."""
        seq, ts = int(row[0]), row[3]
        kind, call_of, call_id = damaged.partial(row)
        if seq not in self._reported:
            self._reported.add(seq)
            log.warning(
                "%s: event %d (%s) of session %s is damaged: %s; it is skipped (hologram doctor lists such rows)",
                self.path, seq, kind or "unknown kind", session, reason,
            )  # fmt: skip
        when = float(ts) if isinstance(ts, (int, float)) else 0.0
        if kind == "tool_result" and call_of is not None and not call_id:
            call_id = self._call_at_place(session, call_of, seq)
        if kind == "tool_result" and call_of is not None and call_id:
            return Event(seq, session, kind, when, damaged.placeholder_result(reason), None, None, call_of, call_id)
        if kind == "response":
            calls = self._calls_answered(session, seq)
            if calls:
                return Event(seq, session, kind, when, damaged.reconstructed_response(calls, reason))
        return None

    def _call_at_place(self, session: str, call_of: int, seq: int) -> str | None:
        """The call a result whose ``call_id`` is unreadable answers: the one call of its response that no
        readable result answers; with several such, the call at its place (results are stored in call
        order). None when that does not tell."""
        row = self._db.execute(
            "SELECT CAST(data AS BLOB) FROM events WHERE seq=? AND session=? AND kind='response'", (call_of, session)
        ).fetchone()
        calls = (
            [str(c.get("id")) for c in (_loads(row[0]).get("tool_calls") or []) if isinstance(c, Mapping)]
            if row
            else []
        )
        answers = "SELECT seq FROM events WHERE session=? AND call_of=? AND kind='tool_result' ORDER BY seq"
        results = [r[0] for r in self._db.execute(answers, (session, call_of))]
        claimed = {call for call, _ in self._calls_answered(session, call_of)}
        unclaimed = [call for call in calls if call not in claimed]
        if len(unclaimed) == 1:  # every call has one result: the only call without a readable one is this
            return unclaimed[0]
        place = results.index(seq) if seq in results else len(calls)
        return calls[place] if place < len(calls) and calls[place] in unclaimed else None

    def _calls_answered(self, session: str, seq: int) -> list[tuple[str, str]]:
        """(call id, tool name) of the readable results that name response ``seq``, in call order."""
        rows = self._db.execute(
            "SELECT CAST(call_id AS BLOB), CAST(data AS BLOB) FROM events "
            "WHERE session=? AND call_of=? AND kind='tool_result' ORDER BY seq",
            (session, seq),
        ).fetchall()
        calls = []
        for raw_id, data in rows:
            try:
                call_id = bytes(raw_id).decode("utf-8")
            except (TypeError, UnicodeDecodeError):
                continue
            calls.append((call_id, str(_loads(data).get("name") or "")))
        return calls

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

    def close_calls(
        self, session: str, calls: Iterable[tuple[int, str, str]], content: str = NO_RESULT, *, turn: str | None = None
    ) -> int:
        """Give each listed call a synthetic error result unless it has one; returns how many were added.
        ``turn``: the turn that left them open, when known (its results then read as that turn's)."""
        added = 0
        with self.deferred():  # one commit for all of them
            for call_of, call_id, name in calls:
                data = {"name": name, "content": content, "is_error": True, "synthetic": True}
                added += self.add_result(session, call_of, call_id, data, turn=turn, if_missing=True)
        return added

    def repair(self, session: str, content: str = NO_RESULT, *, turn: str | None = None) -> int:
        """Close calls left unanswered by an interrupted turn (kernel killed mid-call), with ``content`` as
        their result. Run at every turn start, so it must not cost O(session): the first call per session in
        this process checks the database (an SQL aggregate, then the full scan only if it finds open calls);
        later calls close just the calls this process knows to be open (normally none: a turn closes its own
        in ``finally``, by this method). Another process writing the same session meanwhile is not supported
        (one kernel per data dir)."""
        if session in self._checked:
            opened = self._open.get(session, {})
            return self.close_calls(session, [(s, c, n) for (s, c), n in opened.items()], content, turn=turn)
        open_calls = self._may_have_open_calls(session)
        added = self.close_calls(session, self.unanswered(session), content, turn=turn) if open_calls else 0
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
        row = self._db.execute(  # json_valid is false for bytes that are not UTF-8 JSON: never an error
            "SELECT COALESCE(SUM(CASE WHEN kind='response' THEN (CASE WHEN json_valid(data) "
            "THEN COALESCE(json_array_length(data, '$.tool_calls'), 0) ELSE 1 END) "
            "WHEN kind='tool_result' AND call_of IS NOT NULL THEN -1 ELSE 0 END), 0) "
            "FROM events WHERE session=?",
            (session,),
        ).fetchone()
        return int(row[0]) != 0

    def release_cache(self) -> bool:
        """Let the page cache go while the kernel is idle (hologram.storage.idle_cache: a long turn fills it to
        its bound, ~0.4 MB); called on the event loop's thread, the store's own."""
        return idle_cache.shrink(self._db)

    def close(self) -> None:
        self.commit()
        if self._checkpointer is not None:
            self._checkpointer.close()
        self._db.close()


def _dumps(data: Mapping[str, Any]) -> str:
    return _json.dumps(data)  # orjson: ~4 µs less per event than the stdlib (hologram/base/_fastjson.py)


ALL_EVENTS = "SELECT seq, session, kind, ts, data, turn, channel, call_of, call_id FROM events ORDER BY seq"
_EVENTS = (
    "SELECT seq, session, kind, ts, CAST(data AS BLOB), turn, channel, call_of, call_id FROM events "
    "WHERE session=? AND seq>? ORDER BY seq"
)
_ACTIVE = "MAX(s.updated, COALESCE(MAX(e.ts), 0))"  # a session's last activity: `list_sessions`' order
_EVENTS_BEFORE = (
    "SELECT seq, session, kind, ts, CAST(data AS BLOB), turn, channel, call_of, call_id FROM events "
    "WHERE session=? AND seq<? ORDER BY seq DESC LIMIT ?"
)
_NO_BOUND = 2**63 - 1  # the largest seq SQLite can hold: `events_before` without a bound
#: Responses whose call ids `add_result` remembers (older ones are read from their row).
_CALLS_KEPT = 256
_EVENTS_AT = (
    "SELECT seq, session, kind, ts, CAST(data AS BLOB), turn, channel, call_of, call_id FROM events "
    "WHERE session=? AND seq IN ({marks}) ORDER BY seq"
)


def _undecodable(exc: sqlite3.Error) -> bool:
    """sqlite3's error for a TEXT value that is not UTF-8 (it fails the whole query, not the row)."""
    return str(exc).startswith("Could not decode to UTF-8")


def _parse(text: str | bytes | None) -> dict[str, Any]:
    """The JSON object of a row's ``data``; `UnreadableRow` when it is not UTF-8 JSON."""
    try:
        value = _json.loads(text or "{}")
    except ValueError:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not UTF-8
        raise damaged.UnreadableRow("its data is not UTF-8 JSON") from None
    return value if isinstance(value, dict) else {"value": value}


def _loads(text: str | bytes | None) -> dict[str, Any]:
    """`_parse`, with ``{}`` for damage: for lookups that only need what a readable row says."""
    try:
        return _parse(text)
    except damaged.UnreadableRow:
        return {}


def _event(row: tuple[Any, ...]) -> Event:
    """An `Event` from a row of `events` (``data`` as bytes, or str from an older caller), held as the row's JSON
    bytes (hologram/sessions/event.py). The JSON is decoded once here all the same — a row that does not decode
    is found at the read that meets it (`UnreadableRow`), as before — and let go at once: nothing of it is held.
    A row with no ``call_id`` in its column (written before the column existed) takes the one in its data."""
    seq, session, kind, ts, text, turn, channel, call_of, call_id = row
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else (text or b"{}")
    try:
        value = _json.loads(raw)
    except ValueError:  # JSONDecodeError, or UnicodeDecodeError for bytes that are not UTF-8
        raise damaged.UnreadableRow("its data is not UTF-8 JSON") from None
    if type(value) is not dict:  # held as the object every reader sees (`_parse`'s rule)
        value = {"value": value}
        raw = _json.dumps_bytes(value)
    if not call_id:
        found = value.get("call_id")
        call_id = None if found is None else str(found)
    try:
        when = float(ts or 0.0)
    except (TypeError, ValueError):
        raise damaged.UnreadableRow("its time is not a number") from None
    if call_of is not None and type(call_of) is not int:
        raise damaged.UnreadableRow("its call_of column is not a number")
    # sqlite3 makes a new str of each column of each row: the session, kind, turn and channel every event of a
    # session repeats are interned by `Event.held` (a long turn's ~440 events are held through it, issue 41)
    return Event.held(pack_row(seq, when, call_of, call_id, raw), session, kind, turn, channel)


def row_problem(row: tuple[Any, ...]) -> str | None:
    """Why a row of ``events`` (read with text as bytes, columns as in `ALL_EVENTS`) does not decode, or
    None: the store's own decoding, for `hologram doctor`'s scan."""
    try:
        _event(damaged.text_row(row))
    except damaged.UnreadableRow as exc:
        return exc.reason
    return None
