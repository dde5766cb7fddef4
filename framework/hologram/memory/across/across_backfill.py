"""Fill ``across.db`` (memory/across/store.py) from the session log once: the inputs said before memory across sessions
existed (an upgraded data directory), or before a damaged ``across.db`` was set aside, are in ``sessions.db`` and
nowhere else. Runs once per ``across.db`` (a ``meta`` row records it), in a background thread at
`SessionMemory.open`, over its own read-only connection (WAL: the kernel's writes go on), in batches; an input
already stored is skipped, so the turns that run meanwhile add theirs as usual. A row that does not decode is
skipped (``hologram doctor`` reports those); a failure is one log line, and the store simply has less.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from hologram.memory.across.store import AcrossStore, Said, person_of
from hologram.memory.session_records import record_of
from hologram.sessions.store import _event

__all__ = ["backfill"]

log = logging.getLogger("hologram.memory")

_BATCH = 256
_INPUTS = (
    "SELECT seq, session, kind, ts, data, turn, channel, call_of, call_id FROM events "
    "WHERE kind = 'input' AND seq > ? ORDER BY seq LIMIT ?"
)


def backfill(store: AcrossStore, sessions_db: Path) -> int:
    """Add every stored input of `sessions_db` not in `store` yet; returns how many were added (0 when it ran
    before for this ``across.db``)."""
    store.load()
    if store.backfilled() or not sessions_db.exists():
        store.mark_backfilled()
        return 0
    added = 0
    try:
        db = sqlite3.connect(f"file:{sessions_db}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        log.warning("memory across sessions: %s could not be read (%s); earlier sessions are not recalled",
                    sessions_db, exc)  # fmt: skip
        return 0
    try:
        last = 0
        while rows := db.execute(_INPUTS, (last, _BATCH)).fetchall():
            last = int(rows[-1][0])
            said: list[Said] = []
            for row in rows:
                try:
                    event = _event(row)
                except Exception:  # a damaged row: doctor's business, not a reason to stop
                    continue
                record = record_of(event)
                if record is None or not record.text.strip():
                    continue
                ts_ms = int(event.ts * 1000) if event.ts > 0 else 0
                said.append(Said(record.id, event.session, event.seq, ts_ms,
                                 person_of(record.channel, record.partner), record.text))  # fmt: skip
            added += store.add(said)
        store.mark_backfilled()
    except sqlite3.Error as exc:
        log.warning("memory across sessions: reading %s stopped (%s); %d earlier inputs were added",
                    sessions_db, exc, added)  # fmt: skip
    finally:
        db.close()
    if added:
        log.info("memory across sessions: %d inputs of earlier sessions added from the session log", added)
    return added
