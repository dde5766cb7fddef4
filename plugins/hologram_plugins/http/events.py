"""Turn events, fanned out per session to the SSE clients (and the OpenAI API's waiting requests).

Every turn's events reach the plugin on the event ring (``turn.event``). Per session the fan-out keeps the
events of the latest turn (from its ``turn.started``; the running one, or the one that just ended), so a
client that reconnects with the last ``seq`` it saw gets exactly the rest: `subscribe` takes the replay and
registers the listener in one step on the event loop (no await between), so nothing falls in between, and
each listener drops a ``seq`` it already has, so nothing comes twice.

What is kept once a session is idle (its turn ended, nobody listening) is bounded: the ring brings every
turn of every client (the terminal, `hologram ask`, other channels), and a turn streamed in small deltas is
hundreds of events, so keeping each session's latest turn for good grew the plugin with every session ever
used. A turn a client listened to, or one this plugin started (its starter reads it from ``seq`` 0 right
after the start's answer: `hologram chat --url`, the page), is kept for the `MAX_IDLE_SESSIONS` most recently
idle sessions, so a page that lost its stream near the end still gets the rest when it reconnects. A finished
turn nobody listened to is kept only among the `MAX_UNHEARD` most recent ones: its starter may not have said
so yet (the ring can bring a fast turn's end before the start's answer reaches `expect`), and without it that
client would wait for events already gone — `hologram chat --url` hung on its second line under load.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("hologram_plugins.http")

MAX_QUEUE = 20_000  # events a listener may lag behind before it is dropped (it reconnects with its seq)
MAX_IDLE_SESSIONS = 16  # idle sessions whose listened-to latest turn is kept for a reconnecting client
MAX_UNHEARD = 4  # ended turns nobody listened to, kept for a starter whose subscribe is still on its way


class Listener:
    """One client's view of a session: a queue of events in ``seq`` order, none twice."""

    def __init__(self, session: str, last_seq: int) -> None:
        self.session = session
        self.last_seq = last_seq
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.dropped = False

    def put(self, event: dict[str, Any]) -> None:
        seq = int(event.get("seq") or 0)
        if seq <= self.last_seq or self.dropped:
            return
        if self.queue.qsize() >= MAX_QUEUE:
            self.dropped = True  # a client that stopped reading: end its stream, it can resume from its seq
            self.queue.put_nowait(None)
            return
        self.last_seq = seq
        self.queue.put_nowait(event)

    async def get(self) -> dict[str, Any] | None:
        """The next event, or None when this listener was dropped (too far behind)."""
        return await self.queue.get()


@dataclass
class SessionEvents:
    turn: list[dict[str, Any]] = field(default_factory=list)  # the latest turn's events, in seq order
    running: bool = False
    pending: str | None = None  # a turn this plugin started whose turn.started has not come yet
    listeners: set[Listener] = field(default_factory=set)
    listened: bool = False  # a listener was subscribed during the latest turn
    ended: str | None = None  # the id of the latest turn that ended (kept when its events are dropped)
    current: str | None = None  # the id of the latest turn that started

    @property
    def idle(self) -> bool:
        return not self.listeners and not self.running and self.pending is None


class Fanout:
    """Sessions → their latest turn's events and their listeners. ``on_idle(session)`` is called when a
    session has neither a listener nor a running turn (the plugin stops watching it then)."""

    def __init__(self, on_idle: Callable[[str], None] | None = None) -> None:
        self.sessions: dict[str, SessionEvents] = {}
        self.on_idle = on_idle
        self.missed = 0
        self.kept: OrderedDict[str, None] = OrderedDict()  # idle sessions that keep their turn, oldest first
        self.unheard: OrderedDict[str, None] = OrderedDict()  # the same for turns nobody listened to

    def publish(self, event: dict[str, Any]) -> None:
        """An event from the ring. Called in ring order, which is each session's ``seq`` order."""
        sid = str(event.get("session") or "")
        if not sid:
            return
        state = self.sessions.setdefault(sid, SessionEvents())
        kind = event.get("type")
        if kind == "turn.started":
            state.turn = []
            state.running = True
            state.current = str(event.get("turn") or "")
            state.listened = bool(state.listeners)
            self._unkeep(sid)
            if state.pending == event.get("turn"):
                state.pending = None
                state.listened = True  # started here: its starter subscribes from seq 0 after the answer
        if state.turn and int(event.get("seq") or 0) <= int(state.turn[-1].get("seq") or 0):
            return  # already have it
        state.turn.append(event)
        for listener in list(state.listeners):
            listener.put(event)
        # a turn queued behind the running one and cancelled before it started ends too: the session stays busy
        if kind == "turn.ended" and not (state.running and event.get("turn") != state.current):
            state.running = False
            state.ended = str(event.get("turn") or "")
            self._maybe_idle(sid, state)

    def subscribe(self, session: str, after: int | None) -> Listener:
        """A listener for ``session``: first the latest turn's events with ``seq > after`` (``after`` None:
        the running turn's from its start, nothing when none runs), then every new one."""
        state = self.sessions.setdefault(session, SessionEvents())
        listener = Listener(session, -1)
        if after is not None:
            replay = [e for e in state.turn if int(e.get("seq") or 0) > after]
            listener.last_seq = after
        else:
            replay = list(state.turn) if state.running else []
            if state.turn and not state.running:
                listener.last_seq = int(state.turn[-1].get("seq") or 0)
        for event in replay:
            listener.put(event)
        state.listeners.add(listener)
        state.listened = True
        self._unkeep(session)
        return listener

    def expect(self, session: str, turn: str) -> None:
        """This plugin started ``turn``: the session is busy until its turn.ended, even if the ring has not
        brought its turn.started yet (or already brought its end: then it may be idle now)."""
        state = self.sessions.setdefault(session, SessionEvents())
        if state.ended == turn or any(e.get("turn") == turn for e in state.turn):
            self._maybe_idle(session, state)
        else:
            state.pending = turn
            self._unkeep(session)

    def unsubscribe(self, listener: Listener) -> None:
        state = self.sessions.get(listener.session)
        if state is None:
            return
        state.listeners.discard(listener)
        self._maybe_idle(listener.session, state)

    def watched(self, session: str) -> bool:
        state = self.sessions.get(session)
        return state is not None and bool(state.listeners)

    def running(self, session: str) -> bool:
        state = self.sessions.get(session)
        return state is not None and state.running

    def forget(self, session: str) -> None:
        """A deleted session: drop what is kept of it."""
        state = self.sessions.pop(session, None)
        self._unkeep(session)
        if state is not None:
            for listener in state.listeners:
                listener.queue.put_nowait(None)

    def _maybe_idle(self, session: str, state: SessionEvents) -> None:
        if not state.idle:
            return
        self._retire(session, state)
        if self.on_idle is not None:
            self.on_idle(session)

    def _unkeep(self, session: str) -> None:
        self.kept.pop(session, None)
        self.unheard.pop(session, None)

    def _retire(self, session: str, state: SessionEvents) -> None:
        """An idle session keeps its latest turn among the `MAX_IDLE_SESSIONS` most recently idle if a client
        listened to it (or this plugin started it), else among the `MAX_UNHEARD` most recent; the others keep
        just the id of their ended turn."""
        kept, bound = (self.kept, MAX_IDLE_SESSIONS) if state.listened else (self.unheard, MAX_UNHEARD)
        kept[session] = None
        kept.move_to_end(session)
        while len(kept) > bound:
            oldest, _ = kept.popitem(last=False)
            old = self.sessions.get(oldest)
            if old is not None and old.idle:
                old.turn = []
