"""The client of a turn: where its deltas go and who is asked to approve a tool call.

A control-socket client (`hologram ask`, `hologram chat`) sends ``ask`` and keeps the connection open; the
kernel streams notifications to it on that same connection (``turn/started``, ``turn/delta``,
``turn/event``) and may send it a request (``turn/approval``) before answering ``ask`` itself. The control
server hands a method only its params, so `calling_connection` finds the connection the request came in on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from hologram import protocol
from hologram.rpc import Connection, ConnectionClosed, RequestTimeout, RpcError

log = logging.getLogger("hologram.agent")
APPROVAL_TIMEOUT_S = 300.0


def calling_connection() -> Connection | None:
    """The control connection whose request is being handled by the current task, if any."""
    from hologram.kernel.control import current_connection

    return current_connection.get()


class Channel:
    """One client attached to a turn. Without a connection it is a silent, non-interactive channel."""

    def __init__(self, connection: Connection | None, *, interactive: bool, name: str = "cli") -> None:
        self.connection = connection
        self.interactive = interactive and connection is not None
        self.name = name
        self._lock = asyncio.Lock()

    async def send(self, method: str, params: dict[str, Any]) -> None:
        if self.connection is None or self.connection.closed:
            return
        with contextlib.suppress(ConnectionClosed):
            await self.connection.notify(method, params)

    async def event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind in ("content_delta", "reasoning"):
            which = "content" if kind == "content_delta" else "reasoning"
            await self.send(protocol.TURN_DELTA, {"kind": which, "text": event.get("text", "")})
        elif kind in ("tool_call", "tool_result", "tool_output"):
            await self.send(protocol.TURN_EVENT, event)

    async def approve(self, request: dict[str, Any]) -> dict[str, Any]:
        """Ask the person at this channel; one question at a time."""
        if not self.interactive or self.connection is None:
            return {"approved": False, "reason": f"the {self.name} client is not interactive; nobody can approve"}
        async with self._lock:
            try:
                answer = await self.connection.request(protocol.TURN_APPROVAL, request, timeout=APPROVAL_TIMEOUT_S)
            except RequestTimeout:
                return {"approved": False, "reason": f"no answer within {APPROVAL_TIMEOUT_S:g} s"}
            except (ConnectionClosed, RpcError) as exc:
                return {"approved": False, "reason": f"the client could not be asked: {exc}"}
        if not isinstance(answer, dict):
            return {"approved": False, "reason": "the client sent no answer"}
        return {"approved": bool(answer.get("approved")), "reason": str(answer.get("reason") or "")}
