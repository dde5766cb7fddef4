"""What memory holds of a long turn's events until the session's idle release: the index's tail and the events
(their row bytes), not a record of each — records are rebuilt when asked, the same as they were built (issue 41,
docs/memory.md "Eighth round")."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory, record_of
from hologram.sessions import SessionStore


def _long_turn(store: SessionStore, sid: str, calls: int = 400) -> None:
    """A long turn's shape (tools/bench/http_long.py): an input, responses of ten calls, their results, an answer."""
    store.append(sid, "input", {"text": "list the files, many times"}, turn="t1", channel="web")
    with store.deferred():
        for step in range(0, calls, 10):
            ids = [f"l{step}_{k}" for k in range(10)]
            tool_calls = [{"id": i, "name": "files_list", "arguments": '{"path": "."}'} for i in ids]
            seq = store.append(sid, "response", {"content": None, "reasoning": f"step {step}", "tool_calls": tool_calls},
                               turn="t1", channel="web")  # fmt: skip
            for i in ids:
                result = {"name": "files_list", "content": f"notes.md\nreport-{i}.txt", "is_error": False}
                store.add_result(sid, seq, i, result, turn="t1", channel="web")
    store.append(sid, "response", {"content": "the answer " * 50, "reasoning": "done", "tool_calls": []}, turn="t1")


def test_the_tail_holds_events_not_records_and_rebuilds_the_same_records(tmp_path: Path) -> None:
    """Mutation check (done): keeping each record in the session's state from indexing on (`_add_to_index`, as
    before) — ~8 blocks more an event — turns the bound red."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory(store, ColdStore(tmp_path / "cold.db"), None, index_dir=tmp_path / "index",
                        seal_events=10**9, window_bytes=1 << 40)  # fmt: skip
    mem.embedder_ready.set()
    sid = store.create_session("web")
    store.append(sid, "input", {"text": "warm up"})
    mem._sync_now(sid)  # the session's state, the statements, the tokenizer: made once
    _long_turn(store, sid)
    events = store.events(sid)[1:]
    del events
    gc.collect()  # (which also empties the free lists)
    gc.disable()
    try:
        before = sys.getallocatedblocks()
        state = mem._sync_now(sid)
        held = sys.getallocatedblocks() - before
    finally:
        gc.enable()
    n = len(state.tail) - 1
    assert n == 1 + 40 + 400 + 1 and state.index.sealed == 0, "the test's premise: the long turn is in the tail"
    assert held <= 16 * n, f"{held} blocks held for {n} indexed events"
    positions = list(range(1, len(state.tail)))
    rebuilt = mem._records_at(sid, state, positions)
    built = [record_of(e) for e in state.tail[1:]]
    assert [r.id for r in rebuilt] == [r.id for r in built if r is not None]
    assert [r.text for r in rebuilt] == [r.text for r in built if r is not None]
    store.close()
