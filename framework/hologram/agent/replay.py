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

The pool's JSON beyond ``[delivery] replay_idle_memory_bytes`` (its newest replays stay in memory) is kept in a
`Spool`, an unlinked file in the data directory, and read back when a client asks: after long turns the pool's
~4 MB was most of what an idle kernel held beyond its start (issue 41: 79 -> 96 MB PSS after 28 long turns), for
replays that are rarely read (a browser that lost its stream near a turn's end). In memory stay their seqs and
ends (two arrays) and an index each for type and turn (~20 bytes an event); the JSON of a turn a client comes back
to is read back whole when its session is in use again (`IdlePool.take`).
"""

from __future__ import annotations

import os
import sys
import tempfile
from array import array
from bisect import bisect_right
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, pairwise
from pathlib import Path

import numpy as np


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


_KINDS: list[str] = []
"""Every event type a chunk has seen (a few dozen at most: the turn API's types), by the index chunks keep."""
_KIND_INDEX: dict[str, int] = {}


def _kind_index(kind: str) -> int:
    index = _KIND_INDEX.get(kind)
    if index is None:
        index = _KIND_INDEX[kind] = len(_KINDS)
        _KINDS.append(sys.intern(kind))
    return index


class Spool:
    """Packed JSON of idle replays kept on disk (module docstring): one unlinked temporary file, opened at the
    first write, appended to; emptied when nothing in it is kept any more, and rewritten by `IdlePool` when
    what it holds falls under half of its length."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.fd: int | None = None
        self.end = 0
        """The file's length: where the next write goes."""
        self.live = 0
        """Bytes in it still kept (the rest is dropped replays' JSON, reclaimed by a rewrite)."""

    def write(self, data: bytes) -> int:
        """Append ``data``; returns its offset."""
        if self.fd is None:
            directory = self.directory if self.directory is not None and self.directory.is_dir() else None
            with tempfile.TemporaryFile(prefix="replay-", suffix=".spool", dir=directory) as handle:
                self.fd = os.dup(handle.fileno())  # the file lives on through this descriptor, unlinked
        offset = self.end
        view = memoryview(data)
        while view:
            view = view[os.pwrite(self.fd, view, offset + len(data) - len(view)) :]
        self.end += len(data)
        self.live += len(data)
        return offset

    def read(self, offset: int, size: int) -> bytes:
        assert self.fd is not None
        data = os.pread(self.fd, size, offset)
        while len(data) < size:  # a short read (a signal): the rest
            data += os.pread(self.fd, size - len(data), offset + len(data))
        return data

    def free(self, size: int) -> None:
        """``size`` bytes written before are no longer kept."""
        self.live -= size
        if self.live == 0 and self.fd is not None:
            os.ftruncate(self.fd, 0)
            self.end = 0

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.end = self.live = 0


class Packed:
    """Events kept packed, oldest first: their wire JSON in one bytes object (or in a `Spool`), their seqs and ends
    in arrays, their types and turns a small index each (module docstring). Read back as `Sent` one at a time. The
    oldest may be dropped (`first`): they stay in the chunk until the whole chunk goes, at most `PACK_BYTES` held
    beyond the bound."""

    __slots__ = ("blob", "ends", "first", "kinds", "offset", "seqs", "spool", "turn_index", "turns")

    def __init__(self, sents: Iterable[Sent]) -> None:
        sents = list(sents)
        self.blob = b"".join(sent.line for sent in sents)
        self.ends: Sequence[int] = array("I", accumulate(len(sent.line) for sent in sents))  # a chunk: ~64 KiB
        self.seqs: Sequence[int] = _seqs(sent.seq for sent in sents)
        self.kinds = array("B", (_kind_index(sent.kind) for sent in sents))
        turns: dict[str, int] = {}
        self.turn_index = array("H", (turns.setdefault(sent.turn, len(turns)) for sent in sents))
        self.turns = tuple(sys.intern(turn) for turn in turns)  # a chunk's few turns, not one string per event
        self.first = 0
        """Events before this index were dropped."""
        self.spool: Spool | None = None
        """Where `blob` is while spilled (`spill`): at `offset` in it, and `blob` empty."""
        self.offset = 0

    @classmethod
    def merged(cls, chunks: Sequence[Packed]) -> Packed:
        """One chunk of the events `chunks` keep (none spilled), as they would read back: an idle replay's
        ~90 chunks of a long turn, made one every 64 KiB all through it between the turn's short-lived objects,
        each kept a few small objects in an allocator pool the turn otherwise freed (issue 41); made again once
        the turn is over, they are a handful of objects and a few large blocks (`IdlePool.put`)."""
        out = cls.__new__(cls)
        blobs: list[bytes] = []
        ends: list[np.ndarray] = []
        seqs: list[np.ndarray] = []
        kinds = array("B")
        turn_index = array("H")
        turns: dict[str, int] = {}
        base = 0
        for chunk in chunks:  # numpy and array slices: no int object an event (none made between others')
            assert chunk.spool is None, "a spilled chunk is read back before it is merged"
            start = chunk._start(chunk.first)
            blobs.append(chunk.blob[start:] if start else chunk.blob)
            ends.append(_numbers(chunk.ends)[chunk.first :].astype(np.int64) + (base - start))
            base += chunk.nbytes - start
            seqs.append(_numbers(chunk.seqs)[chunk.first :])
            kinds.extend(chunk.kinds[chunk.first :])
            mapped = [turns.setdefault(turn, len(turns)) for turn in chunk.turns]
            turn_index.extend(mapped[i] for i in chunk.turn_index[chunk.first :])  # a few turns: small ints
        out.blob = b"".join(blobs)
        out.ends = array("I" if base < 1 << 32 else "Q")
        out.ends.frombytes(np.concatenate(ends).astype(np.uint32 if base < 1 << 32 else np.uint64).tobytes())
        merged = np.concatenate(seqs) if seqs else np.zeros(0, dtype=np.int64)
        if len(merged) and merged[-1] - merged[0] == len(merged) - 1 and bool((np.diff(merged) == 1).all()):
            out.seqs = range(int(merged[0]), int(merged[-1]) + 1)
        else:
            out.seqs = array("q")
            out.seqs.frombytes(merged.astype(np.int64).tobytes())
        out.kinds, out.turn_index, out.turns = kinds, turn_index, tuple(turns)
        out.first, out.spool, out.offset = 0, None, 0
        return out

    def __len__(self) -> int:
        return len(self.seqs) - self.first

    @property
    def nbytes(self) -> int:
        """Bytes of JSON the chunk holds (its dropped events' too)."""
        return self.ends[-1] if self.ends else 0

    def _start(self, i: int) -> int:
        return self.ends[i - 1] if i else 0

    def _sent(self, i: int, blob: bytes, base: int) -> Sent:
        line = blob[self._start(i) - base : self.ends[i] - base]
        return Sent(self.seqs[i], _KINDS[self.kinds[i]], self.turns[self.turn_index[i]], line)

    def sent(self, i: int) -> Sent:
        if self.spool is None:
            return self._sent(i, self.blob, 0)
        start = self._start(i)
        return self._sent(i, self.spool.read(self.offset + start, self.ends[i] - start), start)

    def size(self, i: int) -> int:
        return self.ends[i] - self._start(i)

    def _from(self, start: int) -> Iterator[Sent]:
        if start >= len(self.seqs):
            return iter(())
        if self.spool is None:
            blob, base = self.blob, 0
        else:  # one read for all of them, not one an event
            base = self._start(start)
            blob = self.spool.read(self.offset + base, self.nbytes - base)
        return (self._sent(i, blob, base) for i in range(start, len(self.seqs)))

    def kept(self) -> Iterator[Sent]:
        return self._from(self.first)

    def after(self, seq: int) -> Iterator[Sent]:
        return self._from(max(self.first, bisect_right(self.seqs, seq)))

    def drop_oldest(self) -> tuple[int, int]:
        """Drop the oldest kept event: (its seq, its size)."""
        i = self.first
        self.first += 1
        return self.seqs[i], self.size(i)

    def spill(self, spool: Spool) -> None:
        """Move the JSON to ``spool`` (nothing of it stays in memory)."""
        if self.spool is None:
            self.offset = spool.write(self.blob)
            self.spool, self.blob = spool, b""

    def unspill(self) -> None:
        """Read the JSON back from its spool, which no longer keeps it."""
        if self.spool is not None:
            self.blob = self.spool.read(self.offset, self.nbytes)
            self.spool.free(self.nbytes)
            self.spool = None

    def forget(self) -> None:
        """The chunk is no longer kept: its spool's bytes go too."""
        if self.spool is not None:
            self.spool.free(self.nbytes)
            self.spool = None


def _numbers(values: Sequence[int]) -> np.ndarray:
    """A chunk's seqs or ends as a numpy array, without an int object each (a range, or an array's buffer)."""
    if isinstance(values, range):
        return np.arange(values.start, values.stop, dtype=np.int64)
    assert isinstance(values, array)
    return np.frombuffer(values, dtype={"I": np.uint32, "Q": np.uint64, "q": np.int64}[values.typecode])


def _seqs(seqs: Iterable[int]) -> Sequence[int]:
    """A chunk's seqs: a `range` when they follow each other (a session's events usually do: 48 bytes, where an
    array takes 8 an event), else an array."""
    out = array("q", seqs)
    if out and out[-1] - out[0] == len(out) - 1 and all(b - a == 1 for a, b in pairwise(out)):
        return range(out[0], out[-1] + 1)
    return out


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

    def merge(self) -> None:
        """Its packed chunks made one (`Packed.merged`), when the session goes idle."""
        if len(self.chunks) > 1:
            self.chunks = deque([Packed.merged(self.chunks)])

    def trim(self, bound: int) -> None:
        """Drop the oldest events until the rest fits in ``bound`` bytes; the newest stays whatever its size (a
        client that comes back gets at least the turn's end)."""
        while self.size > bound and self.chunks and (len(self.chunks) > 1 or self.events or len(self.chunks[0]) > 1):
            chunk = self.chunks[0]
            self.dropped_to, size = chunk.drop_oldest()
            self.size -= size
            if not len(chunk):
                self.chunks.popleft().forget()
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
        self.forget()
        self.size = self.live = 0

    def forget(self) -> None:
        """Drop every packed chunk (and what its spool keeps of it)."""
        for chunk in self.chunks:
            chunk.forget()
        self.chunks.clear()

    @property
    def spilled(self) -> bool:
        return any(chunk.spool is not None for chunk in self.chunks)

    def spill(self, spool: Spool) -> None:
        self.pack()
        for chunk in self.chunks:
            chunk.spill(spool)

    def unspill(self) -> None:
        for chunk in self.chunks:
            chunk.unspill()

    def after(self, seq: int) -> Iterator[Sent]:
        packed = (chunk.after(seq) for chunk in self.chunks if chunk.seqs[-1] > seq)
        return chain(*packed, (sent for sent in self.events if sent.seq > seq))

    def gap(self, after: int) -> bool:
        """Events of the session newer than ``after`` are no longer kept."""
        return after < self.dropped_to


class IdlePool:
    """The replays of idle sessions, most recently idle last, bounded in bytes all together; the newest up to
    ``memory`` bytes in memory, the others' JSON in a `Spool` on disk (in ``directory``, or the system's
    temporary directory)."""

    def __init__(self, bound: int, memory: int | None = None, directory: Path | None = None) -> None:
        self.bound = bound
        self.memory = bound if memory is None else memory
        """Bytes of the pool kept in memory, the newest replays' (the rest is spilled)."""
        self.replays: OrderedDict[str, Replay] = OrderedDict()
        self.size = 0
        self.in_memory = 0
        """Bytes of the replays not spilled."""
        self.spool = Spool(directory)

    def put(self, session: str, replay: Replay) -> None:
        self.take(session)
        replay.trim(self.bound)
        if not len(replay) or replay.size > self.bound:  # nothing, or one event larger than the whole pool
            replay.forget()
            return
        replay.pack()
        replay.merge()
        self.replays[session] = replay
        self.size += replay.size
        self.in_memory += replay.size
        while self.size > self.bound and self.replays:
            self._drop(self.replays.popitem(last=False)[1])
        for old in self.replays.values():  # oldest first
            if self.in_memory <= self.memory:
                break
            if not old.spilled:
                old.spill(self.spool)
                self.in_memory -= old.size
        self._compact()

    def _drop(self, replay: Replay) -> None:
        self.size -= replay.size
        if not replay.spilled:
            self.in_memory -= replay.size
        replay.forget()

    def _compact(self) -> None:
        """Rewrite the spool when less than half of it is still kept (dropped replays' JSON piles up at its
        start while newer ones are appended): at most twice the pool's bound on disk."""
        spool = self.spool
        if spool.end <= max(2 * spool.live, PACK_BYTES):
            return
        chunks = [chunk for replay in self.replays.values() for chunk in replay.chunks if chunk.spool is spool]
        for chunk in chunks:
            chunk.unspill()
        spool.close()
        for chunk in chunks:
            chunk.spill(spool)

    def take(self, session: str) -> Replay | None:
        """The session's replay, no longer idle (the caller keeps it, its JSON back in memory), or None."""
        replay = self.replays.pop(session, None)
        if replay is not None:
            self.size -= replay.size
            if replay.spilled:
                replay.unspill()
            else:
                self.in_memory -= replay.size
        return replay

    def get(self, session: str) -> Replay | None:
        return self.replays.get(session)

    def close(self) -> None:
        for replay in self.replays.values():
            replay.forget()
        self.replays.clear()
        self.size = self.in_memory = 0
        self.spool.close()
