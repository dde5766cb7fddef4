"""The session store: WAL, restart, older rows and layouts, and the call/result invariant held on disk."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from hologram.llm import Message, ToolCall
from hologram.sessions import SessionError, SessionStore, messages_from_events, pairing_problems


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
