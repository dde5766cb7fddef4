"""One stream of turn-API events, the same for every client: the events of a session or of one turn, in order.

Shared by `TurnClient` (control socket, `control.py`) and `HttpTurnClient` (`http_client.py`), so neither
client module imports the other: before, the HTTP client took this from the socket client, and the socket
client handed out the HTTP one — a circle.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

from hologram.api import turn as api
from hologram.rpc import ConnectionClosed

_END = object()  # put into every stream's queue when the connection closes


def start_params(
    text: str | None,
    client: str,
    approvals: bool,
    session: str | None,
    on_disconnect: api.OnDisconnect | None,
    scene: str | None,
    partner: str | None,
    parts: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """``turn/start``'s params as both clients send them (a plain dict of `hologram.api.params.StartParams`'
    fields: the kernel validates it), so the socket and HTTP carry the same ones; unset ones are left out.
    ``parts``: typed input parts, sent as ``input`` instead of ``text``."""
    params: dict[str, Any] = {"text": text} if parts is None else {"input": parts}
    params.update({"client": client, "approvals": approvals})
    optional = {"session": session or None, "on_disconnect": on_disconnect, "scene": scene, "partner": partner}
    params.update({k: v for k, v in optional.items() if v is not None})
    return params


def answer_params(decision: bool | str, reason: str) -> dict[str, Any]:
    """``turn/approve``'s answer: a decision, or a bool as version 1's ``approved``."""
    if isinstance(decision, bool):
        return {"approved": decision, "reason": reason}
    return {"decision": decision, "reason": reason}


class _Streams(Protocol):
    """What an `EventStream` needs of its client (`TurnClient`, `HttpTurnClient`)."""

    _streams: set[EventStream]


class KernelGone(ConnectionClosed):
    """The kernel closed the connection (it stopped, or was killed) before the stream ended."""


class EventStream:
    """The events of one session (``turn`` None) or one turn, in order, as they come."""

    def __init__(self, client: _Streams, session: str | None, turn: str | None) -> None:
        self.client = client
        self.session = session
        self.turn = turn
        self.ended: api.TurnEnded | None = None  # a turn's stream: its last event
        self.events: list[Any] = []  # what this stream has yielded, in order
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    def _offer(self, event: Any) -> None:
        if (self.session is None or event.session == self.session) and (self.turn is None or event.turn == self.turn):
            self._queue.put_nowait(event)

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Any]:
        while self.turn is None or self.ended is None:
            event = await self._queue.get()
            if event is _END:
                raise KernelGone("the kernel closed the connection (did it stop?)")
            self.events.append(event)
            if self.turn is not None and isinstance(event, api.TurnEnded):
                self.ended = event
            yield event
        self.client._streams.discard(self)

    async def result(self) -> api.TurnEnded:
        """Wait for the end of this turn (the events are kept in ``events``)."""
        async for _ in self:
            pass
        assert self.ended is not None
        return self.ended

    def close(self) -> None:
        self.client._streams.discard(self)
