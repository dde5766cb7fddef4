"""mcp: the tools of MCP servers (stdio and streamable HTTP) as Hologram tools ``mcp_<server>_<tool>``.

Each server of ``[plugins.mcp.servers.NAME]`` (config.py) gets a `ServerLink` (link.py) that keeps it
connected; whenever a server's tools change — it came up, went down, announced a new list — the `Bridge`
registers and unregisters them with the kernel (``kernel.tools``, `Plugin.register_tools`). The kernel makes
them deferred and puts every call to the user's approval policy; the plugin only ever receives approved calls.
A call is forwarded to the server and its result mapped by results.py. Servers a client connects for one
session (``sessions/mcp``: an ACP editor's) are sessions.py's, their tools that session's alone. How the plugin
fares — which servers are down, and why — is its status line (`hologram status`).

The MCP package (the client, anyio, httpx2, the protocol's types: ~35 MB and a second of CPU) is imported only
when a server is configured (link.py, results.py), and /mcp's server only on its first request
(http_server.py): the default graph has this plugin with no server, where it must cost what a small plugin costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from hologram.sdk import Plugin, RpcError, RuntimeTool, StartContext, ToolContext, tool_error
from hologram_plugins.mcp.config import McpConfig
from hologram_plugins.mcp.http_server import McpOverHttp
from hologram_plugins.mcp.sessions import FACILITY as SESSIONS
from hologram_plugins.mcp.sessions import SessionServers

if TYPE_CHECKING:
    from hologram_plugins.mcp.link import RemoteTool, ServerLink

log = logging.getLogger("hologram_plugins.mcp")


class Bridge:
    """The configured servers' links, and their tools as the kernel knows them."""

    def __init__(self, plugin: Plugin[Any], config: McpConfig, data_dir: str) -> None:
        self.plugin = plugin
        self.data_dir = data_dir
        enabled = {name: server for name, server in config.servers.items() if server.enabled}
        self.links: dict[str, ServerLink] = {}
        if enabled:  # the MCP package only now (module docstring)
            from hologram_plugins.mcp.link import ServerLink

            self.links = {
                name: ServerLink(name, server, config, cwd=data_dir, changed=self.changed)
                for name, server in enabled.items()
            }
        self.registered: dict[str, set[str]] = {name: set() for name in self.links}  # server → names the kernel has
        self._lock = asyncio.Lock()  # one sync with the kernel at a time: a change waits for the one before
        self._tasks: list[asyncio.Task[None]] = []
        self.sessions = SessionServers(self, config)  # a session's own servers (an ACP editor's): sessions.py

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(link.run()) for link in self.links.values()]

    async def stop(self) -> None:
        await self.sessions.stop()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task

    async def changed(self, link: ServerLink) -> None:
        """Make the kernel's tools of ``link``'s server what the server has now, and say so in the status."""
        async with self._lock:
            try:
                await self._sync(link)
            except Exception as exc:  # the kernel refused or went away: the link goes on either way
                log.warning("tools of MCP server %s not registered: %s", link.name, exc)
            with contextlib.suppress(Exception):
                await self.plugin.set_status(self.status())

    async def _sync(self, link: ServerLink) -> None:
        now = dict(link.tools)
        gone = sorted(self.registered[link.name] - set(now))
        if gone:
            await self.plugin.unregister_tools(gone)
            self.registered[link.name] -= set(gone)
        if not now:
            return
        tools = [self._runtime_tool(link, tool) for tool in now.values()]
        try:
            await self.plugin.register_tools(tools)
            self.registered[link.name] |= set(now)
        except RpcError as exc:  # one bad schema must not cost the server its other tools: one by one
            log.warning("MCP server %s: %s; registering its tools one by one", link.name, exc.message)
            for tool in tools:
                try:
                    await self.plugin.register_tools([tool])
                    self.registered[link.name].add(tool.name)
                except RpcError as one:
                    log.warning("MCP server %s: tool %s left out: %s", link.name, tool.name, one.message)

    def _runtime_tool(self, link: ServerLink, tool: RemoteTool) -> RuntimeTool:
        description = f"{tool.description}\n(MCP server {link.name}, tool {tool.remote})"
        return RuntimeTool(tool.name, description, tool.parameters, partial(self.call, link, tool))

    async def call(self, link: ServerLink, tool: RemoteTool, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        from hologram_plugins.mcp.link import ServerDown, describe
        from hologram_plugins.mcp.results import as_tool_result

        try:
            result = await link.call(tool, arguments)
        except ServerDown as exc:
            return tool_error(str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the server failed the request (an MCP error, a dropped connection)
            return tool_error(f"MCP server {link.name} failed {tool.remote}: {describe(exc)}")
        return as_tool_result(result, self.plugin.blob)

    def status(self) -> str:
        if not self.links:
            return "no MCP servers configured ([plugins.mcp.servers.NAME] in settings.toml)"
        return "; ".join(link.status() for link in self.links.values())


plugin: Plugin[Bridge] = Plugin(
    "mcp",
    config=McpConfig,
    state=lambda ctx: Bridge(ctx.plugin, ctx.config, ctx.data_dir),
)


def _http_settings() -> tuple[bool, bool]:
    """For /mcp (http_server.py): the switches of this start."""
    config: McpConfig = plugin.config
    return config.serve_http, config.http_tools


MCP_HTTP = McpOverHttp(plugin, _http_settings)
plugin.mount("/mcp", MCP_HTTP, optional=True)  # the web port's /mcp, when the graph has one (after_if_present)


@plugin.on_turn_event
def on_turn_event(event: dict[str, Any]) -> None:
    """The events of /mcp's asks (they watch their sessions through kernel.turns: turns_access.py)."""
    MCP_HTTP.publish(event)


@plugin.method(SESSIONS, "connect")
async def sessions_connect(owner: str, session: str, servers: list[dict[str, Any]]) -> dict[str, Any]:
    """``sessions/mcp`` of a client, forwarded by the kernel (sessions.py)."""
    return await plugin.state.sessions.connect(owner, session, servers)


@plugin.method(SESSIONS, "release")
async def sessions_release(owner: str) -> dict[str, Any]:
    """The client that connected servers for its sessions went away (sessions.py)."""
    return await plugin.state.sessions.release(owner)


@plugin.on_start
async def start(ctx: StartContext[McpConfig]) -> None:
    """Connect in the background: the plugin is ready at once, each server's tools come when it is up."""
    plugin.state.start()
    await plugin.set_status(plugin.state.status())
    await plugin.ready(SESSIONS)


@plugin.on_stop
async def stop() -> None:
    await MCP_HTTP.stop()
    await plugin.state.stop()
