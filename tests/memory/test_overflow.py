"""Overflow recovery: the 1.25 threshold, at most two recoveries per turn, durable move to L2, one short note.

Mutation-checked (hand-made in ``overflow.py``, the named test failed, reverted): ``>=`` for ``>`` at the
threshold → ``test_threshold_is_strictly_above_1_25``; allowing a third recovery →
``test_at_most_two_recoveries_per_turn_then_a_clear_error``; dropping L1 before ``store.put`` (put after) with a
failing store → ``test_failed_store_write_leaves_l1_as_it_was``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hologram.memory.blocks import EventRecord, build_event
from hologram.memory.cold import ColdStore, DuplicateBlockError
from hologram.memory.events import Query
from hologram.memory.overflow import (
    MAX_RECOVERIES,
    OVERFLOW_THRESHOLD,
    ContextOverflowError,
    OverflowGuard,
    history_budget,
    overflow_note,
    overflow_ratio,
    recover,
)
from hologram.memory.tfidf import TermVector


def rec(i: int, text: str) -> EventRecord:
    return build_event(timestamp=1_700_000_000 + i, input=text, reasoning=f"because {i}", session="s")


def test_ratio() -> None:
    assert overflow_ratio(1250, 1000) == 1.25
    assert overflow_ratio(0, 0) == 0.0 and overflow_ratio(1, 0) == float("inf")
    assert history_budget(10_000, 1_500) == 6_500
    assert history_budget(1_000, 5_000) == 0


def test_threshold_is_strictly_above_1_25() -> None:
    guard = OverflowGuard(1000)
    assert OVERFLOW_THRESHOLD == 1.25
    assert not guard.needs_recovery(1250)
    assert guard.needs_recovery(1251)


def test_at_most_two_recoveries_per_turn_then_a_clear_error() -> None:
    guard = OverflowGuard(8000)
    fills = [guard.begin_recovery("overflow"), guard.on_context_error()]
    assert MAX_RECOVERIES == 2 and guard.recoveries == 2
    assert fills[1] < fills[0] == 0.8  # a second recovery aims lower
    with pytest.raises(ContextOverflowError, match="8000 tokens"):
        guard.begin_recovery("overflow")
    assert OverflowGuard(8000).needs_recovery(10_001)  # a new turn, a new guard


def test_recover_moves_pruned_events_to_cold_and_writes_a_note(tmp_path: Path) -> None:
    store = ColdStore(tmp_path / "cold.db")
    l1 = [rec(i, f"message number {i} about topic {i % 4} " + "padding " * 20) for i in range(30)]
    query = Query("topic 1", TermVector.from_text("topic 1"))
    out = recover(l1, query, store, budget_tokens=400, pinned_recent=3)
    assert out.moved and out.kept
    assert {r.id for r in out.kept} | {r.id for r in out.moved} == {r.id for r in l1}
    assert store.ids() == [r.id for r in out.moved]  # durable in L2 before L1 forgets them
    assert out.kept_tokens <= 400 and not out.over_budget
    assert out.kept[-3:] == l1[-3:]
    assert f"{len(out.moved)} earlier event(s)" in out.note and "coldcontext_query" in out.note
    assert len(out.note) < 600


def test_failed_store_write_leaves_l1_as_it_was(tmp_path: Path) -> None:
    store = ColdStore(tmp_path / "cold.db")
    l1 = [rec(i, "x " * 40) for i in range(10)]
    store.put([l1[0]])  # L2 already holds it: the whole move is refused
    with pytest.raises(DuplicateBlockError):
        recover(l1, Query("x", TermVector.from_text("x")), store, budget_tokens=50, pinned_recent=1)
    assert store.ids() == [l1[0].id]


def test_note_is_short_even_for_many_events() -> None:
    moved = [rec(i, "a long message " * 50) for i in range(100)]
    note = overflow_note(moved)
    assert note.count('"') == 10 and "and 95 more" in note and len(note) < 700
    assert overflow_note([]) == ""
