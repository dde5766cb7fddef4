"""`recall`: peek, re-insert, only then remove — the L2 → L1 move under ``coldcontext_query``.

Mutation-checked (hand-made in ``recall.py``, the named test failed, reverted): removing from L2 before calling
``reinsert`` → ``test_failed_reinsert_removes_nothing``; skipping ``group_mates`` →
``test_a_call_comes_back_with_its_results``; not counting the access on recall →
``test_recall_moves_events_back_and_counts_an_access``. The tool on the product path (the session's own
search, ``SessionMemory.tool_handler``) is tested in test_session_memory.py and test_recall_in_request.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from hologram.memory.cold.blocks import EventRecord, build_event
from hologram.memory.cold.recall import (
    COLDCONTEXT_QUERY_NAME,
    COLDCONTEXT_QUERY_PARAMETERS,
    RecallError,
    RecallResult,
    recall,
    render_events,
)
from hologram.memory.cold.store import ColdStore
from hologram.memory.rank.events import Query
from hologram.memory.text.tfidf import TermVector


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
        have = {r.id for r in self.records}
        self.records = sorted([*self.records, *(r for r in records if r.id not in have)], key=EventRecord.sort_key)


@pytest.fixture
def store(tmp_path: Path) -> ColdStore:
    return ColdStore(tmp_path / "cold.db")


def test_recall_moves_events_back_and_counts_an_access(store: ColdStore) -> None:
    history = [rec(i, text) for i, text in enumerate(["hello", "my cat is called Luna", "weather talk", "bye"])]
    store.put([history[1], history[2]], now=1.0)
    l1 = L1([history[0], history[3]])
    recalled, missing = recall(store, [history[1].id], l1.reinsert, now=99.0)
    assert [r.id for r in recalled] == [history[1].id] and missing == []
    assert [r.id for r in l1.records] == [history[0].id, history[1].id, history[3].id]  # original time position
    assert store.ids() == [history[2].id]
    assert recalled[0].access_count == 1 and recalled[0].last_access == 99.0
    assert "Luna" in RecallResult(recalled).tool_text()
    # the block IDs did not change on the way
    assert [b.id for b in l1.records[1].blocks] == [b.id for b in history[1].blocks]


def test_failed_reinsert_removes_nothing(store: ColdStore) -> None:
    events = [rec(i, f"topic {i} zebra") for i in range(4)]
    store.put(events, now=1.0)
    before = (store.ids(), [store.access(e.id) for e in events])
    l1 = L1()
    l1.fail = True
    with pytest.raises(RecallError, match="cold context unchanged"):
        recall(store, [events[0].id, events[1].id], l1.reinsert)
    assert (store.ids(), [store.access(e.id) for e in events]) == before
    assert l1.records == []


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
    recalled, _ = recall(store, [result.id], l1.reinsert)  # the result was the hit: its call comes along
    assert [r.id for r in recalled] == [call.id, result.id]
    assert {r.id for r in l1.records} == {call.id, result.id}
    assert call.id not in store and result.id not in store


def test_nothing_to_recall(store: ColdStore) -> None:
    assert recall(store, [], L1().reinsert) == ([], [])
    assert RecallResult([]).tool_text() == "Nothing in cold context matched."


def test_concurrently_taken_candidates_are_reported_missing(store: ColdStore) -> None:
    a, b = rec(1, "apple"), rec(2, "apple pie")
    store.put([a, b])
    hits = store.search(q("apple"), 2)
    store.remove([a.id])  # another recall took it between search and peek
    l1 = L1()
    recalled, missing = recall(store, [h.id for h in hits], l1.reinsert)
    assert [r.id for r in recalled] == [b.id] and missing == [a.id]


def test_tool_schema_and_rendering() -> None:
    Draft202012Validator.check_schema(COLDCONTEXT_QUERY_PARAMETERS)
    v = Draft202012Validator(COLDCONTEXT_QUERY_PARAMETERS)
    assert v.is_valid({"query": "cats", "limit": 3})
    assert COLDCONTEXT_QUERY_NAME == "coldcontext_query"
    text = render_events([build_event(timestamp=None, input="x" * 500, reasoning="why")], per_block=50)
    assert "time unknown" in text and "reasoning: why" in text and len(text) < 200
