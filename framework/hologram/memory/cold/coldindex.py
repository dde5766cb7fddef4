"""In-memory search structures over cold context (L2): a BM25 inverted index and dense matrices.

SQLite holds L2 durably (``cold/store.py``); this module is what makes ``coldcontext_query`` fast. It is rebuilt from
the stored term counts and vectors when the store opens, and updated after every committed write.

Why not SQLite FTS5 for the lexical half: measured on this 2-core host, 100k synthetic events with a Zipfian
vocabulary, an 8-term ``OR`` query ranked by FTS5's ``bm25()`` took p50 ~260 ms (it scores every matching row,
and common terms match tens of thousands) — five times the whole 50 ms budget. Postings as packed
``array('i')`` slot lists with their term frequencies, scored with numpy scatter-adds, take a few ms for the
same queries and ~6 bytes per posting, and they use *our* analyser (jieba + words) and *our* BM25 IDF
(:class:`TfidfIndex`), so L2 is scored exactly like L1.

Scoring is :class:`HybridScorer`'s method applied to L2: z-normalised BM25 and dense cosine averaged (dense
only between vectors of the query's fingerprint and dimension), then smoothed over neighbouring events with
the same halving kernel — neighbours being adjacent L2 events of the same session in time order.

Removal leaves a tombstone (the slot's ``alive`` flag) so postings never need rewriting on the hot path;
:meth:`ColdIndex.compact` renumbers slots once tombstones outnumber live events.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from hologram.memory.embed.vectors import DenseVector
from hologram.memory.rank.events import Query
from hologram.memory.rank.score import NEIGHBOUR_WEIGHTS, neighbour_smooth, zscore
from hologram.memory.text.tfidf import TermVector, TfidfIndex

__all__ = ["ColdIndex", "IndexEntry"]


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """What the index needs of one L2 event."""

    id: str
    session: str | None
    ts_ms: int
    origin: str | None
    terms: TermVector
    dense: DenseVector | None


class _Dense:
    """Rows of one (fingerprint, dimension) space; a row knows its slot, -1 once removed."""

    def __init__(self, dim: int) -> None:
        self.mat = np.zeros((1024, dim), dtype=np.float32)
        self.slot_of_row = np.full(1024, -1, dtype=np.int64)
        self.n = 0
        self.row_of_slot: dict[int, int] = {}

    def add(self, slot: int, values: np.ndarray) -> None:
        if self.n == self.mat.shape[0]:
            cap = self.n * 2
            self.mat = np.concatenate([self.mat, np.zeros_like(self.mat)])[:cap]
            self.slot_of_row = np.concatenate([self.slot_of_row, np.full(self.n, -1, dtype=np.int64)])
        self.mat[self.n] = values
        self.slot_of_row[self.n] = slot
        self.row_of_slot[slot] = self.n
        self.n += 1

    def remove(self, slot: int) -> None:
        row = self.row_of_slot.pop(slot, None)
        if row is not None:
            self.slot_of_row[row] = -1
            self.mat[row] = 0.0


def _grow(a: np.ndarray, need: int, fill: float | int) -> np.ndarray:
    if need <= a.shape[0]:
        return a
    out = np.full(max(need, 2 * a.shape[0]), fill, dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


class ColdIndex:
    """BM25 postings + dense matrices over slots; slots are append-only until :meth:`compact`."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.tfidf = TfidfIndex()
        self.ids: list[str | None] = []
        self.slot_of: dict[str, int] = {}
        self.alive = np.zeros(1024, dtype=bool)
        self.length = np.zeros(1024, dtype=np.float32)
        self.session_code = np.zeros(1024, dtype=np.int64)
        self.ts = np.zeros(1024, dtype=np.int64)
        self.origin_rank: list[str] = []
        self.sessions: dict[str | None, int] = {}
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.dense: dict[tuple[str, int], _Dense] = {}
        self._order: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.slot_of)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self.slot_of

    # -- updates --------------------------------------------------------------------------------------

    def add(self, entry: IndexEntry) -> None:
        if entry.id in self.slot_of:
            raise ValueError(f"{entry.id} is already indexed")
        slot = len(self.ids)
        if slot >= self.alive.shape[0]:
            need = slot + 1
            self.alive = _grow(self.alive, need, False)
            self.length = _grow(self.length, need, 0.0)
            self.session_code = _grow(self.session_code, need, 0)
            self.ts = _grow(self.ts, need, 0)
        self.ids.append(entry.id)
        self.origin_rank.append(entry.origin or "")
        self.slot_of[entry.id] = slot
        self.alive[slot] = True
        self.length[slot] = entry.terms.length
        self.session_code[slot] = self.sessions.setdefault(entry.session, len(self.sessions))
        self.ts[slot] = entry.ts_ms
        self.tfidf.add(entry.terms)
        for term, count in entry.terms.counts.items():
            post = self.postings.get(term)
            if post is None:
                post = self.postings[term] = (array("i"), array("i"))
            post[0].append(slot)
            post[1].append(count)
        if entry.dense is not None:
            key = (entry.dense.fingerprint, entry.dense.dimension)
            space = self.dense.get(key)
            if space is None:
                space = self.dense[key] = _Dense(entry.dense.dimension)
            space.add(slot, entry.dense.values)
        self._order = None

    def remove(self, event_id: str, terms: TermVector) -> bool:
        """Tombstone `event_id`; `terms` are its stored counts (the index keeps no per-event copy: at 100k
        events that copy was most of its memory)."""
        slot = self.slot_of.pop(event_id, None)
        if slot is None:
            return False
        self.alive[slot] = False
        self.tfidf.remove(terms)
        self.ids[slot] = None
        for space in self.dense.values():
            space.remove(slot)
        self._order = None
        if len(self.ids) > 4096 and len(self.ids) > 2 * len(self.slot_of):
            self.compact()
        return True

    def compact(self) -> None:
        """Renumber live slots densely, dropping tombstones from postings and matrices (IDF is unchanged)."""
        n = len(self.ids)
        live = np.flatnonzero(self.alive[:n])
        new_of_old = np.full(max(n, 1), -1, dtype=np.int64)
        new_of_old[live] = np.arange(live.size)
        for term in list(self.postings):
            slots_a, tf_a = self.postings[term]
            slots = np.frombuffer(slots_a, dtype=np.int32)
            keep = new_of_old[slots] >= 0
            if not keep.any():
                del self.postings[term]
                continue
            new_slots, new_tf = array("i"), array("i")
            new_slots.frombytes(new_of_old[slots[keep]].astype(np.int32).tobytes())
            new_tf.frombytes(np.frombuffer(tf_a, dtype=np.int32)[keep].tobytes())
            self.postings[term] = (new_slots, new_tf)
        for space in self.dense.values():
            rows = space.slot_of_row[: space.n]
            keep_rows = np.flatnonzero(rows >= 0)
            space.mat = np.ascontiguousarray(space.mat[keep_rows]) if keep_rows.size else space.mat[:1] * 0
            space.slot_of_row = new_of_old[rows[keep_rows]] if keep_rows.size else np.full(1, -1, dtype=np.int64)
            space.n = int(keep_rows.size)
            space.row_of_slot = {int(s): r for r, s in enumerate(space.slot_of_row[: space.n].tolist())}
        self.ids = [self.ids[s] for s in live.tolist()]
        self.origin_rank = [self.origin_rank[s] for s in live.tolist()]
        self.slot_of = {str(eid): i for i, eid in enumerate(self.ids)}
        self.alive = np.ones(max(live.size, 1), dtype=bool)
        self.alive[live.size :] = False
        self.length = self.length[live].copy()
        self.session_code = self.session_code[live].copy()
        self.ts = self.ts[live].copy()
        self._order = None

    # -- search ---------------------------------------------------------------------------------------

    def bm25(self, query: TermVector) -> np.ndarray:
        """BM25 of every slot against `query` with the store's IDF (dead slots score too; callers mask)."""
        n = len(self.ids)
        out = np.zeros(n, dtype=np.float32)
        idx = self.tfidf
        if not query.counts or idx.docs == 0:
            return out
        avg = max(idx.total_length / idx.docs, 1.0)
        k1, b = idx.k1, idx.b
        length = self.length[:n]
        for term in query.counts:
            post = self.postings.get(term)
            if post is None:
                continue
            slots = np.frombuffer(post[0], dtype=np.int32)
            tf = np.frombuffer(post[1], dtype=np.int32).astype(np.float32)
            norm = k1 * (1.0 - b + b * length[slots] / avg)
            out[slots] += idx.idf(term) * tf * (k1 + 1.0) / (tf + norm)
        return out

    def cosine(self, query: DenseVector | None) -> tuple[np.ndarray, np.ndarray]:
        """Cosine of every slot in the query's space, and the mask where it is defined."""
        n = len(self.ids)
        scores = np.zeros(n, dtype=np.float32)
        mask = np.zeros(n, dtype=bool)
        if query is None:
            return scores, mask
        space = self.dense.get((query.fingerprint, query.dimension))
        if space is None or space.n == 0:
            return scores, mask
        rows = space.slot_of_row[: space.n]
        live = rows >= 0
        # einsum, not BLAS gemv: no thread-pool wake-ups inside a busy kernel (see score.py / vectors.py).
        sims = np.einsum("ij,j->i", space.mat[: space.n], query.values.astype(np.float32, copy=False))
        scores[rows[live]] = sims[live]
        mask[rows[live]] = True
        return scores, mask

    def order(self) -> np.ndarray:
        """Live slots by (session, time, origin, slot): the sequence neighbour smoothing walks along."""
        if self._order is None:
            live = np.flatnonzero(self.alive[: len(self.ids)])
            origin = np.array([self.origin_rank[s] for s in live.tolist()], dtype=object)
            origin_rank = np.unique(origin, return_inverse=True)[1] if live.size else np.zeros(0, dtype=np.int64)
            keys = (live, origin_rank, self.ts[live], self.session_code[live])
            self._order = live[np.lexsort(keys)]
        return self._order

    def top(
        self, query: Query, k: int, session: str | None = None, *, any_session: bool = True
    ) -> list[tuple[str, float]]:
        """The `k` best (event id, score) of all live events (or one session's), best first; ties go to the
        newer event, then the smaller id."""
        order = self.order()
        if not any_session:
            code = self.sessions.get(session)
            order = order[self.session_code[order] == code] if code is not None else order[:0]
        if order.size == 0 or k <= 0:
            return []
        lexical = zscore(self.bm25(query.terms)[order])
        cos, mask = self.cosine(query.dense)
        fused = lexical.copy()
        m = mask[order]
        if m.any():
            fused[m] = 0.5 * lexical[m] + 0.5 * zscore(cos[order][m])
        smoothed = neighbour_smooth(fused, NEIGHBOUR_WEIGHTS, segment=self.session_code[order])
        k = min(k, order.size)
        top = np.argpartition(-smoothed, k - 1)[:k] if k < order.size else np.arange(order.size)
        slots = order[top]
        picked = sorted(
            range(top.size), key=lambda j: (-float(smoothed[top[j]]), -int(self.ts[slots[j]]), str(self.ids[slots[j]]))
        )
        return [(str(self.ids[int(slots[j])]), float(smoothed[top[j]])) for j in picked]
