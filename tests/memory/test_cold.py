"""The L2 store: round trip with blocks and vectors, one holder per block, search like L1, bookkeeping.

Mutation-checked (``cold/store.py`` / ``coldindex.py`` mutated one at a time, the named test failed, reverted): dropping
both the event UNIQUE and the block PRIMARY KEY → ``test_a_block_has_one_holder_duplicates_are_refused_whole``
(either one alone is an equivalent mutant: each catches a duplicated event, block IDs embed the event ID);
committing rows outside one transaction → the same test (the batch is no longer all-or-nothing); skipping the fingerprint
check in ``ColdIndex.cosine`` (use any space) → ``test_dense_only_within_the_same_fingerprint``; ``<`` for
``<=`` in ``eligible_for_distillation`` → ``test_distillation_eligibility_boundaries``; forgetting
``tfidf.remove`` on removal → ``test_search_after_removals_matches_a_fresh_store``; letting smoothing cross
sessions → ``test_smoothing_kernel_does_not_cross_session_boundaries``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.cold.blocks import EventRecord, build_event
from hologram.memory.cold.store import DISTILL_IDLE_SECONDS, ColdStore, DuplicateBlockError
from hologram.memory.embed.vectors import DenseVector
from hologram.memory.rank.events import Query
from hologram.memory.text.tfidf import TermVector

FP = "test/8"


def vec(*xs: float, fp: str = FP) -> DenseVector:
    v = np.zeros(8, dtype=np.float32)
    v[: len(xs)] = xs
    n = float(np.linalg.norm(v))
    return DenseVector(fp, v / n if n else v)


def rec(
    i: int, text: str, *, session: str = "s1", dense: DenseVector | None = None, group: str | None = None
) -> EventRecord:
    return build_event(
        timestamp=1_700_000_000 + i, input=text, reasoning=f"thought {i}", session=session, dense=dense, group=group
    )


def q(text: str, dense: DenseVector | None = None) -> Query:
    return Query(text, TermVector.from_text(text), dense)


@pytest.fixture
def store(tmp_path: Path) -> ColdStore:
    return ColdStore(tmp_path / "cold.db")


def test_wal_and_full_sync(tmp_path: Path) -> None:
    s = ColdStore(tmp_path / "c.db")
    s.close()
    db = sqlite3.connect(tmp_path / "c.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s = ColdStore(tmp_path / "c.db")
    assert s._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_round_trip_keeps_every_block_field_and_vector(store: ColdStore, tmp_path: Path) -> None:
    r = build_event(
        timestamp="2024-05-01T10:00:00Z",
        input="read it",
        reasoning="the user wants the file",
        response="reading",
        tool_calls=[{"id": "c1", "name": "files.read", "arguments": {"path": "a"}}],
        tool_results=[{"call_id": "c1", "name": "files.read", "content": "hello 世界"}],
        media=[{"text": "a photo", "mime": "image/png"}],
        session="s1",
        origin="s1:000007",
        channel="web",
        partner="alice",
        scene="chan:web",
        group="g1",
        dense=vec(1, 2, 3),
    ).accessed(123.0)
    store.put([r])
    for s in (store, ColdStore(tmp_path / "cold.db")):  # and after reopening
        (back,) = s.peek([r.id])
        assert back.id == r.id and back.ts_ms == r.ts_ms
        assert back.blocks == r.blocks
        assert (back.session, back.origin, back.channel, back.partner, back.scene, back.group) == (
            "s1", "s1:000007", "web", "alice", "chan:web", "g1"
        )  # fmt: skip
        assert back.dense is not None and r.dense is not None
        assert back.dense.fingerprint == FP and np.array_equal(back.dense.values, r.dense.values)
        assert back.terms is not None and r.terms is not None and dict(back.terms.counts) == dict(r.terms.counts)
        assert (back.access_count, back.last_access) == (1, 123.0)
        assert back.ids_consistent()
        assert [b.kind for b in back.blocks].count("reasoning") == 1


def test_a_block_has_one_holder_duplicates_are_refused_whole(store: ColdStore) -> None:
    a, b, c = rec(1, "alpha"), rec(2, "beta"), rec(3, "gamma")
    store.put([a])
    with pytest.raises(DuplicateBlockError):
        store.put([b, c, a])  # a is already held by L2
    assert store.ids() == [a.id]  # b and c rolled back with it
    assert b.id not in store and c.id not in store
    assert [h.id for h in store.search(q("beta gamma alpha"), 5)] == [a.id]  # the index was not touched either
    with pytest.raises(DuplicateBlockError):
        store.put([b, b])
    assert len(store) == 1


def test_records_whose_ids_do_not_match_content_are_refused(store: ColdStore) -> None:
    from dataclasses import replace

    r = rec(1, "alpha")
    with pytest.raises(ValueError, match="IDs do not match"):
        store.put([replace(r, blocks=(replace(r.blocks[0], text="edited"), *r.blocks[1:]))])
    assert len(store) == 0


def test_lexical_search_uses_our_analyser_including_reasoning(store: ColdStore) -> None:
    store.put([rec(1, "we adopted a kitten named Luna"), rec(2, "the train was late"), rec(3, "我喜欢北京的烤鸭")])
    assert store.search(q("kittens Luna"), 1)[0].id == rec(1, "we adopted a kitten named Luna").id
    assert store.search(q("北京烤鸭"), 1)[0].id == rec(3, "我喜欢北京的烤鸭").id
    assert store.search(q("thought 2"), 1)[0].id == rec(2, "the train was late").id  # reasoning block text


def test_dense_only_within_the_same_fingerprint(store: ColdStore) -> None:
    a = rec(1, "one", dense=vec(1, 0))
    b = rec(2, "two", dense=vec(0, 1))
    c = rec(3, "three", dense=vec(1, 0, fp="other/8"))
    d = rec(4, "four")
    store.put([c, a, b, d])  # the foreign space first, so "whichever space comes first" would be caught
    hits = store.search(q("nothing lexical", vec(0, 1)), 4)
    assert hits[0].id == b.id
    # c has the same direction as a, but in another space: never scored densely against the query
    hits = store.search(q("nothing lexical", vec(1, 0)), 4)
    assert hits[0].id == a.id
    scores = {h.id: h.score for h in hits}
    assert scores[c.id] < scores[a.id]


def test_session_filter(store: ColdStore) -> None:
    store.put([rec(1, "apple pie", session="s1"), rec(2, "apple tart", session="s2")])
    assert [h.id for h in store.search(q("apple"), 5, session="s2")] == [rec(2, "apple tart", session="s2").id]
    assert store.search(q("apple"), 5, session="nope") == []
    assert len(store.search(q("apple"), 5)) == 2


def test_neighbour_smoothing_stays_within_a_session(store: ColdStore) -> None:
    # s1: a strong hit followed by a neutral event; s2's neutral event is adjacent in time but in another session
    hit = rec(10, "zebra zebra zebra", session="s1")
    after = rec(11, "neutral words here", session="s1")
    other = rec(12, "neutral words here", session="s2")
    filler = [rec(20 + i, f"filler item {i}", session="s3") for i in range(6)]
    store.put([hit, after, other, *filler])
    scores = {h.id: h.score for h in store.search(q("zebra"), 20)}
    assert scores[after.id] > scores[other.id]


def test_remove_and_reconcile(store: ColdStore) -> None:
    rs = [rec(i, f"event {i}") for i in range(5)]
    store.put(rs)
    assert store.remove([rs[1].id, rs[1].id, "ev_unknown"]) == [rs[1].id]
    assert rs[1].id not in store and len(store) == 4
    assert all(h.id != rs[1].id for h in store.search(q("event"), 10))
    assert not any(b.id in store.block_ids() for b in rs[1].blocks)
    assert store.reconcile([rs[2].id, rs[1].id, "ev_x"]) == [rs[2].id]
    assert store.ids() == [rs[0].id, rs[3].id, rs[4].id]


def test_search_after_removals_matches_a_fresh_store(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    words = [f"w{i}" for i in range(50)]
    rs = [
        rec(i, " ".join(rng.choice(words, 6)), session=f"s{i % 3}", dense=vec(*rng.standard_normal(8)))
        for i in range(5000)
    ]
    live = ColdStore(tmp_path / "a.db")
    live.put(rs)
    live.remove([r.id for r in rs[::3]] + [r.id for r in rs[1::3]])  # > half removed: compaction runs
    assert len(live.index.ids) < 5000
    fresh = ColdStore(tmp_path / "b.db")
    fresh.put(rs[2::3])
    for text in ["w1 w2", "w7", "w30 w31 w32"]:
        query = q(text, vec(*rng.standard_normal(8)))
        a = [(h.id, round(h.score, 4)) for h in live.search(query, 10)]
        b = [(h.id, round(h.score, 4)) for h in fresh.search(query, 10)]
        assert a == b
    reopened = ColdStore(tmp_path / "a.db")
    assert reopened.ids() == live.ids()


def test_group_mates(store: ColdStore) -> None:
    call = rec(1, "call", group="g1")
    result = rec(2, "result", group="g1")
    other_session = rec(3, "result", group="g1", session="s2")
    solo = rec(4, "solo")
    store.put([call, result, other_session, solo])
    assert store.group_mates([call.id]) == [call.id, result.id]
    assert store.group_mates([solo.id]) == [solo.id]


def test_touch_counts_accesses(store: ColdStore) -> None:
    r = rec(1, "x")
    store.put([r], now=10.0)
    assert store.access(r.id) == (0, None)
    store.touch([r.id, r.id], now=50.0)  # one access per call, not per mention
    store.touch([r.id], now=60.0)
    assert store.access(r.id) == (2, 60.0)
    with pytest.raises(KeyError):
        store.access("ev_missing")


def test_distillation_eligibility_boundaries(store: ColdStore) -> None:
    day = 24 * 3600.0
    never = rec(1, "never used")
    twice = rec(2, "used twice")
    thrice = rec(3, "used three times")
    recent = rec(4, "used recently")
    store.put([never, twice, thrice, recent], now=0.0)
    store.touch([twice.id, thrice.id, recent.id], now=1 * day)
    store.touch([twice.id, thrice.id], now=1 * day)
    store.touch([thrice.id], now=1 * day)
    store.touch([recent.id], now=3 * day + 1)
    now = 1 * day + DISTILL_IDLE_SECONDS
    assert store.eligible_for_distillation(now) == [never.id, twice.id]
    assert store.eligible_for_distillation(now - 1) == [never.id]  # the others are 1 s short of 72 h idle
    assert store.eligible_for_distillation(now + 3 * day) == [never.id, twice.id, recent.id]


def test_smoothing_kernel_does_not_cross_session_boundaries() -> None:
    """The cold index smooths with `neighbour_smooth(..., segment=session)` (coldindex.py).
    Mutation check (done): ignoring ``segment`` turns the first asserts red."""
    from hologram.memory.rank.score import neighbour_smooth

    scores = np.array([10.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    out = neighbour_smooth(scores, (0.5, 0.25), segment=np.array([0, 1, 1, 1, 1]))
    assert out[0] == 10.0  # its neighbours are another session (floor 0) and the end
    assert out[1] == out[2] == out[3] == 0.0  # no share of session 0's hit
    same = neighbour_smooth(scores[:4], (0.5, 0.25), segment=np.array([1, 1, 1, 1]))
    assert same[1] == 2.5 and same[2] == 1.25  # within a session: ½ and ¼ of the hit, averaged over both sides


def test_a_reopened_store_searches_lazily_as_before(tmp_path: Path) -> None:
    """Opening reads only the ids: membership, ids, peek and the bookkeeping answer without the index; the
    first search builds it and ranks exactly as the index kept up to date by every put did."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(40)]
    rs = [
        rec(i, " ".join(rng.choice(words, 5)), session=f"s{i % 3}", dense=vec(*rng.standard_normal(8)))
        for i in range(300)
    ]
    queries = [q(text, vec(*rng.standard_normal(8))) for text in ["w1 w2", "w7", "w30 w31 w32", "nothing"]]
    with ColdStore(tmp_path / "cold.db") as live:
        assert not live.index_built and len(live.index) == 0  # built (empty) here, then kept up to date by put
        live.put(rs[:150])
        live.put(rs[150:])
        assert live.index_built
        before = [[(h.id, round(h.score, 5)) for h in live.search(query, 10, session=s)] for query in queries
                  for s in (None, "s1")]  # fmt: skip
    with ColdStore(tmp_path / "cold.db") as store:
        assert len(store) == 300 and rs[7].id in store and "ev_unknown" not in store
        assert store.ids() == [r.id for r in rs]
        peeked = store.peek([rs[5].id, rs[2].id])
        assert [(r.id, r.blocks, r.session) for r in peeked] == [(r.id, r.blocks, r.session) for r in (rs[2], rs[5])]
        assert all(np.array_equal(p.dense.values, r.dense.values) for p, r in zip(peeked, (rs[2], rs[5]), strict=True)
                   if p.dense is not None and r.dense is not None)  # fmt: skip
        assert store.group_mates([rs[9].id]) == [rs[9].id] and store.access(rs[9].id) == (0, None)
        assert not store.index_built  # none of that needed the index
        after = [[(h.id, round(h.score, 5)) for h in store.search(query, 10, session=s)] for query in queries
                 for s in (None, "s1")]  # fmt: skip
        assert store.index_built
        assert after == before
    with ColdStore(tmp_path / "cold.db") as store:  # writes before the index exists reach it when it is built
        extra = rec(1000, "w1 w2 w1 w2 w1 w2", session="s1", dense=vec(1.0))
        store.put([extra])
        assert sorted(store.remove([rs[0].id, rs[1].id])) == sorted([rs[0].id, rs[1].id])
        assert not store.index_built and len(store) == 299 and extra.id in store and rs[0].id not in store
        hits = store.search(q("w1 w2"), 300)
        assert hits[0].id == extra.id and {rs[0].id, rs[1].id}.isdisjoint(h.id for h in hits)
        assert len(store.index) == 299


