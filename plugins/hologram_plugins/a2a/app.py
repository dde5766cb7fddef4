"""The A2A server as an ASGI app (Starlette, the ``a2a-sdk``'s JSON-RPC routes), built on the first request.

Its imports (the SDK, protocol buffers, Starlette: ~30 MB and ~1 s of CPU here) wait for an A2A client: a
kernel nobody talks A2A to never pays them at start (docs/channels.md, "A2A").
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from hologram_plugins.a2a.events import Sessions

Turns = Callable[..., Awaitable[Any]]
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
TOOLS_FRESH_S = 10.0  # the card's skills follow the tools present; listing them at most this often


class LazyApp:
    """An ASGI app that builds the real one when the first request comes."""

    def __init__(self, turns: Turns, sessions: Sessions, name: Callable[[], tuple[str, str]]) -> None:
        self.turns = turns
        self.sessions = sessions
        self.name = name  # (card name, description), from this start's config
        self._app: Any = None
        self._tools: tuple[float, list[dict[str, Any]]] = (0.0, [])

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._app is None:
            self._app = self._build()
        await self._app(scope, receive, send)

    async def tools(self) -> list[dict[str, Any]]:
        at, tools = self._tools
        if time.monotonic() - at > TOOLS_FRESH_S:
            tools = list((await self.turns("tools_list")).get("tools") or [])
            self._tools = (time.monotonic(), tools)
        return tools

    def _build(self) -> Any:
        from a2a.server.routes import create_jsonrpc_routes
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        from hologram_plugins.a2a.card import RPC_PATH, base_url, card
        from hologram_plugins.a2a.server import TurnTasks

        async def agent_card(request: Request) -> JSONResponse:
            name, description = self.name()
            body = card(name, description, base_url(dict(request.scope)), await self.tools())
            return JSONResponse(body, headers={"cache-control": "no-store"})

        routes = [Route(path, agent_card, methods=["GET"]) for path in CARD_PATHS]
        handler = TurnTasks(self.turns, self.sessions)
        routes += create_jsonrpc_routes(handler, rpc_url=RPC_PATH, enable_v0_3_compat=True)
        return Starlette(routes=routes)
