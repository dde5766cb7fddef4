"""`HashSet` — L2's and L3's membership as sorted 64-bit hashes — behaves as a set of ids.

Mutation checks (done): inserting without sorting (``np.append``) in `add` turns the property test red; so do
`contains` not asking the small array, `discard` not removing from it, and a merge that drops the small array
instead of inserting it (each with `merge_at` small, so the property test reaches merges).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hologram.memory.index.idhash import HashSet, id_hashes

ids = st.lists(st.sampled_from([f"ev_{i}" for i in range(40)]), max_size=30)


@given(st.lists(st.tuples(st.booleans(), ids), max_size=12), st.sampled_from([1, 3, 8, 4096]))
def test_a_hash_set_is_a_set_of_ids(ops: list[tuple[bool, list[str]]], merge_at: int) -> None:
    same_as_a_set(HashSet(merge_at=merge_at), set(), ops)


def same_as_a_set(got: Any, want: set[str], ops: list[tuple[bool, list[str]]]) -> None:
    """Apply `ops` (add or discard a batch of ids) to `got` and to the Python set `want`; after each, the same
    size, and at the end the same members among every id the strategies draw (also tests/memory/test_idfile.py)."""
    for adding, batch in ops:
        if adding:
            got.add(batch)
            want.update(batch)
        else:
            got.discard(batch)
            want.difference_update(batch)
        assert len(got) == len(want)
    probe = [f"ev_{i}" for i in range(40)]
    assert got.contains(id_hashes(probe)).tolist() == [p in want for p in probe]
    assert all((p in got) == (p in want) for p in probe)
