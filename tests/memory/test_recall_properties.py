"""Invariants of the product path across random request / recovery / recall / failed-recall / restart
sequences (hypothesis): `SessionMemory` on a real session log and cold store.

After every step: no event lost or duplicated (L1 ∪ L2 is every event with a message, L1 ∩ L2 empty), every
block has exactly one holder, L1 is in log order, a tool call and its results are always in the same layer,
every record in L2 has the id and blocks its log event derives, and every request's history pairs each call
with its results.

Mutation-checked (hand-made, the test failed, reverted): `recall` removing before re-inserting (a failed
re-insert then loses events); ``whole_units`` dropped in `SessionMemory._prepare` (a request sends a result
without its call). `recall` without ``group_mates`` is caught by test_recall.py and test_session_memory.py,
not reliably here.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hologram.agent.tools import ToolInvocation
from hologram.memory.cold.blocks import EventRecord
from hologram.memory.cold.overflow import OverflowGuard
from hologram.memory.cold.recall import Reinsert
from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import Prepared, SessionMemory
from hologram.memory.session_records import record_of
from hologram.sessions import SessionStore

WORDS = ["apple", "berry", "cedar", "delta", "ember", "fjord", "grove", "harbor"]
SID = "s"

Step = tuple[str, str, int]  # (kind, text, results) of one appended event; results: a call's result count

STEPS = st.lists(
    st.tuples(
        st.sampled_from(["input", "response", "call"]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
        st.integers(1, 2),
    ),
    min_size=1,
    max_size=30,
)
OPS = st.one_of(
    st.tuples(st.just("prepare"), st.integers(0, 300), st.sampled_from(WORDS), st.just(0)),
    st.tuples(st.just("recover"), st.integers(0, 300), st.sampled_from(WORDS), st.just(0)),
    st.tuples(st.just("recall"), st.integers(1, 6), st.sampled_from(WORDS), st.integers(0, 1)),  # 1: re-insert fails
    st.tuples(st.just("input"), st.just(0), st.sampled_from(WORDS), st.just(0)),
    st.tuples(st.just("restart"), st.just(0), st.just(""), st.just(0)),
)


def write(store: SessionStore, steps: Sequence[Step]) -> None:
    store.create_session("cli", SID)
    for i, (kind, text, results) in enumerate(steps):
        if kind == "input":
            store.append(SID, "input", {"text": text})
        elif kind == "response":
            store.append(SID, "response", {"content": text, "reasoning": f"thinking {text}" if i % 2 else None})
        else:
            calls = [{"id": f"c{j}", "name": "t", "arguments": "{}"} for j in range(results)]
            seq = store.append(SID, "response", {"content": None, "reasoning": text, "tool_calls": calls})
            for j in range(results):
                store.add_result(SID, seq, f"c{j}", {"name": "t", "content": f"{text} result{j}"})


def check(mem: SessionMemory, prepared: Prepared | None) -> None:
    events = mem.store.events(SID)
    records = {e.seq: r for e in events if (r := record_of(e)) is not None}
    l1 = [e.seq for e in mem.l1_events(SID) if e.seq in records]
    l2 = mem.cold.ids()
    assert l1 == sorted(l1), "L1 out of log order"
    assert sorted([records[s].id for s in l1] + l2) == sorted(r.id for r in records.values()), "lost or duplicated"
    assert not {records[s].id for s in l1} & set(l2)
    l1_blocks = [b.id for s in l1 for b in records[s].blocks]
    assert len(l1_blocks) == len(set(l1_blocks)) and not set(l1_blocks) & mem.cold.block_ids(), "two holders"
    held = {r.id: r for r in mem.cold.peek(l2)}
    by_id = {r.id: r for r in records.values()}
    for rid, record in held.items():
        assert record.ids_consistent() and [b.id for b in record.blocks] == [b.id for b in by_id[rid].blocks]
    layer = {records[s].id: "l1" for s in l1} | {i: "l2" for i in l2}
    groups: dict[str, set[str]] = {}
    for record in records.values():
        if record.group is not None:
            groups.setdefault(record.group, set()).add(layer[record.id])
    assert all(len(places) == 1 for places in groups.values()), "a call was split from its results"
    if prepared is not None:
        sent = set(prepared.seqs)
        for e in events:
            if e.kind == "tool_result" and (e.seq in sent) != (e.call_of in sent):
                raise AssertionError(f"result #{e.seq} and its call #{e.call_of} were not sent together")


def tool_call(mem: SessionMemory, text: str, limit: int) -> dict[str, object]:
    async def call() -> dict[str, object]:
        return dict(await mem.tool_handler()({"query": text, "limit": limit}, ToolInvocation("c", SID)))

    return asyncio.run(call())


def failing_reinsert(sid: str | None) -> Reinsert:
    def reinsert(records: Sequence[EventRecord], /) -> None:
        raise OSError("boom")

    return reinsert


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, ops=st.lists(OPS, min_size=1, max_size=12))
def test_no_loss_single_holder_log_order_groups_stable_ids(
    steps: list[Step], ops: list[tuple[str, int, str, int]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp) / "sessions.db")
        write(store, steps)
        mem = SessionMemory(store, ColdStore(Path(tmp) / "cold.db"), None, pinned_recent=2)
        for op, n, word, extra in ops:
            prepared = None
            window = int(n / 0.8) + 1  # a history budget of ~n tokens
            if op == "prepare":
                prepared = asyncio.run(mem.prepare(SID, word, window_tokens=window, fixed_tokens=0))
            elif op == "recover":
                guard = OverflowGuard(window)
                prepared = asyncio.run(mem.recover(SID, word, window_tokens=window, fixed_tokens=0, guard=guard))
            elif op == "recall":
                before = (mem.cold.ids(), mem.cold.block_ids())
                if extra:
                    with mock.patch.object(mem, "reinsert_for", failing_reinsert):
                        out = tool_call(mem, word, n)
                    assert (mem.cold.ids(), mem.cold.block_ids()) == before, "a failed re-insert removed something"
                    assert out["is_error"] is True or "Nothing" in str(out["content"])
                else:
                    assert tool_call(mem, word, n)["is_error"] is False
            elif op == "input":
                store.append(SID, "input", {"text": word})
            else:
                asyncio.run(mem.aclose())
                mem = SessionMemory(store, ColdStore(Path(tmp) / "cold.db"), None, pinned_recent=2)
            check(mem, prepared)
        asyncio.run(mem.aclose())
        store.close()
