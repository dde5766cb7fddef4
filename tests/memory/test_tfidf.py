"""Incremental IDF and BM25 scoring."""

from __future__ import annotations

import numpy as np
import pytest

from hologram.memory.text.tfidf import TermVector, TfidfIndex
from hologram.memory.text.tokenizer import tokenize, wait_for_jieba


def _index(texts: list[str]) -> tuple[TfidfIndex, list[TermVector]]:
    index = TfidfIndex()
    vecs = [TermVector.from_text(t) for t in texts]
    for v in vecs:
        index.add(v)
    return index, vecs


def test_idf_is_incremental_and_removal_restores_it() -> None:
    index, _ = _index(["apple banana", "apple cherry", "apple durian"])
    assert index.idf("durian") > index.idf(tokenize("apple")[0])
    before = index.idf("durian")
    extra = TermVector.from_text("durian pie")
    index.add(extra)
    assert index.idf("durian") < before  # more documents mention it: less specific
    index.remove(extra)
    assert index.idf("durian") == pytest.approx(before)
    assert index.docs == 3 and "pie" not in index.df


def test_rare_term_match_ranks_first() -> None:
    texts = ["we talked about the weather", "my dog Biscuit loves the park", "the weather was nice"]
    index, vecs = _index(texts)
    scores = index.score(TermVector.from_text("How is Biscuit?"), vecs)
    assert int(np.argmax(scores)) == 1
    assert scores[0] == 0 and scores[2] == 0


def test_missing_vectors_score_zero() -> None:
    index, vecs = _index(["alpha beta"])
    scores = index.score(TermVector.from_text("alpha"), [None, vecs[0]])
    assert scores[0] == 0 and scores[1] > 0


def test_chinese_query_matches_chinese_event() -> None:
    assert wait_for_jieba(timeout=60)
    index, vecs = _index(["我忘记了密码，需要重置", "今天天气很好", "我们去北京旅游"])
    scores = index.score(TermVector.from_text("如何重置密码"), vecs)
    assert int(np.argmax(scores)) == 0 and scores[1] == 0


def test_a_huge_text_is_indexed_by_its_start_only() -> None:
    """A 5 MB tool result is segmented up to MAX_INDEX_CHARS, not in full: its start's words are terms, a word
    only past the cap is not (the text itself stays stored and recallable by those terms)."""
    from hologram.memory.text.tfidf import MAX_INDEX_CHARS, TermVector

    head = "deployment manifest 部署清单 "
    text = head * (MAX_INDEX_CHARS // len(head) + 1) + "zebracorn " * 500_000
    vector = TermVector.from_text(text)
    assert len(text) > 100 * MAX_INDEX_CHARS
    assert {"deploy", "manifest", "部署"} <= vector.counts.keys() and not any("zebra" in t for t in vector.counts)
    assert vector.length <= MAX_INDEX_CHARS  # bounded work: no more terms than indexed characters
