"""``sessions/mcp``: MCP servers a client connects for one session, through the plugin that provides
``mcp.sessions`` (the built-in ``mcp`` plugin).

An ACP editor passes the MCP servers of its project with every ``session/new``; they are that session's, not the
user's: another session (another editor window, the web page) must not be offered them, and they must not outlive
the editor. So the kernel does not keep them in settings: it forwards the request to the provider of
``mcp.sessions`` with who asked (the *owner*: the control connection, or the plugin calling ``kernel.turns``),
the provider connects them and registers their tools for that session alone (``kernel.tools.register`` with
``session``: hologram/supervisor/runtime_tools.py), and when the owner's connection goes (the editor closed, the
plugin stopped or crashed) the kernel tells the provider to ``release`` everything that owner connected.

Why a facility of a plugin and not the kernel: the MCP client (its SDK, its processes, their guardian) is the
``mcp`` plugin's already, for the servers in settings; a session's servers are the same machinery with a shorter
life. Without that plugin in the graph, ``sessions/mcp`` is refused with the fix (add it and ``hologram build``).
A restart of the provider forgets the sessions' servers (their tools with it): a client connects them again.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from hologram.base import protocol
from hologram.rpc import ConnectionClosed, RpcError
from hologram.rpc.errors import NOT_READY, RequestTimeout

if TYPE_CHECKING:
    from hologram.supervisor.core import Supervisor
    from hologram.supervisor.managed import ManagedPlugin

log = logging.getLogger("hologram.agent")
FACILITY = "mcp.sessions"  # connect {owner, session, servers} → {session, servers}; release {owner}
REPLY_TIMEOUT_S = 300.0  # a failure bound: the provider answers once each server is up or failed (its own timeouts)


class SessionMcp:
    """The kernel's side of ``sessions/mcp``: which owner connected servers, forwarded to the provider."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self._ids = itertools.count(1)
        self.owners: dict[Hashable, str] = {}  # a caller (connection, ("plugin", name)) → the owner id it is sent as
        self._releases: set[asyncio.Future[None]] = set()

    def _provider(self) -> ManagedPlugin:
        for plugin in self.supervisor.plugins.values():
            if FACILITY in plugin.spec.provides:
                if plugin.runtime is None or not self.supervisor.facility_is_ready(plugin.name, FACILITY):
                    raise RpcError(
                        NOT_READY,
                        f"sessions/mcp: {FACILITY} is not ready: {plugin.name} is {plugin.state.value} "
                        f"(`hologram status` says why; `hologram plugin restart {plugin.name}`)",
                    )
                return plugin
        raise RpcError(
            NOT_READY,
            f"sessions/mcp: no plugin provides {FACILITY}: add the mcp plugin to the graph "
            "(it is a built-in: `hologram build`) and start the kernel again",
        )

    async def connect(self, caller: Hashable, session: str, servers: list[dict[str, Any]]) -> Any:
        """Forward to the provider; the owner is remembered so that its servers go when it does."""
        provider = self._provider()
        owner = self.owners.get(caller)
        if owner is None:
            owner = self.owners[caller] = f"owner-{next(self._ids)}"
        return await self._call(provider, "connect", {"owner": owner, "session": session, "servers": servers})

    def release(self, caller: Hashable) -> None:
        """``caller`` went away: its sessions' servers are closed and their tools removed (in the background)."""
        owner = self.owners.pop(caller, None)
        if owner is None:
            return
        task: asyncio.Future[None] = asyncio.ensure_future(self._release(owner))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)

    async def _release(self, owner: str) -> None:
        try:
            await self._call(self._provider(), "release", {"owner": owner})
        except Exception as exc:  # the provider is gone too: its tools went with it
            log.info("sessions/mcp: release of %s not sent: %s", owner, exc)

    async def _call(self, provider: ManagedPlugin, method: str, params: dict[str, Any]) -> Any:
        assert provider.runtime is not None
        request = {"facility": FACILITY, "method": method, "params": params, "caller": "kernel"}
        try:
            return await provider.runtime.connection.request(protocol.FACILITY_CALL, request, timeout=REPLY_TIMEOUT_S)
        except (ConnectionClosed, RequestTimeout) as exc:
            raise RpcError(
                NOT_READY, f"sessions/mcp: {provider.name} did not answer ({exc or type(exc).__name__}); try again"
            ) from None

    async def aclose(self) -> None:
        for task in list(self._releases):
            with contextlib.suppress(BaseException):
                await task
