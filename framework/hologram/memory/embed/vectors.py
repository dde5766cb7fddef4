"""Dense vectors tagged with their space, and a flat top-k index for cold (L2) search.

Every dense vector carries the fingerprint of the model that made it. A store can hold vectors of several
models at once (the model was changed, or the ONNX build was uninstalled); scores are only computed between
vectors of the same fingerprint and dimension, everything else falls back to TF-IDF (see ``score.py``).

:class:`VectorIndex` is a contiguous float32 matrix with amortised appends and swap-remove: an exact
inner-product scan over 100k x 512 is one BLAS matrix-vector product (~10-20 ms on two cores), fast enough for
``coldcontext_query`` without an approximate index and its recall loss.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

__all__ = ["DenseVector", "VectorIndex"]


@dataclass(frozen=True, slots=True, eq=False)
class DenseVector:
    """An L2-normalised float32 vector and the fingerprint of the embedding space it lives in."""

    fingerprint: str
    values: np.ndarray

    @property
    def dimension(self) -> int:
        return int(self.values.shape[0])

    def comparable(self, other: DenseVector) -> bool:
        """Same space: same model fingerprint and same dimension."""
        return self.fingerprint == other.fingerprint and self.dimension == other.dimension


class VectorIndex:
    """Exact top-k inner-product search over the dense vectors of one fingerprint."""

    def __init__(self, fingerprint: str, dimension: int, capacity: int = 1024) -> None:
        self.fingerprint = fingerprint
        self.dimension = dimension
        self._mat = np.zeros((max(1, capacity), dimension), dtype=np.float32)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._row

    def add(self, event_id: str, vector: DenseVector) -> None:
        """Insert or replace the vector of `event_id`; a vector of another space is rejected."""
        if vector.fingerprint != self.fingerprint or vector.dimension != self.dimension:
            raise ValueError(f"vector of {vector.fingerprint}/{vector.dimension} in index of {self.fingerprint}")
        row = self._row.get(event_id)
        if row is None:
            row = len(self._ids)
            if row == self._mat.shape[0]:
                grown = np.zeros((row * 2, self.dimension), dtype=np.float32)
                grown[:row] = self._mat
                self._mat = grown
            self._ids.append(event_id)
            self._row[event_id] = row
        self._mat[row] = vector.values

    def add_many(self, items: Iterable[tuple[str, DenseVector]]) -> None:
        for event_id, vector in items:
            self.add(event_id, vector)

    def remove(self, event_id: str) -> bool:
        """Drop `event_id` (swap with the last row: O(1)); False if it was not there."""
        row = self._row.pop(event_id, None)
        if row is None:
            return False
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._mat[row] = self._mat[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._ids.pop()
        return True

    def search(self, query: DenseVector, k: int) -> list[tuple[str, float]]:
        """The `k` best (id, cosine) pairs, best first, ties broken by id for determinism."""
        n = len(self._ids)
        if n == 0 or k <= 0 or not query.comparable(DenseVector(self.fingerprint, self._mat[0])):
            return []
        # einsum rather than BLAS gemv: same speed single-threaded, and no BLAS thread pool spinning up
        # inside a busy kernel process (measured: faster under load on 2 cores).
        scores = np.einsum("ij,j->i", self._mat[:n], query.values.astype(np.float32, copy=False))
        k = min(k, n)
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        ranked = sorted(top.tolist(), key=lambda r: (-float(scores[r]), self._ids[r]))
        return [(self._ids[r], float(scores[r])) for r in ranked]