def test_terms_stored_by_an_older_tokenizer_are_derived_again(tmp_path: Path) -> None:
    """An upgrade changed the tokenizer (the Snowball stemmer): the first search re-derives the stale rows'
    terms from their text and stores them, so old events match new queries."""
    import json
    import sqlite3

    from hologram.memory.text.tokenizer import ANALYZER_JIEBA

    path = tmp_path / "cold.db"
    with ColdStore(path) as store:
        store.put([build_event(timestamp=1_700_000_000, input="Melanie was painting sunsets at the lake")])
    db = sqlite3.connect(path)  # as the previous release stored it: unstemmed words, the old tag
    old = {"melanie": 1, "painting": 1, "sunsets": 1, "lake": 1}
    db.execute("UPDATE cold_events SET terms = ?, analyzer = 'jieba'", (json.dumps(old),))
    db.commit()
    db.close()
    with ColdStore(path) as store:
        question = "who paints sunsets?"
        hits = store.search(Query(question, TermVector.from_text(question)), 5)
        assert hits, "the old event matches the stemmed query"
    db = sqlite3.connect(path)
    ((terms, analyzer),) = db.execute("SELECT terms, analyzer FROM cold_events").fetchall()
    db.close()
    assert analyzer == ANALYZER_JIEBA and "paint" in json.loads(terms), "re-derived and stored"
