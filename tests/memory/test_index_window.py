"""The session index's in-memory window bounded in bytes, the rest on disk (issue 39 item 7).

* what the tail weighs is estimated as it grows (`SessionIndex.tail_bytes`), checked against what
  ``tracemalloc`` sees the session memory hold for short English turns, Chinese turns and long tool results;
* a tail that reaches ``window_bytes`` is sealed into a segment with fewer than ``seal_events`` events, and
  the index ranks exactly as the all-in-memory one (a property test over a few hundred events);
* a real process killed (SIGKILL) in the middle of writing a segment loses nothing: the segments renamed
  before stay, the half-written file is dropped at the next open without a warning, every event of the log
  is indexed and the ranking is the all-in-memory one;
* a damaged segment found at open is one warning line (no traceback) and the session is rebuilt from its log.

Mutation checks (done): sealing by count only (the ``window_bytes`` test in ``SessionIndex.seal`` removed) turns
`test_a_tail_past_its_window_is_sealed_with_fewer_events` red; not deleting ``*.tmp`` at open leaves the
half-written file (`test_a_process_killed_while_writing_a_segment_loses_nothing` red); ranking the sealed part
without its postings turns the property test red.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hologram.memory.cold.store import ColdStore
from hologram.memory.index.session_index import IndexQuery, SessionIndex
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

from .embedders import BagOfWordsEmbedder
from .test_sealed_index import _same
from .test_session_memory import window_for

REPO = Path(__file__).resolve().parents[2]
WORDS = ["meeting", "thursday", "budget", "glacier", "passport", "tomato", "chess", "heron", "会议", "预算", "星期四"]


def _feed(store: SessionStore, sid: str, t: int, kind: str) -> None:
    if kind == "en":
        store.append(sid, "input", {"text": f"Please keep a note that the meeting moved to Thursday ({t})."})
        call = {"id": f"c{t}", "name": "notes_search", "arguments": '{"query": "meeting thursday"}'}
        r = store.append(sid, "response", {"content": "", "tool_calls": [call]})
        store.add_result(sid, r, f"c{t}", {"content": f"found {t} notes about the meeting on thursday " * 5})
        store.append(sid, "response", {"content": "Noted; the file is fine. " * 8})
    elif kind == "zh":
        store.append(sid, "input", {"text": f"请记下会议改到星期四下午了，然后检查一下文件。({t})"})
        store.append(sid, "response", {"content": f"好的，已经记下第{t}次会议改到星期四下午。文件没有问题。" * 4})
    else:
        store.append(sid, "input", {"text": f"read the log {t}"})
        lines = " ".join(f"line {t}-{k} value {k * 7 % 1000} status ok host{k % 50}." for k in range(1500))
        store.append(sid, "response", {"content": lines})


@pytest.mark.parametrize(("kind", "turns"), [("en", 64), ("zh", 128), ("long", 6)])
def test_the_tail_estimate_follows_what_memory_holds(tmp_path: Path, kind: str, turns: int) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory(store, ColdStore(tmp_path / "cold.db"), None, index_dir=tmp_path / "index",
                        seal_events=10**9, window_bytes=1 << 40)  # fmt: skip
    mem.embedder_ready.set()
    sid = store.create_session("cli")
    _feed(store, sid, 0, kind)
    mem._sync_now(sid)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for t in range(1, turns):
            _feed(store, sid, t, kind)
        mem._sync_now(sid)
        mem.log.forget(sid)  # the decoded log is bounded on its own ([memory] log_cache_bytes)
        gc.collect()
        held = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    index = mem._sessions[sid].index
    assert index.sealed == 0, "the test's premise: everything is in the tail"
    # up to 4x: the estimate counts a tail event's text twice (index/session_index.py `_TEXT_COPIES`, the record
    # and its blocks), and memory now holds it once, as the event's row bytes — records are rebuilt when asked
    # (docs/memory.md "Eighth round"): 3.2x for the long texts, an estimate on the safe side (sealed sooner)
    assert 0.5 * held <= index.tail_bytes <= 4 * held, (index.tail_bytes, held)
    store.close()


def test_a_tail_past_its_window_is_sealed_with_fewer_events(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    window = 256 * 1024
    mem = SessionMemory(store, ColdStore(tmp_path / "cold.db"), None, index_dir=tmp_path / "index",
                        window_bytes=window)  # fmt: skip
    mem.embedder_ready.set()
    sid = store.create_session("cli")
    peak = 0
    for t in range(12):
        _feed(store, sid, t, "long")
        mem._sync_now(sid)
        peak = max(peak, mem._sessions[sid].index.tail_bytes)
    index = mem._sessions[sid].index
    assert index.sealed > 0 and index.segments > 0, "sealed by bytes, far below SEAL_EVENTS"
    assert len(index) - index.sealed < 8
    assert index.tail_bytes < window, "what stays in memory is below the window"
    assert len(mem._sessions[sid].tail) == len(index) - index.sealed, "only the tail's events are held"
    one_event = peak - window
    assert one_event < 2 * 1024 * 1024, "at most one long event over the window before it is sealed"
    store.close()


def _add(index: SessionIndex, rng: np.random.Generator, i: int) -> None:
    kind = ("input", "response", "tool_result")[i % 3]
    group = f"call:{i}" if kind == "response" else (f"call:{i - 1}" if kind == "tool_result" else None)
    long = rng.random() < 0.15
    sentences = int(rng.integers(8, 30)) if long else 1
    text = " ".join(" ".join(str(w) for w in rng.choice(WORDS, size=int(rng.integers(2, 12)))) + "."
                    for _ in range(sentences))  # fmt: skip
    index.add(i + 1, f"e-{i}", kind, text, 10 + len(text) // 40, group=group, ts=1000.0 + i)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), events=st.integers(150, 400), window=st.sampled_from([16_384, 65_536, 1 << 20]))
def test_a_windowed_index_ranks_like_the_all_in_memory_one(tmp_path: Path, seed: int, events: int, window: int) -> None:
    rng_a, rng_b = np.random.default_rng(seed), np.random.default_rng(seed)
    windowed = SessionIndex(tmp_path / f"w-{seed}-{events}-{window}", seal_events=64, window_bytes=window)
    whole = SessionIndex(None)
    vec_rng = np.random.default_rng(seed + 1)
    for i in range(events):
        _add(windowed, rng_a, i)
        _add(whole, rng_b, i)
        todo = windowed.pending(10_000)
        if todo:
            rows = [p for p, _ in todo]
            vectors = vec_rng.standard_normal((len(rows), 8)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            windowed.set_vectors("test/8", rows, vectors)
            whole.set_vectors("test/8", rows, vectors)
        windowed.seal(vectors=True)
        while group := windowed.merge_plan():
            windowed.merge(group)
    assert windowed.sealed > 0, "the test's premise: most of it is on disk"
    assert windowed.tail_bytes < max(window, 64 * 1024) + 256 * 1024
    q_rng = np.random.default_rng(seed + 2)
    for _ in range(6):
        terms = {str(w): float(q_rng.choice([0.5, 1.0, 2.0])) for w in q_rng.choice(WORDS, size=3)}
        dense = q_rng.standard_normal(8).astype(np.float32)
        dense /= np.linalg.norm(dense)
        query = IndexQuery(terms, dense, "test/8")
        a, b = windowed.scores(query), whole.scores(query)
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)
        assert np.argsort(-a, kind="stable").tolist() == np.argsort(-b, kind="stable").tolist()


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    import hologram.memory.index.index_segment as seg
    from hologram.memory.cold.store import ColdStore
    from hologram.memory.session_memory import SessionMemory
    from hologram.sessions import SessionStore
    from tests.memory.test_index_window import _feed
    from tests.memory.embedders import BagOfWordsEmbedder

    data, kill_at = Path(sys.argv[1]), int(sys.argv[2])
    writes = [0]
    real = seg._write

    def write(f, head, data_):
        writes[0] += 1
        if writes[0] < kill_at:
            return real(f, head, data_)
        f.write(head)
        f.write(data_[: len(data_) // 2])
        f.flush()
        print("mid-write", flush=True)
        sys.stdin.read()  # the parent kills this process now

    seg._write = write
    store = SessionStore(data / "sessions.db")
    mem = SessionMemory(store, ColdStore(data / "cold.db"), BagOfWordsEmbedder(), index_dir=data / "index",
                        seal_events=8)
    store.create_session("cli", "s1")

    async def main():
        for t in range(200):
            _feed(store, "s1", t, "en")
            await mem.index("s1")
            await mem.prepare("s1", "meeting thursday", window_tokens=400, fixed_tokens=0)

    asyncio.run(main())
    print("never killed", flush=True)
    """
)


