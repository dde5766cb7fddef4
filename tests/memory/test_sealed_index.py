"""The session index sealed into segments on disk ranks exactly like the all-in-memory index (issue 22).

One session is fed to two `SessionMemory`s turn by turn — one sealing its tail every 8 events (so segments
are written, read back by every request and merged), one keeping everything in its tail (``index_dir``
None) — and every `prepare` must agree: what is sent, what moves to L2, what comes back. Then the sealed one
is restarted (its segments are read back), and restarted again after a segment was damaged and another
deleted (rebuilt from the session log, with a warning); a segment deleted under a live session makes the
request rebuild: still the same answers.

Mutation checks (done): skipping the tail's postings in ``SessionIndex._postings`` turns the first test red;
skipping the segments' vectors in ``_cosine`` turns it red; not verifying checksums when segments are
loaded (``verify=False`` in ``_load``) turns it red at the restart after damage; re-raising at the first
`SegmentError` in ``SessionMemory._prepare`` (no rebuild) turns it red at the deleted-under-a-live-session
step.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.index.index_segment import read_segment, write_segment
from hologram.memory.index.session_index import IndexQuery, SessionIndex
from hologram.memory.session_memory import SessionMemory
from hologram.memory.session_records import Prepared
from hologram.sessions import SessionStore

from .embedders import BagOfWordsEmbedder
from .test_session_memory import window_for

TOPICS = [
    "the lake house wifi password BLUE-HERON-42",
    "Iceland trip in March with glacier hiking",
    "passport renewal appointment downtown",
    "quarterly budget report for the board",
    "grandmother's lemon cake recipe",
    "the broken bicycle chain and gears",
    "learning Spanish verbs every morning",
    "the vet visit for Milo the cat",
    "moving the database to a new server",
    "the chess tournament on Saturday",
    "planting tomatoes on the balcony",
    "the jazz concert tickets",
]


def _memory(tmp: Path, name: str, *, sealed: bool) -> SessionMemory:
    data = tmp / name
    data.mkdir(exist_ok=True)
    store = SessionStore(data / "sessions.db")
    cold = ColdStore(data / "cold.db")
    return SessionMemory(store, cold, BagOfWordsEmbedder(), index_dir=data / "index" if sealed else None, seal_events=8)


def _same(a: Prepared, b: Prepared) -> None:
    assert a.seqs == b.seqs
    assert a.pruned_seqs == b.pruned_seqs
    assert a.recalled_seqs == b.recalled_seqs
    assert (a.kept_tokens, a.held, a.over_budget) == (b.kept_tokens, b.held, b.over_budget)


async def _settle(mem: SessionMemory, sid: str) -> None:
    """Vectors complete (and the tail sealed, segments merged) before the next request: both sides rank
    with the same vectors."""
    task = mem._sessions[sid].index_task if sid in mem._sessions else None
    if task is not None and task.get_loop() is asyncio.get_running_loop():
        await asyncio.gather(task, return_exceptions=True)
    await mem.index(sid)


async def _turns(mems: list[SessionMemory], sid: str, start: int, count: int) -> list[Prepared]:
    """`count` tool-using turns fed to every memory; every prepare compared; returns the sealed side's."""
    out = []
    for t in range(start, start + count):
        topic, back = TOPICS[t % len(TOPICS)], TOPICS[(t * 7) % len(TOPICS)]
        steps = [
            ("input", {"text": f"turn {t}: tell me about {topic}, and remind me of {back}"}),
            ("call", {"content": "", "tool_calls": [{"id": f"c{t}", "name": "notes", "arguments": "{}"}]}),
            ("result", {"content": f"notes on {topic}: " + " ".join(topic.split()[::-1]) * 3}),
            ("response", {"content": f"About {topic}: all set."}),
        ]
        call_seq = {}
        for kind, data in steps:
            for mem in mems:
                if kind == "result":
                    mem.store.add_result(sid, call_seq[id(mem)], f"c{t}", data)
                else:
                    seq = mem.store.append(sid, "response" if kind == "call" else kind, data)
                    call_seq[id(mem)] = seq
            results = []
            for mem in mems:
                await _settle(mem, sid)
                results.append(await mem.prepare(sid, f"{topic} {back}", window_tokens=window_for(260),
                                                 fixed_tokens=0))  # fmt: skip
            for other in results[1:]:
                _same(results[0], other)
            out.append(results[0])
    return out


