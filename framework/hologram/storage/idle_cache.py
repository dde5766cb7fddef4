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

The same release drops the dead cursor references each connection keeps (:func:`prune_cursor_refs`): CPython's
``sqlite3`` holds a weak reference to every cursor a connection made — every ``execute`` makes one — and drops
the dead ones only at every 200th new cursor. A long turn's are made all through it, between the turn's
short-lived objects, so up to 199 of them a connection stay behind scattered over the pools and arenas the turn
otherwise freed (`tools/bench/http_long_diag.py --pins`: dead weak references were most of the objects keeping
the arenas a long turn added). Made to prune while idle, the few made by the pruning itself land in the arenas
that stay.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import weakref
from collections.abc import Callable

from hologram.base._heap import idle_trim

__all__ = ["prune_cursor_refs", "register", "release_all", "shrink"]

PRUNE_EVERY = 200
"""CPython's ``sqlite3``: a connection drops its dead cursor references at every 200th new cursor (3.8-3.13)."""

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
        prune_cursor_refs(db)
    finally:
        if lock is not None:
            lock.release()
    return True


def prune_cursor_refs(db: sqlite3.Connection) -> None:
    """Make `db` drop the dead weak references it keeps to its cursors now: :data:`PRUNE_EVERY` + 1 new cursors,
    each let go at once, pass its every-200th prune whatever its count is (~0.1 ms). Those made after the prune
    stay until the next one, but they are made now, while nothing else is being allocated around them."""
    for _ in range(PRUNE_EVERY + 1):
        db.cursor()


if release_all not in idle_trim.on_idle:
    idle_trim.on_idle.append(release_all)
