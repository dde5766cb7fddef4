"""A request's view of its session: the events it could send, and the arrays it ranks them with (issue 39 item 7).

Why: a request's ranking made ~25 arrays with one element per event (or passage) of the whole session — BM25's
per-passage scores, the z-scores, the fused and smoothed scores, the layer masks, the fit's bincounts, cost,
roles — though past the scoring window (memory/index/window.py) only a bounded part of the session can win: the
window's events, the older events the query's rare words name (BM25's bounded postings, and among their
passages the far dense slots), and the older events the request must be able to keep (still in L1, forced by an
explicit recall, inside a time cue's window). At 12,500 events each such array was ~98 KiB, freed after the
request and resident in the main heap until the next trim: the kernel's creep of ~0.2 MB per 1,000 soak turns
(docs/memory.md, "heap10"). A view holds the session positions of those events (ascending) and gathers each
column at them once, so every per-request array is the view's size; results go back to session positions
through :attr:`RequestView.positions`.

Inside the window (every LoCoMo conversation) the view is the whole session and its columns are the index's own
(:meth:`RequestView.whole`): the ranking is bit for bit what it was (tests/memory/test_request_view.py). Above
it, the z-scores are taken over the view's events instead of every event, the turn smoothing sees the view's
turns (a turn next to a missing one counts the floor for it, as at a session's ends), and each old unit's members
are found by walking forward from its first member (a call group's members follow each other in the log).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hologram.memory.index.session_index import SessionIndex

__all__ = ["GATHER_WHOLE", "RequestView"]

#: Tests only: a whole-session view gathers its columns like a partial one (to check the gathers change nothing).
GATHER_WHOLE = False


class RequestView:
    """Events of one session a request ranks (module docstring); view position k is session position
    ``positions[k]``. Quacks like :class:`SessionIndex` where the ranking reads it (`len`, `cost`, `unit_of`,
    `roles`, `kinds`, `turn`, `ts`, `whole_units`, `seqs_of`, `ts_of`, `cosines_to_events`, `reading`), each in
    view positions."""

    __slots__ = ("_cols", "_passage_map", "index", "is_whole", "old", "positions", "postings")

    def __init__(
        self,
        index: SessionIndex,
        positions: np.ndarray,
        *,
        old: int,
        is_whole: bool,
        postings: list[tuple[str, float, int, list[tuple[np.ndarray, np.ndarray]]]] | None = None,
    ) -> None:
        self.index = index
        self.positions = positions
        """Session positions of the view's events, ascending."""
        self.old = old
        """How many of them come before the scoring window (0 when the session is within it)."""
        self.is_whole = is_whole
        """The view is the session and reads the index's own columns."""
        self.postings = postings
        """The query's postings the view was built from: (term, weight, document frequency, bounded parts)."""
        self._cols: dict[str, np.ndarray] = {}
        self._passage_map: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def whole(cls, index: SessionIndex, *, window: int | None = None) -> RequestView:
        """The whole session (a session within the scoring `window`, or any session without one); its events
        before the window, if any, are its `old` ones."""
        n = len(index)
        old = max(0, n - window) if window is not None else 0
        return cls(index, np.arange(n, dtype=np.int64), old=old, is_whole=not GATHER_WHOLE)

    @classmethod
    def at(cls, index: SessionIndex, positions: np.ndarray) -> RequestView:
        """The events at `positions` (ascending): a request that ranks nothing and sends them as they are."""
        return cls(index, np.asarray(positions, dtype=np.int64), old=0, is_whole=False)

    @property
    def passage_count(self) -> int:
        """How many passages the view's events have (a whole view's: the session's, nothing gathered)."""
        return self.index.passages if self.is_whole else int(self.passages.size)

    @property
    def passages(self) -> np.ndarray:
        """The view's passages' session ids, ascending."""
        return self._passage_spans()[0]

    @property
    def v_first(self) -> np.ndarray:
        """Each view event's first view passage."""
        return self._passage_spans()[1]

    def _passage_spans(self) -> tuple[np.ndarray, np.ndarray]:
        if self._passage_map is None:
            self._passage_map = self._passages()
        return self._passage_map

    def __len__(self) -> int:
        return int(self.positions.size)

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self.index.reading():
            yield

    def column(self, name: str) -> np.ndarray:
        """The index's column `name` at the view's events (the column itself for a whole view)."""
        got = self._cols.get(name)
        if got is None:
            got = self.index.column(name) if self.is_whole else self.index.gather(name, self.positions)
            self._cols[name] = got
        return got

    def passage_column(self, name: str) -> np.ndarray:
        """The index's passage column `name` at the view's passages."""
        got = self._cols.get("passage:" + name)
        if got is None:
            got = self.index.column(name) if self.is_whole else self.index.gather(name, self.passages)
            self._cols["passage:" + name] = got
        return got

    def _passages(self) -> tuple[np.ndarray, np.ndarray]:
        """(the view's passages' session ids, ascending; each view event's first view passage)."""
        index = self.index
        if self.is_whole:
            return np.arange(index.passages, dtype=np.int64), self.column("first_passage")
        m = self.positions.size
        if m == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        first = index.gather("first_passage", self.positions).astype(np.int64)
        after = self.positions + 1
        ends = np.empty(m, dtype=np.int64)
        inside = after < len(index)
        ends[inside] = index.gather("first_passage", after[inside])
        ends[~inside] = index.passages
        counts = ends - first
        v_first = np.zeros(m, dtype=np.int64)
        np.cumsum(counts[:-1], out=v_first[1:])
        passages = np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(first - v_first, counts)
        return passages, v_first

    def passage_index(self, slots: np.ndarray) -> np.ndarray:
        """View passage indices of the session passages `slots` (each in the view). The window's passages are
        the view's last ones, contiguous, so theirs is a shift; only the old ones are searched for — a
        request's BM25 maps every posting of the window's common words (tens of thousands) through here."""
        if self.is_whole:
            return slots
        passages = self.passages
        split = self._window_passage()
        if split is None:
            out: np.ndarray = np.searchsorted(passages, slots)
            return out
        first = int(passages[split])
        out = np.asarray(slots, dtype=np.int64) - (first - split)
        old = slots < first
        if old.any():
            out[old] = np.searchsorted(passages[:split], slots[old])
        return out

    def _window_passage(self) -> int | None:
        """The view index of the window's first passage (every later view passage follows it in the session),
        or None: a view with no events before the window (:meth:`at`'s, whose events are no window, among
        them), or whose window events have no passage. The events after the `old` ones are the window's, the
        session's last ones one after the other (:meth:`SessionIndex.request_view`)."""
        if not 0 < self.old < len(self):
            return None
        split = int(self.v_first[self.old])
        return split if split < self.passages.size else None

    def contiguous_from(self, since: int) -> int:
        """The shift that maps a session passage id >= `since` to its view index (every passage from `since`
        on is in the view: the window's)."""
        if self.is_whole:
            return 0
        return since - int(np.searchsorted(self.passages, since))

    # -- the columns a ranking reads, in view positions ------------------------------------------------

    @property
    def cost(self) -> np.ndarray:
        return self.column("cost")

    @property
    def turn(self) -> np.ndarray:
        return self.column("turn")

    @property
    def ts(self) -> np.ndarray:
        return self.column("ts")

    @property
    def kinds(self) -> np.ndarray:
        return self.column("kind")

    @property
    def unit_of(self) -> np.ndarray:
        """Each event's unit, as the view position of the unit's first member (every unit is whole in a view)."""
        got = self._cols.get("unit_of_view")
        if got is None:
            units = self.column("unit_of")
            got = units if self.is_whole else np.searchsorted(self.positions, units)
            self._cols["unit_of_view"] = got
        return got

    @property
    def roles(self) -> np.ndarray:
        """:attr:`SessionIndex.roles` at the view's events."""
        got = self._cols.get("roles")
        if got is None:
            if self.is_whole:
                got = self.index.roles
            else:
                from hologram.memory.index.session_index import roles_of

                got = roles_of(self.column("kind"), self.column("grouped"))
            self._cols["roles"] = got
        return got

    def whole_units(self, mask: np.ndarray) -> np.ndarray:
        """`mask` (over the view) widened to whole units (:meth:`SessionIndex.whole_units`)."""
        unit_of = self.unit_of
        hit = np.zeros(len(self), dtype=bool)
        hit[unit_of[mask]] = True
        out: np.ndarray = hit[unit_of]
        return out

    def session(self, at: Any) -> np.ndarray:
        """Session positions of view positions `at`."""
        out: np.ndarray = self.positions[np.asarray(at, dtype=np.int64)]
        return out

    def seqs_of(self, at: np.ndarray) -> np.ndarray:
        return self.index.seqs_of(self.session(at))

    def ts_of(self, at: np.ndarray) -> np.ndarray:
        return self.index.ts_of(self.session(at))

    def position_of_seq(self, seq: int) -> int | None:
        """The view position of the event with log seq `seq`, or None (not indexed, or not in the view)."""
        at = self.index.position_of_seq(seq)
        if at is None:
            return None
        k = int(np.searchsorted(self.positions, at))
        return k if k < self.positions.size and int(self.positions[k]) == at else None

    def cosines_to_events(self, positions: list[int], horizon: int | None = None) -> np.ndarray | None:
        """:meth:`SessionIndex.cosines_to_events` from the events at view `positions`, over the view."""
        return self.index.cosines_to_events(self.session(positions).tolist(), horizon, view=self)