def test_sealed_segments_rank_like_the_all_in_memory_index(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    sealed, whole = _memory(tmp_path, "sealed", sealed=True), _memory(tmp_path, "whole", sealed=False)
    sid = "s1"
    for mem in (sealed, whole):
        mem.store.create_session("cli", sid)

    async def run() -> None:
        got = await _turns([sealed, whole], sid, 0, 30)
        assert any(p.pruned_seqs for p in got), "the test's premise: events move to L2"
        assert any(p.recalled_seqs for p in got), "the test's premise: L2 events come back by the ranking"
        index = sealed._sessions[sid].index
        assert index.sealed > 0 and len(index) - index.sealed < 8 + 4, "the sealed path ran"
        assert index.segments < index.sealed // 8, "segments were merged"
        assert whole._sessions[sid].index.sealed == 0
        assert len(sealed._sessions[sid].tail) == len(index) - index.sealed, "only the tail's events are held"

    asyncio.run(run())
    seg_dir = tmp_path / "sealed" / "index" / sid

    # a segment deleted under a live session: the next request rebuilds the index (with a warning) instead of
    # failing; that request ranks the rebuilt events by BM25 until their vectors are back (as after a restart),
    # so it is a preview (nothing moves), and once the vectors are back the answers are alike again
    sorted(seg_dir.glob("seg-*.bin"))[0].unlink()

    async def rebuild() -> None:
        with caplog.at_level(logging.WARNING, logger="hologram.memory"):
            await sealed.preview(sid, "anything", window_tokens=window_for(260), fixed_tokens=0)
        await _settle(sealed, sid)
        await _turns([sealed, whole], sid, 30, 2)

    asyncio.run(rebuild())
    assert any("cannot be read" in r.getMessage() for r in caplog.records)
    caplog.clear()
    asyncio.run(sealed.aclose())

    # restart: the segments are read back
    again = _memory(tmp_path, "sealed", sealed=True)
    asyncio.run(_turns([again, whole], sid, 32, 2))
    assert again._sessions[sid].index.sealed > 0
    asyncio.run(again.aclose())

    # restart after damage: one segment's bytes flipped, the newest deleted; rebuilt from the log
    files = sorted(seg_dir.glob("seg-*.bin"))
    assert len(files) >= 2
    raw = bytearray(files[0].read_bytes())
    raw[-5] ^= 0xFF
    files[0].write_bytes(bytes(raw))
    files[-1].unlink()
    with caplog.at_level(logging.WARNING, logger="hologram.memory"):
        rebuilt = _memory(tmp_path, "sealed", sealed=True)
        asyncio.run(_turns([rebuilt, whole], sid, 34, 4))
    assert any("rebuilding it from the session log" in r.getMessage() for r in caplog.records)
    assert rebuilt._sessions[sid].index.sealed > 0, "sealed again after the rebuild"
    asyncio.run(rebuilt.aclose())
    asyncio.run(whole.aclose())


def test_a_segment_of_another_format_is_refused_and_its_session_rebuilt(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "s", seal_events=2)
    for i in range(4):
        index.add(i + 1, f"ev_{i}", "input", f"text {i} alpha", 5, group=None, ts=float(i))
        index.seal(vectors=False)
    files = sorted((tmp_path / "s").glob("seg-*.bin"))
    assert len(files) == 2
    seg = read_segment(files[1])
    write_segment(files[1], {**seg.meta, "first_event": 99}, dict(seg.arrays))  # breaks the chain
    del seg
    reopened = SessionIndex(tmp_path / "s", seal_events=2)
    assert reopened.sealed == 2 and reopened.last_sealed_seq == 2, "kept the valid prefix only"
    assert not files[1].exists()
    assert reopened.document_frequency("alpha") == 2, "document frequencies of the kept segment only"
    scores = reopened.scores(_query({"alpha": 1.0}))
    assert scores.shape == (2,) and np.isfinite(scores).all()


def _query(terms: dict[str, float]) -> IndexQuery:
    return IndexQuery(terms)


def test_vectors_for_passages_sealed_meanwhile_are_ignored(tmp_path: Path) -> None:
    """Two indexers (the scheduled task and an explicit `index`) may compute the same batch; the first seals
    the tail, the second's vectors then name sealed passages. Mutation check (done): without the filter in
    `set_vectors` this raises IndexError (seen in tools/bench/memory_growth.py --model)."""
    index = SessionIndex(tmp_path / "s", seal_events=2)
    for i in range(2):
        index.add(i + 1, f"ev_{i}", "input", f"text {i}", 5, group=None, ts=float(i))
    vectors = np.eye(2, 4, dtype=np.float32)
    index.set_vectors("fp", [0, 1], vectors)
    assert index.seal(vectors=True) == 2
    index.set_vectors("fp", [0, 1], vectors)  # late: both sealed
    assert index.sealed == 2 and index.pending(10) == []
    with index.reading():
        assert index.passage_vector(1) is not None


def test_segments_merge_without_a_model(tmp_path: Path) -> None:
    """BM25 alone (no model, or one that failed to load): merging is scheduled as it is with vectors, so a long
    session keeps O(log n) segments. (Mutation check, done: `schedule_index` returning early without a model,
    as it did, leaves one segment per 8 events here and turns this red.)"""
    data = tmp_path / "bm25"
    data.mkdir()
    mem = SessionMemory(SessionStore(data / "sessions.db"), ColdStore(data / "cold.db"), None,
                        index_dir=data / "index", seal_events=8)  # fmt: skip
    mem.embedder_ready.set()
    mem.store.create_session("cli", "s1")

    async def run() -> None:
        for t in range(80):
            mem.store.append("s1", "input", {"text": f"turn {t}: {TOPICS[t % len(TOPICS)]}"})
            mem.store.append("s1", "response", {"content": f"noted, turn {t}"})
            await mem.prepare("s1", TOPICS[t % len(TOPICS)], window_tokens=window_for(200), fixed_tokens=0)
            task = mem._sessions["s1"].index_task
            if task is not None:
                await task
        index = mem._sessions["s1"].index
        assert index.sealed >= 144, "the test's premise: most of the 160 events are sealed"
        assert index.segments <= 2 * 3, f"{index.segments} segments for {index.sealed} sealed events"
        await mem.aclose()

    asyncio.run(run())
