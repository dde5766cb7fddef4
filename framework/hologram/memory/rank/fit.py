"""Which of a session's ranked events one request keeps within its history budget: `prune`'s rules on arrays.

Why a module of its own, and why no Python loop over the candidates: :func:`fit` runs before every LLM
request over L1 and every L2 event that clearly matches the input, and that second set grows with the
session (a soak of 10,000 turns made it thousands of call groups, and the per-unit Python loops of the first
version went from 1 % to 3 % of the kernel's time between turns 500 and 2,500). Every step here is a fixed
number of numpy operations over the candidates, and the Python loops are bounded by what the request
*keeps* (the pinned units, the forced ones, one pass per kept unit at most), never by what it skips.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hologram.memory.index.session_index import SessionIndex
    from hologram.memory.index.view import RequestView

__all__ = ["Fitted", "fit", "fit_messages", "greedy_fill"]

#: Candidates walked per step while pinning the newest units (pinning stops after a few units).
_PIN_STEP = 64
#: Units sorted per step of the greedy walk (:func:`greedy_fill`): a request keeps tens of units.
_CHUNK = 256


@dataclass(frozen=True, slots=True)
class Fitted:
    """What :func:`fit_messages` keeps, and where the recent window (message per event) begins."""

    keep: np.ndarray
    """A mask over the index's events: what the request sends."""
    over: bool
    """The newest unit alone is over the budget."""
    recent_from: int
    """The position of the oldest pinned event (the index's length when none): kept events before it may be
    sent joined (memory/joined.py), those from it on one message each."""


def fit(
    index: SessionIndex | RequestView,
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
    (the one whose newest member is newer). Every event is charged its whole cost (one message each).
    """
    got = fit_messages(index, scores, candidates, budget, pinned_recent=pinned_recent, forced=forced)
    return got.keep, got.over


def fit_messages(
    index: SessionIndex | RequestView,
    scores: np.ndarray | None,
    candidates: np.ndarray,
    budget: int,
    *,
    pinned_recent: int,
    forced: np.ndarray | None = None,
    roles: np.ndarray | None = None,
    overhead: int = 0,
    separator: int = 0,
) -> Fitted:
    """:func:`fit`, charging the per-message overhead per message the request will send rather than per event.

    `roles` (:attr:`SessionIndex.roles`, or None: :func:`fit` exactly) marks the events whose message may be
    joined with its neighbours of the same role when it is older than the recent window (memory/joined.py:
    consecutive inputs become one user message, consecutive plain responses one assistant message). Such an
    event costs its text and a `separator`, and each message a run of them makes costs `overhead` once, instead
    of each event's `overhead` (included in the index's cost) — a LoCoMo request carries ~115 messages of ~33
    tokens, of which the per-message overhead was 12 %. How many messages the chosen events make is known
    only once they are chosen, so the greedy fill reserves the overhead the previous round's choice needed and
    runs again (two rounds as a rule); should that not settle, every event is charged its whole cost, which
    always fits (joining only makes a request smaller). Pinned and `forced` events are charged whole.
    """
    n = len(index)
    keep = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(candidates)
    if idx.size == 0:
        return Fitted(keep, False, n)
    with index.reading():
        cost, unit_of = index.cost, index.unit_of
    owner = unit_of[idx].astype(np.int64)  # unit ids are positions (a unit's first member)
    unit_cost = np.bincount(owner, weights=cost[idx], minlength=n).astype(np.int64)  # of its candidate members
    members = np.bincount(owner, minlength=n)
    kept = np.zeros(n, dtype=bool)
    mean = float(cost[idx].mean())
    want = max(1, min(pinned_recent, int(budget // mean) if mean > 0 else idx.size))
    used = _pin(owner, unit_cost, members, kept, budget, want)
    pinned = kept[owner]
    recent_from = int(idx[pinned][0]) if pinned.any() else n
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
            if roles is None or overhead <= separator:
                fill = greedy_fill(rest, unit_cost[rest], best[rest], newest, budget - used, chunk=_CHUNK)
            else:
                fill = _fill_joined(
                    rest, unit_cost, best[rest], newest, budget - used,
                    _Joining(idx, owner, kept, roles, recent_from, overhead - separator),
                )  # fmt: skip
            kept[fill] = True
    if kept.any():
        keep = kept[unit_of[:n]] & candidates
    return Fitted(keep, over, recent_from)


#: Rounds of the joined fill before it falls back to charging every event whole.
_ROUNDS = 4


@dataclass(frozen=True, slots=True)
class _Joining:
    idx: np.ndarray
    """The candidates' positions, ascending."""
    owner: np.ndarray
    """Each candidate's unit."""
    kept: np.ndarray
    """Units kept before the fill (pinned, forced), by unit id."""
    roles: np.ndarray
    recent_from: int
    saved: int
    """What an event that joins a message saves: the overhead less the separator."""


def _fill_joined(
    rest: np.ndarray, unit_cost: np.ndarray, best: np.ndarray, newest: np.ndarray, room: int, j: _Joining
) -> np.ndarray:
    """`greedy_fill` with each joinable event charged less the overhead, and each message of joined events
    the overhead once (:func:`fit_messages`)."""
    role = j.roles[j.idx]
    joins = (role > 0) & (j.idx < j.recent_from)
    n = unit_cost.size
    per_unit = np.bincount(j.owner, weights=joins, minlength=n).astype(np.int64)
    cost = np.maximum(unit_cost - per_unit * j.saved, 0)  # (an index's cost includes the overhead: >= it)
    reserve = 0
    for _ in range(_ROUNDS):
        fill = greedy_fill(rest, cost[rest], best, newest, room - reserve, chunk=_CHUNK)
        chosen = j.kept.copy()
        chosen[fill] = True
        sent = chosen[j.owner]
        extra = _messages(role[sent], joins[sent]) * j.saved
        if int(cost[fill].sum()) + extra <= room:
            return fill
        reserve = max(reserve + 1, extra)
    return greedy_fill(rest, unit_cost[rest], best, newest, room, chunk=_CHUNK)


def _messages(role: np.ndarray, joins: np.ndarray) -> int:
    """How many messages the joinable events among these (in log order) make: each starts one unless the event
    before it in the request is joinable too and of the same role."""
    if not joins.any():
        return 0
    same = np.zeros(role.size, dtype=bool)
    same[1:] = joins[:-1] & joins[1:] & (role[:-1] == role[1:])
    return int((joins & ~same).sum())


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
