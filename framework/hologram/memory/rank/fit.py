"""Which of a session's ranked events one request keeps within its history budget: `prune`'s rules on arrays.

Why a module of its own, and why no Python loop over the candidates: :func:`fit` runs before every LLM
request over L1 and every L2 event that clearly matches the input, and that second set grows with the
session (a soak of 10,000 turns made it thousands of call groups, and the per-unit Python loops of the first
version went from 1 % to 3 % of the kernel's time between turns 500 and 2,500). Every step here is a fixed
number of numpy operations over the candidates, and the Python loops are bounded by what the request
*keeps* (the pinned units, the forced ones, one pass per kept unit at most), never by what it skips.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hologram.memory.index.session_index import SessionIndex

__all__ = ["fit", "greedy_fill"]

#: Candidates walked per step while pinning the newest units (pinning stops after a few units).
_PIN_STEP = 64
#: Units sorted per step of the greedy walk (:func:`greedy_fill`): a request keeps tens of units.
_CHUNK = 256


def fit(
    index: SessionIndex,
    scores: np.ndarray | None,
    candidates: np.ndarray,
    budget: int,
    *,
    pinned_recent: int,
    forced: np.ndarray | None = None,
) -> tuple[np.ndarray, bool]:
    """Which `candidates` (a mask over the index's events) the request keeps within `budget` tokens.

    :func:`hologram.memory.rank.prune.prune`'s rules on arrays: whole units only; the most recent
    ``min(pinned_recent, budget / mean cost)`` events pinned newest first (the newest always, even alone over
    budget — then the second value is True); `forced` units (an explicit recall this turn) next, whatever
    they cost; then units best-first by their best member's score while they fit, ties to the newer unit
    (the one whose newest member is newer).
    """
    n = len(index)
    keep = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(candidates)
    if idx.size == 0:
        return keep, False
    with index.reading():
        cost, unit_of = index.cost, index.unit_of
    owner = unit_of[idx].astype(np.int64)  # unit ids are positions (a unit's first member)
    unit_cost = np.bincount(owner, weights=cost[idx], minlength=n).astype(np.int64)  # of its candidate members
    members = np.bincount(owner, minlength=n)
    kept = np.zeros(n, dtype=bool)
    mean = float(cost[idx].mean())
    want = max(1, min(pinned_recent, int(budget // mean) if mean > 0 else idx.size))
    used = _pin(owner, unit_cost, members, kept, budget, want)
    over = used > budget
    if forced is not None:  # kept like the pinned ones: an explicit recall must not bounce straight back
        extra = np.unique(unit_of[forced & candidates]).astype(np.int64)
        extra = extra[~kept[extra]]
        kept[extra] = True
        used += int(unit_cost[extra].sum())
        over = used > budget
    if scores is not None and used < budget:
        rest = np.flatnonzero((members > 0) & ~kept)
        if rest.size:
            best = _best_of_units(owner, scores[idx], n)
            newest = _newest_members(unit_of, rest)
            fill = greedy_fill(rest, unit_cost[rest], best[rest], newest, budget - used, chunk=_CHUNK)
            kept[fill] = True
    if kept.any():
        keep = kept[unit_of[:n]] & candidates
    return keep, over


def _best_of_units(owner: np.ndarray, scores: np.ndarray, n: int) -> np.ndarray:
    """Each unit's best candidate score (-inf for a unit without candidates). By sort and ``reduceat``, not
    ``np.maximum.at``: numpy has no fast indexed loop for a float maximum (~750 instructions an element by
    callgrind, against ~140 for this)."""
    if _ascending(owner):  # the usual log: each unit's members one after another, no sort needed
        units, ordered = owner, scores
    else:
        order = np.argsort(owner, kind="stable")  # nearly sorted already: a unit's members are close in the log
        units, ordered = owner[order], scores[order]
    starts = np.flatnonzero(np.concatenate(([True], units[1:] != units[:-1])))
    best = np.full(n, -np.inf)
    best[units[starts]] = ordered[starts] if starts.size == units.size else np.maximum.reduceat(ordered, starts)
    return best


def _newest_members(unit_of: np.ndarray, units: np.ndarray) -> np.ndarray:
    """The position of the newest member of each of `units` (over all its members, candidates or not). In the
    usual log, where the units' members come one after another, a unit's newest is the last of its run — what
    ``np.maximum.at`` over every event gave, without its per-element cost."""
    n = unit_of.size
    newest = np.zeros(n, dtype=np.int64)
    if _ascending(unit_of):
        ends = np.flatnonzero(np.concatenate((unit_of[1:] != unit_of[:-1], [True])))
        newest[unit_of[ends]] = ends
    else:
        np.maximum.at(newest, unit_of, np.arange(n, dtype=np.int64))
    out: np.ndarray = newest[units]
    return out


def _ascending(values: np.ndarray) -> bool:
    return bool(values.size < 2 or (values[1:] >= values[:-1]).all())


def _pin(
    owner: np.ndarray,
    unit_cost: np.ndarray,
    members: np.ndarray,
    kept: np.ndarray,
    budget: int,
    want: int,
) -> int:
    """Pin units newest first (marking `kept`) until `want` candidate events are pinned or the next unit would
    overflow the budget (the first is pinned whatever it costs). `owner`: the unit of each candidate, in log
    order. Walks them from the newest in steps of :data:`_PIN_STEP`: the work is bounded by what is pinned,
    not by the session. Returns the tokens used."""
    used = pinned = 0
    stop = owner.size
    while stop > 0:
        start = max(0, stop - _PIN_STEP)
        for u in owner[start:stop][::-1].tolist():
            if pinned >= want:
                return used
            if kept[u]:
                continue
            c = int(unit_cost[u])
            if used + c > budget and pinned > 0:
                return used
            kept[u] = True
            used += c
            pinned += int(members[u])
        stop = start
    return used


def greedy_fill(
    units: np.ndarray, costs: np.ndarray, best: np.ndarray, newest: np.ndarray, room: int, *, chunk: int = _CHUNK
) -> np.ndarray:
    """Which `units` (with their `costs`) the greedy rule keeps in `room` tokens: walk them best first (by
    `best`, ties to the higher `newest`), keep each unit that still fits, skip one that does not (a smaller
    one further down may).

    The same result as that walk, without sorting every unit: the walk goes `chunk` units at a time, each
    chunk the next ones in order (selected by partition, then sorted), and after each chunk every unit that
    costs more than the room left is dropped — the room only shrinks, so none of them could be kept later.
    A long session's candidates are thousands of units of which a request keeps tens: usually one chunk,
    and a short list after it, are all that is sorted."""
    chosen: list[np.ndarray] = []
    pool = np.arange(units.size)
    while pool.size and room >= 0:
        head = _first(pool, best, newest, chunk)
        got, room = _walk(head, costs, room)
        chosen.append(units[got])
        if head.size == pool.size:
            break
        rest = np.ones(units.size, dtype=bool)
        rest[head] = False
        pool = pool[rest[pool]]
        pool = pool[costs[pool] <= room]
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


def _first(pool: np.ndarray, best: np.ndarray, newest: np.ndarray, k: int) -> np.ndarray:
    """The `k` first of `pool` in walking order (`best` descending, then `newest` descending), in that order."""
    if pool.size > k:
        b = best[pool]
        edge = np.partition(b, pool.size - k)[pool.size - k]  # the k-th best score
        ahead, tied = pool[b > edge], pool[b == edge]
        need = k - ahead.size  # >= 1: fewer than k score above the k-th
        if tied.size > need:
            tied = tied[np.argpartition(-newest[tied], need - 1)[:need]]  # ties: the newest first
        pool = np.concatenate([ahead, tied])
    return pool[np.lexsort((-newest[pool], -best[pool]))]


def _walk(order: np.ndarray, costs: np.ndarray, room: int) -> tuple[np.ndarray, int]:
    """The walk over `order` (units, in walking order; `costs` by unit) a run at a time: the longest prefix
    whose running total fits is kept at once; the unit after it does not fit, and neither can any unit that
    costs more than what is left, so those are dropped in one mask. Each round keeps at least one unit.
    Returns the kept units and the room left."""
    chosen: list[np.ndarray] = []
    while order.size and room >= 0:
        total = np.cumsum(costs[order])
        k = int(np.searchsorted(total, room, side="right"))  # the first k fit one after another
        if k:
            chosen.append(order[:k])
            room -= int(total[k - 1])
        if k >= order.size:
            break
        order = order[k + 1 :]  # order[k] does not fit: skipped
        order = order[costs[order] <= room]
    return (np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)), room
