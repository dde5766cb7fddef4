"""The conformance kit: run a plugin as a real process, the way the kernel does, and call it.

    async with PluginHarness.from_manifest("manifests/notes.toml") as harness:
        result = await harness.call_tool("notes_create", {"title": "a", "body": "b"})
        assert not result.get("is_error")

The harness uses the kernel's own supervisor, so a plugin that passes here passes under `hologram up`:
same spawn, same handshake, same readiness rules, same facility routing. Facilities the plugin requires
from other plugins (or orders itself after, ``after_if_present``) can be stubbed with `provide=` (facility →
{method: function}); an ``after_if_present`` facility not stubbed is absent, as in a graph without its provider.

When the ``async with`` body fails, the calls still running (a call a test started with ``ensure_future``, or
one of a ``gather``) are cancelled before the plugin stops — each sends the plugin ``$/cancel``, as the kernel
does for a cancelled turn — so the test reports its first failure, not the call that waited on behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from hologram.base import protocol
from hologram.manifest import load_manifest
from hologram.manifest.facility import KERNEL, KERNEL_FACILITIES
from hologram.plan.lock import LockedPlugin, plugin_entry
from hologram.rpc import RingWriter
from hologram.sdk.local import LocalEndpoint
from hologram.supervisor import ManagedPlugin, PluginSpec, State, Supervisor
from hologram.supervisor.runtime_tools import FACILITY as RUNTIME_TOOLS
from hologram.supervisor.runtime_tools import RuntimeTools

CANCEL_WAIT_S = 10.0  # how long the exit waits for cancelled calls to end (they end at once: a failure bound)


class PluginHarness:
    def __init__(
        self,
        spec: PluginSpec,
        *,
        data_dir: Path | None = None,
        provide: dict[str, dict[str, Callable[..., Any]]] | None = None,
    ) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="hologram-harness-") if data_dir is None else None
        self.data_dir = Path(self._tmp.name) if self._tmp else Path(data_dir)  # type: ignore[arg-type]
        stubbed = dict(provide or {})
        # Everything the plugin requires is served by the harness's kernel node, and so is what it orders itself
        # after (`after_if_present`) when the test stubs it; the rest of those are absent, as in a graph without
        # their provider.
        optional = {f: (KERNEL,) for f in spec.plugin.after_if_present if protocol.facility_name(f) in stubbed}
        plugin = spec.plugin.model_copy(
            update={"requires": {f: KERNEL for f in spec.plugin.requires}, "after_if_present": optional}
        )
        self.spec = PluginSpec(plugin, spec.manifest_dir)
        kernel_facilities = [f"{KERNEL}.{f}" for f in KERNEL_FACILITIES] + [
            protocol.facility_name(f) for f in (*spec.plugin.requires, *optional)
        ]
        self.ring = RingWriter(64 * 1024)
        self.supervisor = Supervisor(
            [self.spec], self.data_dir, kernel_facilities=kernel_facilities, ring=self.ring,
            inproc_loader=LocalEndpoint.load,
        )  # fmt: skip
        runtime_tools = RuntimeTools(self.supervisor)  # as the kernel: a plugin may add tools while it runs
        for method_name in ("register", "unregister"):
            if method_name not in stubbed.get(RUNTIME_TOOLS, {}):
                self.supervisor.add_kernel_method(RUNTIME_TOOLS, method_name, getattr(runtime_tools, method_name))
        for facility, methods in stubbed.items():
            for method, handler in methods.items():
                self.supervisor.add_kernel_method(facility, method, handler)
        self.calls: list[tuple[str, str, dict[str, Any]]] = []
        self._running: set[asyncio.Task[Any]] = set()  # the tasks waiting for a request (`_request`)

    @classmethod
    def from_manifest(
        cls,
        path: str | Path,
        *,
        config: dict[str, Any] | None = None,
        data_dir: Path | None = None,
        provide: dict[str, dict[str, Callable[..., Any]]] | None = None,
        env: dict[str, str] | None = None,
    ) -> PluginHarness:
        """The plugin of the manifest at ``path``, its ``[config]`` updated with ``config``, its process given
        ``env`` over the manifest's ``run.env`` (e.g. a ``PYTHONPATH`` with the repository's ``src``)."""
        loaded = load_manifest(Path(path))
        manifest = loaded.manifest
        if config:
            manifest = manifest.model_copy(update={"config": {**manifest.config, **config}})
        stubbed = {protocol.facility_name(f) for f in provide or {}}
        optional = {f: [KERNEL] for f in manifest.facilities.after_if_present if protocol.facility_name(f) in stubbed}
        entry = plugin_entry(manifest, requires={r: KERNEL for r in manifest.facilities.requires}, optional=optional)
        if env:
            entry["run"]["env"] = {**entry["run"].get("env", {}), **env}
        spec = PluginSpec(LockedPlugin.model_validate(entry), loaded.path.parent)
        return cls(spec, data_dir=data_dir, provide=provide)

    @property
    def plugin(self) -> ManagedPlugin:
        return self.supervisor.plugins[self.spec.name]

    async def start(self) -> None:
        # Woken by the supervisor's state change, not by polling: the start settles as READY, FAILED or CRASHED.
        settled = asyncio.Event()

        def on_change(plugin: ManagedPlugin) -> None:
            if plugin is self.plugin and plugin.state in (State.READY, State.FAILED, State.CRASHED):
                settled.set()

        self.supervisor.listeners.append(on_change)
        try:
            self.supervisor.start(on_demand=False)  # the plugin under test, `[start] lazy` or not
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(settled.wait(), self.spec.start_timeout_s + 5)
        finally:
            self.supervisor.listeners.remove(on_change)
        if self.plugin.state is not State.READY:
            raise RuntimeError(
                f"plugin {self.spec.name} did not become ready: {self.plugin.state.value}: {self.plugin.reason}"
            )

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str = "call_1",
        session_id: str | None = "test",
        timeout: float = 60,
        parent: str | None = None,
    ) -> dict[str, Any]:
        """Invoke a tool exactly as the agent turn does; returns the plugin's result object. ``parent``: the call
        is a sub-agent's, whose turn works for that session's (the kernel sends it as ``tool/invoke`` ``parent``)."""
        params: dict[str, Any] = {
            "name": name,
            "arguments": arguments or {},
            "call_id": call_id,
            "session_id": session_id,
        }
        if parent is not None:
            params["parent"] = parent
        result: dict[str, Any] = await self._request(protocol.TOOL_INVOKE, params, timeout)
        return result

    async def call_stage(self, stage: str, context: dict[str, Any], timeout: float = 30) -> Any:
        """Run the plugin's hook for `stage` as the kernel does. Like the kernel, only for a stage the manifest
        declares in ``[stages]``: a hook the manifest does not declare is never called in production, so a
        test that called it anyway would pass for a plugin that does not work."""
        if stage not in self.spec.plugin.stages:
            raise AssertionError(
                f"plugin {self.spec.name} does not declare the stage {stage!r} in its manifest's [stages]: "
                f"the kernel would never call this hook (add `{stage} = {{}}` under [stages])"
            )
        answer = await self._request(protocol.STAGE_INVOKE, {"stage": stage, "context": context}, timeout)
        return answer.get("result") if isinstance(answer, dict) else answer

    async def call_facility(self, facility: str, method: str, timeout: float = 30, **params: Any) -> Any:
        """Call a facility method the plugin provides, as another plugin would through the kernel."""
        request = {"facility": facility, "method": method, "params": params, "caller": "harness"}
        return await self._request(protocol.FACILITY_CALL, request, timeout)

    async def _request(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """One request to the plugin; the task waiting for it is known meanwhile, for the exit to cancel
        (`cancel_running`). Sent from the caller's task, as before: no task of its own that would send it later."""
        connection = self._connection()
        task = asyncio.current_task()
        if task is not None:
            self._running.add(task)
        try:
            return await connection.request(method, params, timeout=timeout)
        finally:
            if task is not None:
                self._running.discard(task)

    def read_blob(self, blob: Any) -> bytes:
        from hologram.rpc import from_blob

        runtime = self.plugin.runtime
        assert runtime is not None
        return from_blob(blob, {a.id: a for a in runtime.arenas})

    @property
    def tools(self) -> dict[str, dict[str, Any]]:
        return self.plugin.tools

    def _connection(self) -> Any:
        runtime = self.plugin.runtime
        if runtime is None:
            raise RuntimeError(
                f"plugin {self.spec.name} is not running ({self.plugin.state.value}: {self.plugin.reason})"
            )
        return runtime.connection

    async def stop(self) -> None:
        await self.supervisor.shutdown()
        self.ring.close()
        if self._tmp is not None:
            with contextlib.suppress(OSError):
                self._tmp.cleanup()

    async def __aenter__(self) -> PluginHarness:
        try:
            await self.start()
        except BaseException:
            await self.stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None:
            await self.cancel_running()
        await self.stop()

    async def cancel_running(self) -> None:
        """Cancel the tasks still waiting for a request to the plugin and wait until they have ended. Each request
        sends the plugin ``$/cancel`` as it ends, ahead of `stop`'s ``shutdown`` on the same pipe: the plugin runs
        its cancel path (the agents plugin cancels its child turn) while the stubbed facilities still answer."""
        running = [task for task in self._running if task is not asyncio.current_task()]
        for task in running:
            task.cancel()
        if running:  # a failure bound: a cancelled request ends at once (`Connection.request` sends `$/cancel`)
            await asyncio.wait(running, timeout=CANCEL_WAIT_S)
        for task in running:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: the test's failure is the body's, not "exception never retrieved"
