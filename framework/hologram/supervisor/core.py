"""The supervisor: follows the lock event-driven, routes facility calls, and applies the crash policy.

Scheduling rule: a plugin is spawned the moment every facility it requires has been announced ready by its
provider (and every `after_if_present` facility is ready, or its provider has given up). There are no waves
and no levels, so start-up time approaches the graph's critical path. Nothing here re-solves the graph: the
order and the provider of every facility come from the lock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hologram.base import protocol
from hologram.base.errors import HologramError
from hologram.manifest.facility import KERNEL
from hologram.rpc import (
    APPLICATION_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    NOT_READY,
    RequestTimeout,
    RingWriter,
    RpcError,
    from_blob,
)
from hologram.supervisor.gate import StartGate
from hologram.supervisor.inproc import InprocLoader
from hologram.supervisor.managed import Handlers, ManagedPlugin, PluginSpec, StartFailed
from hologram.supervisor.plugin_settings import PluginSettings, Reader
from hologram.supervisor.state import State
from hologram.tools.outcome import ToolOutcome

log = logging.getLogger("hologram.supervisor")

#: The reason shown for a ``[start] lazy`` plugin not started yet (`hologram status`, the plugins tab).
ON_DEMAND_REASON = "lazy: starts at the first call of its tools"

KernelMethod = Callable[..., Any]
ChangeListener = Callable[[ManagedPlugin], None]
EventListener = Callable[[dict[str, Any]], None]


class Supervisor:
    def __init__(
        self,
        specs: Iterable[PluginSpec],
        data_dir: Path,
        *,
        kernel_facilities: Iterable[str],
        ring: RingWriter | None = None,
        plugin_config: dict[str, dict[str, Any]] | None = None,
        gate: StartGate | None = None,
        inproc_loader: InprocLoader | None = None,
        settings_path: Path | None = None,
        read_plugin_config: Reader | None = None,
    ) -> None:
        self.data_dir = data_dir
        # loads `run.inproc` plugins; given by the layer above (the kernel: the SDK's LocalEndpoint.load)
        self.inproc_loader = inproc_loader
        # settings.toml's [plugins.NAME] tables: `plugin_config` as given, or re-read through `read_plugin_config`
        # before each start (supervisor/plugin_settings.py)
        self.plugin_settings = PluginSettings(plugin_config, read_plugin_config)
        self.settings_path = settings_path  # the file they are read from (named in config errors)
        self.ring = ring or RingWriter()
        self.kernel_facilities = {protocol.facility_name(f) for f in kernel_facilities}
        # Methods of the kernel's own facilities (`kernel.*`), served by `_facility_call` like a provider's;
        # whoever assembles the kernel adds them with `add_kernel_method`.
        self.kernel_methods: dict[str, dict[str, KernelMethod]] = {}
        self.listeners: list[ChangeListener] = []
        # In-kernel consumers of plugin events (the running turn forwards its tool_output to its client);
        # other plugins read the same events from the ring.
        self.event_listeners: list[EventListener] = []
        self.handlers = Handlers(self._facility_ready, self._facility_call, self._event_publish, self._exited)
        self.gate = gate or StartGate()  # how many plugins may be coming up at once (supervisor/gate.py)
        self.plugins: dict[str, ManagedPlugin] = {spec.name: self._managed(spec) for spec in specs}
        self.order = list(self.plugins)
        self.dependents: dict[str, set[str]] = {}
        self._index_dependents()
        self.started_at = time.monotonic()
        self.kernel_ready = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._restart_timers: dict[str, asyncio.TimerHandle] = {}
        self._shutting_down = False

    def _managed(self, spec: PluginSpec) -> ManagedPlugin:
        directory = self.data_dir / "plugins" / spec.name
        return ManagedPlugin(
            spec,
            directory,
            self.ring,
            self.handlers,
            self.plugin_settings.last.get(spec.name),
            gate=self.gate,
            inproc_loader=self.inproc_loader,
            settings_path=self.settings_path,
        )

    def _index_dependents(self) -> None:
        """provider → the plugins that wait for one of its facilities (requires or after_if_present)."""
        self.dependents = {name: set() for name in self.plugins}
        for plugin in self.plugins.values():
            for provider in self._providers_of(plugin):
                if provider in self.dependents:
                    self.dependents[provider].add(plugin.name)

    # -- assembly --------------------------------------------------------------------------------------

    def add_kernel_method(self, facility: str, method: str, handler: KernelMethod) -> None:
        """Serve ``facility.method`` (a kernel facility) with ``handler(caller=…, **params)``. Refuses a method
        already served: two components answering one call would be decided by registration order."""
        facility = protocol.facility_name(facility)
        methods = self.kernel_methods.setdefault(facility, {})
        if method in methods:
            raise ValueError(f"kernel facility {facility!r} already serves {method!r}; register it once")
        methods[method] = handler

    def add_event_listener(self, listener: EventListener) -> None:
        """Call ``listener(event)`` for every event a plugin publishes, after it is in the ring."""
        self.event_listeners.append(listener)

    # -- the graph walk --------------------------------------------------------------------------------

    def start(self, *, on_demand: bool = True) -> None:
        """The kernel is up: its facilities are ready; spawn whatever can go now. A `lazy` plugin that may wait
        (`waits_for_a_call`) is left stopped, its tools offered, until the first call of one of them
        (``on_demand`` False: started now like the others — a test harness starting the plugin it tests)."""
        self.kernel_ready = True
        self.started_at = time.monotonic()
        for plugin in self.plugins.values() if on_demand else ():
            if plugin.state is State.WAITING and plugin.wanted and self.waits_for_a_call(plugin):
                plugin.on_demand = True
                self._set(plugin, State.STOPPED, ON_DEMAND_REASON)
        self.schedule()

    def waits_for_a_call(self, plugin: ManagedPlugin) -> bool:
        """``[start] lazy`` and nothing needs it running before a tool call: no stage hook (hooks run in every
        turn), tools to be called by, and no plugin that requires or orders itself after its facilities (it
        would wait for them)."""
        spec = plugin.spec
        return bool(spec.lazy and spec.plugin.tools and not spec.plugin.stages and not self.dependents.get(plugin.name))

    @staticmethod
    def _left_for_a_call(plugin: ManagedPlugin) -> bool:
        """A `[start] lazy` plugin still stopped, waiting for the first call of its tools (or for a plugin that
        comes to require it)."""
        return plugin.on_demand and plugin.state is State.STOPPED and plugin.wanted

    async def _start_on_demand(self, plugin: ManagedPlugin) -> None:
        """Start a plugin left stopped for its first tool call (or join a start under way) and wait until it is
        ready or its start ended otherwise, at most twice its start timeout (it may queue at the gate)."""
        if self._left_for_a_call(plugin):
            log.info("[%s] started by the first call of its tools", plugin.name)
            self._start(plugin)
        if plugin.state not in (State.WAITING, State.STARTING):
            return
        settled = asyncio.Event()

        def check(changed: ManagedPlugin | None = None) -> None:
            if plugin.state not in (State.WAITING, State.STARTING):
                settled.set()

        self.listeners.append(check)
        try:
            check()
            await asyncio.wait_for(settled.wait(), 2 * plugin.spec.start_timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            self.listeners.remove(check)

    def schedule(self) -> None:
        if self._shutting_down:
            return
        for name in self.order:
            plugin = self.plugins[name]
            if plugin.state is State.WAITING and plugin.wanted:
                blockers = self.blockers(plugin)
                if not blockers:
                    self._launch(plugin)
                else:
                    self._wake_on_demand(provider for _, provider in blockers)

    def _wake_on_demand(self, providers: Iterable[str]) -> None:
        """Start the `[start] lazy` providers a waiting plugin needs: a plugin added while the kernel runs
        (`hologram plugin add`) may require a facility of one left stopped until its first tool call, and would
        otherwise wait for a call that never comes."""
        for provider in providers:
            other = self.plugins.get(provider)
            if other is not None and self._left_for_a_call(other):
                log.info("[%s] started for a plugin that requires its facilities", other.name)
                other.on_demand = False
                self._start(other)

    def _providers_of(self, plugin: ManagedPlugin) -> set[str]:
        providers = set(plugin.spec.requires.values())
        for names in plugin.spec.optional.values():
            providers.update(names)
        return providers

    def facility_is_ready(self, provider: str, facility: str) -> bool:
        if provider == KERNEL:
            return self.kernel_ready and facility in self.kernel_facilities
        other = self.plugins.get(provider)
        return other is not None and other.state.running and facility in other.ready_facilities

    def blockers(self, plugin: ManagedPlugin) -> list[tuple[str, str]]:
        """(facility, provider) pairs this plugin still waits for."""
        waiting = [(f, p) for f, p in plugin.spec.requires.items() if not self.facility_is_ready(p, f)]
        for facility, providers in plugin.spec.optional.items():
            for provider in providers:
                other = self.plugins.get(provider)
                gave_up = other is not None and (other.state is State.FAILED or not other.wanted)
                if not gave_up and not self.facility_is_ready(provider, facility):
                    waiting.append((facility, provider))
        return sorted(waiting)

    def waiting_reason(self, plugin: ManagedPlugin) -> str:
        parts = []
        for facility, provider in self.blockers(plugin):
            other = self.plugins.get(provider)
            if other is None:
                parts.append(f"{facility} from {provider}")
            elif other.state in (State.FAILED, State.CRASHED, State.STOPPED):
                why = f": {other.reason}" if other.reason else ""
                parts.append(f"{facility} from {provider}, which {other.state.value}{why}")
            else:
                parts.append(f"{facility} from {provider} ({other.state.value})")
        return "waiting on " + "; ".join(parts) if parts else ""

    def _launch(self, plugin: ManagedPlugin) -> None:
        plugin.configure(self.plugin_settings.table(plugin.name))  # settings.toml as it is now
        self._set(plugin, State.STARTING, "")
        self._spawn_task(self._run_start(plugin))

    async def _run_start(self, plugin: ManagedPlugin) -> None:
        try:
            await plugin.start()
        except StartFailed as exc:
            if plugin.state is not State.STARTING:  # stopped or shut down meanwhile: not a failure
                return
            log.error("[%s] start failed: %s", plugin.name, exc)
            plugin.reason = f"start failed: {exc}"
            runtime = plugin.runtime
            if runtime is not None:
                plugin.stop_requested = True  # its exit is the consequence of the failure, not a new crash
                plugin.kill()
                await asyncio.gather(*runtime.tasks, return_exceptions=True)
            self._after_failure(plugin, permanent=exc.permanent)
            return
        if plugin.state is State.STARTING:
            elapsed = (plugin.ready_at or 0) - (plugin.started_at or 0)
            self._set(plugin, State.READY, f"ready in {elapsed:.2f} s")

    def _spawn_task(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- events from plugins ---------------------------------------------------------------------------

    def _facility_ready(self, plugin: ManagedPlugin, facility: str) -> None:
        log.info("[%s] facility %s ready", plugin.name, facility)
        self._tell_dependents(plugin, facility, ready=True)
        self.schedule()

    def _exited(self, plugin: ManagedPlugin, code: int | None, description: str) -> None:
        lost = sorted(plugin.ready_facilities)
        plugin.ready_facilities.clear()
        for facility in lost:
            self._tell_dependents(plugin, facility, ready=False)
        if not self._shutting_down:
            self._restart_dependents_that_need(plugin, set(lost))
        if plugin.state is State.STARTING:
            return  # _run_start sees the exit and applies the policy, once
        if plugin.stop_requested or self._shutting_down:
            if plugin.state is State.READY:  # exited on its own during shutdown; the stopper sets the rest
                self._set(plugin, State.STOPPED, "exited")
            return
        log.warning("[%s] %s", plugin.name, description)
        restart = plugin.spec.restart
        if restart == "never" or (restart == "on-failure" and code == 0):
            state = State.STOPPED if code == 0 else State.FAILED
            self._set(plugin, state, f"{description} (restart = {restart})")
            self.schedule()  # after_if_present dependents no longer wait for it
            return
        plugin.reason = description
        self._after_failure(plugin, permanent=False)

    def _after_failure(self, plugin: ManagedPlugin, *, permanent: bool) -> None:
        if permanent or plugin.spec.restart == "never":
            self._set(plugin, State.FAILED, plugin.reason)
            self.schedule()
            return
        delay = plugin.crash_policy.record_crash()
        if delay is None:
            self._set(
                plugin,
                State.FAILED,
                f"{plugin.reason}; crashed {plugin.crash_policy.recent_crashes} times within "
                f"{plugin.crash_policy.window_s / 60:g} minutes, automatic restarts stopped "
                f"(run `hologram plugin restart {plugin.name}`)",
            )
            self.schedule()
            return
        self._set(plugin, State.CRASHED, f"{plugin.reason}; restarting in {delay:g} s")
        loop = asyncio.get_running_loop()
        self._restart_timers[plugin.name] = loop.call_later(delay, self._restart_after_crash, plugin)

    def _restart_after_crash(self, plugin: ManagedPlugin) -> None:
        self._restart_timers.pop(plugin.name, None)
        if plugin.state is State.CRASHED and plugin.wanted and not self._shutting_down:
            plugin.restarts += 1
            self._set(plugin, State.WAITING, "")
            self.schedule()

    def _restart_dependents_that_need(self, provider: ManagedPlugin, lost: set[str]) -> None:
        """Dependents that cannot live without a lost facility go back to waiting for it.

        A plugin declares at initialize whether it copes (`facility_loss = "survive"`, which the SDK sends
        when the author listens for facility/status); the others are stopped now and started again, like at
        start-up, the moment the provider announces the facility again.
        """
        for name in sorted(self.dependents.get(provider.name, ())):
            dependent = self.plugins[name]
            if dependent.state not in (State.STARTING, State.READY) or dependent.survives_facility_loss:
                continue  # a plugin already stopping is on its way out anyway
            needed = {f for f, p in dependent.spec.requires.items() if p == provider.name} & lost
            if needed:
                why = f"lost {', '.join(sorted(needed))} from {provider.name}"
                self._spawn_task(self._send_back_to_waiting(dependent, why))

    async def _send_back_to_waiting(self, plugin: ManagedPlugin, why: str) -> None:
        log.warning("[%s] %s; restarting it when that is back", plugin.name, why)
        self._set(plugin, State.STOPPING, "")
        plugin.reason = f"restarting: {why}"
        await plugin.stop()
        plugin.restarts += 1
        if plugin.wanted and not self._shutting_down:
            self._set(plugin, State.WAITING, "")
            self.schedule()

    def _tell_dependents(self, plugin: ManagedPlugin, facility: str, *, ready: bool) -> None:
        for name in sorted(self.dependents.get(plugin.name, ())):
            dependent = self.plugins[name]
            runtime = dependent.runtime
            wants = facility in dependent.spec.requires or facility in dependent.spec.optional
            if runtime is not None and wants and not runtime.connection.closed:
                self._spawn_task(
                    _quietly(
                        runtime.connection.notify(protocol.FACILITY_STATUS, {"facility": facility, "ready": ready})
                    )
                )

    async def _facility_call(self, caller: ManagedPlugin, params: Any) -> Any:
        if not isinstance(params, dict):
            raise RpcError(INVALID_PARAMS, "facility/call expects an object")
        facility = protocol.facility_name(str(params.get("facility", "")))
        method = str(params.get("method", ""))
        provider = caller.spec.requires.get(facility)
        if provider is None:
            optional = caller.spec.optional.get(facility, [])
            provider = optional[0] if optional else None
        if provider is None:
            raise RpcError(
                NOT_READY,
                f"{caller.name} does not require {facility!r}: add it to facilities.requires and run hologram build",
            )
        arguments = params.get("params") or {}
        if provider == KERNEL:
            handler = self.kernel_methods.get(facility, {}).get(method)
            if handler is None:
                raise RpcError(METHOD_NOT_FOUND, f"the kernel serves no method {method!r} on {facility!r}")
            result = handler(caller=caller.name, **arguments)
            return await result if asyncio.iscoroutine(result) else result
        target = self.plugins[provider]
        if not self.facility_is_ready(provider, facility) or target.runtime is None:
            raise RpcError(NOT_READY, f"{facility} is not ready: {provider} is {target.state.value}")
        return await target.runtime.connection.request(
            protocol.FACILITY_CALL,
            {"facility": facility, "method": method, "params": arguments, "caller": caller.name},
        )

    def _event_publish(self, plugin: ManagedPlugin, event: Any) -> None:
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            event = {**event, "source": plugin.name}
            self.ring.publish(event)
            for listener in list(self.event_listeners):
                try:
                    listener(event)
                except Exception:  # a broken listener must not cost the plugin its event
                    log.exception("event listener failed")

    def _set(self, plugin: ManagedPlugin, state: State, reason: str) -> None:
        plugin.state = state
        plugin.reason = reason
        for listener in list(self.listeners):
            try:
                listener(plugin)
            except Exception:  # a broken progress display must not stop the kernel
                log.exception("state listener failed")

    # -- what the agent turn uses ------------------------------------------------------------------------

    def tool_catalog(self) -> list[dict[str, Any]]:
        """Tools of plugins that are ready now, and the manifest's tools of those left stopped until a call
        (`start`); a crashed plugin's tools are detached with it."""
        catalog = []
        for name in self.order:
            plugin = self.plugins[name]
            if plugin.state is State.READY:
                catalog += [{**tool, "plugin": name} for tool in plugin.tools.values()]
            elif plugin.on_demand and plugin.wanted and plugin.state is not State.FAILED:
                catalog += [{**tool, "plugin": name} for tool in plugin.manifest_tools()]
        return catalog

    async def invoke_tool(
        self,
        plugin_name: str,
        tool: str,
        arguments: dict[str, Any],
        *,
        call_id: str,
        session_id: str | None,
        timeout: float | None = None,
        grace: float = 0.0,
        parent: str | None = None,
    ) -> ToolOutcome:
        """Run one tool call in its plugin. Raises RpcError / ConnectionClosed / RequestTimeout.

        ``parent``: the session whose running turn the call's turn works for (a sub-agent's call), sent as
        ``tool/invoke`` ``parent`` only when there is one (docs/protocol.md, section 7).

        The plugin's answer enters the kernel here and is normalised here, once (`ToolOutcome.of`).
        Cancelling the caller, or the timeout, sends the plugin `$/cancel`; after a timeout its final
        answer within `grace` s comes as `RequestTimeout.answer` (see `Connection.request`), a `ToolOutcome`."""
        plugin = self._get(plugin_name)
        if plugin.on_demand and plugin.state is not State.READY:
            await self._start_on_demand(plugin)
        if plugin.state is not State.READY or plugin.runtime is None:
            raise RpcError(NOT_READY, f"plugin {plugin_name} is {plugin.state.value}")
        params: dict[str, Any] = {"name": tool, "arguments": arguments, "call_id": call_id, "session_id": session_id}
        if parent is not None:
            params["parent"] = parent
        runtime = plugin.runtime
        arenas = {arena.id: arena for arena in runtime.arenas}

        def read_blob(blob: Any) -> bytes:
            return from_blob(blob, arenas)

        try:
            answer = await runtime.connection.request(protocol.TOOL_INVOKE, params, timeout=timeout, grace=grace)
        except RequestTimeout as exc:
            if exc.answer is not None:
                late = exc.answer
                exc.answer = ToolOutcome.of(late)
                await _release_blob(runtime.connection, late)
            raise
        outcome = ToolOutcome.of(answer, read_blob)
        await _release_blob(runtime.connection, answer)  # copied out above: the plugin may free its region
        return outcome

    async def invoke_stage(self, plugin_name: str, stage: str, context: dict[str, Any], *, timeout: float) -> Any:
        """Run one plugin's hook for `stage`; returns what the hook returned (changes, deny, respond)."""
        plugin = self._get(plugin_name)
        if plugin.state is not State.READY or plugin.runtime is None:
            raise RpcError(NOT_READY, f"plugin {plugin_name} is {plugin.state.value}")
        answer = await plugin.runtime.connection.request(
            protocol.STAGE_INVOKE, {"stage": stage, "context": context}, timeout=timeout
        )
        return answer.get("result") if isinstance(answer, dict) else answer

    # -- commands --------------------------------------------------------------------------------------

    def _cancel_restart(self, plugin: ManagedPlugin) -> None:
        timer = self._restart_timers.pop(plugin.name, None)
        if timer is not None:
            timer.cancel()

    async def stop_plugin(self, name: str, reason: str = "stopped by `hologram plugin stop`") -> None:
        plugin = self._get(name)
        plugin.wanted = False
        plugin.on_demand = False  # stopped by a person: its tools go with it, a call does not start it
        self._cancel_restart(plugin)
        if plugin.state.running:
            self._set(plugin, State.STOPPING, "")
            plugin.reason = reason
            await plugin.stop()
        self._set(plugin, State.STOPPED, reason)
        self.schedule()

    def check_settings(self, name: str, verb: str) -> None:
        """Before a person's restart or start of ``name``: refuse it (RpcError, with the file's errors and the
        state the plugin stays in) while settings.toml cannot be used, so nothing is stopped for a start
        that could not take the new values."""
        plugin = self._get(name)
        try:
            self.plugin_settings.check()
        except HologramError as exc:
            if plugin.state.running:
                pid = f", pid {plugin.pid}" if plugin.pid else ""
                now = f"{name} keeps running ({plugin.state.value}{pid}) with the values it started with"
            else:
                now = f"{name} stays {plugin.state.value}"
            raise RpcError(
                APPLICATION_ERROR, f"{name} was not {verb}: settings.toml cannot be used\n{exc.render()}\n{now}"
            ) from None

    async def start_plugin(self, name: str) -> None:
        """A person's start: settings.toml is checked first (`check_settings`)."""
        self.check_settings(name, "started")
        self._start(self._get(name))

    def _start(self, plugin: ManagedPlugin) -> None:
        plugin.wanted = True
        plugin.crash_policy.reset()
        self._cancel_restart(plugin)
        if not plugin.state.running:
            self._set(plugin, State.WAITING, "")
            self.schedule()

    async def restart_plugin(self, name: str) -> None:
        """A person's restart: settings.toml is checked before the plugin is stopped (`check_settings`)."""
        self.check_settings(name, "restarted")
        plugin = self._get(name)
        if plugin.state.running:
            self._set(plugin, State.STOPPING, "")
            plugin.reason = "restarting"
            await plugin.stop()
            self._set(plugin, State.STOPPED, "restarting")
        plugin.restarts += 1
        self._start(plugin)

    def _get(self, name: str) -> ManagedPlugin:
        plugin = self.plugins.get(name)
        if plugin is None:
            raise KeyError(f"no plugin named {name!r}; `hologram status` lists them")
        return plugin

    async def shutdown(self) -> None:
        """Stop every plugin in reverse dependency order: a plugin stops once all its dependents have."""
        self._shutting_down = True
        for timer in self._restart_timers.values():
            timer.cancel()
        self._restart_timers.clear()
        done = {name: asyncio.Event() for name in self.plugins}

        async def stop_one(plugin: ManagedPlugin) -> None:
            for dependent in self.dependents.get(plugin.name, ()):
                await done[dependent].wait()
            if plugin.state.running:
                self._set(plugin, State.STOPPING, "")
                await plugin.stop()
                self._set(plugin, State.STOPPED, "stopped at shutdown")
            done[plugin.name].set()

        await asyncio.gather(*(stop_one(p) for p in self.plugins.values()), return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()

    def dependents_closure(self, names: Iterable[str]) -> list[str]:
        """The named plugins and everything that depends on them, transitively, in start order."""
        seen: set[str] = set()
        queue = [n for n in names if n in self.plugins]
        while queue:
            name = queue.pop()
            if name not in seen:
                seen.add(name)
                queue.extend(self.dependents.get(name, ()))
        return [n for n in self.order if n in seen]

    async def restart_many(self, names: Iterable[str]) -> list[str]:
        """Stop the named plugins and their dependents (dependents first), then start them again."""
        affected = self.dependents_closure(names)
        await self._stop_dependents_first(affected, "restarting")
        self._back_to_waiting(affected)
        return affected

    async def _stop_dependents_first(self, names: list[str], reason: str) -> None:
        """Stop `names` (given in start order) in reverse, so nothing loses a provider while running."""
        for name in reversed(names):
            plugin = self.plugins[name]
            self._cancel_restart(plugin)
            if plugin.state.running:
                self._set(plugin, State.STOPPING, "")
                plugin.reason = reason
                await plugin.stop()

    def _back_to_waiting(self, names: Iterable[str]) -> None:
        """Count a restart for each and let the scheduler start them as their facilities become ready."""
        for name in names:
            plugin = self.plugins.get(name)
            if plugin is None:
                continue
            plugin.crash_policy.reset()
            plugin.restarts += 1
            if plugin.wanted:
                self._set(plugin, State.WAITING, "")
        self.schedule()

    async def replace_specs(self, specs: Iterable[PluginSpec]) -> list[str]:
        """Adopt a rebuilt lock: plugins whose lock entry changed (and their dependents) restart; removed
        plugins stop; new ones start when ready. Unchanged plugins keep running untouched."""
        new = {spec.name: spec for spec in specs}
        changed = [n for n, s in new.items() if n in self.plugins and self.plugins[n].spec.plugin != s.plugin]
        removed = [n for n in self.plugins if n not in new]
        affected = self.dependents_closure(changed + removed)
        await self._stop_dependents_first(affected, "restarting: its manifest changed")
        for name in removed:
            self._set(self.plugins[name], State.STOPPED, "removed from the lock")
            del self.plugins[name]
        for name, spec in new.items():
            if name in self.plugins:
                self.plugins[name].spec = spec
            else:
                self.plugins[name] = self._managed(spec)
        self.order = list(new)
        self._index_dependents()
        self._back_to_waiting(affected)
        return [n for n in affected if n in self.plugins]

    # -- status ----------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        plugins = []
        for name in self.order:
            plugin = self.plugins[name]
            waiting = (
                [{"facility": f, "provider": p} for f, p in self.blockers(plugin)]
                if plugin.state is State.WAITING
                else []
            )
            uptime = plugin.uptime_s
            plugins.append(
                {
                    "name": name,
                    "state": plugin.state.value,
                    "pid": plugin.pid,
                    "restarts": plugin.restarts,
                    "uptime_s": None if uptime is None else round(uptime, 3),
                    "provides": plugin.spec.provides,
                    "ready_facilities": sorted(plugin.ready_facilities),
                    "waiting_on": waiting,
                    "reason": self.waiting_reason(plugin) if plugin.state is State.WAITING else plugin.reason,
                    "on_demand": plugin.on_demand and plugin.state is State.STOPPED,  # `[start] lazy`, not started
                    "status": plugin.status if plugin.state is State.READY else "",
                    "tools": sorted(k for k, t in plugin.tools.items() if t.get("session") is None),
                }
            )
        return {"plugins": plugins}


async def _quietly(coroutine: Any) -> None:
    try:
        await coroutine
    except Exception as exc:  # a dependent that went away while being told is not an error
        log.debug("notification failed: %s", exc)


async def _release_blob(connection: Any, answer: Any) -> None:
    """``arena/release`` for a blob ref a tool answer carried (docs/protocol.md section 3: a ref in an answer
    stays the plugin's until the receiver says so); without it every screenshot kept its region for good."""
    blob = answer.get("blob") if isinstance(answer, dict) else None
    ref = blob.get("ref") if isinstance(blob, dict) else None
    if isinstance(ref, dict):
        try:
            await connection.notify(protocol.ARENA_RELEASE, {"refs": [ref]})
        except Exception:  # the plugin went away: its arena goes with it
            log.debug("arena/release not sent", exc_info=True)
