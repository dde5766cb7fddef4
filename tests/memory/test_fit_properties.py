"""`hologram.memory.rank.fit.fit` — the per-request fitting of L1 ∪ L2 — is `prune`'s algorithm on arrays: for any history,
scores and budget it keeps exactly what `prune` keeps, and its own extras (candidates, forced units) never
break a call group or drop the newest event.

Mutation checks (done): ties to the older unit instead of the newer, and pinning without the budget cap, each
make ``test_fit_keeps_exactly_what_prune_keeps`` find a counterexample.

`fit` computes the greedy step a run at a time (:func:`hologram.memory.rank.fit.greedy_fill`) so that its work is
bounded by what a request keeps, not by the session's candidates; the last two tests hold it to the plain
loops it replaced. Mutation checks (done): filtering with ``<`` instead of ``<=`` (a unit that fits
exactly is lost), ``searchsorted(..., side="left")``, the room reduced by the last unit's cost instead of
the run's, and ties to the older unit each turn ``test_fit_keeps_what_the_plain_loops_keep`` red; pinning
that walks only the newest ``_PIN_STEP`` candidates turns ``test_pinning_walks_past_one_step_of_candidates``
red; in the chunked walk, ties at a chunk's edge taken oldest first, a walk that stops after its first
chunk, and units at the edge left out of the chunk (a walk that then never ends) each turn
``test_greedy_fill_is_the_walk_in_order`` and the fit test (run with chunks of 2 and 7) red."""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hologram.memory.rank.fit as fit_module
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.events import MemoryEvent, Query
from hologram.memory.rank.fit import fit, greedy_fill
from hologram.memory.rank.prune import prune
from hologram.memory.text.tfidf import TermVector

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


def reference_fit(
    index: SessionIndex,
    scores: np.ndarray | None,
    candidates: np.ndarray,
    budget: int,
    *,
    pinned_recent: int,
    forced: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """`fit` as plain loops over the candidates (the first version, which a long session made slow)."""
    n = len(index)
    keep = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(candidates)
    if idx.size == 0:
        return keep, False
    cost, unit_of = index.cost, index.unit_of
    unit_cost = {int(u): 0 for u in unit_of[idx]}
    members = dict.fromkeys(unit_cost, 0)
    for i in idx.tolist():
        unit_cost[int(unit_of[i])] += int(cost[i])
        members[int(unit_of[i])] += 1
    kept: list[int] = []
    used = pinned = 0
    mean = float(cost[idx].mean())
    want = max(1, min(pinned_recent, int(budget // mean) if mean > 0 else idx.size))
    for i in idx[::-1].tolist():
        u = int(unit_of[i])
        if pinned >= want:
            break
        if u in kept:
            continue
        if used + unit_cost[u] > budget and pinned > 0:
            break
        kept.append(u)
        used += unit_cost[u]
        pinned += members[u]
    over = used > budget
    if forced is not None:
        for i in np.flatnonzero(forced & candidates).tolist():
            if (u := int(unit_of[i])) not in kept:
                kept.append(u)
                used += unit_cost[u]
        over = used > budget
    if scores is not None and used < budget:
        best = {u: max(float(scores[i]) for i in idx.tolist() if unit_of[i] == u) for u in unit_cost}
        newest = {u: max(i for i in range(n) if unit_of[i] == u) for u in unit_cost}
        for u in sorted((u for u in unit_cost if u not in kept), key=lambda u: (-best[u], -newest[u])):
            if used + unit_cost[u] <= budget:
                kept.append(u)
                used += unit_cost[u]
    for u in kept:
        keep |= (unit_of == u) & candidates
    return keep, over


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.one_of(st.none(), st.integers(0, 5)), st.integers(-2, 2).map(float)),
        min_size=1,
        max_size=150,  # more candidates than one pinning step (64)
    ),
    st.integers(0, 4000),
    st.integers(1, 80),
    st.data(),
)
def test_fit_keeps_what_the_plain_loops_keep(history: History, budget: int, pinned: int, data: st.DataObject) -> None:
    chunk = data.draw(st.sampled_from([2, 7, fit_module._CHUNK]))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fit_module, "_CHUNK", chunk)
        _same_as_reference(history, budget, pinned, data)


