"""WAL checkpoints off the event loop.

In WAL mode SQLite appends every commit to ``sessions.db-wal`` and, by default, the connection whose commit
takes the log past 1,000 pages copies it back into the database file right then (an automatic
checkpoint). For the kernel that connection lives on the event loop, so every few hundred commits one of
them stalled every session and every plugin RPC for the length of the copy: 16–17 ms on the development
VM, with commits averaging 95 µs against 50 µs without it (single-row commits, measured in one run).

So the store's connection turns automatic checkpoints off and this thread does them, on a connection of
its own: ``PRAGMA wal_checkpoint(PASSIVE)``, which never blocks the writer or readers, after every
``every_commits`` commits or ``idle_s`` after the last one. SQLite releases the GIL while it copies, so the
copy runs beside the loop on the second core. Durability is unchanged: a commit is durable once it is in
the WAL (``synchronous=NORMAL``); checkpointing only moves it.

If the thread cannot run (it failed to start or died), the store's connection takes automatic
checkpoints back, so the log never grows without bound.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path

from hologram.storage.sqlmem import limit_cache

log = logging.getLogger("hologram.sessions")

EVERY_COMMITS = 64  # a passive checkpoint at least this often (a few hundred WAL pages)
IDLE_S = 1.0  # …and this long after the last commit, so a quiet kernel leaves a small log


class WalCheckpointer:
    """Checkpoints the WAL database at ``path`` from a daemon thread, started with the first commit."""

    def __init__(self, path: Path, *, every_commits: int = EVERY_COMMITS, idle_s: float = IDLE_S) -> None:
        self.path = path
        self.every_commits = every_commits
        self.idle_s = idle_s
        self.checkpoints = 0  # passive checkpoints run (tests read it)
        self._commits = 0  # commits reported by the store
        self._done = 0  # commits covered by the last checkpoint
        self._wake = threading.Event()
        self._stop = False
        self._thread: threading.Thread | None = None
        self.failed = False  # the thread could not run: the store must checkpoint by itself again

    def committed(self) -> None:
        """Called by the store after each commit: cheap (a counter, and an Event every ``every_commits``)."""
        self._commits += 1
        if self._thread is None:
            self.start()
        elif self._commits - self._done >= self.every_commits:
            self._wake.set()

    def start(self) -> None:
        """Start the thread (idempotent); the first commit does it if nothing did before."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="hologram-wal-checkpoint", daemon=True)
        try:
            self._thread.start()
        except RuntimeError:  # no more threads: the store falls back to automatic checkpoints
            self.failed = True

    def _run(self) -> None:
        try:
            db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            limit_cache(db)
            db.execute("PRAGMA busy_timeout=5000")
            # one cursor for the thread's life: `db.execute` makes one a checkpoint, and the connection keeps a
            # weak reference to each (dropped at every 200th), made all through a turn (hologram.storage.idle_cache)
            cursor = db.cursor()
        except sqlite3.Error:
            log.exception("cannot open %s for checkpoints; the store checkpoints by itself", self.path)
            self.failed = True
            return
        try:
            while True:
                self._wake.wait(self.idle_s)
                self._wake.clear()
                if self._commits != self._done:
                    seen = self._commits
                    cursor.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self._done = seen
                    self.checkpoints += 1
                if self._stop:
                    return
        except sqlite3.Error:
            log.exception("checkpointing %s failed; the store checkpoints by itself from now on", self.path)
            self.failed = True
        finally:
            db.close()

    def close(self) -> None:
        """Stop the thread after a last checkpoint of what is pending."""
        self._stop = True
        self._wake.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout=10)
