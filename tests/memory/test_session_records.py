"""Memory's records are derived from the stored event through the same message the model is sent.

The ids are pinned: they key every event held in ``cold.db``, so a record built differently after an upgrade
would leave L2 holding events the log no longer recognises (L1 = log minus L2 would then send them twice).

Mutation checks (done): dropping the ``reasoning_content`` fallback in `hologram.sessions.history.
response_message` fails `test_record_and_message_read_the_same_parts` for both the message and the record
(one mapping, so the two cannot drift apart); building the tool-call blocks from ``name`` only fails
`test_record_ids_are_stable`.
"""

from __future__ import annotations

from hologram.memory.session_records import record_of
from hologram.sessions import Event, message_of, messages_from_events

EVENTS = [
    Event(1, "s", "input", 1_700_000_000.25, {"text": "where is the key?"}, channel="cli"),
    Event(
        2,
        "s",
        "response",
        1_700_000_001.0,
        {
            "content": None,
            "reasoning": "look it up",
            "tool_calls": [{"id": "c1", "name": "notes_read", "arguments": '{"title": "key"}'}],
        },
    ),
    Event(
        3,
        "s",
        "tool_result",
        1_700_000_002.0,
        {"name": "notes_read", "content": "under the mat"},
        call_of=2,
        call_id="c1",
    ),
    Event(4, "s", "response", 1_700_000_003.0, {"content": "Under the mat.", "reasoning_content": "vendor field"}),
    Event(5, "s", "output", 1_700_000_003.5, {"text": "Under the mat."}),
]


def test_record_ids_are_stable() -> None:
    """The ids of the version before records were derived from the message (computed with it, pinned)."""
    ids = [r.id if (r := record_of(e)) is not None else None for e in EVENTS]
    assert ids == [
        "ev_d3000910c22c07311041d2fadcb160b1",
        "ev_773546bf4f601b26de2ed9c85b4290e6",
        "ev_2db681dcb4ef199ea3a28550443917b9",
        "ev_2bf081cb4862ad6285a5792ec25f0b9d",
        None,
    ]


def test_record_and_message_read_the_same_parts() -> None:
    messages = messages_from_events(EVENTS)
    records = [r for e in EVENTS if (r := record_of(e)) is not None]
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert len(records) == len(messages)  # an event has a record exactly when it has a message
    assert messages[3].reasoning_content == "vendor field"
    assert [b.text for b in records[3].block("reasoning")] == ["vendor field"]
    assert [b.text for b in records[1].block("tool_call")] == ['notes_read({"title": "key"})']
    assert records[1].group == records[2].group == "call:2"
    assert records[2].block("tool_result")[0].meta == {"call_id": "c1", "name": "notes_read"}
    assert message_of(EVENTS[4]) is None and record_of(EVENTS[4]) is None
