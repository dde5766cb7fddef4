"""What a request reads of a long session's index, and that what it keeps between reads stays exact (issue 39 item 7).

Real segments on disk. Mutation-checked: keying the sealed document frequencies by anything that a seal does not
change (a constant) turns ``test_document_frequency_is_exact_across_seals_and_merges`` red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.session_memory import SessionMemory
from hologram.memory.text.tfidf import TermVector
from hologram.sessions import SessionStore


def _term(word: str) -> str:
    (term,) = TermVector.from_text(word).counts
    return term


def test_document_frequency_is_exact_across_seals_and_merges(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "ix", seal_events=4)
    alpha, odd = _term("alpha"), _term("walrus")
    for k in range(60):
        text = f"alpha walrus {k}" if k % 2 else f"alpha {k}"
        index.add(k + 1, f"e{k}", "input", text, 5, group=None, ts=float(k))
        assert index.document_frequency(alpha) == k + 1  # asked before and after every seal: kept, then renewed
        assert index.document_frequency(odd) == (k + 1) // 2
        if index.seal(vectors=False):
            while group := index.merge_plan():
                assert index.merge(group)
            assert index.document_frequency(alpha) == k + 1 and index.document_frequency(odd) == (k + 1) // 2
    assert index.segments < 15 and index.sealed == 60
    again = SessionIndex(tmp_path / "ix", seal_events=4)  # read back from disk: the same counts
    assert again.document_frequency(alpha) == 60 and again.document_frequency(odd) == 30


def test_roles_are_computed_once_per_request_and_equal_the_columns(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "ix", seal_events=4)
    for k in range(20):
        index.add(2 * k + 1, f"i{k}", "input", f"question {k}", 5, group=None, ts=float(k))
        index.add(2 * k + 2, f"r{k}", "response", f"answer {k}", 5, group=None, ts=float(k))
        index.seal(vectors=False)
    with index.reading():
        first = index.roles
        assert index.roles is first, "one pass over the session per request"
        assert first.tolist() == [1, 2] * 20
    with index.reading():
        assert index.roles is not first, "a new request computes them again"


def test_sealed_events_the_log_still_holds_are_not_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The events a request sends from the last sealed chunk come from the decoded log, not sessions.db.
    Mutation-checked: without `SessionLog.held_at` in `_events_at` every one of them is read from the store."""
    store = SessionStore.in_data_dir(tmp_path)
    memory = SessionMemory.open(tmp_path, store, load_model=False)
    memory.seal_events = 16
    sid = store.create_session("s")
    for k in range(40):
        store.append(sid, "input", {"text": f"question number {k} about walruses"})
        store.append(sid, "response", {"content": f"answer {k}", "reasoning": None})
    state = memory._sync_now(sid)
    assert state.index.sealed >= 64
    read: list[int] = []
    real = store.events_at
    monkeypatch.setattr(store, "events_at", lambda s, seqs: (read.extend(seqs := list(seqs)), real(s, seqs))[1])
    held = sorted(memory.log.held_at(sid, state.index.seqs.tolist()))
    positions = [p for p in range(state.index.sealed) if int(state.index.seqs[p]) in set(held)]
    assert positions, "the log holds the last sealed chunk"
    events = memory._events_at(sid, state, positions)
    assert [e.seq for e in events] == held[: len(positions)] and read == []
    older = [p for p in range(state.index.sealed) if p not in set(positions)][:3]
    assert [e.seq for e in memory._events_at(sid, state, older)] == state.index.seqs[older].tolist()
    assert read == state.index.seqs[older].tolist(), "what the log dropped is read from the store"
    asyncio.run(memory.aclose())
    store.close()
