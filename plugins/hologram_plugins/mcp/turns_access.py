"""How ``/mcp`` reaches the kernel: the plugin's own ``kernel.turns`` and ``kernel.memory`` facilities.

`hologram mcp` (a process of its own) is a control-socket client; ``/mcp`` runs inside this plugin, and a plugin
reaches the kernel through the facilities its manifest requires — as the a2a and qq channels do — never by
finding the kernel's control socket from its data directory. This is the `KernelAccess` of
`hologram.clients.mcp_server` over them:

- ``ask``: ``sessions_create`` when no session is given, then ``start`` (watching; approvals off: an MCP client
  cannot answer them, the user's policy decides as for `hologram mcp`); the turn's events arrive over the
  plugin's connection (``@plugin.on_turn_event`` → `publish`), routed to the asks waiting on their session.
  The HTTP client that asked going away cancels the call, and the call cancels its turn (``cancel``): the
  session stays valid, as when a control client's connection closes. When no ask waits on a session any more,
  the plugin stops watching it (``unwatch``); starts and unwatches take turns (one lock: each is one quick
  facility call), so a new ask's watch is never undone by an old one's unwatch.
- ``tools_list``, ``tools_call``: ``kernel.turns``' (the channel is this plugin: its tool policy applies).
- ``memory_search``: ``kernel.memory`` ``search``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from hologram.api import turn as api
from hologram.clients.mcp_server import Answer
from hologram.sdk import Plugin

log = logging.getLogger("hologram_plugins.mcp")


class TurnsAccess:
    """`hologram.clients.mcp_server.KernelAccess` through ``kernel.turns`` and ``kernel.memory``."""

    where = "the kernel"

    def __init__(self, plugin: Plugin[Any]) -> None:
        self.plugin = plugin
        self.waiting: dict[str, list[asyncio.Queue[dict[str, Any]]]] = {}  # session → the asks' event queues
        self._watching = asyncio.Lock()  # a start (it watches) and an unwatch never interleave

    def publish(self, event: dict[str, Any]) -> None:
        """A turn event of a watched session (``@plugin.on_turn_event``)."""
        for queue in self.waiting.get(str(event.get("session")), []):
            queue.put_nowait(event)

    async def _turns(self, method: str, **params: Any) -> Any:
        return await self.plugin.facility("kernel.turns").call(method, **params)

    async def ask(self, text: str, session: str | None) -> Answer:
        if session is None:
            session = str((await self._turns("sessions_create"))["session"])
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        turn: str | None = None
        try:
            async with self._watching:  # registered before the start: no event of the turn is missed
                self.waiting.setdefault(session, []).append(queue)
                started = await self._turns("start", text=text, session=session)
            turn = str(started["turn"])
            return await self._follow(queue, session, turn)
        except asyncio.CancelledError:  # the MCP client went: its turn goes too
            if turn is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._turns("cancel", session=session, turn=turn))
            raise
        finally:
            await asyncio.shield(self._leave(session, queue))

    async def _follow(self, queue: asyncio.Queue[dict[str, Any]], session: str, turn: str) -> Answer:
        answer, errors = [], []
        while True:
            event = api.parse_event(await queue.get())
            if event.turn != turn:  # another turn of the session (one queued before this one)
                continue
            if isinstance(event, api.ContentDelta):
                answer.append(event.text)
            elif isinstance(event, api.TurnFailed):
                errors.append(event.message)
            elif isinstance(event, api.TurnEnded):
                return Answer(session, event.output or "".join(answer), event.stop_reason, errors)

    async def _leave(self, session: str, queue: asyncio.Queue[dict[str, Any]]) -> None:
        async with self._watching:
            queues = self.waiting.get(session, [])
            if queue in queues:
                queues.remove(queue)
            if queues:
                return
            self.waiting.pop(session, None)
            try:
                await self._turns("unwatch", session=session)
            except Exception as exc:  # the kernel going away: nothing left to stop watching
                log.debug("unwatch %s: %s", session, exc)

    async def tools_list(self) -> list[dict[str, Any]]:
        return list((await self._turns("tools_list"))["tools"])

    async def tools_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return dict(await self._turns("tools_call", tool=name, arguments=arguments))

    async def memory_search(self, text: str, limit: int) -> dict[str, Any]:
        return dict(await self.plugin.facility("kernel.memory").call("search", text=text, limit=limit))
