"""Cold (L2) top-k index."""

from __future__ import annotations

import numpy as np
import pytest

from hologram.memory.embed.vectors import DenseVector, VectorIndex


def _unit(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    m = rng.standard_normal((n, dim)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_search_matches_brute_force_after_adds_and_removes() -> None:
    rng = np.random.default_rng(1)
    vecs = _unit(rng, 300)
    index = VectorIndex("fp", 16, capacity=4)  # forces growth
    for i, v in enumerate(vecs):
        index.add(f"e{i}", DenseVector("fp", v))
    removed = {f"e{i}" for i in range(0, 300, 3)}
    for r in removed:
        assert index.remove(r)
    assert not index.remove("e0")
    assert len(index) == 200 and "e0" not in index and "e1" in index
    q = _unit(rng, 1)[0]
    got = index.search(DenseVector("fp", q), 7)
    alive = [i for i in range(300) if f"e{i}" not in removed]
    expect = sorted(alive, key=lambda i: -float(vecs[i] @ q))[:7]
    assert [g[0] for g in got] == [f"e{i}" for i in expect]
    assert got[0][1] == pytest.approx(float(vecs[expect[0]] @ q), abs=1e-5)


def test_other_space_is_rejected_or_ignored() -> None:
    index = VectorIndex("fp", 4)
    with pytest.raises(ValueError):
        index.add("x", DenseVector("other", np.ones(4, dtype=np.float32)))
    index.add("a", DenseVector("fp", np.ones(4, dtype=np.float32) / 2))
    assert index.search(DenseVector("other", np.ones(4, dtype=np.float32)), 3) == []
    assert index.search(DenseVector("fp", np.ones(8, dtype=np.float32)), 3) == []
