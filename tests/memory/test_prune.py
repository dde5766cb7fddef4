"""Pruning invariants (hypothesis) and the behaviours the design asks for."""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.memory.rank.events import MemoryEvent, Query, event_text, make_event
from hologram.memory.rank.prune import PruneResult, pinned_count, prune
from hologram.memory.text.tfidf import TermVector

QUERY = Query("q", TermVector.from_terms([]))


class FixedScores:
    """Scores by event id, so a test controls relevance exactly."""

    def __init__(self, by_id: dict[str, float]) -> None:
        self.by_id = by_id

    def __call__(self, events: Sequence[MemoryEvent], query: Query) -> np.ndarray:
        return np.array([self.by_id.get(e.id, 0.0) for e in events], dtype=np.float64)


def ev(i: int, tokens: int, group: str | None = None, ts: float | None = None) -> MemoryEvent:
    return MemoryEvent(
        id=f"e{i}", timestamp=float(i) if ts is None else ts, text=f"event {i}", tokens=tokens, group=group
    )


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[MemoryEvent], dict[str, float], int, int]:
    n = draw(st.integers(0, 40))
    events = []
    scores = {}
    for i in range(n):
        group = draw(st.one_of(st.none(), st.sampled_from(["g1", "g2", "g3", "g4"])))
        ts = draw(st.sampled_from([0.0, float(i), float(i // 2)]))  # ties and zero timestamps included
        events.append(ev(i, draw(st.integers(1, 300)), group, ts))
        scores[f"e{i}"] = draw(st.floats(-5, 5, allow_nan=False))
    budget = draw(st.integers(0, 4000))
    pinned = draw(st.integers(0, 15))
    return events, scores, budget, pinned


def _time_ordered(events: list[MemoryEvent], original: list[MemoryEvent]) -> bool:
    pos = {e.id: i for i, e in enumerate(original)}
    keys = [(e.timestamp, pos[e.id]) for e in events]
    return keys == sorted(keys)


def _check(result: PruneResult, events: list[MemoryEvent], budget: int) -> None:
    kept = [e.id for e in result.kept]
    pruned = [e.id for e in result.pruned]
    # nothing lost, nothing duplicated
    assert sorted(kept + pruned) == sorted(e.id for e in events)
    assert not set(kept) & set(pruned)
    # time order
    assert _time_ordered(result.kept, events) and _time_ordered(result.pruned, events)
    # groups never split
    kept_groups = {e.group for e in result.kept if e.group}
    assert not kept_groups & {e.group for e in result.pruned if e.group}
    # budget: exceeded only by the floor-1 pin, i.e. the newest event's unit alone
    assert result.kept_tokens == sum(e.tokens for e in result.kept)
    if result.kept_tokens > budget:
        assert result.over_budget
        newest = max(range(len(events)), key=lambda i: (events[i].timestamp, i))
        unit = [e for e in events if e is events[newest] or (e.group and e.group == events[newest].group)]
        assert {e.id for e in result.kept} == {e.id for e in unit}
    else:
        assert not result.over_budget
    if events:
        assert result.kept, "the newest event is always kept"


@settings(max_examples=300, deadline=None)
@given(histories())
def test_prune_invariants(case: tuple[list[MemoryEvent], dict[str, float], int, int]) -> None:
    events, scores, budget, pinned = case
    result = prune(events, QUERY, budget, pinned_recent=pinned, scorer=FixedScores(scores))
    _check(result, events, budget)
    again = prune(events, QUERY, budget, pinned_recent=pinned, scorer=FixedScores(scores))
    assert [e.id for e in again.kept] == [e.id for e in result.kept]  # deterministic


@settings(max_examples=100, deadline=None)
@given(histories(), st.randoms(use_true_random=False))
def test_input_order_does_not_matter_with_distinct_timestamps(
    case: tuple[list[MemoryEvent], dict[str, float], int, int], rnd: random.Random
) -> None:
    events, scores, budget, pinned = case
    events = [ev(i, e.tokens, e.group) for i, e in enumerate(events)]  # distinct timestamps
    shuffled = events[:]
    rnd.shuffle(shuffled)
    a = prune(events, QUERY, budget, pinned_recent=pinned, scorer=FixedScores(scores))
    b = prune(shuffled, QUERY, budget, pinned_recent=pinned, scorer=FixedScores(scores))
    assert [e.id for e in a.kept] == [e.id for e in b.kept]


@settings(max_examples=100, deadline=None)
@given(histories())
def test_nothing_is_lost_across_repeated_prune_and_recall(
    case: tuple[list[MemoryEvent], dict[str, float], int, int],
) -> None:
    """L1 and the pruned set together stay the full history across prune / re-insert cycles."""
    events, scores, budget, pinned = case
    l1, l2 = list(events), []
    for _ in range(3):
        r = prune(l1, QUERY, budget, pinned_recent=pinned, scorer=FixedScores(scores))
        l1, l2 = r.kept, l2 + r.pruned
        assert sorted(e.id for e in l1 + l2) == sorted(e.id for e in events)
        l1, l2 = l1 + l2[:2], l2[2:]  # recall two back into L1


def test_pinned_count_caps_by_budget_and_floors_at_one() -> None:
    big = [ev(i, 5800) for i in range(20)]
    assert pinned_count(big, 40_000, 10) == 6  # the original pinned 10 x 5,800 into 40k and starved
    assert pinned_count(big, 1000, 10) == 1
    assert pinned_count([ev(i, 10) for i in range(20)], 40_000, 10) == 10
    assert pinned_count([ev(i, 10) for i in range(20)], 40_000, 0) == 1
    assert pinned_count([], 100, 10) == 0


def test_pinned_recent_are_kept_regardless_of_score() -> None:
    events = [ev(i, 10) for i in range(10)]
    scores = {f"e{i}": 10.0 - i for i in range(10)}  # newest score lowest
    r = prune(events, QUERY, 50, pinned_recent=2, scorer=FixedScores(scores))
    assert [e.id for e in r.kept] == ["e0", "e1", "e2", "e8", "e9"]
    assert r.pinned == 2


def test_best_scorers_fill_the_budget_and_survivors_keep_time_order() -> None:
    events = [ev(i, 10) for i in range(8)]
    scores = {"e5": 3.0, "e1": 2.0, "e3": 1.0}
    r = prune(events, QUERY, 30, pinned_recent=1, scorer=FixedScores(scores))
    assert [e.id for e in r.kept] == ["e1", "e5", "e7"]


def test_a_unit_that_does_not_fit_is_skipped_for_smaller_ones() -> None:
    events = [ev(0, 100), ev(1, 5), ev(2, 5)]
    r = prune(events, QUERY, 12, pinned_recent=1, scorer=FixedScores({"e0": 9.0, "e1": 1.0}))
    assert [e.id for e in r.kept] == ["e1", "e2"]


def test_tool_call_and_results_move_together() -> None:
    # call e1 and its two results e2, e4 (a result can arrive after an unrelated event)
    events = [ev(0, 10), ev(1, 10, "call"), ev(2, 10, "call"), ev(3, 10), ev(4, 10, "call"), ev(5, 10)]
    r = prune(events, QUERY, 40, pinned_recent=1, scorer=FixedScores({"e2": 5.0}))
    assert [e.id for e in r.kept] == ["e1", "e2", "e4", "e5"]
    # too big to fit as a unit: none of it is kept, even the best-scoring member
    r = prune(events, QUERY, 30, pinned_recent=1, scorer=FixedScores({"e2": 5.0}))
    assert {"e1", "e2", "e4"}.isdisjoint(e.id for e in r.kept)


def test_pin_that_is_larger_than_the_budget_keeps_only_the_newest_unit() -> None:
    events = [ev(0, 10), ev(1, 500)]
    r = prune(events, QUERY, 100, scorer=FixedScores({"e0": 9.0}))
    assert [e.id for e in r.kept] == ["e1"] and r.over_budget


def test_reasoning_counts_toward_tokens_and_text() -> None:
    plain = make_event("a", 1.0, event_text(input="hi", response="hello"))
    thinking = make_event("b", 1.0, event_text(input="hi", reasoning="let me think " * 50, response="hello"))
    assert thinking.tokens > plain.tokens + 100
    assert thinking.terms is not None and "think" in thinking.terms.counts


def test_bad_input_is_rejected() -> None:
    with pytest.raises(ValueError):
        prune([ev(0, 1), ev(0, 1)], QUERY, 10)
    with pytest.raises(ValueError):
        prune([ev(0, 1)], QUERY, -1)
    assert prune([], QUERY, 10).kept == []
