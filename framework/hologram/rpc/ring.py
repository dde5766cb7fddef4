"""Event ring: single-writer, multi-reader broadcast of kernel events through shared memory.

The kernel writes every event once into a memfd ring; each plugin maps it read-only and keeps its own
cursor, so a reader is just an fd and two integers and readers can come and go without the writer knowing.
The writer never waits for anyone: it overwrites the oldest records, and a reader that was lapped jumps to
the oldest intact record and is told how many it missed. Wake-ups go through one eventfd per reader.

Torn reads are detected without locks, seqlock style: the writer publishes "records before tail_seq may be
overwritten" *before* it touches their bytes; a reader copies a record and *then* re-reads tail_seq — if the
tail passed the record meanwhile, the copy is discarded. A CRC32 per record backs this up on CPUs whose
memory ordering is weaker than x86's (Python offers no fences).

Layout (little-endian, all offsets in bytes) — see docs/protocol.md for the normative description:

    header (64):  magic u32 | version u32 | capacity u64 | gen u64 | write_seq u64 | write_pos u64
                  | tail_seq u64 | tail_pos u64 | reserved u64
    data (capacity bytes) of records, each 8-aligned and never crossing the end of the data area:
                  seq u64 | payload_len u32 | type_len u16 | flags u16 | crc32 u32 | reserved u32
                  | type (UTF-8) | payload (JSON) | padding to 8
    `*_pos` are monotonic byte counters; a record at pos lives at data[pos % capacity].
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import mmap
import os
import struct
import time
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from hologram.base import _fastjson as _json

from .errors import RingError

MAGIC = 0x474E5248  # "HRNG"
VERSION = 1
HEADER = struct.Struct("<IIQQQQQQQ")
HEADER_SIZE = 64
RECORD = struct.Struct("<QIHHII")
RECORD_SIZE = RECORD.size  # 24
FLAG_WRAP = 1  # padding: the rest of this lap is unused, the next record starts at the next lap
_GEN, _WRITE_SEQ, _WRITE_POS, _TAIL_SEQ, _TAIL_POS = 16, 24, 32, 40, 48
_U64 = struct.Struct("<Q")
_SNAPSHOT = struct.Struct("<QQQQQ")  # gen, write_seq, write_pos, tail_seq, tail_pos
DEFAULT_RING_SIZE = 4 * 1024 * 1024
_MAX_RETRIES = 64
# How long a reader waits for a header the writer is updating: the writer (the kernel's loop) can be descheduled
# between the two halves of an update on a loaded machine, for a scheduler slice or a few; only a writer that died
# mid-update leaves it odd for this long.
_SETTLE_S = 2.0
_SETTLE_NAP_S = 0.0005


class RingSpec(TypedDict):
    """How a plugin finds the ring: inherited fd and total mapping size (initialize params)."""

    fd: int
    size: int


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    type: str
    payload: bytes

    def data(self) -> Any:
        return _json.loads(self.payload)


@dataclass(slots=True)
class ReadResult:
    events: list[Event] = field(default_factory=list)
    missed: int = 0  # events overwritten before this reader got to them (all types, not only subscribed)


def _align8(n: int) -> int:
    return (n + 7) & ~7


def new_eventfd() -> int:
    """A non-blocking, close-on-exec eventfd for one reader (pass it to the child with pass_fds)."""
    return os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)


class RingWriter:
    """The kernel's end. Only one writer per ring, ever; it needs no lock because nobody else writes."""

    def __init__(self, capacity: int = DEFAULT_RING_SIZE, name: str = "events") -> None:
        capacity = _align8(capacity)
        if capacity < 4 * 1024:
            raise ValueError("ring capacity must be at least 4 KiB")
        self.capacity = capacity
        self.size = HEADER_SIZE + capacity
        self.max_record = capacity // 4
        self.fd = os.memfd_create(f"hologram-ring-{name}", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, self.size)
        self._mm = mmap.mmap(self.fd, self.size, access=mmap.ACCESS_WRITE)
        HEADER.pack_into(self._mm, 0, MAGIC, VERSION, capacity, 0, 0, 0, 0, 0, 0)
        self._seq = 0
        self._pos = 0
        self._gen = 0
        self._records: collections.deque[tuple[int, int]] = collections.deque()  # (seq, pos) still intact
        self._wakers: dict[int, frozenset[str] | None] = {}

    def spec(self) -> RingSpec:
        return RingSpec(fd=self.fd, size=self.size)

    @property
    def next_seq(self) -> int:
        return self._seq

    # -- wake-ups (the kernel-side half of subscriptions) --------------------------------------------------

    def add_waker(self, eventfd: int, types: Collection[str] | None = None) -> None:
        """Signal `eventfd` after each event whose type is in `types` (None: every event)."""
        self._wakers[eventfd] = None if types is None else frozenset(types)

    def remove_waker(self, eventfd: int) -> None:
        self._wakers.pop(eventfd, None)

    # -- writing ---------------------------------------------------------------------------------------

    def publish(self, event: Mapping[str, Any]) -> int:
        """Publish `{"type": ..., ...}` as JSON; returns its sequence number. Never blocks."""
        etype = event.get("type")
        if not isinstance(etype, str):
            raise RingError("an event needs a string 'type'")
        payload = _json.dumps_bytes(event)
        return self.publish_raw(etype, payload)

    def publish_raw(self, etype: str, payload: bytes) -> int:
        type_b = etype.encode()
        body_len = len(type_b) + len(payload)
        rec_len = _align8(RECORD_SIZE + body_len)
        if len(type_b) > 0xFFFF or rec_len > self.max_record:
            raise RingError(
                f"event of {rec_len} bytes exceeds the ring's record limit {self.max_record}; "
                "put the bulk in the arena and publish a ref"
            )
        cap, mm, seq = self.capacity, self._mm, self._seq
        pos = self._pos
        rem = cap - pos % cap
        start = pos + rem if rem < rec_len else pos
        end = start + rec_len
        records = self._records
        while records and records[0][1] < end - cap:
            records.popleft()
        tail_seq, tail_pos = records[0] if records else (seq, start)

        self._gen += 1  # odd: header in flux
        _U64.pack_into(mm, _GEN, self._gen)
        _U64.pack_into(mm, _TAIL_SEQ, tail_seq)  # invalidate BEFORE overwriting (seqlock contract)
        _U64.pack_into(mm, _TAIL_POS, tail_pos)
        if start != pos and rem >= RECORD_SIZE:
            RECORD.pack_into(mm, HEADER_SIZE + pos % cap, seq, 0, 0, FLAG_WRAP, 0, 0)
        off = HEADER_SIZE + start % cap
        crc = zlib.crc32(payload, zlib.crc32(type_b))
        RECORD.pack_into(mm, off, seq, len(payload), len(type_b), 0, crc, 0)
        body = off + RECORD_SIZE
        mm[body : body + len(type_b)] = type_b
        mm[body + len(type_b) : body + body_len] = payload
        _U64.pack_into(mm, _WRITE_SEQ, seq + 1)
        _U64.pack_into(mm, _WRITE_POS, end)
        self._gen += 1
        _U64.pack_into(mm, _GEN, self._gen)

        records.append((seq, start))
        self._seq, self._pos = seq + 1, end
        self._wake(etype)
        return seq

    def _wake(self, etype: str) -> None:
        for efd, types in list(self._wakers.items()):
            if types is not None and etype not in types:
                continue
            try:
                os.eventfd_write(efd, 1)
            except BlockingIOError:  # counter saturated: the reader is signalled already
                pass
            except OSError:  # fd closed under us: the reader is gone
                self._wakers.pop(efd, None)

    def close(self) -> None:
        self._mm.close()
        os.close(self.fd)


