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

__all__ = ["HashSet", "id_hash", "id_hashes"]


def id_hash(event_id: str) -> int:
    return int.from_bytes(hashlib.blake2b(event_id.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little")


def id_hashes(ids: Iterable[str]) -> np.ndarray:
    return np.fromiter(map(id_hash, ids), dtype=np.uint64)


class HashSet:
    """A set of event ids kept as their sorted, unique 64-bit hashes."""

    __slots__ = ("_sorted",)

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._sorted = np.unique(id_hashes(ids))

    def __len__(self) -> int:
        return int(self._sorted.size)

    def __bool__(self) -> bool:
        return self._sorted.size > 0

    def __contains__(self, event_id: object) -> bool:
        if not isinstance(event_id, str):
            return False
        return bool(self.contains(np.array([id_hash(event_id)], dtype=np.uint64))[0])

    def contains(self, hashes: np.ndarray) -> np.ndarray:
        """Which of `hashes` are in the set (a bool array, one vectorised lookup)."""
        s = self._sorted
        if s.size == 0 or hashes.size == 0:
            return np.zeros(hashes.shape, dtype=bool)
        at = np.minimum(np.searchsorted(s, hashes), s.size - 1)
        out: np.ndarray = s[at] == hashes
        return out

    def add(self, ids: Iterable[str]) -> None:
        """Insert (one O(n) copy, not a re-sort: every request's move to L2 adds a few)."""
        new = np.unique(id_hashes(ids))
        new = new[~self.contains(new)]
        if new.size:
            self._sorted = np.insert(self._sorted, np.searchsorted(self._sorted, new), new)

    def discard(self, ids: Iterable[str]) -> None:
        gone = np.unique(id_hashes(ids))
        if gone.size and self._sorted.size:
            at = np.searchsorted(self._sorted, gone)
            hit = at < self._sorted.size
            at = at[hit]
            at = at[self._sorted[at] == gone[hit]]
            if at.size:
                self._sorted = np.delete(self._sorted, at)
