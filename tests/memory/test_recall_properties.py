"""Invariants across random prune / recall / auto-recall / failed-recall / restart sequences (hypothesis).

After every step: no event lost or duplicated (L1 ∪ L2 is the whole history, L1 ∩ L2 empty), every block has
exactly one holder, L1 is in time order, a tool call and its results are always in the same layer, and every
ID is the one derived at creation.

Mutation-checked (hand-made, the test failed, reverted): ``recall`` removing before re-inserting (a failed
re-insert then loses events); ``recover`` not storing the pruned events; ``insert_in_time_order`` appending
instead of sorting; ``recall`` without ``group_mates``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hologram.memory.blocks import EventRecord, build_event
from hologram.memory.cold import ColdStore
from hologram.memory.events import Query
from hologram.memory.overflow import recover
from hologram.memory.recall import RecallError, auto_recall, coldcontext_query, insert_in_time_order
from hologram.memory.tfidf import TermVector

WORDS = ["apple", "berry", "cedar", "delta", "ember", "fjord", "grove", "harbor"]


@st.composite
def histories(draw: st.DrawFn) -> list[EventRecord]:
    n = draw(st.integers(1, 30))
    out: list[EventRecord] = []
    i = 0
    while len(out) < n:
        ts = draw(st.sampled_from([None, 0, 1_700_000_000 + i, 1_700_000_000 + i // 3]))
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))
        origin = f"s:{i:06d}"
        if draw(st.booleans()) and draw(st.integers(0, 3)) == 0:  # a tool call with 1-2 results, one group
            group = f"g{i}"
            out.append(
                build_event(
                    timestamp=ts, response=text, tool_calls=[{"id": "c", "name": "t", "arguments": {}}],
                    session="s", origin=origin, group=group,
                )
            )  # fmt: skip
            for j in range(draw(st.integers(1, 2))):
                i += 1
                out.append(
                    build_event(
                        timestamp=ts, tool_results=[{"call_id": "c", "content": f"{text} result{j}"}],
                        session="s", origin=f"s:{i:06d}", group=group,
                    )
                )  # fmt: skip
        else:
            reasoning = draw(st.sampled_from(["", "thinking " + text]))
            out.append(build_event(timestamp=ts, input=text, reasoning=reasoning, session="s", origin=origin))
        i += 1
    return sorted(out, key=EventRecord.sort_key)


OPS = st.one_of(
    st.tuples(st.just("prune"), st.integers(0, 300), st.sampled_from(WORDS), st.integers(0, 5)),
    st.tuples(st.just("recall"), st.integers(1, 6), st.sampled_from(WORDS), st.integers(0, 1)),  # 1: re-insert fails
    st.tuples(st.just("auto"), st.integers(1, 4), st.sampled_from(WORDS), st.just(0)),
    st.tuples(st.just("restart"), st.just(0), st.just(""), st.just(0)),
)


def q(word: str) -> Query:
    return Query(word, TermVector.from_text(word))


def _check(history: Sequence[EventRecord], l1: list[EventRecord], store: ColdStore) -> None:
    all_ids = sorted(r.id for r in history)
    l1_ids = [r.id for r in l1]
    l2_ids = store.ids()
    assert sorted(l1_ids + l2_ids) == all_ids, "an event was lost or duplicated"
    assert not set(l1_ids) & set(l2_ids)
    l1_blocks = [b.id for r in l1 for b in r.blocks]
    l2_blocks = store.block_ids()
    assert len(l1_blocks) == len(set(l1_blocks))
    assert not set(l1_blocks) & l2_blocks, "a block has two holders"
    assert set(l1_blocks) | l2_blocks == {b.id for r in history for b in r.blocks}
    assert l1 == sorted(l1, key=EventRecord.sort_key), "L1 out of time order"
    where = {i: "l1" for i in l1_ids} | {i: "l2" for i in l2_ids}
    groups: dict[str, set[str]] = {}
    for r in history:
        if r.group is not None:
            groups.setdefault(r.group, set()).add(where[r.id])
    assert all(len(places) == 1 for places in groups.values()), "a call was split from its results"
    original = {r.id: [b.id for b in r.blocks] for r in history}
    for r in [*l1, *store.peek(l2_ids)]:
        assert r.ids_consistent() and [b.id for b in r.blocks] == original[r.id]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=histories(), ops=st.lists(OPS, min_size=1, max_size=12))
def test_no_loss_single_holder_time_order_groups_stable_ids(
    history: list[EventRecord], ops: list[tuple[str, int, str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cold.db"
        store = ColdStore(path)
        l1 = list(history)
        now = 0.0
        for op, n, word, extra in ops:
            now += 1.0
            if op == "prune":
                out = recover(l1, q(word), store, budget_tokens=n, pinned_recent=extra, now=now)
                l1 = out.kept
            elif op == "recall":
                fail = extra == 1

                def reinsert(records: Sequence[EventRecord], fail: bool = fail) -> None:
                    nonlocal l1
                    if fail:
                        raise OSError("boom")
                    l1 = insert_in_time_order(l1, records)

                try:
                    coldcontext_query(store, q(word), reinsert, limit=n, now=now)
                except RecallError:
                    assert fail
            elif op == "auto":
                auto_recall(store, q(word), k=n, min_score=-1e9, now=now)
            else:
                store.close()
                store = ColdStore(path)
            _check(history, l1, store)
        store.close()