@pytest.mark.parametrize("kill_at", [3, 6])
def test_a_process_killed_while_writing_a_segment_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, kill_at: int
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tools"), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(data), str(kill_at)], cwd=REPO, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "mid-write", (line, child.stderr.read() if child.stderr else "")
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    assert child.returncode == -signal.SIGKILL
    seg_dir = data / "index" / "s1"
    half = list(seg_dir.glob("*.tmp"))
    assert half, "the test's premise: killed with a half-written segment"
    whole_files = sorted(p.name for p in seg_dir.glob("seg-*.bin"))
    assert whole_files, "the test's premise: segments were renamed before"

    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    for name in ("cold.db", "cold.db-wal"):  # the same L2 on both sides: only the index differs
        if (data / name).exists():
            shutil.copy(data / name, plain_dir / name)
    store = SessionStore(data / "sessions.db")
    events = len(store.events("s1"))
    with caplog.at_level(logging.WARNING, logger="hologram.memory"):
        again = SessionMemory(store, ColdStore(data / "cold.db"), BagOfWordsEmbedder(), index_dir=data / "index",
                              seal_events=8)  # fmt: skip
        plain = SessionMemory(store, ColdStore(plain_dir / "cold.db"), BagOfWordsEmbedder(), index_dir=None)

        async def check() -> None:
            index = again._state("s1").index
            assert index.sealed > 0 and sorted(p.name for p in seg_dir.glob("seg-*.bin")) == whole_files, (
                "every segment renamed before the kill is kept as it was"
            )
            assert not list(seg_dir.glob("*.tmp")), "the half-written file is gone"
            for mem in (again, plain):
                await mem.index("s1")
            a = await again.preview("s1", "meeting thursday", window_tokens=window_for(300), fixed_tokens=0)
            b = await plain.preview("s1", "meeting thursday", window_tokens=window_for(300), fixed_tokens=0)
            assert len(again._sessions["s1"].index) == len(plain._sessions["s1"].index) > 0
            _same(a, b)

        asyncio.run(check())
    assert events > 0 and not caplog.records, [r.getMessage() for r in caplog.records]
    asyncio.run(again.aclose())
    asyncio.run(plain.aclose())
    store.close()


