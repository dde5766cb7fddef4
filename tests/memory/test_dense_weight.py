"""The dense cosine's share of the fused score (`DENSE_WEIGHT`, hologram.memory.index.session_index).

Two events, each the one match of one signal: the one only the question's words reach (BM25) and the one only
its meaning reaches (a cosine of 1, every other passage 0). The two spikes have the same z-score, so with
equal shares they would tie; with the dense share above half the meaning's event ranks first, by exactly
(2·DENSE_WEIGHT − 1) of that z-score, and the words' event still ranks above the events neither signal reaches.

Mutation check (done): ``DENSE_WEIGHT = 0.5`` turns ``test_the_meaning_outranks_the_words_alone`` red (a tie).
"""

from __future__ import annotations

import numpy as np

from hologram.memory.index.session_index import DENSE_WEIGHT, IndexQuery, SessionIndex
from hologram.memory.rank.score import zscore
from hologram.memory.text.tokenizer import tokenize

N, WORDS, MEANING = 12, 3, 8


def test_the_meaning_outranks_the_words_alone() -> None:
    index = SessionIndex()
    for i in range(N):
        text = "we rented a kayak at the lake" if i == WORDS else f"plain filler statement number {i}"
        index.add(i + 1, f"s:{i + 1}", "input", text, 10, group=None, ts=float(i))
    vectors = np.zeros((N, N + 1), dtype=np.float32)
    for i in range(N):
        vectors[i, i + 1] = 1.0  # orthogonal to the query (axis 0) and to each other
    vectors[MEANING] = 0.0
    vectors[MEANING, 0] = 1.0
    index.set_vectors("fp", list(range(N)), vectors)
    query_vector = np.zeros(N + 1, dtype=np.float32)
    query_vector[0] = 1.0
    terms = dict.fromkeys(tokenize("kayak"), 1.0)
    scores = index.scores(IndexQuery(terms=terms, dense=query_vector, fingerprint="fp"))
    spike = float(zscore(np.eye(N)[0])[0] - zscore(np.eye(N)[0])[1])  # one spike among equals, above the rest
    assert scores[MEANING] > scores[WORDS]
    assert abs((scores[MEANING] - scores[WORDS]) - (2 * DENSE_WEIGHT - 1) * spike) < 1e-3
    far = [s for i, s in enumerate(scores) if min(abs(i - WORDS), abs(i - MEANING)) > 1]
    assert scores[WORDS] > max(far)
