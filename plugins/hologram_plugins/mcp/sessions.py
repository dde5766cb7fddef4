"""``mcp.sessions``: MCP servers connected for one session (an ACP editor's), their tools that session's alone.

The kernel forwards a client's ``sessions/mcp`` here (hologram/agent/session_mcp.py) as ``connect`` {owner,
session, servers} and, when that client's connection goes, ``release`` {owner}. Each (owner, session) gets its
own `ServerLink` per server — the same link as a configured server's (link.py: reconnect with backoff, tools
re-listed on change, stdio servers under the process guardian) — and its tools are registered with
``session`` (`Plugin.register_tools`), so the kernel offers them in that session's turns only and puts every
call to the user's approval policy like any MCP tool's. ``connect`` answers once every server is up or has
failed once (bounded by ``connect_timeout_s``): the prompt that follows sees their tools.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from hologram.sdk import RpcError, RuntimeTool
from hologram_plugins.mcp.config import McpConfig, ServerConfig

if TYPE_CHECKING:
    from hologram_plugins.mcp import Bridge
    from hologram_plugins.mcp.link import ServerLink

log = logging.getLogger("hologram_plugins.mcp")
FACILITY = "mcp.sessions"
INVALID_PARAMS = -32602


@dataclass
class Group:
    """One owner's servers for one session."""

    session: str
    links: dict[str, ServerLink] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    registered: dict[str, set[str]] = field(default_factory=dict)  # server → tool names the kernel has
    settled: dict[str, asyncio.Event] = field(default_factory=dict)  # server → up or failed at least once


def server_config(spec: dict[str, Any]) -> ServerConfig:
    """A server as ``sessions/mcp`` gives it (the kernel checked its shape), as the link's settings."""
    fields = {k: v for k, v in spec.items() if k in ServerConfig.model_fields and k != "name"}
    return ServerConfig(**fields)


class SessionServers:
    """Every (owner, session)'s servers; tool calls go through the `Bridge`'s (results mapped alike)."""

    def __init__(self, bridge: Bridge, config: McpConfig) -> None:
        self.bridge = bridge
        self.config = config
        self.groups: dict[tuple[str, str], Group] = {}
        self._lock = asyncio.Lock()  # one sync with the kernel at a time

    async def connect(self, owner: str, session: str, servers: list[dict[str, Any]]) -> dict[str, Any]:
        try:
            configs = {str(s["name"]): server_config(s) for s in servers}
        except (KeyError, ValidationError, TypeError) as exc:
            raise RpcError(INVALID_PARAMS, f"{FACILITY}.connect: servers: {exc}") from None
        await self._drop(owner, session)
        if not configs:
            return {"session": session, "servers": []}
        from hologram_plugins.mcp.link import ServerLink  # the MCP package only now (the plugin's docstring)

        group = self.groups[(owner, session)] = Group(session)
        for name, config in configs.items():
            group.registered[name] = set()
            group.settled[name] = asyncio.Event()
            cwd = config.cwd or self.bridge.data_dir
            group.links[name] = ServerLink(name, config, self.config, cwd=cwd, changed=partial(self.changed, group))
        group.tasks = [asyncio.ensure_future(link.run()) for link in group.links.values()]
        waits = [asyncio.ensure_future(event.wait()) for event in group.settled.values()]
        try:
            await asyncio.wait(waits, timeout=self.config.connect_timeout_s + 5.0)
        finally:
            for wait in waits:
                wait.cancel()
        log.info("session %s: MCP servers %s", session, "; ".join(link.status() for link in group.links.values()))
        return {
            "session": session,
            "servers": [
                {"name": name, "state": link.state, "tools": sorted(group.registered[name]), "error": link.error}
                for name, link in group.links.items()
            ],
        }

    async def release(self, owner: str) -> dict[str, Any]:
        sessions = [session for (who, session) in list(self.groups) if who == owner]
        for session in sessions:
            await self._drop(owner, session)
        return {"released": sessions}

    async def _drop(self, owner: str, session: str) -> None:
        group = self.groups.pop((owner, session), None)
        if group is None:
            return
        for task in group.tasks:
            task.cancel()
        for task in group.tasks:
            with contextlib.suppress(BaseException):
                await task
        names = sorted(set().union(*group.registered.values())) if group.registered else []
        if names:
            async with self._lock:
                with contextlib.suppress(Exception):  # the kernel went: the tools went with this plugin's run
                    await self.bridge.plugin.unregister_tools(names, session=group.session)
        log.info("session %s: MCP servers %s closed", session, ", ".join(group.links))

    async def changed(self, group: Group, link: ServerLink) -> None:
        """The tools of ``link`` for its session are what the server has now (as `Bridge.changed` for settings')."""
        async with self._lock:
            try:
                await self._sync(group, link)
            except Exception as exc:
                log.warning("session %s: tools of MCP server %s not registered: %s", group.session, link.name, exc)
        if link.state != "connecting":
            group.settled[link.name].set()

    async def _sync(self, group: Group, link: ServerLink) -> None:
        if (self._owner_of(group)) is None:  # dropped meanwhile: register nothing more
            return
        plugin = self.bridge.plugin
        now = dict(link.tools)
        gone = sorted(group.registered[link.name] - set(now))
        if gone:
            await plugin.unregister_tools(gone, session=group.session)
            group.registered[link.name] -= set(gone)
        if not now:
            return
        tools = [
            RuntimeTool(
                tool.name,
                f"{tool.description}\n(MCP server {link.name} of this session, tool {tool.remote})",
                tool.parameters,
                partial(self.bridge.call, link, tool),
            )
            for tool in now.values()
        ]
        for tool in tools:  # one by one: one bad schema must not cost the server its other tools
            try:
                await plugin.register_tools([tool], session=group.session)
                group.registered[link.name].add(tool.name)
            except RpcError as exc:
                log.warning("session %s: MCP server %s: tool %s left out: %s", group.session, link.name, tool.name,
                            exc.message)  # fmt: skip

    def _owner_of(self, group: Group) -> str | None:
        return next((owner for (owner, _), g in self.groups.items() if g is group), None)

    async def stop(self) -> None:
        for owner in {owner for (owner, _) in self.groups}:
            await self.release(owner)
