"""``/mcp`` on the web port: Hologram as an MCP server over streamable HTTP, for MCP clients that speak HTTP.

The server is `hologram mcp`'s own (`hologram.clients.mcp_server.build_server`: ``ask``, ``memory_search``, and
with ``[plugins.mcp] http_tools = true`` the plugins' tools), served by the ``mcp`` package's
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
from pathlib import Path
from typing import Any

log = logging.getLogger("hologram_plugins.mcp")


class McpOverHttp:
    """An ASGI app: the MCP server's streamable HTTP transport, started when the first request comes."""

    def __init__(self, settings: Callable[[], tuple[Path, bool, bool]]) -> None:
        self.settings = settings  # (the kernel's data dir, serve_http, http_tools), from this start
        self._manager: Any = None
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        data_dir, serve, tools = self.settings()
        if not serve:
            body = b'{"error": {"code": "not_found", "message": "/mcp is off: [plugins.mcp] serve_http = false"}}'
            await send(
                {"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        manager = await self._started(data_dir, tools)
        await manager.handle_request(scope, receive, send)

    async def _started(self, data_dir: Path, tools: bool) -> Any:
        async with self._lock:
            if self._manager is None:
                from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

                from hologram.clients.mcp_server import build_server

                manager = StreamableHTTPSessionManager(app=build_server(data_dir, graph_tools=tools), stateless=True)
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
