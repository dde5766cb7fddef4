"""One stored conversation event, held compact: one small object and one bytes object an event.

Why compact: the session log (`hologram.sessions.log.SessionLog`) and memory's index tail hold a session's
recent events from the turn that read them until the session's idle release — a long turn's ~440 events all
through it. Decoded, an event was ~5 pymalloc blocks or more (the object, its seq, time and call-of ints and
floats, its data dict, the dict's content and call-id strings, a response's call dicts), made one by one between
the turn's ~24k short-lived objects; at the long turn's peak they were one of the two largest groups of small
objects alive (docs/memory.md, "Sixth round"), and the peak of small objects alive sets how many 1 MiB pymalloc
arenas the turn takes and keeps (issue 41). Held as the row's bytes — a fixed header (seq, time, call of, the
call id's length), the call id, then the row's JSON exactly as SQLite stored it — an event is two blocks, and the
bytes of any event over ~480 bytes (a tool result with real content, a response with several calls, an answer)
go to malloc, whose free pages the idle trim gives back, rather than into a pymalloc pool.

The price: ``data`` is decoded on every access (orjson, ~1-3 µs for a small event; the readers — the request
builder's `message_of`, memory's records, the HTTP history API, the scene step — read it once per use), and
``seq``, ``ts``, ``call_of``, ``call_id`` are unpacked from the header (~0.1 µs). A reader that needs a field
several times reads ``data`` once into a local. ``data`` is a new dict each time: changing it changes nothing
stored or held.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

import orjson

from hologram.base import _fastjson as _json

__all__ = ["Event", "pack_row"]

#: seq, time, the call's response seq (`_NO_CALL`: none), the call id's UTF-8 length (-1: none).
_HEAD = struct.Struct("<qdqi")
_HEAD_SIZE = _HEAD.size
_SEQ = struct.Struct("<q")
_TS = struct.Struct("<d")
_NO_CALL = -(2**63)
#: What the object itself weighs (`sys.getsizeof` of an `Event`), for the log's byte bound.
_OBJECT_BYTES = 0


def pack_row(seq: int, ts: float, call_of: int | None, call_id: str | None, raw: bytes) -> bytes:
    """An event's held bytes: the header, the call id, and `raw`, the row's JSON (a new bytes object of exactly
    this size: orjson's own results keep the whole buffer they were written in, 4 KiB at least)."""
    cid = b"" if call_id is None else call_id.encode("utf-8", "surrogatepass")
    head = _HEAD.pack(seq, ts, _NO_CALL if call_of is None else call_of, -1 if call_id is None else len(cid))
    return b"".join((head, cid, raw))


def _shared(value: Any) -> Any:
    """The interned copy of a str (None and other types as they are): the session, kind and channel every event
    of a session repeats are one string, not one per event. Only for values from a small set: an interned
    string stays in the interpreter's table as long as it lives (see :func:`_shared_turn`)."""
    return sys.intern(value) if type(value) is str else value


_TURNS: dict[str, str] = {}
"""Recent turn ids, each the one string the events of its turn share (:func:`_shared_turn`)."""
_TURNS_KEPT = 1024


def _shared_turn(turn: str | None) -> str | None:
    """One string for the events of a recent turn, from a table of at most :data:`_TURNS_KEPT` turns (emptied
    when full). Not ``sys.intern``: every turn has an id of its own, and each interned one alive — an event in
    the session log's cache, or an old event read back for a request — is an entry of the interpreter's
    interned-string dict. In a long soak the old events a request reads back come from ever more distinct turns;
    the dict's live entries crossed a resize boundary at ~4,500 turns and its table doubled (0.93 -> 1.83 MiB,
    one mmapped block, kept for the rest of the process): the step of +1 MB in the kernel's memory that every
    10,000-turn soak showed (issue 39 item 7). A turn's events are read together, so a small table shares
    about as much."""
    if turn is None:
        return None
    got = _TURNS.get(turn)
    if got is None:
        if len(_TURNS) >= _TURNS_KEPT:
            _TURNS.clear()
        got = _TURNS[turn] = turn
    return got


class Event:
    """One conversation item as it happened — the only stored form of it. Everything else is derived:
    `hologram.sessions.message_of` gives the chat message a model reads, and memory's record (blocks with
    stable ids, what cold context holds: `hologram.memory.session_records.record_of`) is built from that
    message.

    Fields: ``seq``, ``session``, ``kind`` (input | response | tool_result | output), ``ts``, ``data`` (the
    event's JSON object, decoded on each access: module docstring), ``turn``, ``channel``, ``call_of`` and
    ``call_id`` (a tool result's call). Immutable: the fields are read-only."""

    __slots__ = ("_row", "channel", "kind", "session", "turn")

    _row: bytes
    session: str
    kind: str
    turn: str | None
    channel: str | None

    def __init__(
        self,
        seq: int,
        session: str,
        kind: str,
        ts: float,
        data: dict[str, Any],
        turn: str | None = None,
        channel: str | None = None,
        call_of: int | None = None,
        call_id: str | None = None,
    ) -> None:
        _set(self, pack_row(seq, ts, call_of, call_id, _json.dumps_bytes(data)), session, kind, turn, channel)

    @classmethod
    def held(cls, row: bytes, session: str, kind: str, turn: str | None, channel: str | None) -> Event:
        """An event from its `pack_row` bytes (the store's read: no JSON encoded again)."""
        event = object.__new__(cls)
        _set(event, row, session, kind, turn, channel)
        return event

    @property
    def seq(self) -> int:
        return int(_SEQ.unpack_from(self._row)[0])

    @property
    def ts(self) -> float:
        return float(_TS.unpack_from(self._row, 8)[0])

    @property
    def call_of(self) -> int | None:
        value = int(_SEQ.unpack_from(self._row, 16)[0])
        return None if value == _NO_CALL else value

    @property
    def call_id(self) -> str | None:
        size = _head(self._row)[3]
        if size < 0:
            return None
        return self._row[_HEAD_SIZE : _HEAD_SIZE + size].decode("utf-8", "surrogatepass")

    @property
    def data(self) -> dict[str, Any]:
        """The event's JSON object, decoded now (a new dict each time)."""
        row = self._row
        start = _HEAD_SIZE + max(0, _head(row)[3])
        try:
            value = orjson.loads(memoryview(row)[start:])
        except orjson.JSONDecodeError:  # NaN, huge integers: the stdlib, as the store's own read (_fastjson)
            value = _json.loads(row[start:])
        return value if type(value) is dict else {"value": value}

    @property
    def held_bytes(self) -> int:
        """What the held event weighs: the object and its bytes (the session log's bound counts it)."""
        return _OBJECT_BYTES + sys.getsizeof(self._row)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Event is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Event is immutable: cannot delete {name!r}")

    def _fields(self) -> tuple[Any, ...]:
        return (self.seq, self.session, self.kind, self.ts, self.data, self.turn, self.channel, self.call_of,
                self.call_id)  # fmt: skip

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Event):
            return NotImplemented
        if self._row == other._row:
            return (self.session, self.kind, self.turn, self.channel) == (
                other.session, other.kind, other.turn, other.channel,
            )  # fmt: skip
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash((self.session, self.seq))

    def __repr__(self) -> str:
        names = ("seq", "session", "kind", "ts", "data", "turn", "channel", "call_of", "call_id")
        return "Event(" + ", ".join(f"{n}={v!r}" for n, v in zip(names, self._fields(), strict=True)) + ")"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Event.held, (self._row, self.session, self.kind, self.turn, self.channel))


_head = _HEAD.unpack_from
_setter = object.__setattr__


def _set(event: Event, row: bytes, session: str, kind: str, turn: str | None, channel: str | None) -> None:
    _setter(event, "_row", row)
    _setter(event, "session", _shared(session))
    _setter(event, "kind", _shared(kind))
    _setter(event, "turn", _shared_turn(turn))
    _setter(event, "channel", _shared(channel))


_OBJECT_BYTES = sys.getsizeof(Event(0, "", "", 0.0, {}))
