"""A stored event held compact (hologram/sessions/event.py): the same fields, values and equality as the decoded
form it replaced, read back from its bytes."""

from __future__ import annotations

import pickle

import pytest

from hologram.sessions import Event

FIELDS = ("seq", "session", "kind", "ts", "data", "turn", "channel", "call_of", "call_id")


@pytest.mark.parametrize(
    "args",
    [
        (1, "s", "input", 1_700_000_000.25, {"text": "你好 hello", "partner": "Ann"}, "t1", "web", None, None),
        (2**40, "s", "tool_result", 0.0, {"content": "x" * 2000, "name": "f"}, None, None, 2**40 - 1, "call_1"),
        (3, "s", "tool_result", -1.5, {}, "t", None, 0, ""),  # an empty call id is not None
        (
            4,
            "s",
            "response",
            2.0,
            {"big": 2**70, "tool_calls": [{"id": "c", "name": "f"}]},
            None,
            None,
            None,
            "é\U0001f600",
        ),
    ],
)
def test_every_field_reads_back_as_given(args: tuple[object, ...]) -> None:
    event = Event(*args)  # type: ignore[arg-type]
    assert tuple(getattr(event, name) for name in FIELDS) == args
    assert event == Event(*args) and hash(event) == hash(Event(*args))  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(event)) == event
    assert repr(event).startswith(f"Event(seq={args[0]!r}, session='s'")


def test_data_is_a_new_dict_each_time_and_the_event_cannot_change() -> None:
    event = Event(7, "s", "input", 1.0, {"text": "hi"}, turn="t")
    event.data["text"] = "changed"
    assert event.data == {"text": "hi"}
    with pytest.raises(AttributeError, match="immutable"):
        event.kind = "output"  # type: ignore[misc]
    assert event != Event(7, "s", "input", 1.0, {"text": "hi"}, turn="other")
    assert event != Event(8, "s", "input", 1.0, {"text": "hi"}, turn="t")
    assert Event(1, "s", "input", 1.0, {"a": 1, "b": 2}) == Event(1, "s", "input", 1.0, {"b": 2, "a": 1})


def test_the_strings_every_event_repeats_are_shared() -> None:
    a = Event(1, "".join(["se", "ssion"]), "input", 1.0, {}, turn="".join(["tu", "rn"]), channel="web")
    b = Event(2, "".join(["sess", "ion"]), "input", 1.0, {}, turn="".join(["t", "urn"]), channel="web")
    assert a.session is b.session and a.turn is b.turn and a.kind is b.kind


def test_a_turn_id_is_shared_by_its_events_without_entering_the_interpreters_interned_strings() -> None:
    """Every turn has an id of its own: interned, each one alive would be an entry of the interpreter's
    interned-string dict, which grew with the turns an old session's requests read back (its table doubled at
    ~4,500 turns of the soak). Checked through `sys.intern` itself: an equal string interned afterwards is not
    the event's. Mutation check (done): `_set` interning the turn again — red."""
    import sys
    import uuid

    from hologram.sessions import event as event_module

    turn = f"turn-{uuid.uuid4().hex}"
    a = Event(1, "s", "input", 1.0, {}, turn="".join([turn[:7], turn[7:]]))
    b = Event(2, "s", "response", 1.0, {}, turn="".join([turn[:9], turn[9:]]))
    assert a.turn == turn and a.turn is b.turn  # one string for the turn's events
    assert sys.intern("".join([turn[:5], turn[5:]])) is not a.turn  # and not the interpreter's interned one

    for k in range(event_module._TURNS_KEPT + 10):  # the table of recent turns stays bounded
        Event(k, "s", "input", 1.0, {}, turn=f"{turn}-{k}")
    assert len(event_module._TURNS) <= event_module._TURNS_KEPT
