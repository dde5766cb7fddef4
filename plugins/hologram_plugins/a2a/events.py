"""The turn events of the sessions the plugin watches, handed to the requests that wait on them.

The kernel sends each event once, over the plugin's connection (``@plugin.on_turn_event``); a request that
streams a task or waits for it to settle listens on its session *before* it starts or answers the turn, so no
event of its turn can come before it listens. A listener is a queue of its own: a slow client delays nobody.
This is the only thing the plugin holds between events, and only while a request is open; what a task *is*
always comes from the kernel (`tasks`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

MAX_QUEUE = 10_000  # events a listener may lag behind; past that it is told to read the task instead


class Listener:
    def __init__(self, session: str) -> None:
        self.session = session
        self.queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self.overflowed = False

    def put(self, event: dict[str, Any]) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= MAX_QUEUE:
            self.overflowed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(event)

    async def next(self, timeout: float) -> dict[str, Any] | None:
        """The next event; None when none came within ``timeout`` (or the listener fell too far behind)."""
        try:
            return await asyncio.wait_for(self.queue.get(), timeout)
        except TimeoutError:
            return None


class Sessions:
    """session → its listeners, and the sessions whose turn runs (from the events). ``idle(session)`` is
    called when a session has neither a listener nor a running turn (the plugin then stops watching it)."""

    def __init__(self, idle: Callable[[str], None] | None = None) -> None:
        self.listeners: dict[str, set[Listener]] = {}
        self.running: set[str] = set()
        self.idle = idle

    def publish(self, event: dict[str, Any]) -> None:
        session = str(event.get("session") or "")
        for listener in list(self.listeners.get(session, ())):
            listener.put(event)
        kind = event.get("type")
        if kind in ("turn.started", "turn.queued"):
            self.running.add(session)
        elif kind == "turn.ended":
            self.running.discard(session)  # a turn queued behind it starts with its own turn.started
            if session not in self.listeners and self.idle is not None:
                self.idle(session)

    @contextmanager
    def listen(self, session: str) -> Iterator[Listener]:
        listener = Listener(session)
        self.listeners.setdefault(session, set()).add(listener)
        try:
            yield listener
        finally:
            found = self.listeners.get(session)
            if found is not None:
                found.discard(listener)
                if not found:
                    del self.listeners[session]
                    if session not in self.running and self.idle is not None:
                        self.idle(session)
