"""Passage vectors kept on disk (``vectors.db``), so nothing is embedded twice — across restarts, whichever
layer holds the event.

The session index (:mod:`hologram.memory.index.session_index`) is rebuilt from the session log when a session is
first used after a start: tokenising is cheap, embedding is not (a 1,000-event session is seconds of CPU).
So vectors are stored by (event id, passage ordinal, model fingerprint) as float16 — half the bytes, and a
cosine difference below 1e-3, far under what changes a ranking.

It is a cache: losing it loses nothing but time. A damaged file is moved aside (``vectors.db.damaged-<time>``)
and a new one started, with a warning; writes are ``synchronous=NORMAL`` (a crash may drop the last writes,
which are simply computed again).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hologram.storage import idle_cache
from hologram.storage.caches import CACHES
from hologram.storage.dbfile import open_checked, open_or_set_aside
from hologram.storage.sqlmem import in_chunks, marks

__all__ = ["VECTORS_DB", "VectorCache"]

log = logging.getLogger("hologram.memory")

VECTORS_DB = "vectors.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS passage_vectors (
    event TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    vec BLOB NOT NULL,
    PRIMARY KEY (event, ordinal, fingerprint)
) WITHOUT ROWID;
"""
Key = tuple[str, int]


class VectorCache:
    """Passage vectors by (event id, ordinal) for one model fingerprint at a time. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_or_set_aside(path, self._open, lost=CACHES[VECTORS_DB], log=log)
        idle_cache.register(self.release_cache)

    def release_cache(self) -> bool:
        """Let the page cache go while the kernel is idle (hologram.storage.idle_cache; a long turn fills it)."""
        return idle_cache.shrink(self._db, self._lock)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        return open_checked(path, _SCHEMA, synchronous="NORMAL", probe=("passage_vectors",))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, fingerprint: str, keys: Sequence[Key]) -> dict[Key, np.ndarray]:
        """The stored vectors of `keys` (float32); missing keys are absent from the result."""
        out: dict[Key, np.ndarray] = {}
        if not keys:
            return out
        events = sorted({event for event, _ in keys})
        wanted = set(keys)
        with self._lock:
            # padded IN lists (storage/sqlmem.py): one prepared statement for each of a few lengths, not one for
            # every length a read happened to have — each a statement SQLite keeps (the cache of 128), made by a
            # worker in the middle of a turn: vectors.db's statements went 9 -> 54 -> 84 -> 100 KiB over the
            # first three long turns of tools/bench/http_long_diag.py
            for chunk in in_chunks(events):
                rows = self._db.execute(
                    "SELECT event, ordinal, vec FROM passage_vectors WHERE fingerprint = ? "
                    f"AND event IN ({marks(len(chunk))})",
                    (fingerprint, *chunk),
                ).fetchall()
                for event, ordinal, blob in rows:
                    key = (str(event), int(ordinal))
                    if key in wanted:
                        out[key] = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
        return out

    def put(self, fingerprint: str, items: Iterable[tuple[Key, np.ndarray]]) -> None:
        rows = [(e, o, fingerprint, np.asarray(v, dtype=np.float16).tobytes()) for (e, o), v in items]
        if not rows:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO passage_vectors VALUES (?, ?, ?, ?)", rows)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
