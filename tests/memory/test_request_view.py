"""A request ranks a view of its session (memory/index/view.py, issue 39 item 7): within the scoring window the view
is the whole session and ranks bit for bit as the session does; past it, the view holds the window's events and
the older ones the request can send, every unit whole, and what the request sends is still a valid request.

Real parts: SessionStore, ColdStore and index segments on disk (small seals, so most of the session is sealed),
the session_memory tests' tool-using session (a call and its two results each turn), a bag-of-words embedder.

Mutation checks (done): ``RequestView.passage_index`` searching with ``side="right"`` (each passage mapped to
its neighbour) turns ``test_within_the_window_the_view_scores_bit_for_bit_as_the_session`` red; its window
part's shift off by one turns ``test_past_the_window_the_view_holds_whole_units_and_the_request_stays_valid``
red;
``SessionIndex._with_old_units`` returning the old events without their units' other members turns
``test_past_the_window_the_view_holds_whole_units_and_the_request_stays_valid`` red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.index import view as view_module
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.index.view import RequestView
from hologram.memory.session_memory import Prepared, SessionMemory
from hologram.sessions import SessionStore

from .embedders import BagOfWordsEmbedder
from .test_session_memory import ICELAND, WIFI, assert_invariants, assert_valid, long_session, text_of

QUESTIONS = [
    "what was the wifi password of the lake house?",
    "我的护照号码是多少？",
    "volcano trip Iceland March",
    "what did I say yesterday about the pasta recipe?",
    "and the notes?",
]


def _memory(root: Path, turns: int) -> tuple[SessionMemory, str]:
    store = SessionStore(root / "sessions.db")
    mem = SessionMemory(store, ColdStore(root / "cold.db"), BagOfWordsEmbedder(), index_dir=root / "index",
                        seal_events=32)  # fmt: skip
    sid = long_session(store, turns=turns)
    asyncio.run(mem.index(sid))
    # one committed request first: the old part moves to L2, so the requests below rank (not the as-is path)
    asyncio.run(mem.prepare(sid, "and the file?", window_tokens=1500, fixed_tokens=0))
    asyncio.run(mem.index(sid))
    return mem, sid


def _preview(mem: SessionMemory, sid: str, text: str) -> Prepared:
    return asyncio.run(mem.preview(sid, text, window_tokens=1500, fixed_tokens=0))


def test_within_the_window_the_view_scores_bit_for_bit_as_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, sid = _memory(tmp_path, turns=60)
    state = mem._state(sid)
    index = state.index
    n = len(index)
    assert 250 < n < mem.score_window and index.segments and index.sealed > n // 2  # mostly sealed
    for text in QUESTIONS:
        with index.reading():
            query = asyncio.run(mem._query(sid, state, text, now=None, current_input=None))
            whole = index.request_view(query, window=mem.score_window, horizon=mem.dense_horizon)
            assert whole.is_whole and len(whole) == n
            session = index.scores(query, dense_horizon=mem.dense_horizon, window=mem.score_window)
            gathered = RequestView(index, np.arange(n, dtype=np.int64), old=0, is_whole=False)
            viewed = index.scores(query, dense_horizon=mem.dense_horizon, window=mem.score_window, view=gathered)
        assert viewed.dtype == session.dtype and np.array_equal(viewed, session), text  # bit for bit
    # the whole request: the view's own columns against the gathered ones, the same history and recall
    plain = [_preview(mem, sid, text) for text in QUESTIONS]
    monkeypatch.setattr(view_module, "GATHER_WHOLE", True)
    for text, before in zip(QUESTIONS, plain, strict=True):
        after = _preview(mem, sid, text)
        assert after.seqs == before.seqs and after.recalled_seqs == before.recalled_seqs, text
        assert after.messages == before.messages and after.kept_tokens == before.kept_tokens
    assert any(p.recalled_seqs for p in plain)  # the ranking path ran, L2 competed


def test_past_the_window_the_view_holds_whole_units_and_the_request_stays_valid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem, sid = _memory(tmp_path, turns=60)
    mem.score_window, mem.dense_horizon = 100, 50  # a short session made "long"
    views: list[RequestView] = []
    made = SessionIndex.request_view

    def spy(self: SessionIndex, *args: Any, **kwargs: Any) -> RequestView:
        got = made(self, *args, **kwargs)
        views.append(got)
        return got

    monkeypatch.setattr(SessionIndex, "request_view", spy)
    index = mem._state(sid).index
    for text in QUESTIONS:
        views.clear()
        prepared = asyncio.run(mem.prepare(sid, text, window_tokens=1500, fixed_tokens=0))
        (view,) = views
        n = len(index)
        assert not view.is_whole and len(view) < n and view.old == len(view) - mem.score_window
        assert np.array_equal(view.positions[view.old :], np.arange(n - mem.score_window, n))
        # the window's passages map by a shift, the old ones by a search: both as a search over the view's
        # passages, for slots in any order (BM25 hands it each word's postings, old and window mixed)
        with index.reading():
            slots = np.random.default_rng(7).permutation(view.passages).astype(np.int32)
            assert view.old and slots.size and view._window_passage() is not None  # both parts present
            assert np.array_equal(view.passage_index(slots), np.searchsorted(view.passages, slots))
        with index.reading():
            unit_of = index.unit_of.copy()
        inside = np.zeros(n, dtype=bool)
        inside[view.positions] = True
        members = np.flatnonzero(np.isin(unit_of, unit_of[view.positions]))
        assert inside[members].all(), f"{text}: a unit split by the view"
        assert_valid(prepared)
        assert_invariants(mem, sid)
        if text == QUESTIONS[0]:  # said before everything else, named by its rare words: sent
            wifi = next(e.seq for e in mem.store.events(sid) if WIFI in text_of(e))
            assert wifi in prepared.seqs and wifi < index.seq_at(n - mem.score_window)
        if text == QUESTIONS[2]:  # the Iceland input and its call group, from L2 through the view
            ice = next(e.seq for e in mem.store.events(sid) if ICELAND in text_of(e))
            assert ice in prepared.seqs
