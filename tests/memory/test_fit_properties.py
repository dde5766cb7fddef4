"""`session_index.fit` — the per-request fitting of L1 ∪ L2 — is `prune`'s algorithm on arrays: for any history,
scores and budget it keeps exactly what `prune` keeps, and its own extras (candidates, forced units) never
break a call group or drop the newest event.

Mutation checks (done): ties to the older unit instead of the newer, and pinning without the budget cap, each
make ``test_fit_keeps_exactly_what_prune_keeps`` find a counterexample."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.memory.events import MemoryEvent, Query
from hologram.memory.prune import prune
from hologram.memory.session_index import SessionIndex, fit
from hologram.memory.tfidf import TermVector

History = list[tuple[int, int | None, float]]  # (cost, group, score) per event, in log order

histories = st.lists(
    st.tuples(
        st.integers(1, 400), st.one_of(st.none(), st.integers(0, 5)), st.integers(-2, 2).map(float)
    ),  # few values: many ties
    min_size=1,
    max_size=60,
)


def index_of(history: History) -> SessionIndex:
    index = SessionIndex()
    for i, (cost, group, _) in enumerate(history):
        kind = "input" if i % 2 == 0 else "response"
        index.add(i, f"e{i}", kind, f"event {i}", cost, group=None if group is None else f"g{group}", ts=float(i))
    return index


def kept_by_prune(history: History, budget: int, pinned: int) -> set[int]:
    events = [
        MemoryEvent(f"e{i}", float(i), f"event {i}", cost, None if g is None else f"g{g}")
        for i, (cost, g, _) in enumerate(history)
    ]
    scores = np.array([s for _, _, s in history])

    def scorer(ordered: Sequence[MemoryEvent], query: Query, /) -> np.ndarray:
        return scores[[int(e.id[1:]) for e in ordered]]

    result = prune(events, Query("q", TermVector.from_terms([])), budget, pinned_recent=pinned, scorer=scorer)
    return {int(e.id[1:]) for e in result.kept}


@settings(max_examples=500)  # ties at the budget's edge are rare: enough examples to meet them every run
@given(histories, st.integers(0, 3000), st.integers(1, 12))
def test_fit_keeps_exactly_what_prune_keeps(history: History, budget: int, pinned: int) -> None:
    index = index_of(history)
    scores = np.array([s for _, _, s in history])
    keep, _ = fit(index, scores, np.ones(len(history), dtype=bool), budget, pinned_recent=pinned)
    assert set(np.flatnonzero(keep).tolist()) == kept_by_prune(history, budget, pinned)


@given(histories, st.integers(0, 3000), st.data())
def test_candidates_and_forced_keep_the_invariants(history: History, budget: int, data: st.DataObject) -> None:
    index = index_of(history)
    n = len(history)
    scores = np.array([s for _, _, s in history])
    candidates = index.whole_units(np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    forced = candidates & np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    keep, over = fit(index, scores, candidates, budget, pinned_recent=10, forced=forced)
    assert not (keep & ~candidates).any(), "only candidates are kept"
    for members in index.units:  # whole call groups, among the candidates
        assert len({bool(keep[m]) for m in members if candidates[m]}) <= 1
    if candidates.any():
        assert keep[np.flatnonzero(candidates)[-1]], "the newest candidate is always kept"
    assert keep[index.whole_units(forced) & candidates].all(), "an explicit recall is kept"
    cost = np.array([c for c, _, _ in history])
    if not over:
        assert int(cost[keep].sum()) <= budget
