"""The session store: WAL, restart, older rows and layouts, and the call/result invariant held on disk."""

from __future__ import annotations

import asyncio
import gc
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from hologram.llm import Message, ToolCall
from hologram.sessions import (
    HistoryCache,
    SessionError,
    SessionLog,
    SessionStore,
    messages_from_events,
    pairing_problems,
)
from tests.kit.wait import wait_until, wait_until_async


def response(*call_ids: str, reasoning: str | None = None, content: str | None = None) -> dict[str, object]:
    return {
        "content": content,
        "reasoning": reasoning,
        "tool_calls": [{"id": c, "name": "f", "arguments": "{}"} for c in call_ids],
    }


def test_wal_and_survives_reopen(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    sid = store.create_session("cli")
    store.append(sid, "input", {"text": "hi"}, turn="t1", channel="cli")
    seq = store.append(sid, "response", response("c1", reasoning="think"), turn="t1")
    store.add_result(sid, seq, "c1", {"name": "f", "content": "ok"})
    store.append(sid, "response", {"content": "done", "reasoning": "again", "tool_calls": []}, turn="t1")
    store.close()
    db = sqlite3.connect(tmp_path / "sessions.db")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened = SessionStore(tmp_path / "sessions.db")
    assert reopened.exists(sid)
    messages = messages_from_events(reopened.events(sid))
    assert messages == [
        Message.user("hi"),
        Message.assistant(None, [ToolCall("c1", "f", "{}")], reasoning_content="think"),
        Message.tool("c1", "ok", name="f"),
        Message.assistant("done", reasoning_content="again"),
    ]


def test_a_result_needs_its_call_and_a_call_gets_one_result(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session()
    seq = store.append(sid, "response", response("c1"))
    with pytest.raises(SessionError, match="did not make"):
        store.add_result(sid, seq, "c9", {"content": "x"})
    store.add_result(sid, seq, "c1", {"content": "x"})
    with pytest.raises(SessionError, match="already has a result"):
        store.add_result(sid, seq, "c1", {"content": "y"})
    assert store.add_result(sid, seq, "c1", {"content": "z"}, if_missing=True) is False
    assert pairing_problems(store.events(sid)) == []


def test_repair_closes_calls_a_killed_kernel_left_open(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session()
    seq = store.append(sid, "response", response("a", "b"))
    store.add_result(sid, seq, "a", {"content": "fine"})
    assert pairing_problems(store.events(sid)) == [f"call 'b' of response #{seq} has 0 results"]
    assert store.repair(sid) == 1
    assert store.repair(sid) == 0
    assert pairing_problems(store.events(sid)) == []
    last = store.events(sid)[-1]
    assert last.call_id == "b" and last.data["is_error"] and last.data["synthetic"]


def test_a_session_written_by_an_older_version_still_loads_and_continues(tmp_path: Path) -> None:
    """Hand-written rows in the first layout: no turn/channel/call_of/call_id columns, no sessions row,
    responses without `reasoning`, `usage`, `tool_calls`; results carrying the call id only in their JSON."""
    path = tmp_path / "sessions.db"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, kind TEXT NOT NULL,
                             ts REAL NOT NULL, data TEXT NOT NULL DEFAULT '{}');
        """
    )
    rows = [
        ("old", "input", 1.0, json.dumps({"text": "hello"})),
        (
            "old",
            "response",
            2.0,
            json.dumps({"content": None, "tool_calls": [{"id": "call_1", "name": "f", "arguments": "{}"}]}),
        ),
        ("old", "tool_result", 3.0, json.dumps({"call_id": "call_1", "content": "42"})),
        ("old", "response", 4.0, json.dumps({"content": "it is 42"})),
    ]
    db.executemany("INSERT INTO events (session, kind, ts, data) VALUES (?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    store = SessionStore(path)
    assert store.exists("old")
    events = store.events("old")
    assert events[2].call_of == events[1].seq and events[2].call_id == "call_1"
    assert pairing_problems(events) == []
    messages = messages_from_events(events)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert all(m.reasoning_content is None for m in messages)
    seq = store.append("old", "response", response("call_2", reasoning="new"))
    store.add_result("old", seq, "call_2", {"content": "x"})
    assert pairing_problems(store.events("old")) == []


def test_a_batch_is_one_group_commit_and_a_slow_batch_commits_within_the_delay(tmp_path: Path) -> None:
    """`SessionStore.deferred`: results written in the block are invisible to another connection (not
    committed) until the block ends or ``commit_delay_s`` passes.
    Mutation checks (done): `_begin` not opening a transaction → the first "not yet visible" assertion is
    red; `_begin` not starting its timer → the "committed by the timer" assertion is red."""
    store = SessionStore(tmp_path / "s.db", commit_delay_s=0.05)
    sid = store.create_session()
    calls = [{"id": f"c{i}", "name": "t", "arguments": "{}"} for i in range(10)]
    seq = store.append(sid, "response", {"content": None, "tool_calls": calls})
    reader = sqlite3.connect(tmp_path / "s.db")

    def visible() -> int:
        return int(reader.execute("SELECT COUNT(*) FROM events WHERE kind='tool_result'").fetchone()[0])

    async def batch() -> None:
        with store.deferred():
            for i in range(5):
                store.add_result(sid, seq, f"c{i}", {"content": f"v{i}"})
            assert visible() == 0, "results were committed one by one"
            await wait_until_async(visible, accept=lambda n: n == 5, timeout=10, what="the timer to commit 5 results")
            assert visible() == 5, "the timer did not commit the finished results"
            for i in range(5, 10):
                store.add_result(sid, seq, f"c{i}", {"content": f"v{i}"})
            assert visible() == 5
        assert visible() == 10

    before = store.commits
    asyncio.run(batch())
    assert store.commits - before == 2  # the timer's and the block's
    with pytest.raises(SessionError), store.deferred():  # a refused write in a group leaves the store usable
        store.add_result(sid, seq, "c0", {"content": "again"})
    assert pairing_problems(store.events(sid)) == []
    reader.close()
    store.close()


def test_the_history_cache_reads_incrementally_and_equals_a_full_rebuild(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    cache = HistoryCache(SessionLog(store, max_bytes=1), max_sessions=1)
    sid = store.create_session()
    store.append(sid, "input", {"text": "q1"})
    seq = store.append(sid, "response", response("c1", "c2", reasoning="r1"))
    assert cache.messages(sid) == messages_from_events(store.events(sid))
    store.add_result(sid, seq, "c1", {"content": "v1"})
    first = cache.messages(sid)
    first.append(Message.user("a caller's own append does not leak into the cache"))
    store.close_calls(sid, [(seq, "c2", "f")])  # a synthetic result, appended after the fact
    store.append(sid, "response", response(content="done"))
    other = store.create_session()
    store.append(other, "input", {"text": "elsewhere"})
    assert [m.role for m in cache.messages(other)] == ["user"]  # evicts sid (max_sessions=1)
    assert cache.messages(sid) == messages_from_events(store.events(sid))
    assert [m.role for m in cache.messages(sid)] == ["user", "assistant", "tool", "tool", "assistant"]
    store.close()


def test_repair_scans_a_session_once_per_process_then_tracks_open_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`repair` runs at every turn start; after its first check of a session it must not scan it again
    (that cost O(session): ~2 ms at 2 800 events), yet still close what this process left open.
    Mutation check (done): returning 0 on the tracked path turns this red (c2 stays open)."""
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session()
    seq = store.append(sid, "response", response("c1"))
    assert store.repair(sid) == 1  # first look: the database is checked

    def no_scan(*args: object) -> object:
        raise AssertionError("scanned the session again")

    monkeypatch.setattr(store, "unanswered", no_scan)
    monkeypatch.setattr(store, "_may_have_open_calls", no_scan)
    assert store.repair(sid) == 0
    seq = store.append(sid, "response", response("c2", "c3"))
    store.add_result(sid, seq, "c3", {"content": "v3"})
    assert store.repair(sid) == 1  # c2, known open without a scan
    assert pairing_problems(store.events(sid)) == []
    store.close()


def test_checkpoints_run_in_their_own_thread_never_in_a_commit(tmp_path: Path) -> None:
    """The store's connection never checkpoints (a checkpoint in a commit stalled the event loop 16-17 ms);
    the checkpoint thread copies the WAL back, so the log does not grow without bound.
    Mutation check (done): leaving ``wal_autocheckpoint`` at its default turns the first assert red;
    a `WalCheckpointer` that never runs the PRAGMA turns the frame count assert red."""
    store = SessionStore(tmp_path / "sessions.db")
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    checkpointer = store._checkpointer
    assert checkpointer is not None
    sid = store.create_session("cli")
    for i in range(3 * checkpointer.every_commits):
        store.append(sid, "input", {"text": f"message {i} " + "x" * 2000})

    # the events reach the database file itself while the store is open: only a checkpoint puts them there
    # (the file grows during the PRAGMA, before the thread counts it: wait for both, CI once saw the gap)
    def checkpointed() -> bool:
        return (tmp_path / "sessions.db").stat().st_size >= 200_000 and checkpointer.checkpoints > 0

    wait_until(checkpointed, timeout=10, what="a checkpoint to grow the database file past 200 kB")
    assert (tmp_path / "sessions.db").stat().st_size >= 200_000
    assert checkpointer.checkpoints > 0
    store.close()  # a last checkpoint of what is pending, then the thread stops
    assert checkpointer._thread is not None and not checkpointer._thread.is_alive()
    reader = sqlite3.connect(tmp_path / "sessions.db")
    assert reader.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3 * checkpointer.every_commits


def test_without_a_checkpoint_thread_the_store_checkpoints_by_itself(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    checkpointer = store._checkpointer
    assert checkpointer is not None
    checkpointer.failed = True  # as when the thread could not start or died
    store.append(store.create_session("cli"), "input", {"text": "hi"})
    assert store._checkpointer is None
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
    store.close()


def test_a_groups_results_are_inserted_together_yet_read_and_ordered_as_if_one_by_one(tmp_path: Path) -> None:
    """Inside `deferred`, results of calls known to be open are buffered and inserted by one executemany
    (~20% of the store's time in a 50-call turn). Reads inside the group see them, a later event gets a
    later seq, and a second result for a call is still refused.
    Mutation checks (done): not flushing in `_execute_write` turns the seq-order assert red; not flushing
    in `events` turns the read-inside-the-group assert red."""
    store = SessionStore(tmp_path / "sessions.db")
    sid = store.create_session("cli")
    seq = store.append(sid, "response", response("c1", "c2", "c3"))
    with store.deferred():
        assert store.add_result(sid, seq, "c1", {"name": "f", "content": "one"})
        assert store.add_result(sid, seq, "c2", {"name": "f", "content": "two"})
        assert store._buffered, "the results were not buffered: the path under test was not taken"
        assert [e.call_id for e in store.events(sid) if e.kind == "tool_result"] == ["c1", "c2"]
        assert store.add_result(sid, seq, "c3", {"name": "f", "content": "three"})
        after = store.append(sid, "output", {"text": "done"})
        with pytest.raises(SessionError, match="already has a result"):
            store.add_result(sid, seq, "c3", {"name": "f", "content": "again"})
        assert store.add_result(sid, seq, "c3", {"name": "f", "content": "again"}, if_missing=True) is False
    store.close()
    reader = sqlite3.connect(tmp_path / "sessions.db")
    rows = reader.execute("SELECT seq, kind, call_id FROM events WHERE session=? ORDER BY seq", (sid,)).fetchall()
    assert [(kind, call) for _, kind, call in rows] == [
        ("response", None),
        ("tool_result", "c1"),
        ("tool_result", "c2"),
        ("tool_result", "c3"),
        ("output", None),
    ]
    assert rows[-1][0] == after


def test_a_responses_call_ids_are_let_go_after_its_last_result(tmp_path: Path) -> None:
    """What `add_result` remembers of a response (its call ids) goes with its last result, buffered or not: kept
    until the cache's bound, a long turn's ids outlived it scattered between its freed objects and kept allocator
    arenas resident (issue 41). A late second result is still refused, from the row.
    Mutation check (done): without the `_answered` calls both `not in store._calls` asserts are red."""
    store = SessionStore(tmp_path / "s.db")
    sid = store.create_session()
    store.repair(sid)  # as a turn starts: the session's open calls tracked from here on
    seq = store.append(sid, "response", response("c1", "c2"))
    answer = store.append(sid, "response", response(content="done"))
    assert seq in store._calls and answer not in store._calls  # no calls, nothing to remember
    store.add_result(sid, seq, "c1", {"content": "one"})
    assert seq in store._calls, "c2 is still open"
    store.add_result(sid, seq, "c2", {"content": "two"})
    assert seq not in store._calls
    with pytest.raises(SessionError, match="already has a result"):
        store.add_result(sid, seq, "c2", {"content": "again"})
    with pytest.raises(SessionError, match="did not make"):
        store.add_result(sid, seq, "c9", {"content": "x"})
    grouped = store.append(sid, "response", response("c3"))
    with store.deferred():
        store.add_result(sid, grouped, "c3", {"content": "three"})
        assert store._buffered, "the buffered path was not taken"
        assert grouped not in store._calls
    assert pairing_problems(store.events(sid)) == []
    store.close()


def test_read_events_share_the_strings_every_event_repeats(tmp_path: Path) -> None:
    """A session's events, as read, share their session id, kind, turn and channel rather than a new string each,
    and say what was written (a long turn's ~440 events are held through it: issue 41, docs/memory.md "Sixth
    round"; their data is held as the row's bytes, hologram/sessions/event.py)."""
    store = SessionStore(tmp_path / "sessions.db")
    sid = store.create_session("web")
    results: list[dict[str, object]] = []
    for i in range(3):
        data = response(f"a{i}", f"b{i}")
        data.update({"provider": "mock-provider", "model": "mock-model", "finish_reason": "tool_calls"})
        seq = store.append(sid, "response", data, turn="turn-1", channel="web")
        for call in ("a", "b"):
            result = {"name": "files_list", "content": f"{call}{i} 文件", "is_error": False, "status": "ok"}
            store.add_result(sid, seq, f"{call}{i}", result, turn="turn-1", channel="web")
            results.append(result)
    events = store.events(sid)
    assert [
        {k: e.data[k] for k in r} for e, r in zip([e for e in events if e.kind == "tool_result"], results, strict=True)
    ] == results
    first, *rest = events
    for e in rest:
        assert e.session is first.session and e.turn is first.turn and e.channel is first.channel
    tool_results = [e for e in events if e.kind == "tool_result"]
    assert all(e.kind is tool_results[0].kind for e in tool_results)
    assert [e.call_id for e in tool_results] == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert [c["name"] for e in events if e.kind == "response" for c in e.data["tool_calls"]] == ["f"] * 6
    store.close()


def test_a_held_event_is_two_small_objects_and_a_long_one_leaves_pymalloc(tmp_path: Path) -> None:
    """What the log holds of an event from a turn's read to the idle release: its object and its row's bytes —
    not the decoded data (~5 small objects or more an event: the dict, its strings, the seq and time as objects),
    which at a long turn's peak set how many pymalloc arenas the turn took and kept (issue 41, docs/memory.md
    "Eighth round"). Bytes of a row over 512 go to malloc, not into pymalloc's pools.

    Mutation check (done): `_event` building `Event(seq, …, value, …)` from the decoded dict (the old form's
    content) — ~9 blocks an event — turns this red."""
    store = SessionStore(tmp_path / "sessions.db")
    sid = store.create_session("web")
    n = 400
    with store.deferred():
        for i in range(0, n, 10):
            seq = store.append(sid, "response", response(*(f"c{i + k}" for k in range(10))), turn="t1", channel="web")
            for k in range(10):
                short = {"name": "files_list", "content": f"a.txt b{i + k}.txt", "is_error": False, "status": "ok"}
                store.add_result(sid, seq, f"c{i + k}", short, turn="t1", channel="web")
    long = {"name": "files_read", "content": "长的内容 long content " * 60, "is_error": False}
    last = store.append(sid, "response", response("big"), turn="t1", channel="web")
    store.add_result(sid, last, "big", long, turn="t1", channel="web")
    gc.collect()  # (which also empties the free lists: the read below refills them with its rows' tuples)
    gc.disable()
    try:
        store.events(sid)  # the statements, the interned strings and the free lists' tuples made once
        before = sys.getallocatedblocks()
        events = store.events(sid)
        held = sys.getallocatedblocks() - before
    finally:
        gc.enable()
    assert len(events) == n + n // 10 + 2
    assert held <= 2.2 * len(events), f"{held} blocks for {len(events)} held events"
    big = events[-1]
    assert big.call_id == "big" and big.data == {**long, "call_id": "big"}
    assert sys.getsizeof(big._row) > 512  # malloc's, not a pymalloc block
    store.close()
