"""Dense vs TF-IDF choice, fusion and neighbour smoothing; Chinese and English end to end."""

from __future__ import annotations

import numpy as np

from hologram.memory.embed.embedder import load_embedder
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.rank.events import MemoryEvent, Query, make_event
from hologram.memory.rank.prune import prune
from hologram.memory.rank.score import HybridScorer, dense_scores, neighbour_smooth
from hologram.memory.text.tfidf import TermVector
from hologram.memory.text.tokenizer import wait_for_jieba


def _vec(fp: str, *xs: float) -> DenseVector:
    v = np.array(xs, dtype=np.float32)
    return DenseVector(fp, v / np.linalg.norm(v))


def test_dense_only_between_same_fingerprint_and_dimension() -> None:
    q = Query("q", TermVector.from_terms(["x"]), _vec("A", 1, 0))
    events = [
        MemoryEvent("same", 0, "", 1, dense=_vec("A", 1, 0)),
        MemoryEvent("other-model", 1, "", 1, dense=_vec("B", 1, 0)),
        MemoryEvent("other-dim", 2, "", 1, dense=_vec("A", 1, 0, 0)),
        MemoryEvent("none", 3, "", 1),
    ]
    scores, mask = dense_scores(events, q)
    assert mask.tolist() == [True, False, False, False]
    assert scores[0] > 0.99 and not scores[1:].any()


def test_event_in_another_space_is_scored_by_tfidf() -> None:
    """A lexical hit without a comparable dense vector still wins over dense-scored misses."""
    q = Query("reset password", TermVector.from_text("reset password"), _vec("A", 1, 0))
    events = [
        make_event("a", 0, "lunch was great", dense=_vec("A", 0, 1)),
        make_event("b", 1, "how to reset a password", dense=_vec("B", 0, 1)),
        make_event("c", 2, "nice weather", dense=_vec("A", 0.1, 1)),
    ]
    scores = HybridScorer.for_events(events)(events, q)
    assert int(np.argmax(scores)) == 1


def test_neighbour_smoothing_lifts_the_context_of_a_hit() -> None:
    s = np.array([0, 0, 0, 4, 0, 0, 0, 0], dtype=np.float32)
    out = neighbour_smooth(s, (0.5, 0.25))
    assert out[3] == 4  # unchanged itself
    assert out[2] == out[4] == 1.0 and out[1] == out[5] == 0.5
    assert out[7] == 0 and out[0] == 0
    np.testing.assert_array_equal(neighbour_smooth(s, ()), s)


def test_scorer_keeps_the_answer_next_to_a_question_turn() -> None:
    texts = [f"chat about topic number {i}" for i in range(30)]
    texts[10] = "Caroline: did you ever adopt the puppy?"
    texts[11] = "Melanie: yes! we named her Biscuit"  # the answer shares no word with the query
    events = [make_event(f"e{i}", float(i), t) for i, t in enumerate(texts)]
    q = Query("adopt puppy", TermVector.from_text("adopt puppy"))
    budget = events[10].tokens + events[11].tokens + events[29].tokens
    kept = [e.id for e in prune(events, q, budget, pinned_recent=1).kept]
    assert kept == ["e10", "e11", "e29"]


def test_chinese_query_recalls_english_and_chinese_history() -> None:
    """With an embedder, a Chinese question finds the English turn (shared space) and the Chinese turn
    (jieba terms); without one, at least the Chinese turn by TF-IDF."""
    assert wait_for_jieba(timeout=60)
    embedder = load_embedder()
    texts = [
        "We should plan the team offsite soon.",
        "I forgot my password and need to reset it.",
        "The cafeteria has a new menu this week.",
        "明天下午三点开会讨论预算。",
        "我的密码忘了，怎么重置？",
        "Let's watch a movie on Friday.",
    ]
    vecs = embedder.embed(texts) if embedder else None
    q_text = "如何重置我的密码"
    fp = embedder.fingerprint if embedder else ""
    events = [
        make_event(f"e{i}", float(i), t, dense=DenseVector(fp, vecs[i]) if vecs is not None else None)
        for i, t in enumerate(texts)
    ]
    qv = DenseVector(fp, embedder.embed([q_text])[0]) if embedder else None
    q = Query(q_text, TermVector.from_text(q_text), qv)
    scores = HybridScorer.for_events(
        events,
    )(events, q)
    top2 = set(np.argsort(-scores)[:2].tolist())
    assert 4 in top2
    if embedder is not None:
        assert top2 == {1, 4}
