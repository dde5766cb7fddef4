"""One search index per session over every event it ever had — L1 and L2 alike — in log order.

Why one index and not one per layer: the request's history is *one* ranking over L1 ∪ L2 (issue 11 §1).
Scoring L1 with one scorer and L2 with another (the global cold index, with its own IDF and its own
neighbours) made recalled events and kept events incomparable, and the cold ranker was the weaker of the two.
Here a layer decides only who *holds* an event (L2 membership is the cold store's), never how it scores.

What is indexed, per event: its token cost, its tool-call unit (a call and its results move together), its
turn (an input opens a turn; the model's responses and tool results belong to it) and its **passages**
(:mod:`hologram.memory.passages`), each with BM25 postings and, once the embedder has computed it in the
background, a dense vector. An event scores as its best passage on each signal.

Scoring (:meth:`SessionIndex.scores`) is :class:`~hologram.memory.score.HybridScorer`'s method: z-normalised
BM25 and dense cosine averaged (BM25 alone where a vector is missing), then each event receives a share of its
neighbouring *turns'* best scores (:data:`TURN_NEIGHBOUR_WEIGHTS`). Smoothing by turns, not by
events: a real session interleaves every input with the model's response, and event-by-event smoothing made a
turn's own response its "neighbour".

Everything is a packed array, so scoring ~1,000 events is a handful of numpy operations, not Python loops.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hologram.memory.passages import passages
from hologram.memory.score import neighbour_smooth, zscore
from hologram.memory.tfidf import TermVector

__all__ = ["TIME_BOOST", "TURN_NEIGHBOUR_WEIGHTS", "IndexQuery", "SessionIndex", "fit"]

#: Share of the k-th neighbouring turn's best score an event receives (k = 1, 2; each side counts half).
#: Fitted on the dev split (26/30/41, 4k, stream): halving (0.5, 0.25) 0.902, (0.5, 0.5) 0.913, (0.75, 0.5)
#: 0.914, (0.5, 0.5, 0.5) 0.897, (1, 1) 0.903; held-out with (0.75, 0.5): 0.895 against 0.886 for halving.
#: Wider than the library scorer's event neighbours because a turn here is an input *and* its response.
TURN_NEIGHBOUR_WEIGHTS: tuple[float, ...] = (0.75, 0.5)

#: Added to the fused score of an event inside the window a time cue names (z-score units: a clear nudge,
#: never a filter — people misremember dates).
TIME_BOOST = 0.5
_K1, _B = 1.2, 0.75


@dataclass(frozen=True, slots=True)
class IndexQuery:
    """A query as the index scores it (built by :func:`hologram.memory.query.build_query`)."""

    terms: Mapping[str, float]
    """Term → weight multiplier (1 for the input's terms, 2 for distinctive names, 0.5 for the previous turn)."""
    dense: np.ndarray | None = None
    """Unit vector in the index's embedding space, or None (BM25 only)."""
    fingerprint: str | None = None
    window: tuple[float, float] | None = None
    """A time cue's window (epoch seconds): events inside it get :data:`TIME_BOOST`."""


class SessionIndex:
    """Events and passages of one session (module docstring). Append-only, like the session log."""

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.ids: list[str] = []
        self.kinds: list[str] = []
        self.position: dict[str, int] = {}
        self.cost = array("i")
        self.turn = array("i")
        self.ts = array("d")
        self.unit_of = array("i")
        self.units: list[list[int]] = []
        self._unit_key: dict[str, int] = {}
        self.first_passage = array("i")
        self._turns = -1
        # passages
        self.passage_event = array("i")
        self.passage_length = array("f")
        self.passage_text: list[str | None] = []
        """Text of a passage until its vector is computed (then None: the log keeps the text)."""
        self._done_below = 0
        """Every passage below this one has its vector (or no text): where :meth:`pending` starts."""
        self.postings: dict[str, tuple[array[int], array[int]]] = {}
        self.df: dict[str, int] = {}
        self.total_length = 0
        self.fingerprint: str | None = None
        self._matrix: np.ndarray | None = None
        self._has_vector = np.zeros(0, dtype=bool)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def passages(self) -> int:
        return len(self.passage_event)

    # -- building -------------------------------------------------------------------------------------

    def add(self, seq: int, event_id: str, kind: str, text: str, cost: int, *, group: str | None,
            ts: float, terms: TermVector | None = None) -> int:  # fmt: skip
        """Append one event (log order); returns its position. `terms`: the whole text's, when known."""
        i = len(self.ids)
        self.seqs.append(seq)
        self.ids.append(event_id)
        self.kinds.append(kind)
        self.position[event_id] = i
        self.cost.append(cost)
        if kind == "input":
            self._turns += 1
        self.turn.append(max(self._turns, 0))
        self.ts.append(ts)
        key = "\x00" + event_id if group is None else group
        unit = self._unit_key.get(key)
        if unit is None:
            unit = self._unit_key[key] = len(self.units)
            self.units.append([])
        self.units[unit].append(i)
        self.unit_of.append(unit)
        self.first_passage.append(len(self.passage_event))
        parts = passages(text)
        for part in parts:
            vec = terms if (len(parts) == 1 and terms is not None) else TermVector.from_text(part)
            self._add_passage(i, part, vec)
        return i

    def _add_passage(self, event: int, text: str, terms: TermVector) -> None:
        p = len(self.passage_event)
        self.passage_event.append(event)
        self.passage_length.append(float(terms.length))
        self.passage_text.append(text if text.strip() else None)
        self.total_length += terms.length
        for term, count in terms.counts.items():
            post = self.postings.get(term)
            if post is None:
                post = self.postings[term] = (array("i"), array("i"))
            post[0].append(p)
            post[1].append(count)
            self.df[term] = self.df.get(term, 0) + 1

    # -- dense vectors ----------------------------------------------------------------------------------

    def pending(self, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (passage, text) pairs still without a vector, oldest first."""
        texts = self.passage_text
        while self._done_below < len(texts) and texts[self._done_below] is None:
            self._done_below += 1  # everything before has its vector: never scanned again
        out: list[tuple[int, str]] = []
        for p in range(self._done_below, len(texts)):
            text = texts[p]
            if text is not None:
                out.append((p, text))
                if len(out) >= limit:
                    break
        return out

    def set_vectors(self, fingerprint: str, rows: Sequence[int], vectors: np.ndarray) -> None:
        """Store the vectors of passages `rows` (unit length, from the model with `fingerprint`). Another
        model's vectors are dropped: scores are only computed within one embedding space."""
        if fingerprint != self.fingerprint or self._matrix is None or self._matrix.shape[1] != vectors.shape[1]:
            self.fingerprint = fingerprint
            self._matrix = np.zeros((max(64, self.passages), vectors.shape[1]), dtype=np.float32)
            self._has_vector = np.zeros(self._matrix.shape[0], dtype=bool)
        need = self.passages
        if need > self._matrix.shape[0]:
            grown = np.zeros((max(need, 2 * self._matrix.shape[0]), self._matrix.shape[1]), dtype=np.float32)
            grown[: self._matrix.shape[0]] = self._matrix
            self._matrix = grown
            self._has_vector = np.concatenate(
                [self._has_vector, np.zeros(grown.shape[0] - self._has_vector.size, bool)]
            )
        idx = np.asarray(rows, dtype=np.int64)
        self._matrix[idx] = vectors
        self._has_vector[idx] = True
        for p in rows:
            self.passage_text[p] = None

    def event_vector(self, i: int) -> np.ndarray | None:
        """One vector for event `i` (its passages' mean, renormalised), for the cold store's global search."""
        if self._matrix is None:
            return None
        lo = self.first_passage[i]
        hi = self.first_passage[i + 1] if i + 1 < len(self.first_passage) else self.passages
        have = [p for p in range(lo, hi) if p < self._has_vector.size and self._has_vector[p]]
        if not have:
            return None
        v = self._matrix[have].mean(axis=0)
        norm = float(np.linalg.norm(v))
        return (v / norm).astype(np.float32) if norm > 0 else None

    def passage_vector(self, p: int) -> np.ndarray | None:
        if self._matrix is None or p >= self._has_vector.size or not self._has_vector[p]:
            return None
        out: np.ndarray = self._matrix[p]
        return out

    def passage_key(self, p: int) -> tuple[str, int]:
        """(event id, ordinal of the passage within its event): what the vector cache stores it by."""
        event = self.passage_event[p]
        return self.ids[event], p - self.first_passage[event]

    def document_share(self, term: str) -> float:
        """Share of passages containing `term` (what "distinctive" is measured by)."""
        return self.df.get(term, 0) / self.passages if self.passages else 0.0

    def whole_units(self, mask: np.ndarray) -> np.ndarray:
        """`mask` widened to whole units: an event is in when any member of its call group is (a call
        never travels without its results)."""
        unit_of = np.array(self.unit_of, dtype=np.int64)
        hit = np.zeros(len(self.units), dtype=bool)
        hit[unit_of[mask]] = True
        out: np.ndarray = hit[unit_of]
        return out

    # -- scoring ----------------------------------------------------------------------------------------

    def _bm25(self, terms: Mapping[str, float]) -> np.ndarray:
        n = self.passages
        out = np.zeros(n, dtype=np.float64)
        if not terms or n == 0:
            return out
        avg = max(self.total_length / n, 1.0)
        length = np.frombuffer(self.passage_length, dtype=np.float32)
        for term, weight in terms.items():
            post = self.postings.get(term)
            if post is None or weight <= 0:
                continue
            df = len(post[0])
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            slots = np.frombuffer(post[0], dtype=np.int32)
            tf = np.frombuffer(post[1], dtype=np.int32).astype(np.float64)
            norm = _K1 * (1.0 - _B + _B * length[slots] / avg)
            out[slots] += weight * idf * tf * (_K1 + 1.0) / (tf + norm)
        return out

    def _cosine(self, query: IndexQuery) -> tuple[np.ndarray, np.ndarray]:
        """Best passage cosine per event, and the mask of events that have one."""
        n = len(self.ids)
        if query.dense is None or self._matrix is None or query.fingerprint != self.fingerprint:
            return np.zeros(n), np.zeros(n, dtype=bool)
        p = self.passages
        rows = min(p, self._matrix.shape[0])  # passages added since the last vectors have none yet
        sims = np.full(p, -np.inf)
        # einsum, not BLAS gemv: no thread-pool wake-ups inside a busy kernel (see score.py).
        part = np.einsum("ij,j->i", self._matrix[:rows], query.dense.astype(np.float32, copy=False))
        have = self._has_vector[:rows]
        sims[:rows][have] = part[have]
        best = np.maximum.reduceat(sims, np.frombuffer(self.first_passage, dtype=np.int32))
        mask = np.isfinite(best)
        best[~mask] = 0.0
        return best, mask

    def scores(self, query: IndexQuery, *, segment: np.ndarray | None = None) -> np.ndarray:
        """The relevance of every event to `query` (module docstring), in log order. ``segment``: a label per
        event (the session, when one index holds several: hologram/memory/inspect.py); turns with another
        label are not each other's neighbours."""
        n = len(self.ids)
        if n == 0:
            return np.zeros(0)
        starts = np.frombuffer(self.first_passage, dtype=np.int32)
        lexical = zscore(np.maximum.reduceat(self._bm25(query.terms), starts)).astype(np.float64)
        dense, mask = self._cosine(query)
        fused = lexical
        if mask.any():
            fused = lexical.copy()
            fused[mask] = 0.5 * lexical[mask] + 0.5 * zscore(dense[mask])
        if query.window is not None:
            ts = np.frombuffer(self.ts, dtype=np.float64)
            fused = fused + TIME_BOOST * ((ts >= query.window[0]) & (ts < query.window[1]))
        turn = np.frombuffer(self.turn, dtype=np.int32)
        turn_starts = np.flatnonzero(np.diff(turn, prepend=-1))
        best_of_turn = np.maximum.reduceat(fused, turn_starts)
        labels = None if segment is None else segment[turn_starts]
        around = neighbour_smooth(best_of_turn, TURN_NEIGHBOUR_WEIGHTS, labels).astype(np.float64) - best_of_turn
        out: np.ndarray = fused + around[turn]
        return out


def fit(
    index: SessionIndex,
    scores: np.ndarray | None,
    candidates: np.ndarray,
    budget: int,
    *,
    pinned_recent: int,
    forced: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """Which `candidates` (a mask over the index's events) the request keeps within `budget` tokens.

    :func:`hologram.memory.prune.prune`'s rules on arrays: whole units only; the most recent
    ``min(pinned_recent, budget / mean cost)`` events pinned newest first (the newest always, even alone over
    budget — then the second value is True); `forced` units (an explicit recall this turn) next, whatever
    they cost; then units
    best-first by their best member's score while they fit, ties to the newer unit.
    """
    n = len(index)
    keep = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(candidates)
    if idx.size == 0:
        return keep, False
    cost = np.frombuffer(index.cost, dtype=np.int32)
    unit_of = np.frombuffer(index.unit_of, dtype=np.int32)
    units = index.units
    unit_cost: dict[int, int] = {}
    for i in idx.tolist():
        u = int(unit_of[i])
        unit_cost[u] = unit_cost.get(u, 0) + int(cost[i])
    kept_units: set[int] = set()
    used = 0
    mean = float(cost[idx].mean())
    want = max(1, min(pinned_recent, int(budget // mean) if mean > 0 else idx.size))
    pinned = 0
    for i in idx[::-1].tolist():
        if pinned >= want:
            break
        u = int(unit_of[i])
        if u in kept_units:
            continue
        if used + unit_cost[u] > budget and pinned > 0:
            break
        kept_units.add(u)
        used += unit_cost[u]
        pinned += sum(1 for m in units[u] if candidates[m])
    over = used > budget
    if forced is not None:  # kept like the pinned ones: an explicit recall must not bounce straight back
        for i in np.flatnonzero(forced & candidates).tolist():
            u = int(unit_of[i])
            if u not in kept_units:
                kept_units.add(u)
                used += unit_cost[u]
        over = used > budget
    if scores is not None and used < budget:
        rest = np.array([u for u in unit_cost if u not in kept_units], dtype=np.int64)
        if rest.size:
            best = np.full(len(units), -np.inf)
            np.maximum.at(best, unit_of[idx], scores[idx])
            last = np.array([units[u][-1] for u in rest.tolist()], dtype=np.int64)
            order = rest[np.lexsort((-last, -best[rest]))]
            for u in order.tolist():
                c = unit_cost[u]
                if used + c <= budget:
                    kept_units.add(u)
                    used += c
    for u in kept_units:
        for m in units[u]:
            if candidates[m]:
                keep[m] = True
    return keep, over
