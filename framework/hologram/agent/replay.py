"""What the hub keeps of the sessions' turn events for clients that come back (``turn/watch`` with ``after``), and
how much: bounded in bytes, not in turns or sessions.

Each event is kept as it went out, its wire JSON (`Sent`): encoded once for every client, and what it weighs here is
what it weighs on the wire — a long turn of ~24k small events is ~4 MB of JSON, where the same events as Python
dicts held ~17 MB. A session's `Replay` holds its running turn (and, behind it, the ``turn.queued`` of the turns
waiting) up to ``[delivery] replay_turn_bytes``; past that its oldest events go, and a client that comes back
from before them is told (``gap``). When the session goes idle its replay moves to the `IdlePool`, which holds the
last turns of the most recently idle sessions up to ``[delivery] replay_idle_bytes`` in all, dropping the
oldest sessions first — a browser that lost its stream near a turn's end, or `hologram chat --url` reading a fast
turn from ``seq`` 0 after it ended, still gets it; everything else is released.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(slots=True)  # not frozen: a frozen one costs 0.6 µs to make, this 0.15 (one per event)
class Sent:
    """One event as it went out: its ``seq``, type and turn (what `TurnHub.read_turn` picks by without decoding),
    and its wire JSON."""

    seq: int
    kind: str
    turn: str
    line: bytes

    @property
    def size(self) -> int:
        return len(self.line)

    @property
    def approval(self) -> bool:
        """An ``approval.requested``: replayed only to whoever may answer it."""
        return self.kind == "approval.requested"


@dataclass(slots=True)
class Replay:
    """A session's kept events, oldest first, and their bytes."""

    events: deque[Sent] = field(default_factory=deque)
    size: int = 0
    dropped_to: int = 0  # the seq of the newest event no longer kept (the bound, or a new turn): 0 none

    def add(self, sent: Sent, bound: int) -> None:
        self.events.append(sent)
        self.size += sent.size
        self.trim(bound)

    def trim(self, bound: int) -> None:
        """Drop the oldest events until the rest fits in ``bound`` bytes; the newest stays whatever its size (a
        client that comes back gets at least the turn's end)."""
        while self.size > bound and len(self.events) > 1:
            old = self.events.popleft()
            self.size -= old.size
            self.dropped_to = old.seq

    def restart(self) -> None:
        """A new turn starts: the last one's events go (a client resuming inside it has a gap)."""
        if self.events:
            self.dropped_to = self.events[-1].seq
        self.events.clear()
        self.size = 0

    def after(self, seq: int) -> Iterator[Sent]:
        return (sent for sent in self.events if sent.seq > seq)

    def gap(self, after: int) -> bool:
        """Events of the session newer than ``after`` are no longer kept."""
        return after < self.dropped_to


class IdlePool:
    """The replays of idle sessions, most recently idle last, bounded in bytes all together."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.replays: OrderedDict[str, Replay] = OrderedDict()
        self.size = 0

    def put(self, session: str, replay: Replay) -> None:
        self.take(session)
        replay.trim(self.bound)
        if not replay.events or replay.size > self.bound:  # nothing, or one event larger than the whole pool
            return
        self.replays[session] = replay
        self.size += replay.size
        while self.size > self.bound and self.replays:
            _, old = self.replays.popitem(last=False)
            self.size -= old.size

    def take(self, session: str) -> Replay | None:
        """The session's replay, no longer idle (the caller keeps it), or None."""
        replay = self.replays.pop(session, None)
        if replay is not None:
            self.size -= replay.size
        return replay

    def get(self, session: str) -> Replay | None:
        return self.replays.get(session)
