"""SQLite page caches let go when the kernel goes idle (issue 41: the kernel within 10 % of its idle PSS).

Each kernel connection keeps up to :data:`hologram.storage.sqlmem.CACHE_KIB` of its file's pages. A long turn
(400 tool calls, a 120 KB answer) fills ``sessions.db``'s and ``vectors.db``'s caches from ~50 to ~450-520 KiB
each in one go, and a cache, once full, stays full for as long as the process lives: in
``tools/bench/http_long_diag.py`` the first long turn took SQLite's memory 0.9 -> 1.9 MB, and releasing every
connection's cache in the idle kernel gave back 1.3 MB of anonymous memory (74.4 -> 73.1 MiB, the heap trim
after it included). An idle kernel does not need them: the pages are in the OS's page cache, and the next turn
reads the few it touches back at a ``pread`` each (microseconds; a few hundred pages for a long turn).

So a store registers how to let its cache go (:func:`register`: ``PRAGMA shrink_memory`` under its own lock,
:func:`shrink`), and the process's idle heap trim (:data:`hologram.base._heap.idle_trim`) calls
:func:`release_all` on the event loop's thread before it hands the C heap's free pages back — only the trim
after the process has been idle, never the trim in the middle of work, so a busy kernel keeps its caches.
A store that is in use right then (its lock held by a worker thread) is skipped: it is not idle.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable

from hologram.base._heap import idle_trim

__all__ = ["register", "release_all", "shrink"]

log = logging.getLogger("hologram.storage")

_releasers: list[weakref.WeakMethod[Callable[[], bool]]] = []


def register(release: Callable[[], bool]) -> None:
    """Call the bound method `release` at each idle release while its object lives (weakly held: a closed,
    dropped store is forgotten). It returns whether it let anything go (False: in use, skipped)."""
    _releasers.append(weakref.WeakMethod(release))


def release_all() -> int:
    """Every registered store's cache let go, from the thread that runs the idle trim; returns how many did. A
    store that fails (closed meanwhile) is skipped: this is an optimisation, never a reason for an error."""
    done = 0
    alive: list[weakref.WeakMethod[Callable[[], bool]]] = []
    for ref in _releasers:
        release = ref()
        if release is None:
            continue
        alive.append(ref)
        try:
            done += bool(release())
        except sqlite3.Error as exc:  # a closed connection: sqlite3.ProgrammingError
            log.debug("idle cache release skipped: %s", exc)
    _releasers[:] = alive
    return done


def shrink(db: sqlite3.Connection, lock: threading.Lock | None = None) -> bool:
    """``PRAGMA shrink_memory`` on `db` (its page cache's unused pages freed), under `lock` if given — taken
    without waiting: a store whose lock is held is in use, and is skipped (False)."""
    if lock is not None and not lock.acquire(blocking=False):
        return False
    try:
        db.execute("PRAGMA shrink_memory")
    finally:
        if lock is not None:
            lock.release()
    return True


if release_all not in idle_trim.on_idle:
    idle_trim.on_idle.append(release_all)
