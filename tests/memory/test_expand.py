"""A term in a large share of the session's passages leaves the lexical query (memory/rank/expand.py).

Mutation check (done): without the ``topical_terms`` call in ``build_query`` the long answer ranks below the
short turns that only say the name (``test_a_speakers_name_does_not_outrank_the_answer`` red); with
``MIN_PASSAGES`` ignored ``test_a_short_session_keeps_every_term`` is red."""

from __future__ import annotations

import numpy as np

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.expand import COMMON_SHARE, MIN_PASSAGES, topical_terms
from hologram.memory.rank.query import build_query
from hologram.memory.text.tokenizer import tokenize, wait_for_jieba, warm_up

ANSWER = (
    "Melanie: over coffee yesterday she explained everything, status changed after months apart, breakup during "
    "spring, lonely weeks, therapy sessions, long walks, painting classes, volunteering downtown, dancing lessons, "
    "cooking dinners, hiking trips, reading novels, writing poems, planning adoption, saving money, renting "
    "apartment, learning guitar"
)


def session(turns: int) -> tuple[SessionIndex, int]:
    """Short turns of two people, the answer in the middle; returns the index and the answer's position."""
    index = SessionIndex()
    texts = ["Caroline: ok" if i % 2 else "Melanie: hm" for i in range(turns)]
    at = turns // 2
    texts.insert(at, ANSWER)
    for i, text in enumerate(texts):
        index.add(i + 1, f"ev{i}", "input", text, 10, group=None, ts=1000.0 + i)
    return index, at


def test_a_speakers_name_does_not_outrank_the_answer() -> None:
    index, at = session(80)
    name = tokenize("Caroline")[0]
    assert index.document_share(name) > COMMON_SHARE and index.passages >= MIN_PASSAGES
    query = build_query(index, "What is Caroline's status?", now=0)
    assert name not in query.terms and query.terms[tokenize("status")[0]] == 1.0
    scores = index.scores(query)
    assert int(np.argmax(scores)) == at, "the answer first, not a short turn that only says her name"


def test_a_short_session_keeps_every_term() -> None:
    index, _ = session(20)
    query = build_query(index, "What is Caroline's status?", now=0)
    assert tokenize("Caroline")[0] in query.terms


def test_topical_terms_keeps_the_rare_ones() -> None:
    shares = {"carolin": 0.39, "status": 0.01, "go": 0.03}
    kept = topical_terms({"carolin": 1.0, "status": 2.0, "go": 1.0}, shares.__getitem__, 800, {"carolin"})
    assert kept == {"status": 2.0, "go": 1.0}
    assert topical_terms({"carolin": 1.0}, shares.__getitem__, MIN_PASSAGES - 1, {"carolin"}) == {"carolin": 1.0}
    common = {"key": 0.4, "door": 0.3}
    assert topical_terms({"key": 1.0, "door": 1.0}, common.__getitem__, 800, set()) == {"key": 1.0, "door": 1.0}, (
        "a session's own subject stays: only a name is a participant"
    )
    assert topical_terms({"carolin": 1.0}, shares.__getitem__, 800, {"carolin"}) == {"carolin": 1.0}, (
        "a query of a common name alone is kept as it was"
    )


def test_words_that_frame_a_question_leave_the_lexical_query() -> None:
    warm_up()
    assert wait_for_jieba(60)
    index, _ = session(20)
    q = build_query(index, "What items did John mention having as a child?", now=0)
    assert "mention" not in q.terms and tokenize("child")[0] in q.terms
    zh = build_query(index, "你之前提到过你的车牌号是多少？", now=0)
    assert "提到" not in zh.terms and "车牌号" in zh.terms
    alone = build_query(index, "What did I say?", now=0)
    assert alone.terms == {"say": 1.0}, "a question of framing words alone keeps them"


def test_a_mention_is_not_what_was_mentioned() -> None:
    """The turn that says "you mentioned" does not outrank the one with what was mentioned (LoCoMo's
    "What items does John mention having as a child?" ranked "I remember you mentioning those areas" first)."""
    index = SessionIndex()
    texts = ["Melanie: you mentioned it"]
    texts += ["Anne: back then I had a little doll, the one thing that always made me feel better as a child"]
    texts += [f"Melanie: hm {i}" for i in range(60)]
    for i, text in enumerate(texts):
        index.add(i + 1, f"ev{i}", "input", text, 10, group=None, ts=1000.0 + i)
    scores = index.scores(build_query(index, "What items did John mention having as a child?", now=0))
    assert int(np.argmax(scores)) == 1
