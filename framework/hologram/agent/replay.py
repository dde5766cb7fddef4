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

An idle session's events are packed (`Packed`): one bytes object of their JSON, one array of seqs and one of
ends, instead of ~24k `Sent` objects with a bytes object and an int each — they weighed ~2x their JSON (a 4 MiB
pool held ~7.5 MB: 4.4 MB of bytes objects, 1.6 MB of `Sent`, 0.8 MB of ints, tracemalloc), and, made all through
the turn between its short-lived objects, they pinned the allocator's arenas the turn otherwise freed. Packed,
the pool weighs its JSON plus ~16 bytes an event, in a few large blocks the C allocator returns when they go.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import accumulate, chain


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


class Packed:
    """Events kept packed, oldest first: their wire JSON in one bytes object, their seqs and ends in arrays, their
    types and turns as shared strings (module docstring). Read back as `Sent` one at a time. The oldest may be
    dropped (`first`): they stay in the chunk until the whole chunk goes, at most `PACK_BYTES` held beyond the bound."""

    __slots__ = ("blob", "ends", "first", "kinds", "seqs", "turns")

    def __init__(self, sents: Iterable[Sent]) -> None:
        sents = list(sents)
        self.blob = b"".join(sent.line for sent in sents)
        self.ends = array("Q", accumulate(len(sent.line) for sent in sents))
        self.seqs = array("q", (sent.seq for sent in sents))
        self.kinds = [sys.intern(sent.kind) for sent in sents]  # a few distinct strings, not one per event
        self.turns = [sys.intern(sent.turn) for sent in sents]
        self.first = 0
        """Events before this index were dropped."""

    def __len__(self) -> int:
        return len(self.seqs) - self.first

    def sent(self, i: int) -> Sent:
        start = self.ends[i - 1] if i else 0
        return Sent(self.seqs[i], self.kinds[i], self.turns[i], self.blob[start : self.ends[i]])

    def size(self, i: int) -> int:
        return self.ends[i] - (self.ends[i - 1] if i else 0)

    def kept(self) -> Iterator[Sent]:
        return (self.sent(i) for i in range(self.first, len(self.seqs)))

    def after(self, seq: int) -> Iterator[Sent]:
        start = max(self.first, bisect_right(self.seqs, seq))
        return (self.sent(i) for i in range(start, len(self.seqs)))

    def drop_oldest(self) -> tuple[int, int]:
        """Drop the oldest kept event: (its seq, its size)."""
        i = self.first
        self.first += 1
        return self.seqs[i], self.size(i)


PACK_BYTES = 64 * 1024
"""A replay's newest events stay `Sent` objects up to this many bytes of JSON; then they are packed into a chunk."""


@dataclass(slots=True)
class Replay:
    """A session's kept events, oldest first, and their bytes: packed chunks (`Packed`, each ~`PACK_BYTES`), then
    the newest few as `Sent` objects in `events`."""

    events: deque[Sent] = field(default_factory=deque)
    size: int = 0
    dropped_to: int = 0  # the seq of the newest event no longer kept (the bound, or a new turn): 0 none
    chunks: deque[Packed] = field(default_factory=deque)
    live: int = 0
    """Bytes of `events` (packed into a chunk at `PACK_BYTES`)."""

    def add(self, sent: Sent, bound: int) -> None:
        self.events.append(sent)
        self.size += sent.size
        self.live += sent.size
        if self.live >= PACK_BYTES:
            self.pack()
        self.trim(bound)

    def __len__(self) -> int:
        return len(self.events) + sum(len(chunk) for chunk in self.chunks)

    def kept(self) -> Iterator[Sent]:
        """Every kept event, oldest first."""
        return chain(*(chunk.kept() for chunk in self.chunks), self.events)

    def pack(self) -> None:
        """Pack the events still kept as objects into a chunk (every `PACK_BYTES`, and when the session goes
        idle): the same events, read back the same. Kept as objects, a long turn's ~24k events and their bytes
        and ints were made all through it and pinned the allocator's arenas its other objects freed (issue 41)."""
        if self.events:
            self.chunks.append(Packed(self.events))
            self.events = deque()
            self.live = 0

    def trim(self, bound: int) -> None:
        """Drop the oldest events until the rest fits in ``bound`` bytes; the newest stays whatever its size (a
        client that comes back gets at least the turn's end)."""
        while self.size > bound and self.chunks and (len(self.chunks) > 1 or self.events or len(self.chunks[0]) > 1):
            chunk = self.chunks[0]
            self.dropped_to, size = chunk.drop_oldest()
            self.size -= size
            if not len(chunk):
                self.chunks.popleft()
        while self.size > bound and not self.chunks and len(self.events) > 1:
            old = self.events.popleft()
            self.size -= old.size
            self.live -= old.size
            self.dropped_to = old.seq

    def restart(self) -> None:
        """A new turn starts: the last one's events go (a client resuming inside it has a gap)."""
        if self.events:
            self.dropped_to = self.events[-1].seq
        elif self.chunks:
            self.dropped_to = self.chunks[-1].seqs[-1]
        self.events.clear()
        self.chunks.clear()
        self.size = self.live = 0

    def after(self, seq: int) -> Iterator[Sent]:
        packed = (chunk.after(seq) for chunk in self.chunks if chunk.seqs[-1] > seq)
        return chain(*packed, (sent for sent in self.events if sent.seq > seq))

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
        if not len(replay) or replay.size > self.bound:  # nothing, or one event larger than the whole pool
            return
        replay.pack()
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
