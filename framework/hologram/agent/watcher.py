"""One client of the turn API as the hub sees it: a queue of events to send, bounded in bytes, and the task that sends
them in order.

Each watcher has its own queue and sender task, so a slow client delays nobody — not the turn, not the other clients.
What waits in the queue is the events' wire JSON (`hologram.agent.replay.Sent`, encoded once for every client), so
its bound is in bytes as they go out: a client more than `DeliverySettings.client_queue_bytes` behind (one that
stopped reading) is dropped — its queue released, the hub told (``on_drop``: it detaches the client from every
session, and the transport tells the client, which may resume from its last ``seq``) — rather than let the kernel's
memory grow with what it cannot send.
"""

from __future__ import annotations

import asyncio
import logging
from array import array
from collections.abc import Awaitable, Callable, Hashable

from hologram.agent.replay import Sent

log = logging.getLogger("hologram.agent")
Send = Callable[[bytes], Awaitable[None]]  # one event's wire JSON, sent as a ``turn/event`` notification's params


class Watcher:
    def __init__(
        self,
        key: Hashable,
        send: Send,
        client: str,
        *,
        bound: int,
        on_drop: Callable[[Watcher], None] | None = None,
    ) -> None:
        self.key = key
        self.client = client
        self.bound = bound
        self.queued_bytes = 0  # the events waiting (the one being written counts until it is written)
        self.allowance = 0  # bytes of replays waiting: beyond the bound by right (the replay is bounded itself)
        self.sent_seq = 0  # the last seq written to the client
        self._send = send
        self._on_drop = on_drop
        # What waits: the events' wire JSON one after another in one buffer, with each one's end and seq — not a
        # queue of `Sent`s (~3 small objects an event): a client a few thousand deltas behind, as the web page is
        # while a long answer streams on a busy host, held those among the turn's own, at its peak of small
        # objects (issue 41, docs/memory.md "Sixth round").
        self._lines = bytearray()
        self._ends = array("q")  # where each waiting event's JSON ends in `_lines`
        self._seqs = array("q")
        self._head = 0  # the next event to send: its index in `_ends`
        self._ready = asyncio.Event()  # something waits
        self._empty = asyncio.Event()  # nothing waits, or the watcher is closed
        self._empty.set()
        self._task: asyncio.Task[None] | None = None
        self.closed = False
        self.dropped = False

    def put(self, sent: Sent, *, replay: bool = False) -> bool:
        """Queue one event; False when this watcher is closed, or is dropped now for being too far behind (an
        event larger than the whole bound still goes to a client that has nothing waiting). A ``replay`` event
        (what a client asked for, ``turn/watch`` with ``after``) is queued whatever waits: the replay is bounded
        by ``[delivery] replay_turn_bytes``, and the bound is on how far behind the client falls beyond it."""
        if self.closed:
            return False
        if replay:
            self.allowance += sent.size
        elif self.queued_bytes and self.queued_bytes + sent.size > self.bound + self.allowance:
            log.warning(
                "client %s stopped reading (%d bytes of events waiting, [delivery] client_queue_bytes = %d): it is "
                "dropped, and may resume from seq %d",
                self.client,
                self.queued_bytes,
                self.bound,
                self.sent_seq,
            )
            self.drop()
            return False
        self.queued_bytes += sent.size
        self._lines += sent.line
        self._ends.append(len(self._lines))
        self._seqs.append(sent.seq)
        self._empty.clear()
        self._ready.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._pump())
        return True

    async def _pump(self) -> None:
        while True:
            await self._ready.wait()
            if self.closed:
                return
            i = self._head
            begin = self._ends[i - 1] if i else 0
            line = bytes(self._lines[begin : self._ends[i]])
            self._head = i + 1
            size = len(line)
            try:
                self.sent_seq = self._seqs[i]  # handed to the transport before its first await: a drop still sends it
                await self._send(line)
            except Exception as exc:  # the client went away: the connection's close detaches it
                log.debug("sending to %s failed: %s", self.client, exc)
                self.closed = True
                self._empty.set()  # nothing more goes out: `flushed` does not wait for it
                return
            finally:
                if not self.closed:  # `close` has counted everything out already
                    self.queued_bytes -= size
                    self.allowance = max(0, self.allowance - size)
            if self.closed:
                return
            if self._head == len(self._ends):  # all sent: the buffer starts again
                self._clear()
                self._empty.set()
            elif self._head > 1024 and self._head * 2 > len(self._ends):  # drop what was sent, now and then
                cut, done = self._ends[self._head - 1], self._head
                del self._lines[:cut]
                self._ends = array("q", (end - cut for end in self._ends[done:]))
                self._seqs = self._seqs[done:]
                self._head = 0

    def _clear(self) -> None:
        self._lines = bytearray()
        self._ends = array("q")
        self._seqs = array("q")
        self._head = 0
        self._ready.clear()

    async def flushed(self) -> None:
        """Until every event queued for this watcher is sent (or it went away)."""
        if not self.closed and self._task is not None and not self._task.done():
            await self._empty.wait()

    def drop(self) -> None:
        """Too far behind: stop, release what waits, and tell the hub."""
        self.dropped = True
        self.close()
        if self._on_drop is not None:
            self._on_drop(self)

    def close(self) -> None:
        self.closed = True
        if self._task is not None:
            self._task.cancel()
        self._clear()  # what waited is released now, not when the task gets to run
        self._ready.set()  # (the pump, if it waits, sees the watcher closed)
        self._empty.set()
        self.queued_bytes = self.allowance = 0
