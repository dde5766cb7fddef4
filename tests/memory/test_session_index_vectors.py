"""Passage vectors are held as int8 with a scale per row (a quarter of float32; the largest thing a long
session keeps in memory). What must hold: a stored vector comes back within quantisation error, the dense
ranking of passages is the one float32 gives, and a passage costs about one byte per dimension.

Mutation check (done): dropping the per-row scale (``part *= self._scale[:rows]`` removed) turns
`test_dense_ranking_is_the_float32_ranking` red (scores are no longer cosines: long rows win).
"""

from __future__ import annotations

import numpy as np

from hologram.memory.index.session_index import IndexQuery, SessionIndex

DIM = 384


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    v[: n // 2] *= 3.0  # rows of different peak magnitude: the scale must be per row
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _index(n: int) -> SessionIndex:
    index = SessionIndex()
    for i in range(n):
        index.add(i + 1, f"s:{i + 1}", "input", f"passage number {i}", 10, group=None, ts=float(i))
    return index


def test_a_stored_vector_comes_back_within_quantisation_error() -> None:
    rng = np.random.default_rng(7)
    vectors = _unit(rng, 50)
    index = _index(50)
    index.set_vectors("fp", list(range(50)), vectors)
    for p in (0, 17, 49):
        back = index.passage_vector(p)
        assert back is not None and back.dtype == np.float32
        assert float(back @ vectors[p]) > 0.999


def test_dense_ranking_is_the_float32_ranking() -> None:
    rng = np.random.default_rng(11)
    vectors = _unit(rng, 400)
    index = _index(400)
    index.set_vectors("fp", list(range(400)), vectors)
    query = vectors[3] + 0.5 * vectors[250]
    query /= np.linalg.norm(query)
    got, mask = index._cosine(IndexQuery(terms={}, dense=query, fingerprint="fp"))
    assert mask.all()
    exact = vectors @ query
    assert np.max(np.abs(got - exact)) < 0.01
    assert list(np.argsort(-got)[:2]) == list(np.argsort(-exact)[:2]) == [3, 250]


def test_a_passage_costs_about_a_byte_per_dimension() -> None:
    index = _index(1000)
    index.set_vectors("fp", list(range(1000)), _unit(np.random.default_rng(3), 1000))
    assert index._matrix is not None
    per_passage = (index._matrix.nbytes + index._scale.nbytes) / index._matrix.shape[0]
    assert per_passage <= DIM + 8, per_passage  # float32 would be 1,536 bytes
