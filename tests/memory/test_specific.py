"""A word many of the session's passages say is generic there (memory/rank/specific.py).

Mutation checks (done): with ``specificity`` returning 1 always (the line in ``SessionIndex._bm25`` removed)
``test_the_specific_word_decides_among_events_that_share_the_generic_one`` is red (the short turn repeating
the generic word ranks first); with the ``GENERIC_PASSAGES`` condition dropped ``test_what_counts_as_generic``
is red.
"""

from __future__ import annotations

import numpy as np
import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank import specific
from hologram.memory.rank.query import build_query
from hologram.memory.rank.specific import GENERIC_PASSAGES, GENERIC_WEIGHT, specificity

PLACES = ["harbour", "library", "market", "station", "bakery", "garden", "museum", "office", "cinema", "bridge"]
REPEATS = "My dogs! Dogs everywhere, the dogs love dog days."
EVIDENCE = (
    "We spent the whole afternoon kayaking across the lake near the campsite and grilled the fish we caught "
    "for dinner while the sun went down behind the hills"
)
QUESTION = "What did Andrew do with his dogs at the lake?"


def _session() -> tuple[SessionIndex, int, int]:
    """600 inputs: fillers about places, twenty that mention the dogs in passing (3 %: generic here), the short
    turn that repeats the word, and the evidence, which says "lake" once and "dogs" not at all."""
    index = SessionIndex()
    texts = [f"the {PLACES[i % 10]} on {i % 7 + 1} street had a queue again in week {i}" for i in range(600)]
    for k in range(20):
        texts[20 + 25 * k] = f"the dogs slept most of the day in week {k}"
    texts[100], texts[400] = REPEATS, EVIDENCE
    at = [index.add(i + 1, f"ev{i}", "input", t, 20, group=None, ts=1000.0 + i) for i, t in enumerate(texts)]
    return index, at[100], at[400]


def test_what_counts_as_generic() -> None:
    assert specificity(30, 1000) == GENERIC_WEIGHT < 1, "3 % of the passages: generic"
    assert specificity(15, 1000) == 1.0, "1.5 %: specific"
    assert specificity(10, 30) == 1.0, "a short session's shares say little: nothing is generic there"
    assert specificity(GENERIC_PASSAGES, GENERIC_PASSAGES) == GENERIC_WEIGHT


def test_the_specific_word_decides_among_events_that_share_the_generic_one(monkeypatch: pytest.MonkeyPatch) -> None:
    index, repeats, evidence = _session()
    query = build_query(index, QUESTION, now=0)
    assert {"dog", "lake"} <= set(query.terms), query.terms
    assert index.document_share("dog") > specific.GENERIC_SHARE, 'the path: "dog" is generic in this session'
    with monkeypatch.context() as patch:
        patch.setattr(specific, "GENERIC_WEIGHT", 1.0)
        plain = index.scores(query)
    assert int(np.argmax(plain)) == repeats, "the path: by BM25's IDF alone the repeated generic word wins"
    scores = index.scores(query)
    assert int(np.argmax(scores)) == evidence, "the question's specific word decides"
