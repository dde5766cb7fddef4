"""A row of sessions.db whose bytes are damaged (not UTF-8, not JSON) costs that one event: reported once,
replaced or skipped, and the session's history still pairs every call with exactly one result — checked with
the strict mock's own validator, without the history normaliser.

Each damage is made on disk (tools/damaged_files.py `break_text`: one byte of the stored value becomes
0xFF), and each test first shows that plain sqlite3 cannot read the session any more.

Mutation checks (done): making `SessionStore.events` skip every damaged row instead of `_stand_in` turns
``test_each_damaged_kind_leaves_a_valid_history`` red (the damaged result's call has none, and `repair`
cannot add one: the damaged row still holds the call's slot); dropping the ``_reported`` check turns
``test_each_damaged_row_is_reported_once`` red; `_stand_in` not inferring the call of a result whose
``call_id`` is damaged turns ``test_a_result_whose_call_id_is_damaged_is_matched_to_the_call_left_without_one``
red.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from mock_llm.validate import validate

from damaged_files import break_text
from hologram.llm import Message
from hologram.llm.wire import message_to_wire
from hologram.sessions import SessionStore, messages_from_events, pairing_problems
from hologram.sessions.damaged import DAMAGED_RESPONSE, DAMAGED_RESULT


def calls(*ids: str) -> list[dict[str, Any]]:
    return [{"id": i, "name": "lookup", "arguments": "{}"} for i in ids]


def build(path: Path) -> dict[str, int]:
    """One session, two turns with tool calls; returns the seqs of the rows the tests damage."""
    store = SessionStore(path)
    sid = store.create_session("cli", "s")
    seqs = {"input": store.append(sid, "input", {"text": "MARK-input-1 what is x?"})}
    first = store.append(
        sid, "response", {"content": None, "reasoning": "MARK-reason-1", "tool_calls": calls("a", "b")}
    )
    store.add_result(sid, first, "a", {"name": "lookup", "content": "MARK-result-a"})
    seqs["result"] = store.events(sid)[-1].seq
    store.add_result(sid, first, "b", {"name": "lookup", "content": "value b"})
    store.append(sid, "response", {"content": "MARK-answer-1", "reasoning": None, "tool_calls": []})
    store.append(sid, "input", {"text": "and y?"})
    seqs["response"] = store.append(
        sid, "response", {"content": None, "reasoning": "MARK-reason-2", "tool_calls": calls("c", "d")}
    )
    store.add_result(sid, seqs["response"], "c", {"name": "lookup", "content": "value c"})
    store.add_result(sid, seqs["response"], "d", {"name": "other", "content": "value d"})
    seqs["answer"] = store.append(sid, "response", {"content": "MARK-answer-2", "reasoning": None, "tool_calls": []})
    store.close()
    return seqs


def damage(path: Path, *markers: str) -> None:
    for marker in markers:
        break_text(path, marker)
    with pytest.raises(sqlite3.OperationalError, match="Could not decode to UTF-8"):
        sqlite3.connect(path).execute("SELECT data FROM events WHERE session = 's'").fetchall()


def wire(messages: list[Message]) -> dict[str, Any]:
    """The request body for these messages as they are (`message_to_wire`, no `normalise_history`)."""
    body = [{"role": "system", "content": "sys"}]
    body += [{k: v for k, v in message_to_wire(m).items() if k != "reasoning_content"} for m in messages]
    return {"model": "gpt-4o", "messages": body}


def test_each_damaged_kind_leaves_a_valid_history(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    seqs = build(path)
    damage(path, "MARK-input-1", "MARK-result-a", "MARK-reason-2", "MARK-answer-2")
    store = SessionStore(path)
    events = store.events("s")
    by_seq = {e.seq: e for e in events}
    assert seqs["input"] not in by_seq  # a damaged input is skipped
    assert seqs["answer"] not in by_seq  # a damaged response without calls too
    result = by_seq[seqs["result"]]  # a damaged result keeps its call, with an error result
    assert (result.call_id, result.data["content"], result.data["is_error"]) == ("a", DAMAGED_RESULT, True)
    rebuilt = by_seq[seqs["response"]]  # a damaged response is rebuilt from the results that name it
    assert rebuilt.data["content"] == DAMAGED_RESPONSE
    assert [(c["id"], c["name"]) for c in rebuilt.data["tool_calls"]] == [("c", "lookup"), ("d", "other")]
    assert pairing_problems(events) == []
    messages = messages_from_events(events)
    assert validate(wire(messages), "openai") is None  # what the vendor would accept, no normaliser involved
    assert store.repair("s") == 0  # nothing open: the stand-ins pair every call
    # the session goes on, and the damaged bytes are still on disk, untouched
    seq = store.append("s", "response", {"content": None, "tool_calls": calls("e")})
    store.add_result("s", seq, "e", {"name": "lookup", "content": "value e"})
    assert pairing_problems(store.events("s")) == []
    store.close()
    raw = sqlite3.connect(path).execute("SELECT CAST(data AS BLOB) FROM events WHERE seq = ?", (seqs["result"],))
    assert b"M\xffRK-result-a" in raw.fetchone()[0]


def test_a_result_whose_call_id_is_damaged_is_matched_to_the_call_left_without_one(tmp_path: Path) -> None:
    """Every call has one result, so the damaged row answers the one call no readable result answers."""
    path = tmp_path / "sessions.db"
    seqs = build(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET call_id = CAST(X'61ff' AS TEXT) WHERE seq = ?", (seqs["result"],))
    db.commit()
    db.close()
    with pytest.raises(sqlite3.OperationalError, match="Could not decode"):
        sqlite3.connect(path).execute("SELECT call_id FROM events").fetchall()
    store = SessionStore(path)
    events = store.events("s")
    result = next(e for e in events if e.seq == seqs["result"])
    assert (result.call_id, result.data["content"]) == ("a", DAMAGED_RESULT)
    assert pairing_problems(events) == []
    assert store.repair("s") == 0
    assert validate(wire(messages_from_events(events)), "openai") is None


def test_json_that_does_not_parse_is_damage_too(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    seqs = build(path)
    db = sqlite3.connect(path)
    db.execute('UPDATE events SET data = \'{"content": "trunc\' WHERE seq = ?', (seqs["result"],))
    db.commit()
    db.close()
    events = SessionStore(path).events("s")
    assert next(e for e in events if e.seq == seqs["result"]).data["content"] == DAMAGED_RESULT
    assert pairing_problems(events) == []


def test_each_damaged_row_is_reported_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "sessions.db"
    seqs = build(path)
    damage(path, "MARK-result-a")
    store = SessionStore(path)
    with caplog.at_level(logging.WARNING, logger="hologram.sessions"):
        store.events("s")
        store.events("s")
        store.unanswered("s")
    warnings = [r.getMessage() for r in caplog.records if "is damaged" in r.getMessage()]
    assert warnings == [
        f"{path}: event {seqs['result']} (tool_result) of session s is damaged: its data is not UTF-8 JSON; "
        "it is skipped (hologram doctor lists such rows)"
    ]