def _same_as_reference(history: History, budget: int, pinned: int, data: st.DataObject) -> None:
    index = index_of(history)
    n = len(history)
    scores = np.array([s for _, _, s in history])
    candidates = index.whole_units(np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n))))
    forced = (
        candidates & np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        if data.draw(st.booleans())
        else None
    )
    use_scores = scores if data.draw(st.booleans()) else None
    keep, over = fit(index, use_scores, candidates, budget, pinned_recent=pinned, forced=forced)
    expected, expected_over = reference_fit(index, use_scores, candidates, budget, pinned_recent=pinned, forced=forced)
    assert np.flatnonzero(keep).tolist() == np.flatnonzero(expected).tolist()
    assert over == expected_over


@settings(max_examples=500)
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(-3, 3)), max_size=80),  # (cost, score): many ties
    st.integers(0, 400),
    st.integers(1, 10),
    st.randoms(use_true_random=False),
)
def test_greedy_fill_is_the_walk_in_order(units: list[tuple[int, int]], room: int, chunk: int, rng: Random) -> None:
    n = len(units)
    newest = list(range(n))
    rng.shuffle(newest)  # unique, in no particular relation to the scores
    costs = np.array([c for c, _ in units], dtype=np.int64)
    best = np.array([float(s) for _, s in units])
    ids = np.arange(100, 100 + n, dtype=np.int64)
    kept, left = [], room
    for i in sorted(range(n), key=lambda i: (-best[i], -newest[i])):
        if costs[i] <= left:
            kept.append(int(ids[i]))
            left -= int(costs[i])
    got = greedy_fill(ids, costs, best, np.array(newest, dtype=np.int64), room, chunk=chunk)
    assert sorted(got.tolist()) == sorted(kept)


def test_pinning_walks_past_one_step_of_candidates() -> None:
    """150 cheap events and room to pin 120: pinning reaches back over more than one step (64) of candidates."""
    history: History = [(1, None, 0.0) for _ in range(150)]
    index = index_of(history)
    everything = np.ones(len(history), dtype=bool)
    keep, over = fit(index, None, everything, 10_000, pinned_recent=120)
    assert np.flatnonzero(keep).tolist() == list(range(30, 150)) and not over
    expected, _ = reference_fit(index, None, everything, 10_000, pinned_recent=120)
    assert keep.tolist() == expected.tolist()


@settings(max_examples=300)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(-3, 3)), min_size=1, max_size=40),
    st.booleans(),
)
def test_units_best_and_newest_members(draws: list[tuple[int, int]], in_runs: bool) -> None:
    """`_best_of_units` and `_newest_members` against plain loops, for logs whose units' members come one after
    another (the shortcut: no sort, no ``np.maximum.at``) and for interleaved ones. Mutation checks (done):
    `_best_of_units` taking its shortcut for interleaved units turns this red, and so does `_newest_members`
    taking a run's first member for its newest. (`_newest_members`' shortcut on interleaved units happens to
    give the right answer where numpy writes repeated indices in order, which numpy does not promise: hence
    its guard.)"""
    n = len(draws)
    # unit ids are a member's position: interleaved, each event joins an earlier unit or opens its own
    unit_of = np.zeros(n, dtype=np.int32)
    for i, (back, _) in enumerate(draws):
        unit_of[i] = (unit_of[i - 1] if back and i else i) if in_runs else unit_of[max(0, i - back)] if back else i
    scores = np.array([float(s) for _, s in draws])
    idx = np.flatnonzero(np.array([s != -3 for _, s in draws]))
    if idx.size:
        best = fit_module._best_of_units(unit_of[idx].astype(np.int64), scores[idx], n)
        for u in set(unit_of.tolist()):
            members = [i for i in idx.tolist() if unit_of[i] == u]
            assert best[u] == (max(scores[members]) if members else -np.inf)
    units = np.unique(unit_of).astype(np.int64)
    newest = fit_module._newest_members(unit_of, units)
    assert newest.tolist() == [max(i for i in range(n) if unit_of[i] == u) for u in units.tolist()]
    if in_runs:
        assert fit_module._ascending(unit_of)