def test_a_damaged_segment_is_one_log_line_and_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory(store, ColdStore(tmp_path / "cold.db"), BagOfWordsEmbedder(), index_dir=tmp_path / "index",
                        seal_events=8)  # fmt: skip
    sid = store.create_session("cli")

    async def feed() -> None:
        for t in range(30):
            _feed(store, sid, t, "en")
            await mem.index(sid)

    asyncio.run(feed())
    asyncio.run(mem.aclose())
    files = sorted((tmp_path / "index").rglob("seg-*.bin"))
    assert len(files) >= 2
    raw = bytearray(files[0].read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 4096] = os.urandom(min(4096, len(raw) - len(raw) // 2))
    files[0].write_bytes(bytes(raw))
    with caplog.at_level(logging.DEBUG, logger="hologram"):
        again = SessionMemory(store, ColdStore(tmp_path / "cold.db"), BagOfWordsEmbedder(), index_dir=tmp_path / "index",
                              seal_events=8)  # fmt: skip
        got = asyncio.run(again.preview(sid, "meeting thursday", window_tokens=window_for(300), fixed_tokens=0))
        asyncio.run(again.index(sid))
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert warnings[0].exc_info is None, "one line, no traceback"
    assert files[0].name in warnings[0].getMessage() and "rebuilding" in warnings[0].getMessage()
    plain = SessionMemory(store, ColdStore(tmp_path / "plain-cold.db"), BagOfWordsEmbedder(), index_dir=None)
    asyncio.run(plain.preview(sid, "meeting thursday", window_tokens=window_for(300), fixed_tokens=0))
    index = again._sessions[sid].index
    assert len(index) == len(plain._sessions[sid].index) and got.seqs, "every event is indexed again"
    asyncio.run(plain.aclose())
    assert index.sealed > 0, "sealed again after the rebuild"
    asyncio.run(again.aclose())
    store.close()


def test_a_released_session_is_read_back_from_its_recent_events_only(tmp_path: Path) -> None:
    """After an idle release, the turn's scene step asked the log for the session's events, and the log read
    every event from the first (O(session) a turn, held until the next seal). `recent_events` reads from the
    last `seal_events` sealed events on. Mutation check (done): `log_start_seq` returning the newest segment's
    first seq (the old rule) turns this red — after a merge that segment is most of the session."""
    store = SessionStore(tmp_path / "sessions.db")
    mem = SessionMemory(store, ColdStore(tmp_path / "cold.db"), BagOfWordsEmbedder(), index_dir=tmp_path / "index",
                        seal_events=8)  # fmt: skip
    sid = store.create_session("cli")

    async def feed(turns: range) -> None:
        for t in turns:
            _feed(store, sid, t, "en")
            await mem.index(sid)

    asyncio.run(feed(range(33)))
    index = mem._sessions[sid].index
    assert index.segments <= 3 and index.sealed >= 128, "the test's premise: one merged segment holds most"
    whole = store.events(sid)
    mem.forget(sid)  # what the idle release does
    assert not mem.log.held(sid)
    recent = mem.recent_events(sid)
    index = mem._sessions[sid].index
    assert recent[-1].seq == whole[-1].seq, "the newest events are there"
    assert [e.seq for e in recent] == [e.seq for e in whole[-len(recent) :]], "a suffix of the log, in order"
    assert len(recent) <= 8 + (len(index) - index.sealed) + 4, (len(recent), len(whole))
    last_turn = [e for e in whole if e.seq > whole[-5].seq]
    assert all(e in recent for e in last_turn), "the previous turn is held (the scene store needs it)"
    got = asyncio.run(mem.preview(sid, "meeting thursday", window_tokens=window_for(300), fixed_tokens=0))
    assert got.seqs, "memory works from there"
    asyncio.run(mem.aclose())
    store.close()
