"""Turn events routed to the plugin's clients: each SSE stream, and each OpenAI API request, is a `Listener` of one
session. The plugin keeps no turn state and no events of its own: the kernel sends it the events of the sessions
it watches over its own connection (`plugin.on_turn_event`), and keeps them for replay.

A listener is a queue of its session's events in ``seq`` order, none twice, each as its wire JSON (encoded once
per event for all the session's listeners, and written to the SSE stream as it is), bounded in bytes
(``[plugins.http] stream_queue_bytes``): a client that falls further behind is dropped — its stream ends, and a
browser's ``EventSource`` (or `hologram chat --url`) reconnects with the last ``seq`` it got as ``Last-Event-ID``.

What a stream that resumes missed comes from the kernel: the plugin watches the session again with ``after``
(`Channel.open_stream`), and the kernel queues what it keeps of the session after that seq on the plugin's
connection. When the plugin already watched the session, live events come on the same connection, the copies of
some replayed ones among them (before the replay); so the new listener holds what it gets, by seq (two copies of
a seq are one), until the kernel's answer and its count say the replay is all there: the kernel keeps a run of
the session's latest events, so every seq of the session from ``replay_first`` to ``replay_last`` is replayed,
and ``replayed`` distinct seqs of that range mean the whole replay has come. Then it passes what it holds on in
order. The session's other listeners drop the replayed events, whose seqs they have.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

log = logging.getLogger("hologram_plugins.http")


@dataclass(slots=True)  # not frozen: a frozen one costs 0.6 µs to make, this 0.15 (one per event)
class Out:
    """One event for a client: its seq and its wire JSON."""

    seq: int
    line: bytes

    def event(self) -> dict[str, Any]:
        loaded: dict[str, Any] = orjson.loads(self.line)
        return loaded


class Listener:
    """One client's view of a session. ``after``: the last seq the client has (None: from now on). A listener made
    ``catching_up`` holds what comes until `caught_up` (the kernel's answer) and the count say its replay is in.

    The bound is on what waits beyond the replay: a stream that resumes gets the replay whole (the kernel bounds
    it, ``[delivery] replay_turn_bytes``), and is dropped only if it then falls ``bound`` bytes further behind."""

    def __init__(self, session: str, after: int | None, bound: int, *, catching_up: bool = False) -> None:
        self.session = session
        self.last_seq = after if after is not None else -1
        self.bound = bound
        self.queue: asyncio.Queue[Out | None] = asyncio.Queue()
        self.queued_bytes = 0
        self.dropped = False
        self.ended = False
        self._held: dict[int, Out] | None = {} if catching_up else None
        self._replay: tuple[int, int] | None = None  # the replay's (first, last) seq, once the kernel said them
        self._missing = 0  # distinct seqs of that range still to come
        self._allowance = 0  # bytes of the replay not yet read: waiting beyond the bound by right

    def put(self, out: Out) -> None:
        if self.ended or out.seq <= self.last_seq:
            return
        held = self._held
        if held is None:
            self._enqueue(out)
            return
        if out.seq in held:
            return  # the other copy of a replayed event
        held[out.seq] = out
        self.queued_bytes += len(out.line)
        if self._replay is not None and self.queued_bytes > self.bound + self._allowance:
            self.drop()  # the replay and more than the bound besides: too far behind already
            return
        if self._replay is not None and self._replay[0] <= out.seq <= self._replay[1]:
            self._missing -= 1
            if not self._missing:
                self._release()

    def caught_up(
        self, replayed: int, first: int | None, last: int | None, *, size: int = 0, floor: int | None = None
    ) -> None:
        """The kernel's answer to the watch: it replayed ``replayed`` events of ``size`` bytes, seqs ``first`` to
        ``last``. ``floor``: the client wants nothing up to that seq (a stream opened without ``after`` when no
        turn runs: only what comes next)."""
        held = self._held
        if held is None or self.ended:
            return
        if floor is not None:
            self.last_seq = max(self.last_seq, floor)
        if not replayed or first is None or last is None:
            self._release()
            return
        self._replay, self._allowance = (first, last), size
        self._missing = replayed - sum(1 for seq in held if first <= seq <= last)
        if self._missing <= 0:
            self._release()

    def _release(self) -> None:
        """Pass on what was held, in order (its bytes are the replay's allowance, whatever the bound)."""
        held, self._held = self._held or {}, None
        self.queued_bytes = 0
        ordered = [held[seq] for seq in sorted(held) if seq > self.last_seq]
        self._allowance = sum(len(out.line) for out in ordered)
        for out in ordered:
            self._enqueue(out)

    def _enqueue(self, out: Out) -> None:
        if out.seq <= self.last_seq or self.ended:
            return
        size = len(out.line)
        if self.queued_bytes and self.queued_bytes + size > self.bound + self._allowance:
            self.drop()
            return
        self.last_seq = out.seq
        self.queued_bytes += size
        self.queue.put_nowait(out)

    async def get(self) -> Out | None:
        """The next event, or None when this listener ended (dropped for being too far behind, its session
        deleted, or the kernel dropped the plugin)."""
        out = await self.queue.get()
        if out is not None:
            size = len(out.line)
            self.queued_bytes -= size
            self._allowance = max(0, self._allowance - size)  # the replay comes first: read, it is no more due
        return out

    def drop(self) -> None:
        """Too far behind: what waits is released and the stream ends; the client resumes from the seq it has."""
        log.info(
            "http: a client of session %s fell more than %d bytes behind ([plugins.http] stream_queue_bytes): "
            "its stream ends, it resumes from its last seq",
            self.session,
            self.bound,
        )
        self.dropped = True
        self.end()

    def end(self) -> None:
        if self.ended:
            return
        self.ended = True
        self._held = None
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queued_bytes = 0
        self.queue.put_nowait(None)


class Router:
    """Session → its listeners; nothing else. ``on_idle(session)`` is called when a session's last listener goes."""

    def __init__(self, bound: int, on_idle: Callable[[str], None] | None = None) -> None:
        self.bound = bound
        self.listeners: dict[str, set[Listener]] = {}
        self.on_idle = on_idle

    def publish(self, event: dict[str, Any]) -> None:
        """An event from the kernel, in the order it sent them."""
        listeners = self.listeners.get(str(event.get("session") or ""))
        if not listeners:
            return
        # copied to its own size: orjson's result holds a 4 KiB buffer however short it is (hologram.base._fastjson)
        out = Out(int(event.get("seq") or 0), b"%b" % orjson.dumps(event))
        for listener in list(listeners):
            listener.put(out)

    def listen(self, session: str, after: int | None, *, catching_up: bool = False) -> Listener:
        listener = Listener(session, after, self.bound, catching_up=catching_up)
        self.listeners.setdefault(session, set()).add(listener)
        return listener

    def unlisten(self, listener: Listener) -> None:
        listener.end()
        listeners = self.listeners.get(listener.session)
        if listeners is None:
            return
        listeners.discard(listener)
        if not listeners:
            del self.listeners[listener.session]
            if self.on_idle is not None:
                self.on_idle(listener.session)

    def listened(self, session: str) -> bool:
        return bool(self.listeners.get(session))

    def end(self, session: str | None = None) -> None:
        """End the listeners of ``session`` (deleted), or of every session (the kernel dropped the plugin): their
        clients reconnect, or are told."""
        for name in [session] if session is not None else list(self.listeners):
            for listener in self.listeners.get(name, ()):
                listener.end()
