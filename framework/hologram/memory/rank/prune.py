"""Relevance pruning of L1 history to a token budget.

The algorithm (DESIGN.md "Memory", issue 5 §2):

1. Order events by time (stable for equal timestamps) and gather them into *units*: a tool call and its results
   share a group and are kept or pruned as one unit; an event without a group is its own unit.
2. **Pin** the most recent ``N`` events unscored, ``N = max(1, min(pinned_recent, budget // mean tokens))``:
   the budget cap exists because the original pinned 10 events averaging 5,800 tokens into a 40k budget and
   starved every prune. Pinning walks units newest first and stops at the first unit that would overflow the
   budget, except the very first (the floor of 1: the model must always see the latest event, even alone
   over budget — then :attr:`PruneResult.over_budget` is set and the caller's overflow recovery decides).
3. **Score** the rest against the query and keep units best-first while they fit (a unit that does not fit is
   skipped, smaller ones further down may still fit). A unit scores as its best member.
4. Survivors (and the pruned, for L2) come back in time order.

Deterministic: ties in score go to the newer unit; no randomness, no dependence on input order beyond ties in
timestamp.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hologram.memory.rank.events import MemoryEvent, Query
from hologram.memory.rank.score import HybridScorer, Scorer

__all__ = ["DEFAULT_PINNED", "PruneResult", "pinned_count", "prune"]

DEFAULT_PINNED = 10


@dataclass(frozen=True, slots=True)
class PruneResult:
    """Outcome of one prune. ``kept`` + ``pruned`` is exactly the input, each in time order."""

    kept: list[MemoryEvent]
    pruned: list[MemoryEvent]
    kept_tokens: int
    budget_tokens: int
    pinned: int
    """How many events were pinned as most recent (unscored)."""
    over_budget: bool
    """True only when the floor-1 pin alone exceeds the budget."""
    scores: dict[str, float] = field(default_factory=dict)
    """Score of every scored (non-pinned) event by id, for diagnostics and the model's note."""


def pinned_count(events: Sequence[MemoryEvent], budget_tokens: int, configured: int = DEFAULT_PINNED) -> int:
    """N = min(configured, budget / average tokens per event), at least 1 (0 for no events)."""
    if not events:
        return 0
    avg = sum(e.tokens for e in events) / len(events)
    by_budget = int(budget_tokens // avg) if avg > 0 else len(events)
    return max(1, min(configured, by_budget))


def _units(ordered: Sequence[MemoryEvent]) -> list[list[int]]:
    """Indices (into `ordered`) of each unit's members, units in order of their first member."""
    by_key: dict[str, list[int]] = {}
    for i, e in enumerate(ordered):
        key = e.group
        if key is None:  # own unit; not via group_key, whose f-string costs ~1 ms per 1,000 events
            by_key["\x00" + e.id] = [i]
        else:
            by_key.setdefault(key, []).append(i)
    return list(by_key.values())


def prune(
    events: Sequence[MemoryEvent],
    query: Query,
    budget_tokens: int,
    *,
    pinned_recent: int = DEFAULT_PINNED,
    scorer: Scorer | None = None,
) -> PruneResult:
    """Keep the pinned recent events and the best-scoring rest within `budget_tokens` (module docstring).

    `scorer` defaults to :class:`HybridScorer` with IDF from `events`; a store passes its own (incremental
    IDF). Raises ValueError on duplicate event ids or a negative budget.
    """
    if budget_tokens < 0:
        raise ValueError("budget_tokens must be >= 0")
    ids = [e.id for e in events]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate event ids")
    order = sorted(range(len(events)), key=lambda i: (events[i].timestamp, i))
    ordered = [events[i] for i in order]
    n = len(ordered)
    if n == 0:
        return PruneResult([], [], 0, budget_tokens, 0, False)

    units = _units(ordered)
    unit_of = [0] * n  # plain lists: this loop-heavy code is several times faster than numpy scalars
    unit_tokens = [0] * len(units)
    for u, members in enumerate(units):
        for i in members:
            unit_of[i] = u
            unit_tokens[u] += ordered[i].tokens
    keep_unit = [False] * len(units)

    # 2. pin the most recent N events (whole units), newest first, within the budget except the floor of 1.
    want = pinned_count(ordered, budget_tokens, pinned_recent)
    used = 0
    pinned_events = 0
    for i in range(n - 1, -1, -1):
        if pinned_events >= want:
            break
        u = unit_of[i]
        if keep_unit[u]:
            continue
        if used + unit_tokens[u] > budget_tokens and pinned_events > 0:
            break
        keep_unit[u] = True
        used += unit_tokens[u]
        pinned_events += len(units[u])

    # 3. score the rest; keep units best-first while they fit.
    scored = [i for i in range(n) if not keep_unit[unit_of[i]]]
    scores: dict[str, float] = {}
    if scored and used < budget_tokens:
        active = scorer if scorer is not None else HybridScorer.for_events(ordered)
        # Score in full time order so neighbour context is real context, then read off the unpinned ones.
        all_scores = np.asarray(active(ordered, query), dtype=np.float64).tolist()
        unit_score: dict[int, float] = {}
        for i in scored:
            u = unit_of[i]
            s = all_scores[i]
            if s > unit_score.get(u, -math.inf):
                unit_score[u] = s
            scores[ordered[i].id] = s
        candidates = sorted(unit_score, key=lambda u: (-unit_score[u], -units[u][-1]))
        for u in candidates:
            if used + unit_tokens[u] <= budget_tokens:
                keep_unit[u] = True
                used += unit_tokens[u]

    kept = [e for i, e in enumerate(ordered) if keep_unit[unit_of[i]]]
    pruned = [e for i, e in enumerate(ordered) if not keep_unit[unit_of[i]]]
    return PruneResult(
        kept=kept,
        pruned=pruned,
        kept_tokens=used,
        budget_tokens=budget_tokens,
        pinned=pinned_events,
        over_budget=used > budget_tokens,
        scores=scores,
    )
