"""One MCP server as the plugin sees it: connected or down, its tools, and a call to one of them.

A `ServerLink` runs in a task of its own for as long as the plugin runs (`run`): it connects (``protocol = "auto"``:
MCP 2026-07-28 when the server speaks it, else the initialize handshake of earlier versions; ``"legacy"``: the
handshake only), lists the tools,
then watches the connection, and when it ends — the process exited, the HTTP server went away, the handshake
failed — it is down, says why, and tries again after 1 s, 2 s, 3 s … (at most ``retry_max_s``). Its tools go
when it goes down and come back with it.

Changes of a server's tools: a 2026-07-28 server pushes them on a ``subscriptions/listen`` stream, an earlier
one as ``notifications/tools/list_changed`` (the message handler); either makes the link list its tools
again. A server that offers neither is asked every ``poll_s``, which is also how a dead earlier-era
connection is noticed (its requests fail), since nothing else tells.

A stdio server runs under the process guardian of the shell and code plugins (hologram_plugins/_process):
when the link closes it (stdin closed, then SIGTERM to its group) or the plugin dies (the guardian's death
signal), every process the server started goes too, even one that left its process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ListenNotSupportedError

from hologram_plugins._process.tree import guardian_argv
from hologram_plugins.mcp.config import McpConfig, ServerConfig
from hologram_plugins.mcp.naming import tool_name

log = logging.getLogger("hologram_plugins.mcp")
CLIENT_INFO = types.Implementation(name="hologram", version="1")


@dataclass(frozen=True)
class RemoteTool:
    """A tool of a server: its Hologram name, its name on the server, and what the model is told."""

    name: str
    remote: str
    description: str
    parameters: dict[str, Any]


def describe(exc: BaseException) -> str:
    """One line for a person: the innermost meaningful error (anyio wraps them in groups)."""
    while isinstance(inner := getattr(exc, "exceptions", None), tuple) and inner:  # an (anyio) exception group
        exc = inner[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def remote_tool(server: str, tool: types.Tool) -> RemoteTool:
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.pop("$schema", None)  # a draft URI the kernel's check need not resolve
    return RemoteTool(tool_name(server, tool.name), tool.name, tool.description or tool.title or tool.name, schema)


class ServerLink:
    """The connection to one configured MCP server (module docstring)."""

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        settings: McpConfig,
        *,
        cwd: str,
        changed: Callable[[ServerLink], Awaitable[None]],
    ) -> None:
        self.name = name
        self.config = config
        self.settings = settings
        self.cwd = config.cwd or cwd
        self.changed = changed  # told whenever the tools or the state change
        self.tools: dict[str, RemoteTool] = {}
        self.state = "connecting"  # connecting | up | down
        self.error = ""
        self.retry_at = 0.0
        self.attempts = 0
        self.client: Client | None = None
        self._calls: anyio.abc.TaskGroup | None = None  # the connection's group, where calls run
        self._relist = asyncio.Event()

    # -- for people -------------------------------------------------------------------------------------

    def status(self) -> str:
        if self.state == "up":
            return f"{self.name}: {len(self.tools)} tool{'' if len(self.tools) == 1 else 's'}"
        if self.state == "down":
            left = max(0.0, self.retry_at - time.monotonic())
            return f"{self.name}: down (retry in {left:.0f} s): {self.error}"
        return f"{self.name}: connecting"

    # -- the connection ---------------------------------------------------------------------------------

    def _server(self) -> StdioServerParameters | Any:
        config = self.config
        if config.command is not None:
            argv = guardian_argv([config.command, *config.args], report_fd=-1, max_processes=0)
            return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(config.env), cwd=self.cwd)
        assert config.url is not None
        headers = dict(config.headers)
        if config.token is not None:
            headers["Authorization"] = f"Bearer {config.token.get_secret_value()}"
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
        return _ClosingTransport(streamable_http_client(config.url, http_client=http), http)

    async def _on_message(self, message: Any) -> None:
        """A handshake-era server's ``notifications/tools/list_changed``: list again (`_watch`)."""
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            self._relist.set()

    async def run(self) -> None:
        """Connect, serve, reconnect with backoff, until cancelled (the plugin stops)."""
        while True:
            try:
                await self._session()
                self.error = "the server closed the connection"
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # anything a server or its transport raises: this server is down
                self.error = describe(exc)
            self.client = None
            self.attempts += 1
            delay = min(float(self.attempts), self.settings.retry_max_s)
            self.state, self.tools, self.retry_at = "down", {}, time.monotonic() + delay
            log.warning("MCP server %s is down (%s); retrying in %g s", self.name, self.error, delay)
            await self.changed(self)
            await asyncio.sleep(delay)
            self.state = "connecting"

    async def _session(self) -> None:
        """One connection, from the handshake to its end. ``async with``, so an error inside the SDK's own tasks
        (the transport broke) reaches us as that error, not as a cancellation of this task."""
        client = Client(
            self._server(),
            mode=self.config.protocol,
            message_handler=self._on_message,
            client_info=CLIENT_INFO,
            read_timeout_seconds=self.settings.connect_timeout_s,  # the handshake and lists; calls have their own
            cache=None,  # a list after a change must be the server's, not a cached one
        )
        async with client, anyio.create_task_group() as calls:
            self.client, self._calls = client, calls
            try:
                await self._list()
                self.state, self.attempts, self.error = "up", 0, ""
                log.info(
                    "MCP server %s is up (protocol %s): %d tools", self.name, client.protocol_version, len(self.tools)
                )
                await self.changed(self)
                await self._watch(client)
            finally:
                self.client, self._calls = None, None
                calls.cancel_scope.cancel()  # calls still running: their callers get the server's end

    async def _list(self) -> None:
        client = self.client
        assert client is not None
        found: dict[str, RemoteTool] = {}
        cursor: str | None = None
        for _ in range(100):  # pages; a server whose cursor never ends cannot hold us
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                remote = remote_tool(self.name, tool)
                found[remote.name] = remote
            cursor = page.next_cursor
            if not cursor:
                break
        self.tools = found

    async def _watch(self, client: Client) -> None:
        """Until the connection ends: re-list on every change the server announces, or every ``poll_s``."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    await self._list()
                    await self.changed(self)
            return  # the server closed the stream: it is going away
        except ListenNotSupportedError:
            pass  # before 2026-07-28: list_changed notifications, and a poll that notices a dead connection
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._relist.wait(), self.settings.poll_s)
            self._relist.clear()
            before = self.tools
            await self._list()
            if self.tools != before:
                await self.changed(self)

    # -- calls ------------------------------------------------------------------------------------------

    async def call(self, tool: RemoteTool, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call ``tool`` with ``arguments``. The request runs in a task of the connection's own group: the SDK's
        cancel scopes must be left in the task that entered them, and the connection is this link's task's.
        Cancelling the caller (the turn was cancelled) cancels the request."""
        client, calls = self.client, self._calls
        if client is None or calls is None:
            raise ServerDown(f"MCP server {self.name} is {self.state}: {self.error or 'not connected yet'}")
        done: asyncio.Future[types.CallToolResult] = asyncio.get_running_loop().create_future()
        scope = anyio.CancelScope()

        async def run() -> None:
            with scope:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        result = await client.call_tool(
                            tool.remote, arguments, read_timeout_seconds=self.config.timeout_s
                        )
                except BaseException as exc:
                    if not done.done():
                        done.set_exception(
                            ServerDown(f"MCP server {self.name} went away during the call")
                            if isinstance(exc, asyncio.CancelledError)
                            else exc
                        )
                    if not isinstance(exc, Exception):
                        raise
                else:
                    if not done.done():
                        done.set_result(result)
            if not done.done():
                done.set_exception(ServerDown(f"MCP server {self.name} went away during the call"))

        calls.start_soon(run)
        try:
            return await done
        except asyncio.CancelledError:
            scope.cancel()
            raise


class ServerDown(Exception):
    """A call to a server that is not connected."""


class _ClosingTransport:
    """The streamable HTTP transport, and the HTTP client it was given closed after it."""

    def __init__(self, transport: Any, http: httpx2.AsyncClient) -> None:
        self.transport = transport
        self.http = http

    async def __aenter__(self) -> Any:
        return await self.transport.__aenter__()

    async def __aexit__(self, *exc: Any) -> None:
        try:
            await self.transport.__aexit__(*exc)
        finally:
            await self.http.aclose()