class RingReader:
    """One reader's cursor over a mapped ring. `types` filters what `read` returns (None: everything)."""

    def __init__(self, spec: RingSpec, *, types: Collection[str] | None = None, start: str = "latest"):
        self._mm = mmap.mmap(spec["fd"], spec["size"], access=mmap.ACCESS_READ)
        magic, version, capacity = struct.unpack_from("<IIQ", self._mm, 0)
        if magic != MAGIC or version != VERSION or HEADER_SIZE + capacity > spec["size"]:
            self._mm.close()
            raise RingError(f"not a v{VERSION} event ring (magic {magic:#x}, version {version})")
        self.capacity = capacity
        self.types: frozenset[str] | None = None
        self.set_filter(types)
        _, write_seq, write_pos, tail_seq, tail_pos = self._snapshot()
        if start == "oldest":
            self.next_seq, self._pos = tail_seq, tail_pos
        elif start == "latest":
            self.next_seq, self._pos = write_seq, write_pos
        else:
            raise ValueError("start must be 'latest' or 'oldest'")
        self.torn_reads = 0  # copies discarded because the writer overwrote them meanwhile (diagnostics)

    def set_filter(self, types: Collection[str] | None) -> None:
        self.types = None if types is None else frozenset(types)

    def _snapshot(self) -> tuple[int, int, int, int, int]:
        """The header, read consistently (seqlock). A short spin covers the usual case; then the reader naps
        so a preempted writer gets the CPU to finish its update — on 2 loaded cores the spin alone gave up
        while the kernel was descheduled mid-update, and the plugin's event pump died with this error."""
        deadline: float | None = None
        while True:
            for _ in range(_MAX_RETRIES * 16):
                snap = _SNAPSHOT.unpack_from(self._mm, _GEN)
                if snap[0] % 2 == 0 and _U64.unpack_from(self._mm, _GEN)[0] == snap[0]:
                    return snap
            now = time.monotonic()
            if deadline is None:
                deadline = now + _SETTLE_S
            elif now > deadline:
                raise RingError(f"ring header never settled within {_SETTLE_S:g} s (writer died mid-update?)")
            time.sleep(_SETTLE_NAP_S)

    def read(self, max_events: int = 1024) -> ReadResult:
        """Everything published since the last call (up to `max_events`), never blocking."""
        result = ReadResult()
        for _ in range(_MAX_RETRIES):
            if self._read_some(result, max_events):
                return result
            self.torn_reads += 1
        # Persistent inconsistency (should not happen): give up on the backlog rather than spin.
        _, write_seq, write_pos, _, _ = self._snapshot()
        result.missed += write_seq - self.next_seq
        self.next_seq, self._pos = write_seq, write_pos
        return result

    def _read_some(self, result: ReadResult, max_events: int) -> bool:
        """Append records to `result`; False if a record was torn (caller retries from a new snapshot)."""
        _, write_seq, _, tail_seq, tail_pos = self._snapshot()
        if self.next_seq < tail_seq:
            result.missed += tail_seq - self.next_seq
            self.next_seq, self._pos = tail_seq, tail_pos
        mm, cap, types = self._mm, self.capacity, self.types
        while self.next_seq < write_seq and len(result.events) < max_events:
            off = self._pos % cap
            rem = cap - off
            if rem < RECORD_SIZE:
                self._pos += rem
                continue
            seq, plen, tlen, flags, crc, _ = RECORD.unpack_from(mm, HEADER_SIZE + off)
            if seq != self.next_seq:
                return False
            if flags & FLAG_WRAP:
                self._pos += rem
                continue
            rec_len = _align8(RECORD_SIZE + tlen + plen)
            if rec_len > rem:
                return False
            body = HEADER_SIZE + off + RECORD_SIZE
            type_b = mm[body : body + tlen]
            wanted = types is None or type_b.decode("utf-8", "replace") in types
            payload = mm[body + tlen : body + tlen + plen] if wanted else b""
            if _U64.unpack_from(mm, _TAIL_SEQ)[0] > seq:  # lapped while copying: discard
                return False
            if wanted:
                if zlib.crc32(payload, zlib.crc32(type_b)) != crc:
                    return False
                result.events.append(Event(seq, type_b.decode("utf-8", "replace"), payload))
            self.next_seq += 1
            self._pos += rec_len
        return True

    def close(self) -> None:
        self._mm.close()


class AsyncRingReader:
    """asyncio front-end: `await get()` returns as soon as there is something (events or a miss count).

    The eventfd stays registered with the loop; its callback drains the counter and sets a flag, and `get`
    re-reads the ring after clearing that flag, so no wake-up can fall between the check and the wait.
    """

    def __init__(self, reader: RingReader, eventfd: int, *, max_events: int = 1024) -> None:
        self.reader = reader
        self.eventfd = eventfd
        self.max_events = max_events
        self._loop = asyncio.get_running_loop()
        self._signal = asyncio.Event()
        self._loop.add_reader(eventfd, self._on_readable)

    def _on_readable(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.eventfd_read(self.eventfd)
        self._signal.set()

    async def get(self) -> ReadResult:
        while True:
            self._signal.clear()
            result = self.reader.read(self.max_events)
            if result.events or result.missed:
                return result
            await self._signal.wait()

    def __aiter__(self) -> AsyncRingReader:
        return self

    async def __anext__(self) -> ReadResult:
        return await self.get()

    def close(self) -> None:
        self._loop.remove_reader(self.eventfd)
