"""Which layer holds each event of a session — L1, L2 or L3 — remembered between requests.

Why: every request asks the cold store, for every event of its session, whether L2 or L3 holds it (one
binary search per event in each of two sorted hash sets), and in a long session that was the third largest
cost of a request after the dense scoring and the fitting (1.3 ms of ~9 ms at 12,500 events, growing with
the session). Yet between two requests of a session almost nothing changes: the request's own move of what
lost to L2, and the new events at the end of the log. So the answer is kept, one byte an event, with the cold
store's :meth:`~hologram.memory.cold.store.ColdStore.membership_stamp` for the session; a request whose stamp
matches asks only about the events added since, and a request that moved events updates the bytes of what it
moved itself. Any other change to the session's membership — a recall by ``coldcontext_query``, cooling
into L3, a deleted session, a quarantined row — changes the stamp, and the next request asks about every
event again, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hologram.memory.cold.store import ColdStore

__all__ = ["IN_L2", "IN_L3", "Layers", "count_of", "positions_of"]

IN_L2, IN_L3 = 1, 2
_NONE = np.zeros(0, dtype=np.uint8)


class Layers:
    """One session's remembered answer: a byte per indexed event (0: L1, :data:`IN_L2`, :data:`IN_L3`)."""

    __slots__ = ("_stamp", "_where")

    def __init__(self) -> None:
        self._stamp: tuple[int, int] | None = None
        self._where = _NONE

    def of(
        self, cold: ColdStore, session: str, count: int, hashes_from: Callable[[int], np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(held by L2, held by L3) for the session's `count` indexed events, in index order; `hashes_from(k)`
        gives the id hashes of events k on (only those the remembered answer does not cover are asked for)."""
        where = self.where(cold, session, count, hashes_from)
        return where == IN_L2, where == IN_L3

    def where(self, cold: ColdStore, session: str, count: int, hashes_from: Callable[[int], np.ndarray]) -> np.ndarray:
        """The layer byte of each of the session's `count` events (:meth:`of`'s answer as it is kept: read it,
        never write it) — a request reads it at its view's events (memory/index/view.py), not as whole masks."""
        stamp = cold.membership_stamp(session)  # read first: a change after it makes the next stamp differ
        where = self._where
        if stamp != self._stamp or where.size > count:
            where = _NONE
        if where.size < count:
            new = hashes_from(where.size)
            part = cold.holds_hashes(new).astype(np.uint8)
            part |= cold.in_l3_hashes(new).astype(np.uint8) * np.uint8(IN_L3)
            where = np.concatenate([where, part]) if where.size else part
        self._stamp, self._where = stamp, where
        return where

    def stamp(self, cold: ColdStore, session: str) -> tuple[int, int]:
        """The store's stamp now (taken right before a write whose effect :meth:`moved_to_l2` then records)."""
        return cold.membership_stamp(session)

    def moved_to_l2(self, cold: ColdStore, session: str, positions: Sequence[int], before: tuple[int, int]) -> None:
        """The caller put the events at `positions` into L2, and the store's stamp was `before` just before.
        When that put was the only change since this answer was taken, the answer is updated in place;
        otherwise it is dropped (the next request asks about every event)."""
        after = cold.membership_stamp(session)
        if self._stamp == before and after == (before[0], before[1] + 1) and self._where.size:
            where = self._where.copy()  # callers may still hold masks derived from the old bytes: not shared
            where[np.asarray(positions, dtype=np.int64)] = IN_L2
            self._stamp, self._where = after, where
        else:
            self._stamp, self._where = None, _NONE


#: Bytes of a layer answer compared at a time (:func:`positions_of`, :func:`count_of`): the temporaries stay
#: small blocks, not one the session's size (what a request left resident in the main heap: docs/memory.md).
_CHUNK = 2048


def positions_of(where: np.ndarray, code: int | None, stop: int | None = None) -> np.ndarray:
    """Positions (before `stop`) whose layer byte is `code`; None: those in L1 (neither :data:`IN_L2` nor
    :data:`IN_L3`, as :meth:`Layers.of` tells them)."""
    end = where.size if stop is None else min(stop, where.size)
    found = []
    for a in range(0, end, _CHUNK):
        part = where[a : min(a + _CHUNK, end)]
        hit = (part != IN_L2) & (part != IN_L3) if code is None else part == code
        found.append(np.flatnonzero(hit) + a)
    return np.concatenate(found).astype(np.int64) if found else np.zeros(0, dtype=np.int64)


def count_of(where: np.ndarray, code: int) -> int:
    """How many layer bytes are `code`."""
    return sum(int(np.count_nonzero(where[a : a + _CHUNK] == code)) for a in range(0, where.size, _CHUNK))
