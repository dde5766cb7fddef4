"""Relevance of history to the current input: dense + BM25 fusion, smoothed over neighbouring turns.

Measured on LoCoMo (``tools/bench/memory.py``, ``docs/memory.md``), evidence recall at a 4k budget: BM25 0.76,
dense USE 0.82, reciprocal-rank fusion 0.83, this scorer 0.91. Two ideas carry it:

1. **Score fusion on a common scale.** Dense cosine and BM25 live on unrelated scales; each is z-normalised
   over the candidate events and the two are averaged with equal weight (no tuning: neither signal is
   privileged). Unlike rank fusion this keeps *how much* better a hit is, which matters when one signal is
   confident (a rare name for BM25) and the other is flat. An event without a dense vector in the query's
   space is scored by BM25 alone, as DESIGN.md prescribes.
2. **Neighbouring turns.** Conversation is local: the answer to a question sits next to the question, a fact
   is stated in one turn and elaborated in the next. Every event receives a share of its neighbours' scores
   with weights halving per step (1/2 for the adjacent events, 1/4 for the next ones), so the context window
   around a strong hit is kept with it. Halving is a principled default, not a fitted value; the dev/held-out
   check is in the docs.

Events must be passed in time order (``prune`` does this).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hologram.memory.rank.events import MemoryEvent, Query
from hologram.memory.text.tfidf import TermVector, TfidfIndex

__all__ = [
    "NEIGHBOUR_WEIGHTS",
    "HybridScorer",
    "Scorer",
    "dense_scores",
    "neighbour_smooth",
    "zscore",
]

#: Share of the k-th neighbour's score an event receives (k = 1, 2): halving per step.
NEIGHBOUR_WEIGHTS: tuple[float, ...] = (0.5, 0.25)


class Scorer(Protocol):
    """Scores time-ordered events against a query; higher is more relevant."""

    def __call__(self, events: Sequence[MemoryEvent], query: Query, /) -> np.ndarray: ...


def zscore(x: np.ndarray) -> np.ndarray:
    """Zero mean, unit variance (a constant vector maps to zeros), float32.

    ``(x - x.mean()) / x.std()`` with the deviations computed once: ``std`` subtracts the same mean (numpy's
    ``_var``: the sum over the count, in `x`'s type), so the values are those of the two calls, bit for bit
    (tests/memory/test_score.py), in three passes fewer over a long session's events."""
    if x.size == 0:
        return np.zeros(0, dtype=np.float32)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    mean = x.mean()
    dev = x - mean
    squares = np.square(dev)
    kind = x.dtype.type
    std = float(kind(np.sqrt(kind(squares.sum() / np.intp(x.size)))))
    if std <= 1e-12:
        return np.zeros(x.shape, dtype=np.float32)
    np.divide(dev, std, out=dev)
    out: np.ndarray = dev.astype(np.float32, copy=False)
    return out


def dense_scores(events: Sequence[MemoryEvent], query: Query) -> tuple[np.ndarray, np.ndarray]:
    """Cosine of each event to the query, and a mask of the events where it is defined (same space)."""
    n = len(events)
    scores = np.zeros(n, dtype=np.float32)
    mask = np.zeros(n, dtype=bool)
    q = query.dense
    if q is None or n == 0:
        return scores, mask
    fp, dim = q.fingerprint, q.dimension
    rows: list[int] = []
    vecs: list[np.ndarray] = []
    for i, e in enumerate(events):
        d = e.dense
        if d is not None and d.fingerprint == fp and d.values.shape[0] == dim:
            rows.append(i)
            vecs.append(d.values)
    if rows:
        # einsum, not `@`: a 1000x512 product is ~0.1 ms single-threaded, while multithreaded BLAS on a busy
        # 2-core host measured 3 ms for it (thread wake-up and contention) - and the kernel is always busy.
        scores[rows] = np.einsum("ij,j->i", np.stack(vecs), q.values.astype(np.float32, copy=False))
        mask[rows] = True
    return scores, mask


def neighbour_smooth(
    scores: np.ndarray, weights: Sequence[float] = NEIGHBOUR_WEIGHTS, segment: np.ndarray | None = None
) -> np.ndarray:
    """s_i + sum_k w_k * (s_{i-k} + s_{i+k}) / 2; beyond the ends the minimum score stands in.
    ``segment``: a label per score (the cold index's session); a neighbour with another label does not
    count either, the minimum stands in for it too (sessions are not each other's context)."""
    n = scores.size
    if n == 0 or not weights:
        return scores.astype(np.float32)
    floor = float(scores.min())
    out = scores.astype(np.float64)
    for k, w in enumerate(weights, start=1):
        if k >= n:
            left = right = np.full(n, floor)
        else:
            left = np.concatenate([np.full(k, floor), scores[:-k]])
            right = np.concatenate([scores[k:], np.full(k, floor)])
            if segment is not None:
                same = segment[k:] == segment[:-k]
                left[k:] = np.where(same, left[k:], floor)
                right[:-k] = np.where(same, right[:-k], floor)
        out += w * (left + right) / 2.0
    return out.astype(np.float32)


class HybridScorer:
    """z(BM25) and z(dense cosine) averaged, then smoothed over neighbouring events (see module docstring)."""

    def __init__(
        self,
        index: TfidfIndex,
        *,
        lexical_weight: float = 0.5,
        neighbour_weights: Sequence[float] = NEIGHBOUR_WEIGHTS,
    ) -> None:
        self.index = index
        self.lexical_weight = lexical_weight
        self.neighbour_weights = tuple(neighbour_weights)

    def __call__(self, events: Sequence[MemoryEvent], query: Query) -> np.ndarray:
        if not events:
            return np.zeros(0, dtype=np.float32)
        terms = [e.terms if e.terms is not None else TermVector.from_text(e.text) for e in events]
        lexical = zscore(self.index.score(query.terms, terms))
        dense, mask = dense_scores(events, query)
        fused = lexical.copy()
        if mask.any():
            w = self.lexical_weight
            fused[mask] = w * lexical[mask] + (1.0 - w) * zscore(dense[mask])
        return neighbour_smooth(fused, self.neighbour_weights)

    @classmethod
    def for_events(cls, events: Sequence[MemoryEvent]) -> HybridScorer:
        """A scorer whose IDF is built from `events` alone (stores keep their own incremental index)."""
        index = TfidfIndex()
        for e in events:
            index.add(e.terms if e.terms is not None else TermVector.from_text(e.text))
        return cls(index)
