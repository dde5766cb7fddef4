"""`MappedHashSet` — L2's membership with its bulk in a mapped file — behaves as a set of ids, and keeps only
the changes since its last rewrite in memory (issue 39 item 7, soak8).

Mutation checks (done): `contains` not subtracting `_gone` turns the property test red; so do a rewrite that
drops `_added` (`_merged` without its union), a rewrite that keeps the gone hashes, and `add` not taking a
hash back out of `_gone`; never rewriting (`_maybe_rewrite` a no-op) turns the bound test red.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.memory.cold import idfile
from hologram.memory.cold.idfile import MappedHashSet
from hologram.memory.index.idhash import id_hashes

from .test_idhash import same_as_a_set

ids = st.lists(st.sampled_from([f"ev_{i}" for i in range(40)]), max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(ids, max_size=2),
    st.lists(st.tuples(st.booleans(), ids), max_size=12),
    st.sampled_from([1, 3, 8, 4096]),
    st.sampled_from([2, 5, 1 << 16]),
)
def test_a_mapped_hash_set_is_a_set_of_ids(
    tmp_path_factory: object, start: list[list[str]], ops: list[tuple[bool, list[str]]], merge_at: int, chunk: int
) -> None:
    where = tmp_path_factory.mktemp("ids")  # type: ignore[attr-defined]
    saved, idfile.CHUNK = idfile.CHUNK, chunk  # small chunks: a rewrite crosses chunk edges
    try:
        initial = [i for batch in start for i in batch]
        got = MappedHashSet(where, initial, merge_at=merge_at)
        same_as_a_set(got, set(initial), ops)
        got.close()
    finally:
        idfile.CHUNK = saved
    assert os.listdir(where) == []  # the file is unlinked from its start: nothing is left behind


def test_memory_held_is_the_changes_not_the_set(tmp_path: Path) -> None:
    """20,000 ids added a batch at a time, as a soak's requests move events to L2: the bytes the set keeps in
    memory stay below `merge_at` hashes (8 bytes each) however many it holds; all of them are still members."""
    merge_at = 512
    got = MappedHashSet(tmp_path, merge_at=merge_at)
    most = 0
    for start in range(0, 20_000, 7):
        got.add(f"ev_{i}" for i in range(start, min(start + 7, 20_000)))
        most = max(most, got.held_bytes())
    assert len(got) == 20_000
    assert most < merge_at * 8 <= 20_000 * 8 // 4
    assert bool(got.contains(id_hashes(f"ev_{i}" for i in range(0, 20_000, 97))).all())
    assert not got.contains(id_hashes(["ev_20000", "ev_-1"])).any()
    got.discard(f"ev_{i}" for i in range(0, 20_000, 2))
    assert len(got) == 10_000 and got.held_bytes() < merge_at * 8
    assert got.contains(id_hashes(["ev_0", "ev_1"])).tolist() == [False, True]
    got.close()


def test_hashes_roundtrip_in_order(tmp_path: Path) -> None:
    hashes = np.sort(id_hashes(f"x{i}" for i in range(1000)))
    got = MappedHashSet(tmp_path, (f"x{i}" for i in range(1000)))
    assert got.contains(hashes).all()
    got.close()


def test_a_cold_store_on_disk_keeps_l2_membership_out_of_memory(tmp_path: Path) -> None:
    """A cold store on disk answers membership from the mapped file: after 6,000 events put a batch at a time
    (past the rewrites), the first is still held, found and recalled by its words — and again after a
    restart; what the store keeps of its ids in memory is the changes since the last rewrite, not 8 bytes an
    event; a removed event is no longer held."""
    from hologram.memory.cold.blocks import build_event
    from hologram.memory.cold.store import ColdStore
    from hologram.memory.index.idhash import MERGE_AT
    from hologram.memory.rank.events import Query
    from hologram.memory.text.tfidf import TermVector

    def rec(i: int, text: str) -> object:
        return build_event(timestamp=1_700_000_000 + i, input=text, reasoning=f"thought {i}", session="s1")

    first = rec(0, "The spare key of the blue shed is under the third flowerpot")
    store = ColdStore(tmp_path / "cold.db")
    store.put([first])  # type: ignore[list-item]
    for start in range(1, 6_000, 50):
        store.put([rec(i, f"routine status line number {i}") for i in range(start, min(start + 50, 6_000))])  # type: ignore[misc]
    assert isinstance(store._ids, MappedHashSet)
    assert len(store) == 6_000 and first.id in store  # type: ignore[attr-defined]
    assert store._ids.held_bytes() < MERGE_AT * 8 < 6_000 * 8 * 2
    query = "where is the spare key of the shed"
    assert store.search(Query(query, TermVector.from_text(query), None), k=3)[0].id == first.id  # type: ignore[attr-defined]
    store.close()
    again = ColdStore(tmp_path / "cold.db")
    assert len(again) == 6_000 and first.id in again  # type: ignore[attr-defined]
    assert again._ids.held_bytes() == 0  # rebuilt from the table into the file: nothing in memory
    assert again.holds([first.id, "ev_not_there"]).tolist() == [True, False]  # type: ignore[attr-defined]
    again.remove([first.id])  # type: ignore[attr-defined]
    assert first.id not in again and len(again) == 5_999  # type: ignore[attr-defined]
    again.close()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".l2-ids")] == []


def test_a_read_survives_a_caller_that_keeps_the_reading_frame(tmp_path: Path, monkeypatch: object) -> None:
    """A profiler or a traceback that holds the frame of the function reading the mapped file (and so the view
    of the mapping in its locals) must not fail the lookup: the mapping is left to go with its last view.
    Closing it at the read's end raised BufferError ("cannot close exported pointers exist") and failed a turn."""
    import sys

    kept: list[object] = []
    real = idfile.in_sorted

    def in_sorted_keeping_its_frame(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
        kept.append(sys._getframe())  # what a sampling profiler does: the frame outlives the call
        return real(haystack, needles)

    monkeypatch.setattr(idfile, "in_sorted", in_sorted_keeping_its_frame)  # type: ignore[attr-defined]
    members = MappedHashSet(tmp_path, [f"ev_{i}" for i in range(100)])
    assert "ev_7" in members and "ev_100" not in members
    assert kept, "the lookup did not read the mapped file"
    members.close()
