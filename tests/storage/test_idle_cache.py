"""The kernel's SQLite page caches are let go when the process goes idle (hologram/storage/idle_cache.py).

Measured with SQLite's own counter (``sqlite3_status64(SQLITE_STATUS_MEMORY_USED)``, the library Python's
``sqlite3`` links), on real files: a session log read whole fills its connection's page cache to its bound
(512 KiB); the idle trim's release gives it back, a busy trim does not, and a store in use is left alone.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

from hologram.base._heap import IdleTrim, idle_trim
from hologram.memory.embed.vector_cache import VectorCache
from hologram.sessions import SessionStore
from hologram.storage import idle_cache
from tests.storage.test_sqlmem import _sqlite_memory_used

FILLED = 300_000
"""Bytes of page cache a full read of the test's log leaves (bound 512 KiB; the log is ~2 MB)."""


def _filled_store(tmp_path: Path) -> tuple[SessionStore, str]:
    store = SessionStore.in_data_dir(tmp_path)
    sid = store.create_session("cli")
    with store.deferred():
        for i in range(1_500):
            store.append(sid, "input", {"text": f"event {i} 第{i}行 " * 60})
    store.commit()
    return store, sid


def _fill(store: SessionStore, sid: str) -> int:
    """Read the whole log (the cache fills to its bound); SQLite's memory after."""
    assert len(store.events(sid)) == 1_500
    return _sqlite_memory_used()


def test_the_idle_release_gives_the_session_logs_page_cache_back(tmp_path: Path) -> None:
    store, sid = _filled_store(tmp_path)
    try:
        full = _fill(store, sid)
        assert idle_cache.release_all() >= 1
        released = _sqlite_memory_used()
        assert full - released > FILLED, f"SQLite let {(full - released) / 1e3:.0f} kB go"
        assert len(store.events(sid)) == 1_500  # the next read just reads the pages again
        assert _sqlite_memory_used() - released > FILLED
    finally:
        store.close()


def test_only_the_idle_trim_releases_not_the_busy_one(tmp_path: Path) -> None:
    """The process's idle trim calls the release on the loop's thread; a trim in the middle of work (every
    `busy_every` seconds while the work never stops) keeps the caches a busy kernel is using."""
    store, sid = _filled_store(tmp_path)
    calls: list[str] = []

    def seen() -> None:
        calls.append(threading.current_thread().name)

    async def scenario() -> tuple[int, int]:
        busy = IdleTrim(after=3600, busy_every=0)  # never idle long enough: only busy trims run
        busy.on_idle.append(seen)
        busy.activity()
        busy.activity()  # the second activity: a busy trim
        assert busy.trims == 1 and busy.last is not None
        await busy.last
        assert calls == []  # a busy trim released nothing
        full = _fill(store, sid)
        idle = IdleTrim(after=0.0)
        idle.on_idle.append(seen)
        idle.on_idle.append(idle_cache.release_all)
        idle.activity()
        while idle.last is None:
            await asyncio.sleep(0)  # the loop runs the call_later(0) that is the idle trim
        await idle.last
        return full, _sqlite_memory_used()

    try:
        full, after = asyncio.run(scenario())
        assert calls == [threading.current_thread().name]  # once, on the loop's own thread
        assert full - after > FILLED
    finally:
        store.close()
    assert idle_cache.release_all in idle_trim.on_idle  # the kernel's trim has it wherever a store is imported


def test_a_store_in_use_is_skipped_and_a_dropped_one_forgotten(tmp_path: Path) -> None:
    vectors = VectorCache(tmp_path / "vectors.db")
    vectors.put("fp", [((f"e{i}", 0), np.ones(512, dtype=np.float32)) for i in range(2_000)])
    assert len(vectors.get("fp", [(f"e{i}", 0) for i in range(2_000)])) == 2_000
    with vectors._lock:  # a worker thread's read or write is running
        assert vectors.release_cache() is False
    assert vectors.release_cache() is True
    vectors.close()
    assert idle_cache.release_all() >= 0  # closed: skipped without an error
    registered = len(idle_cache._releasers)
    del vectors
    gc.collect()
    idle_cache.release_all()
    assert len(idle_cache._releasers) == registered - 1


def test_a_closed_store_never_fails_the_release(tmp_path: Path) -> None:
    store, _ = _filled_store(tmp_path)
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):  # the closed connection
        store.release_cache()
    idle_cache.release_all()  # the same, skipped (logged at debug)


def _cursor_refs(db: sqlite3.Connection) -> list[object]:
    """The weak references a connection keeps to the cursors it made (CPython's ``sqlite3``; its other list, of
    blobs, is empty here)."""
    lists = [r for r in gc.get_referents(db) if isinstance(r, list) and r]
    assert len(lists) == 1 and all(isinstance(r, weakref.ref) for r in lists[0])
    return lists[0]


def test_the_idle_release_drops_the_dead_cursor_references_a_turn_left(tmp_path: Path) -> None:
    """Every ``execute`` leaves a weak reference to its cursor, dropped at every 200th: the ones a turn made are
    gone after the idle release, and what is left was made by the release itself."""
    store, sid = _filled_store(tmp_path)
    try:
        for _ in range(150):
            store.exists(sid)
        turn = list(_cursor_refs(store._db))  # kept here, so none of their ids is reused
        assert turn  # (how many: where the connection's count of 200 stands)
        assert idle_cache.release_all() >= 1
        left = {id(r) for r in _cursor_refs(store._db)}
        assert not left & {id(r) for r in turn}
        assert len(left) <= idle_cache.PRUNE_EVERY
    finally:
        store.close()
