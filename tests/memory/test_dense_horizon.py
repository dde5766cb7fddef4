"""A long session's request computes the dense product over its newest events and its words' best older
passages only (session_index.DENSE_HORIZON, issue 39 item 7), and still recalls a far-back event its words match.

One real session of ~12,000 events (SessionStore, ColdStore and index segments on disk), fed as the soak feeds
it (tools/bench/prepare_scale.py's turns, a committed request every 50 turns, the indexing drained), with a
fact said at its start; the questions are asked with `preview` (nothing moved), so the tests share the session.
Vectors come from a deterministic embedder that hashes each text (the dense product's cost, no model).

Mutation checks (done): the bound's condition off (``n > horizon`` never true in ``SessionIndex._cosine``)
turns ``test_a_request_in_a_long_session_computes_a_bounded_dense_product`` red, and so does computing the
sealed newest segments' cosines again for a turn's later request (``known = None`` in
``SessionIndex.passage_cosines_at``); a bound that drops the old
part's words too (``bm25[:first_recent] = 0`` in ``SessionIndex.scores`` before the lexical z-score) turns
``test_a_far_back_fact_whose_words_match_is_recalled_from_a_12k_event_session`` red.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import pytest

from hologram.memory.index.session_index import DENSE_HORIZON, FAR_DENSE
from tests.memory.long_session import QUESTION, Long, build

EVENTS = 12_000
WINDOW = 6000


@pytest.fixture(scope="module")
def long(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Long]:
    built = asyncio.run(build(tmp_path_factory.mktemp("dense-horizon"), EVENTS, WINDOW))
    yield built
    built.close()


def test_a_far_back_fact_whose_words_match_is_recalled_from_a_12k_event_session(long: Long) -> None:
    index = long.mem._state(long.sid).index
    assert len(index) >= EVENTS and index.segments > 1 and long.mem.dense_horizon < len(index)
    assert long.fact_seq not in long.ask("and what about the meeting file?").seqs  # type: ignore[attr-defined]
    prepared = long.ask(QUESTION)
    assert long.fact_seq in prepared.recalled_seqs  # type: ignore[attr-defined]  # from L2, ~12,000 events back
    assert long.fact_seq in prepared.seqs  # type: ignore[attr-defined]


def test_a_request_in_a_long_session_computes_a_bounded_dense_product(long: Long) -> None:
    index = long.mem._state(long.sid).index
    n, horizon = len(index), long.mem.dense_horizon
    with index.reading():
        newest = index.passages - int(index.first_passage[n - horizon])
    long.ask(f"{QUESTION} (1)")
    first = index.dense_rows
    assert 0 < first <= newest + FAR_DENSE  # the newest events' passages and the words' best older
    assert first < index.passages / 4
    long.ask(f"{QUESTION} (1)")  # a turn's later request (the same input): the sealed newest ones are kept
    assert index.dense_rows < first
    long.mem.dense_horizon = sys.maxsize  # the whole product, as before: the count sees every passage
    try:
        long.ask(f"{QUESTION} (2)")
        assert index.dense_rows == index.passages
    finally:
        long.mem.dense_horizon = DENSE_HORIZON
