"""Event ids as 64-bit hashes, and a set of them in one sorted numpy array.

Why: membership ("does L2 hold this event?") is asked for every event of a session before every request.
A Python set of id strings costs ~100 bytes an id and a Python-level lookup each; a sorted ``uint64`` array
costs 8 bytes an id and answers a whole session's hashes in one ``searchsorted`` (issue 22). A collision
between two of a data directory's ids (2^-64 per pair) is the accepted price.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

__all__ = ["HashSet", "id_hash", "id_hashes", "in_sorted"]


def id_hash(event_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(event_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def id_hashes(ids: Iterable[str]) -> np.ndarray:
    return np.fromiter(map(id_hash, ids), dtype=np.uint64)


MERGE_AT = 4096
"""Hashes the small sorted array holds before it is merged into the large one."""


class HashSet:
    """A set of event ids kept as their sorted, unique 64-bit hashes: a large sorted array and a small one.

    Why two: every request moves a few events to L2, and inserting them into one sorted array of the whole L2
    copied it each time — O(L2) a request, ~0.4 ms a turn at soak turn 4,500 (py-spy of the soak's kernel),
    growing with the session. New hashes go into the small array (at most :data:`MERGE_AT`), merged into the
    large one when it is full: an insert costs O(MERGE_AT), and the merge's copy of the large array comes once
    in `MERGE_AT` inserts. A lookup asks both."""

    __slots__ = ("_merge_at", "_recent", "_sorted")

    def __init__(self, ids: Iterable[str] = (), merge_at: int = MERGE_AT) -> None:
        self._sorted = np.unique(id_hashes(ids))
        self._recent = np.zeros(0, dtype=np.uint64)
        self._merge_at = merge_at

    def __len__(self) -> int:
        return int(self._sorted.size + self._recent.size)

    def __bool__(self) -> bool:
        return bool(self._sorted.size or self._recent.size)

    def __contains__(self, event_id: object) -> bool:
        if not isinstance(event_id, str):
            return False
        return bool(self.contains(np.array([id_hash(event_id)], dtype=np.uint64))[0])

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """Which of `hashes` are in the set (a bool array, one vectorised lookup in each array)."""
        out = in_sorted(self._sorted, hashes)
        if self._recent.size:
            out |= in_sorted(self._recent, hashes)
        return out

    def add(self, ids: Iterable[str]) -> None:
        """Insert into the small array (one O(MERGE_AT) copy), merged into the large one when full."""
        new = np.unique(id_hashes(ids))
        new = new[~self.contains(new)]
        if not new.size:
            return
        recent = self._recent
        recent = np.insert(recent, np.searchsorted(recent, new), new) if recent.size else new
        if recent.size >= self._merge_at:
            self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, recent), recent)
            recent = np.zeros(0, dtype=np.uint64)
        self._recent = recent

    def discard(self, ids: Iterable[str]) -> None:
        gone = np.unique(id_hashes(ids))
        if gone.size:
            self._sorted = _without(self._sorted, gone)
            self._recent = _without(self._recent, gone)


def in_sorted(sorted_hashes: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Whether each of `hashes` is in `sorted_hashes` (sorted, unique): one binary search each."""
    if sorted_hashes.size == 0 or hashes.size == 0:
        return np.zeros(hashes.shape, dtype=bool)
    at = np.minimum(np.searchsorted(sorted_hashes, hashes), sorted_hashes.size - 1)
    out: np.ndarray = sorted_hashes[at] == hashes
    return out


def _without(sorted_hashes: np.ndarray, gone: np.ndarray) -> np.ndarray:
    """`sorted_hashes` without the (sorted, unique) `gone`."""
    if not sorted_hashes.size:
        return sorted_hashes
    at = np.searchsorted(sorted_hashes, gone)
    hit = at < sorted_hashes.size
    at = at[hit]
    at = at[sorted_hashes[at] == gone[hit]]
    return np.delete(sorted_hashes, at) if at.size else sorted_hashes
