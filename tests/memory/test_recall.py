"""``coldcontext_query`` and automatic recall: peek, re-insert, only then remove; read-only injection.

Mutation-checked (hand-made in ``recall.py``, the named test failed, reverted): removing from L2 before calling
``reinsert`` → ``test_failed_reinsert_removes_nothing``; skipping ``group_mates`` →
``test_a_call_comes_back_with_its_results``; not counting the access on recall →
``test_recall_moves_events_back_in_time_order``; ``auto_recall`` without ``touch`` →
``test_auto_recall_is_read_only_and_counts_an_access``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from hologram.memory.blocks import EventRecord, build_event
from hologram.memory.cold import ColdStore
from hologram.memory.events import Query
from hologram.memory.recall import (
    COLDCONTEXT_QUERY_NAME,
    COLDCONTEXT_QUERY_PARAMETERS,
    RecallError,
    auto_recall,
    coldcontext_query,
    demote,
    insert_in_time_order,
    make_handler,
    make_query,
    render_events,
)
from hologram.memory.tfidf import TermVector


def rec(i: int, text: str, *, session: str = "s1", group: str | None = None) -> EventRecord:
    return build_event(timestamp=1_700_000_000 + 60 * i, input=text, reasoning=f"r{i}", session=session, group=group)


def q(text: str) -> Query:
    return Query(text, TermVector.from_text(text))


class L1:
    """A list-backed L1 with the re-insert contract; `fail` makes the next re-insert raise."""

    def __init__(self, records: Sequence[EventRecord] = ()) -> None:
        self.records = list(records)
        self.fail = False

    def reinsert(self, records: Sequence[EventRecord]) -> None:
        if self.fail:
            raise OSError("disk full")
        self.records = insert_in_time_order(self.records, records)

    def drop(self, ids: Sequence[str]) -> None:
        gone = set(ids)
        self.records = [r for r in self.records if r.id not in gone]


@pytest.fixture
def store(tmp_path: Path) -> ColdStore:
    return ColdStore(tmp_path / "cold.db")


def test_recall_moves_events_back_in_time_order(store: ColdStore) -> None:
    history = [rec(i, text) for i, text in enumerate(["hello", "my cat is called Luna", "weather talk", "bye"])]
    l1 = L1(history)
    demote(store, [history[1], history[2]], l1.drop, now=1.0)
    assert [r.id for r in l1.records] == [history[0].id, history[3].id]
    result = coldcontext_query(store, q("what is my cat called"), l1.reinsert, limit=1, now=99.0)
    assert [r.id for r in result.recalled] == [history[1].id]
    assert [r.id for r in l1.records] == [history[0].id, history[1].id, history[3].id]  # original time position
    assert store.ids() == [history[2].id]
    assert result.recalled[0].access_count == 1 and result.recalled[0].last_access == 99.0
    assert "Luna" in result.tool_text()
    # the block IDs did not change on the way
    assert [b.id for b in l1.records[1].blocks] == [b.id for b in history[1].blocks]


def test_failed_reinsert_removes_nothing(store: ColdStore) -> None:
    events = [rec(i, f"topic {i} zebra") for i in range(4)]
    store.put(events, now=1.0)
    before = (store.ids(), [store.access(e.id) for e in events])
    l1 = L1()
    l1.fail = True
    with pytest.raises(RecallError, match="cold context unchanged"):
        coldcontext_query(store, q("zebra"), l1.reinsert, limit=2)
    assert (store.ids(), [store.access(e.id) for e in events]) == before
    assert l1.records == []
    assert len(store.search(q("zebra"), 10)) == 4


def test_failed_demotion_keeps_l1(store: ColdStore) -> None:
    a = rec(1, "a")
    store.put([a])
    l1 = L1([a, rec(2, "b")])
    with pytest.raises(ValueError):
        demote(store, l1.records, l1.drop)  # a is already in L2: refused, L1 untouched
    assert len(l1.records) == 2


def test_a_call_comes_back_with_its_results(store: ColdStore) -> None:
    call = build_event(
        timestamp=1_700_000_100,
        response="checking",
        tool_calls=[{"id": "c1", "name": "weather", "arguments": {}}],
        group="g1",
    )
    result = build_event(
        timestamp=1_700_000_101,
        tool_results=[{"call_id": "c1", "name": "weather", "content": "Sunny in Lisbon"}],
        group="g1",
    )
    store.put([call, result, rec(0, "unrelated chat")])
    l1 = L1()
    out = coldcontext_query(store, q("Lisbon sunny"), l1.reinsert, limit=1)
    assert [r.id for r in out.recalled] == [call.id, result.id]
    assert {r.id for r in l1.records} == {call.id, result.id}
    assert call.id not in store and result.id not in store


def test_nothing_matches(store: ColdStore) -> None:
    l1 = L1()
    out = coldcontext_query(store, q("anything"), l1.reinsert)
    assert out.recalled == [] and out.tool_text() == "Nothing in cold context matched."


def test_concurrently_taken_candidates_are_reported_missing(store: ColdStore) -> None:
    a, b = rec(1, "apple"), rec(2, "apple pie")
    store.put([a, b])
    hits = store.search(q("apple"), 2)
    store.remove([a.id])  # another recall took it between search and peek
    from hologram.memory.recall import recall

    l1 = L1()
    recalled, missing = recall(store, [h.id for h in hits], l1.reinsert)
    assert [r.id for r in recalled] == [b.id] and missing == [a.id]


def test_auto_recall_is_read_only_and_counts_an_access(store: ColdStore) -> None:
    events = [rec(i, f"filler conversation {i}") for i in range(8)] + [rec(9, "the wifi password is hunter2")]
    store.put(events, now=1.0)
    got = auto_recall(store, q("wifi password"), k=3, now=5.0)
    assert [r.id for r in got] == [events[-1].id]  # only clear matches (min score)
    assert store.access(events[-1].id) == (1, 5.0)
    assert events[-1].id in store and len(store) == 9
    assert auto_recall(store, q("wifi password"), k=3, min_score=1e9) == []


def test_tool_schema_and_rendering() -> None:
    Draft202012Validator.check_schema(COLDCONTEXT_QUERY_PARAMETERS)
    v = Draft202012Validator(COLDCONTEXT_QUERY_PARAMETERS)
    assert v.is_valid({"query": "cats", "limit": 3})
    assert COLDCONTEXT_QUERY_NAME == "coldcontext_query"
    text = render_events([build_event(timestamp=None, input="x" * 500, reasoning="why")], per_block=50)
    assert "time unknown" in text and "reasoning: why" in text and len(text) < 200


@dataclass
class Invocation:
    session_id: str | None
    call_id: str = "c1"


def test_handler_recalls_within_the_calling_session(store: ColdStore) -> None:
    mine, theirs = rec(1, "budget spreadsheet", session="s1"), rec(2, "budget spreadsheet v2", session="s2")
    store.put([mine, theirs])
    l1s = {"s1": L1(), "s2": L1()}
    handler = make_handler(store, lambda session: l1s[str(session)].reinsert)
    out = asyncio.run(handler({"query": "budget spreadsheet"}, Invocation("s1")))
    assert out["is_error"] is False and mine.id in out["content"]
    assert [r.id for r in l1s["s1"].records] == [mine.id] and theirs.id in store
    bad = asyncio.run(handler({"query": "  "}, Invocation("s1")))
    assert bad["is_error"] is True
    l1s["s2"].fail = True
    failed = asyncio.run(handler({"query": "budget"}, Invocation("s2")))
    assert failed["is_error"] is True and theirs.id in store


def test_make_query_without_embedder_is_lexical() -> None:
    query = make_query("Luna the cat")
    assert query.dense is None and "luna" in query.terms.counts
