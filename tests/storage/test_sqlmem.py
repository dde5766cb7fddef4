"""The kernel's SQLite connections hold bounded memory (hologram/storage/sqlmem.py): a small page cache each, and
``IN (…)`` lists padded to a few lengths so the statement cache holds a few texts, not one per count.

Measured with SQLite's own counter (``sqlite3_status64(SQLITE_STATUS_MEMORY_USED)``, the library Python's
``sqlite3`` links): reading the log's events back by 1 … 500 seqs held +9.3 MB of prepared statements in
one connection before the padding, +0.25 MB after (the test's bound is 2 MB).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sqlite3
from pathlib import Path

import pytest

from hologram.memory.across.store import AcrossStore
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.vector_cache import VectorCache
from hologram.memory.scenes.store import SceneSettings, SceneStore
from hologram.sessions import SessionStore
from hologram.storage.sqlmem import CACHE_KIB, CHUNK, IN_SIZES, SMALL_CACHE_KIB, in_chunks


def _sqlite_memory_used() -> int:
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        pytest.skip("no shared libsqlite3 to read SQLite's memory counter from")
    lib = ctypes.CDLL(name)
    current, high = ctypes.c_int64(), ctypes.c_int64()
    assert lib.sqlite3_status64(0, ctypes.byref(current), ctypes.byref(high), 0) == 0
    return current.value


def test_in_chunks_cover_every_value_in_a_few_lengths() -> None:
    lengths: set[int] = set()
    for n in range(1, 2 * CHUNK + 3):
        items = list(range(n))
        chunks = list(in_chunks(items))
        assert sorted(set(v for c in chunks for v in c)) == items  # every value, nothing else
        assert all(c[len(set(c)) :] == [c[-1]] * (len(c) - len(set(c))) for c in chunks)  # padding repeats the last
        lengths.update(len(c) for c in chunks)
    assert lengths == set(IN_SIZES)
    assert len(IN_SIZES) == 10
    assert list(in_chunks([])) == []


def test_reading_events_back_by_any_count_keeps_few_statements_prepared(tmp_path: Path) -> None:
    """The soak's path: memory reads old events back by seq (`SessionStore.events_at`), a different count
    almost every request; Python's sqlite3 keeps 128 distinct texts prepared per connection."""
    store = SessionStore.in_data_dir(tmp_path)
    sid = store.create_session("cli")
    seqs = [store.append(sid, "input", {"text": f"event {i} " * 20}) for i in range(1_100)]
    assert [e.seq for e in store.events_at(sid, seqs[:3])] == seqs[:3]
    before = _sqlite_memory_used()
    for n in range(1, CHUNK + 1):
        got = store.events_at(sid, seqs[n : 2 * n])
        assert [e.seq for e in got] == seqs[n : 2 * n]  # padding adds no row and loses none
    grown = _sqlite_memory_used() - before
    store.close()
    assert grown < 2_000_000, f"SQLite holds {grown / 1e6:.1f} MB more after reading back 1..{CHUNK} seqs"


def test_every_kernel_connection_has_the_small_page_cache(tmp_path: Path) -> None:
    store = SessionStore.in_data_dir(tmp_path)
    cold = ColdStore(tmp_path / "cold.db")
    vectors = VectorCache(tmp_path / "vectors.db")
    scenes = SceneStore(tmp_path / "scenes.db", SceneSettings())
    across = AcrossStore(tmp_path / "across.db")
    across.load()  # opens its connection (a worker thread's job in the kernel)
    assert across._db is not None
    connections: dict[str, sqlite3.Connection] = {
        # across.db had SQLite's default (2,000 KiB): its cache filled over the 10,000-turn soak, ~1.5 MB of the
        # kernel's growth after turn 1,000 (tools/bench/soak_diag.py)
        "across": across._db,
        "sessions": store._db,
        "cold": cold._db,
        "vectors": vectors._db,
        "scenes": scenes._db,
        "scenes reader": scenes._reader,
    }
    # the stores a turn appends a few keyed rows to: a bound they reach within the first few hundred soak turns
    small = {"across", "scenes", "scenes reader"}
    try:
        for name, db in connections.items():
            want = SMALL_CACHE_KIB if name in small else CACHE_KIB
            assert db.execute("PRAGMA cache_size").fetchone()[0] == -want, name
    finally:
        across.close()
        scenes.close()
        vectors.close()
        cold.close()
        store.close()
