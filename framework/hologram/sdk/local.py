"""The in-process call path into a plugin: how the kernel holds a plugin that runs in its own process.

An in-process plugin (``run.inproc`` in its manifest) speaks the protocol like any other: the kernel talks
to it through a `Connection` over an in-memory pipe (`LocalEndpoint.connect`), served by the same SDK
`Runtime` as a stdio plugin, so the handshake, tool calls, cancellation and crash detection are one code
path. Calls on the turn's path that would pay for that round trip for nothing — a stage hook, up to once per
tool call per stage — go through `handle` / `stage_function` instead: the same handlers, without the wire.
The kernel never reads the author's `Plugin` object itself.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from hologram.rpc import METHOD_NOT_FOUND, NOT_READY, RpcError
from hologram.rpc.memory_pipe import MemoryWriter, memory_pipe_pair
from hologram.sdk._plugin import Plugin
from hologram.sdk._runtime import Runtime, StageFunctions


def load_plugin(module_name: str) -> Plugin:
    """The module's ``plugin = Plugin(...)``; raises ImportError naming the module when there is none."""
    module = importlib.import_module(module_name)
    plugin = getattr(module, "plugin", None)
    if not isinstance(plugin, Plugin):
        raise ImportError(f"{module_name} has no module-level `plugin = Plugin(...)`")
    return plugin


class LocalEndpoint:
    """One in-process plugin: its channel to the kernel (once connected), and the local call path into it."""

    def __init__(self, plugin: Plugin) -> None:
        self._plugin = plugin
        self._stage_functions = StageFunctions(plugin)
        self._runtime: Runtime | None = None

    @classmethod
    def load(cls, module_name: str) -> LocalEndpoint:
        return cls(load_plugin(module_name))

    @property
    def name(self) -> str:
        return self._plugin.name

    def connect(self) -> tuple[Any, MemoryWriter, Awaitable[None]]:
        """The kernel's end of a new channel (reader, writer) and the plugin's serving of it, to await;
        called in the running loop (the pipe's streams belong to it), once per start."""
        (kernel_reader, kernel_writer), (reader, writer) = memory_pipe_pair()
        self._runtime = Runtime(self._plugin, reader, writer)
        return kernel_reader, kernel_writer, self._runtime.serve()

    async def handle(self, method: str, params: Any) -> Any:
        """Answer one request exactly as the plugin does over its channel (``stage/invoke``, ``tool/invoke``
        …): the same handler, the same result or `RpcError`."""
        if self._runtime is None:
            raise RpcError(NOT_READY, f"plugin {self.name} is not started")
        handler = self._runtime.handlers.get(method)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"plugin {self.name} does not serve {method!r}")
        return await handler(params)

    def stage_function(self, stage: str) -> Callable[[dict[str, Any]], Any] | None:
        """The function ``stage/invoke`` calls for ``stage`` (None: no hook), for a caller that calls it once
        per hook on the turn's path: ``stage_function(s)(view)`` answers what ``handle("stage/invoke", …)``
        does under ``result``, without the coroutine around it (a plain hook answers inline; an async or
        blocking one returns an awaitable). See `StageFunctions`."""
        return self._stage_functions(stage)
