"""A request's ranking gives, bit for bit, what it gave before its passes were cut (issue 22, the soak).

`SessionIndex.scores` and `zscore` were rewritten to make fewer passes over a long session's events — BM25's
length normalisation once per passage instead of once per posting (and a term counted once, the usual case,
without its count's passes), the best passage per event without ``reduceat`` when every event has one, the
fused score without gathers when every event has a vector, the deviations from the mean computed once. None
of that may change a single score: the ranking decides what a request sends and what moves to L2. So the
code as it was is kept here as the reference, and random indexes — sealed segments and a tail, events of one
and of many passages, repeated words, vectors missing, time windows, weighted query terms — must score
identically (``array_equal`` on the bits, not ``allclose``).

Mutation checks (done): BM25's normalisation with ``_B`` and ``_K1`` swapped, the one-count branch taken when
a term's largest count is 2, ``(tf + 1) + norm`` in the general branch, ``_best_of_events`` returning the
values whenever there are at least as many as events, and the all-vectors shortcut taken whenever any event
has a vector each turn ``test_scores_are_the_old_scores`` red; a zscore dividing by the count minus one turns
``test_zscore_is_the_old_zscore`` red.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hologram.memory.index.session_index import (
    DENSE_WEIGHT,
    TIME_BOOST,
    TIME_SELECT,
    TURN_NEIGHBOUR_WEIGHTS,
    IndexQuery,
    SessionIndex,
)
from hologram.memory.rank.says_nothing import SAYS_NOTHING_BIT, SAYS_NOTHING_PENALTY
from hologram.memory.rank.score import neighbour_smooth, zscore
from hologram.memory.rank.specific import specificity
from hologram.memory.text.monthcues import MONTH_BOOST

_K1, _B = 1.2, 0.75
WORDS = ["lake", "house", "wifi", "heron", "budget", "cake", "chess", "jazz", "tomato", "milo", "server", "42"]


def old_zscore(x: np.ndarray) -> np.ndarray:
    if x.size == 0:
        return np.zeros(0, dtype=np.float32)
    std = float(x.std())
    if std <= 1e-12:
        return np.zeros(x.shape, dtype=np.float32)
    out: np.ndarray = ((x - x.mean()) / std).astype(np.float32)
    return out


def old_bm25(index: SessionIndex, terms: Mapping[str, float]) -> np.ndarray:
    """`SessionIndex._bm25` before this change."""
    n = index.passages
    out = np.zeros(n, dtype=np.float64)
    if not terms or n == 0:
        return out
    cols = index._cols()
    avg = max(index.total_length / n, 1.0)
    length = cols.column("passage_length")
    active = [(term, weight) for term, weight in terms.items() if weight > 0]
    postings = index._postings([t for t, _ in active], cols.segments)
    for (_term, weight), found in zip(active, postings, strict=True):
        if not found:
            continue
        df = sum(part[0].size for part in found)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        weight = weight * specificity(df, n)  # a session's generic word (rank/specific.py), added since
        slots = np.concatenate([f[0] for f in found]) if len(found) > 1 else found[0][0]
        tf = (np.concatenate([f[1] for f in found]) if len(found) > 1 else found[0][1]).astype(np.float64)
        norm = _K1 * (1.0 - _B + _B * length[slots] / avg)
        out[slots] += weight * idf * tf * (_K1 + 1.0) / (tf + norm)
    return out


def old_scores(index: SessionIndex, query: IndexQuery) -> np.ndarray:
    """`SessionIndex.scores` before this change (its dense part, `_cosine`, is unchanged and shared)."""
    with index.reading():
        cols = index._cols()
        first = cols.column("first_passage")
        lexical = old_zscore(np.maximum.reduceat(old_bm25(index, query.terms), first)).astype(np.float64)
        dense, mask = index._cosine(query)
        fused = lexical
        if mask.any():
            fused = lexical.copy()
            fused[mask] = (1 - DENSE_WEIGHT) * lexical[mask] + DENSE_WEIGHT * old_zscore(dense[mask])
        if query.window is not None:
            ts = cols.column("ts")
            fused = fused + TIME_BOOST * ((ts >= query.window[0]) & (ts < query.window[1]))
        turn = cols.column("turn")
        turn_starts = np.flatnonzero(np.diff(turn, prepend=-1))
        best_of_turn = np.maximum.reduceat(fused, turn_starts)
        around = neighbour_smooth(best_of_turn, TURN_NEIGHBOUR_WEIGHTS, None).astype(np.float64) - best_of_turn
        out: np.ndarray = fused + around[turn]
        if query.window is not None:  # issue 39: the window's events selected first (after smoothing)
            out = out + TIME_SELECT * ((ts >= query.window[0]) & (ts < query.window[1]))
        # issue 39: an event that states nothing competes with less of its score (memory/rank/says_nothing.py)
        out = out - SAYS_NOTHING_PENALTY * ((cols.column("kind") & SAYS_NOTHING_BIT) != 0)
        if query.month is not None:  # issue 39: a month and year named (memory/text/monthcues.py)
            ts = cols.column("ts")
            out = out + MONTH_BOOST * ((ts >= query.month[0]) & (ts < query.month[1]))
        return out


def _text(rng: np.random.Generator, long: bool) -> str:
    sentences = int(rng.integers(6, 14)) if long else 1
    words = 12 if long else int(rng.integers(1, 9))
    return " ".join(
        " ".join(str(w) for w in rng.choice(WORDS, size=words)).capitalize() + "." for _ in range(sentences)
    )


def _index(tmp: Path, seed: int, events: int, long_share: float, vector_share: float) -> SessionIndex:
    """A session of `events` events sealed every 8 (segments, a merge, a tail), with vectors for a share of
    the passages (a random 8-d space)."""
    rng = np.random.default_rng(seed)
    index = SessionIndex(tmp / f"index-{seed}-{events}", seal_events=8)
    for i in range(events):
        kind = "input" if i % 3 == 0 else ("response" if i % 3 == 1 else "tool_result")
        group = f"call:{i - 1}" if kind == "tool_result" else (f"call:{i}" if kind == "response" else None)
        index.add(i + 1, f"e{seed}-{i}", kind, _text(rng, bool(rng.random() < long_share)), 10, group=group,
                  ts=1000.0 + i)  # fmt: skip
        todo = index.pending(1000)
        if todo:
            have = [p for p, _ in todo if rng.random() < vector_share]
            vectors = rng.standard_normal((len(have), 8)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            if have:
                index.set_vectors("test/8", have, vectors)
            index.seal(vectors=False)
            while group_ := index.merge_plan():
                index.merge(group_)
    return index


def _query(rng: np.random.Generator, *, dense: bool, window: bool) -> IndexQuery:
    terms = {str(w): float(rng.choice([0.5, 1.0, 2.0])) for w in rng.choice(WORDS, size=int(rng.integers(1, 6)))}
    vector = None
    if dense:
        vector = rng.standard_normal(8).astype(np.float32)
        vector /= np.linalg.norm(vector)
    span = (1000.0 + float(rng.integers(0, 20)), 1000.0 + float(rng.integers(20, 60))) if window else None
    return IndexQuery(terms, vector, "test/8" if dense else None, span)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    events=st.integers(1, 70),
    long_share=st.sampled_from([0.0, 0.0, 0.2, 0.6]),
    vector_share=st.sampled_from([0.0, 0.5, 1.0, 1.0]),
    dense=st.booleans(),
    window=st.booleans(),
)
def test_scores_are_the_old_scores(
    seed: int, events: int, long_share: float, vector_share: float, dense: bool, window: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:  # one per example (a fixture's directory outlives them)
        index = _index(Path(tmp), seed, events, long_share, vector_share)
        rng = np.random.default_rng(seed + 1)
        for _ in range(3):
            query = _query(rng, dense=dense, window=window)
            new, old = index.scores(query), old_scores(index, query)
            assert new.dtype == old.dtype and np.array_equal(new.view(np.uint64), old.view(np.uint64)), (
                f"scores differ at {np.flatnonzero(new != old)[:5].tolist()}"
            )


def test_the_shortcuts_were_taken(tmp_path: Path) -> None:
    """The test above reaches both sides of each shortcut: one passage an event and many, every event with a
    vector and some without, terms counted once and more."""
    index = _index(tmp_path, 7, 40, 0.0, 1.0)
    assert index.passages == len(index) and index.segments > 0
    with index.reading():
        _, mask = index._cosine(_query(np.random.default_rng(0), dense=True, window=False))
    assert mask.all()
    many = _index(tmp_path, 8, 40, 0.6, 0.5)
    assert many.passages > len(many)
    with many.reading():
        found = many._postings(WORDS, many._cols().segments)
    assert any(int(part[1].max()) > 1 for parts in found for part in parts), "a term counted more than once"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=0, max_size=400),
    st.sampled_from([np.float32, np.float64]),
    st.floats(1e-3, 1e3),
)
def test_zscore_is_the_old_zscore(values: list[float], dtype: type[np.floating], scale: float) -> None:
    x = (np.asarray(values, dtype=np.float64) * scale).astype(dtype)
    new, old = zscore(x), old_zscore(x)
    assert new.dtype == old.dtype == np.float32
    assert np.array_equal(new.view(np.uint32), old.view(np.uint32))
