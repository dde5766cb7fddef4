"""a2a: Hologram as an A2A agent (server, v1.0 and v0.3), and A2A peers as tools (``a2a_send``, ``a2a_agents``).

A channel plugin written only with `hologram.sdk` and the ``kernel.turns`` facility (tests/guard/
test_channel_imports.py): its HTTP side is an ASGI app mounted on the web port with `Plugin.mount` (the http
plugin's ``http.routes``: its token, Host and Origin checks apply), the A2A protocol is the ``a2a-sdk``'s
JSON-RPC layer, and every method is a turn API call (server.py): a task is a turn, its ``contextId`` the
session, nothing of a task is kept here. docs/channels.md, "A2A", is the user's reference.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from hologram.sdk import Plugin, StartContext, ToolContext, tool_error
from hologram_plugins.a2a.app import CARD_PATHS, LazyApp
from hologram_plugins.a2a.config import A2aConfig
from hologram_plugins.a2a.events import Sessions

log = logging.getLogger("hologram_plugins.a2a")

plugin: Plugin[None] = Plugin("a2a", config=A2aConfig)


async def turns(method: str, **params: Any) -> Any:
    return await plugin.facility("kernel.turns").call(method, **params)


def _names() -> tuple[str, str]:
    config: A2aConfig = plugin.config
    return config.name, config.description


def _idle(session: str) -> None:
    """No request waits on ``session`` and no turn runs there: stop watching it. (While a turn runs the plugin
    keeps watching with approvals on, also without a client: its approval request waits as input-required.)"""
    task = asyncio.get_running_loop().create_task(_unwatch(session))
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


async def _unwatch(session: str) -> None:
    if session in SESSIONS.listeners or session in SESSIONS.running:  # a request came for it meanwhile
        return
    try:
        await turns("unwatch", session=session)
    except Exception as exc:  # the kernel going away: nothing left to stop watching
        log.debug("unwatch %s: %s", session, exc)


_BACKGROUND: set[asyncio.Task[Any]] = set()
SESSIONS = Sessions(idle=_idle)
plugin.mount("/a2a", LazyApp(turns, SESSIONS, _names), well_known=CARD_PATHS)


@plugin.on_turn_event
def on_turn_event(event: dict[str, Any]) -> None:
    SESSIONS.publish(event)


@plugin.on_start
def start(ctx: StartContext[A2aConfig]) -> None:
    log.info("a2a: %d peer agent(s) configured", len(ctx.config.peers))


@plugin.tool("a2a_agents")
async def a2a_agents() -> str:
    """The peer agents the model may ask, with what their cards say (peers.py)."""
    from hologram_plugins.a2a.peers import agents

    return await agents(plugin.config)


@plugin.tool("a2a_send")
async def a2a_send(agent: str, text: str, ctx: ToolContext, context: str = "") -> Any:
    """Ask the peer ``agent``; its answer streams as the call's live output (peers.py)."""
    from hologram_plugins.a2a.peers import PeerError, send

    async def live(chunk: str) -> None:
        event = {"type": "tool_output", "tool": "a2a_send", "call_id": ctx.call_id, "session_id": ctx.session_id}
        await plugin.publish({**event, "stream": "stdout", "text": chunk})

    try:
        return await send(plugin.config, agent, text, context, live)
    except PeerError as exc:
        return tool_error(str(exc))
