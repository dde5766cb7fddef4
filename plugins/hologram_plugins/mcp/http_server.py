"""``/mcp`` on the web port: Hologram as an MCP server over streamable HTTP, for MCP clients that speak HTTP.

The server is `hologram mcp`'s own (`hologram.clients.mcp_server.build_server`: ``ask``, ``memory_search``, and
with ``[plugins.mcp] http_tools = true`` the plugins' tools), reaching the kernel through this plugin's
``kernel.turns`` and ``kernel.memory`` (turns_access.py), served by the ``mcp`` package's
`StreamableHTTPSessionManager` and mounted with `Plugin.mount` through the http plugin's ``http.routes``: the web
port's token, Host and Origin checks and body limit come first, so the package's own DNS-rebinding check is
off (the Host was checked already). Stateless: each request stands alone (no MCP session to keep across the
forwarding), which the streamable HTTP transport allows. The package is started on the first request, so a
kernel no MCP client calls over HTTP does not start it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.sdk import Plugin
    from hologram_plugins.mcp.turns_access import TurnsAccess

log = logging.getLogger("hologram_plugins.mcp")


class McpOverHttp:
    """An ASGI app: the MCP server's streamable HTTP transport, started when the first request comes."""

    def __init__(self, plugin: Plugin[Any], settings: Callable[[], tuple[bool, bool]]) -> None:
        self.plugin = plugin
        self.settings = settings  # (serve_http, http_tools), from this start
        self.access: TurnsAccess | None = None  # made with the server: the turn events of its asks go there
        self._manager: Any = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        serve, tools = self.settings()
        if not serve:
            body = b'{"error": {"code": "not_found", "message": "/mcp is off: [plugins.mcp] serve_http = false"}}'
            await send(
                {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        manager = await self._started(tools)
        await manager.handle_request(scope, receive, send)

    def publish(self, event: dict[str, Any]) -> None:
        """A turn event over the plugin's connection: for the asks of /mcp (turns_access.py)."""
        if self.access is not None:
            self.access.publish(event)

    async def _started(self, tools: bool) -> Any:
        async with self._lock:
            if self._manager is None:
                from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

                from hologram.clients.mcp_server import build_server
                from hologram_plugins.mcp.turns_access import TurnsAccess

                self.access = TurnsAccess(self.plugin)
                server = build_server(self.access, graph_tools=tools)
                manager = StreamableHTTPSessionManager(app=server, stateless=True)
                running = asyncio.Event()
                self._task = asyncio.ensure_future(self._run(manager, running))
                await running.wait()
                self._manager = manager
        return self._manager

    async def _run(self, manager: Any, running: asyncio.Event) -> None:
        async with manager.run():
            running.set()
            await asyncio.Event().wait()  # until the plugin stops (the task is cancelled)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
