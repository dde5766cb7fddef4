"""Overflow recovery: the 1.25 threshold, at most two recoveries per turn, durable move to L2, one short note.

Mutation-checked (hand-made in ``overflow.py``, the named test failed, reverted): ``>=`` for ``>`` at the
threshold → ``test_threshold_is_strictly_above_1_25``; allowing a third recovery →
``test_at_most_two_recoveries_per_turn_then_a_clear_error``. The recovery itself (rank to a tighter budget,
move durably, one note) is `SessionMemory.recover`'s, tested in test_session_memory.py.
"""

from __future__ import annotations

import pytest

from hologram.memory.cold.blocks import EventRecord, build_event
from hologram.memory.cold.overflow import (
    MAX_RECOVERIES,
    OVERFLOW_THRESHOLD,
    OverflowGuard,
    PromptTooLargeError,
    history_budget,
    overflow_note,
    overflow_ratio,
)


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
    with pytest.raises(PromptTooLargeError, match="8000 tokens"):
        guard.begin_recovery("overflow")
    assert OverflowGuard(8000).needs_recovery(10_001)  # a new turn, a new guard


def test_note_is_short_even_for_many_events() -> None:
    moved = [rec(i, "a long message " * 50) for i in range(100)]
    note = overflow_note(moved)
    assert note.count('"') == 10 and "and 95 more" in note and len(note) < 700
    assert overflow_note([]) == ""
