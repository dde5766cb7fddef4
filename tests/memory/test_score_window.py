"""A long session's request reads BM25 postings over a window of its newest events and, before it, only the
query's rare words (memory/index/window.py, issue 39 item 7); a far-back event named by a rare word still
reaches the request, the window's passages score exactly as without the bound, and the old part's candidates
are cut to what a budget could hold.

One real session (SessionStore, ColdStore and index segments on disk) of ~2,400 events whose words repeat, with
a fact said at its start; the session memory's window is set to 512 events so a short session is "long" (the
product's 4,096 is above every LoCoMo conversation). Questions are asked with `preview` (nothing moved).

Mutation checks (done): ``old_bounded`` returning every part (no bound) turns
``test_a_common_words_request_reads_a_bounded_number_of_postings`` red; a bound that drops the old part's rare
words too (``limit`` 0) turns ``test_a_far_back_fact_named_by_a_rare_word_reaches_the_request`` red; the
windowed length normalisation without ``_B`` turns ``test_the_window_scores_exactly_as_without_the_bound`` red;
``old_candidates`` keeping the worst instead of the best turns ``test_old_candidates_keep_the_best`` red;
``old_bounded`` searching with the boundary as a Python int again turns
``test_finding_the_window_boundary_copies_no_postings`` red.
"""

from __future__ import annotations

import asyncio
import sys
import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest

from hologram.memory.index.window import OLD_CANDIDATES, OLD_POSTINGS, SCORE_WINDOW, old_bounded, old_candidates
from hologram.memory.text.tfidf import TermVector
from tests.memory.long_session import QUESTION, Long, build

COMMON = "Did the meeting move to Thursday afternoon? Check the file and keep a note."
EVENTS = 2_400
WINDOW = 512
BUDGET_WINDOW = 6000


@pytest.fixture(scope="module")
def long(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Long]:
    built = asyncio.run(build(tmp_path_factory.mktemp("score-window"), EVENTS, BUDGET_WINDOW, score_window=WINDOW))
    yield built
    built.close()


def _terms(text: str) -> dict[str, float]:
    return dict.fromkeys(TermVector.from_text(text).counts, 1.0)


def test_the_product_window_is_above_every_locomo_conversation() -> None:
    assert SCORE_WINDOW >= 4096 > 1_500  # LoCoMo's longest conversation with its answers: < 1,500 events


def test_a_far_back_fact_named_by_a_rare_word_reaches_the_request(long: Long) -> None:
    index = long.mem._state(long.sid).index
    assert len(index) >= EVENTS > 4 * long.mem.score_window and index.segments > 1
    assert long.fact_seq not in long.ask(COMMON).seqs  # type: ignore[attr-defined]
    prepared = long.ask(QUESTION)
    assert long.fact_seq in prepared.recalled_seqs  # type: ignore[attr-defined]  # from L2, ~2,400 events back
    assert long.fact_seq in prepared.seqs  # type: ignore[attr-defined]
    with index.reading():
        first_recent = int(index.first_passage[len(index) - long.mem.score_window])
        bm25 = index._bm25(_terms(QUESTION), long.mem.score_window)
        fact = int(index.first_passage[index.position_of_seq(long.fact_seq)])
    assert fact < first_recent and bm25[fact] > 0  # scored through its rare words, before the window


def test_a_common_words_request_reads_a_bounded_number_of_postings(long: Long) -> None:
    index = long.mem._state(long.sid).index
    terms = _terms(COMMON)
    with index.reading():
        first_recent = int(index.first_passage[len(index) - long.mem.score_window])
        window_passages = index.passages - first_recent
        index._bm25(terms, None)
        whole = index.bm25_rows
        index._bm25(terms, long.mem.score_window)
        bounded = index.bm25_rows
    # every one of the window's passages at most once per word, and a rare word's few old ones
    assert 0 < bounded <= len(terms) * (window_passages + OLD_POSTINGS)
    assert whole > 3 * bounded  # without the bound: the common words' postings over the whole session
    long.ask(COMMON)  # the request's own pass is the bounded one
    assert index.bm25_rows <= len(terms) * (window_passages + OLD_POSTINGS)
    long.mem.score_window = sys.maxsize
    try:
        long.ask(COMMON)
        assert index.bm25_rows > 3 * bounded
    finally:
        long.mem.score_window = WINDOW


def test_the_window_scores_exactly_as_without_the_bound(long: Long) -> None:
    index = long.mem._state(long.sid).index
    for text in (COMMON, QUESTION, "会议 文件 星期四"):
        terms = _terms(text)
        with index.reading():
            first_recent = int(index.first_passage[len(index) - long.mem.score_window])
            whole = index._bm25(terms, None)
            bounded = index._bm25(terms, long.mem.score_window)
            shorter = index._bm25(terms, len(index))  # a window the session does not exceed: no bound at all
        assert np.array_equal(bounded[first_recent:], whole[first_recent:])
        assert np.array_equal(shorter, whole)
        old = bounded[:first_recent]
        assert np.array_equal(old[old > 0], whole[:first_recent][old > 0])  # what the old part reads: the same


def test_old_candidates_keep_the_best() -> None:
    rng = np.random.default_rng(7)
    n, start = 5000, 4000
    scores = rng.standard_normal(n)
    extra = rng.random(n) < 0.6
    out = old_candidates(extra, scores, start, budget=4000)
    assert np.array_equal(out[start:], extra[start:])  # the window's are untouched
    kept = np.flatnonzero(out[:start])
    assert kept.size == OLD_CANDIDATES and not (out & ~extra).any()
    dropped = np.flatnonzero(extra[:start] & ~out[:start])
    assert scores[kept].min() >= scores[dropped].max()
    assert np.array_equal(old_candidates(extra, scores, start, budget=10**6), extra)  # a budget that holds them
    few = extra.copy()
    few[:start] = False
    assert old_candidates(few, scores, start, budget=4000) is few


def test_finding_the_window_boundary_copies_no_postings() -> None:
    """A segment's postings are int32 (mapped); numpy searches an int32 array for a Python int by first casting
    the whole array to int64 — every page of a common word's old postings read to find one boundary, which
    made the late soak's requests slower than the early ones. The search must allocate nothing the size of
    the part (tracemalloc sees numpy's buffers)."""
    slots = np.arange(0, 2_000_000, 2, dtype=np.int32)  # one common word's part: a million postings
    tfs = np.ones_like(slots)
    later = slots + 2_000_000  # the window's part
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        kept, named = old_bounded([(slots, tfs), (later, tfs)], first_recent=1_000_001)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [k[0].size for k in kept] == [499_999, 1_000_000] and named == []  # the straddling part was cut
    assert int(kept[0][0][0]) == 1_000_002  # at the boundary
    assert peak < 64 * 1024, f"{peak:,} bytes allocated to find the boundary (the part is {slots.nbytes:,})"
