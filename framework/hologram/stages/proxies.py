"""Hook sources: where a stage hook's code actually runs.

- `RemoteHook`: an out-of-process plugin; the call is forwarded with ``supervisor.invoke_stage`` (the
  plugin protocol's ``stage/invoke``) and the plugin's own timeout from the lock.
- `FunctionHook`: a Python function in the kernel process, called directly (no RPC, no thread): in-process
  plugins (``run.inproc``: the function the SDK's local call path, `LocalEndpoint.stage_function`, says
  ``stage/invoke`` runs) and hooks the kernel adds itself.

Every source checks on each call whether it applies: a plugin that is not ready has its hooks detached
(a crash detaches them, a restart re-attaches them with no re-registration), and a tool-stage hook with
scope ``own_tools`` sees only calls of its own plugin's tools.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hologram.manifest.model import StageHook
from hologram.stages.context import TOOL_STAGES, HookCall, StageContext
from hologram.stages.dispatch import StageDispatcher
from hologram.stages.hookspecs import hookimpl

if TYPE_CHECKING:
    from hologram.plan.lock import Lock
    from hologram.supervisor import ManagedPlugin, Supervisor

log = logging.getLogger("hologram.stages")
DEFAULT_TIMEOUT_S = 10.0


def _own_tools(stage: str, scope: str) -> bool:
    """Whether a hook sees only its own plugin's tool calls (scope ``own_tools``, tool stages only)."""
    return scope == "own_tools" and stage in TOOL_STAGES


def _ready_plugin(supervisor: Supervisor, plugin: str) -> ManagedPlugin | None:
    """The plugin while it is ready; None when it is unknown, starting, stopped or crashed (detached)."""
    managed = supervisor.plugins.get(plugin)
    return managed if managed is not None and managed.state.value == "ready" else None


# Both sources are registered with pluggy as they are: their ``hook`` is the hookimpl (dispatch.py), and
# calling the source is calling it.


class RemoteHook:
    """Forwards one plugin's hook for one stage over RPC."""

    batch_stable = True  # the answer depends on the plugin's state and the call's tool plugin only

    def __init__(self, supervisor: Supervisor, plugin: str, stage: str, *, timeout_s: float, scope: str) -> None:
        self.supervisor = supervisor
        self.plugin = plugin
        self.stage = stage
        self.timeout_s = timeout_s
        self.scope = scope
        self.own_tools = _own_tools(stage, scope)
        self._call = HookCall(plugin, self._run, timeout_s, remote=True)  # the same for every call

    def _run(self, view: dict[str, Any]) -> Awaitable[Any] | None:
        if not self._ready():  # stopped since pluggy was asked (in a batch, once per batch): detached
            return None
        return self.supervisor.invoke_stage(self.plugin, self.stage, view, timeout=self.timeout_s)

    def _ready(self) -> bool:
        managed = _ready_plugin(self.supervisor, self.plugin)
        return managed is not None and self.stage in managed.stages

    @hookimpl
    def hook(self, ctx: StageContext) -> HookCall | None:
        if not self._ready() or (self.own_tools and ctx.call_plugin != self.plugin):
            return None
        return self._call

    __call__ = hook


class FunctionHook:
    """Calls a Python function in the kernel process; sync functions are called inline, async awaited."""

    batch_stable = True  # the answer depends on the plugin's state and the call's tool plugin only

    def __init__(
        self,
        plugin: str,
        stage: str,
        function: Callable[[dict[str, Any]], Any] | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        scope: str = "all",
        resolve: Callable[[], Callable[[dict[str, Any]], Any] | None] | None = None,
    ) -> None:
        self.plugin = plugin
        self.stage = stage
        self.timeout_s = timeout_s
        self.scope = scope
        self._resolve = resolve
        self.own_tools = _own_tools(stage, scope)
        self._call = None if function is None else HookCall(plugin, function, timeout_s, remote=False)

    @hookimpl
    def hook(self, ctx: StageContext) -> HookCall | None:
        call = self._call
        if self._resolve is not None:  # an in-process plugin's function: only while it is ready
            function = self._resolve()
            if function is None:
                return None
            if call is None or call.run is not function:  # the plugin was reloaded
                call = self._call = HookCall(self.plugin, function, self.timeout_s, remote=False)
        if call is None or (self.own_tools and ctx.call_plugin != self.plugin):
            return None
        return call

    __call__ = hook


def _inproc_resolver(supervisor: Supervisor, plugin: str, stage: str) -> Callable[[], Any]:
    """The in-process plugin's stage function while the plugin is ready, else None (detached): what its
    local call path (`ManagedPlugin.local`, the SDK's `LocalEndpoint`) runs for ``stage/invoke``."""

    def resolve() -> Any:
        managed = _ready_plugin(supervisor, plugin)
        local = managed.local if managed is not None else None
        return local.stage_function(stage) if local is not None else None

    return resolve


def install_from_lock(dispatcher: StageDispatcher, lock: Lock, supervisor: Supervisor) -> None:
    """Register every stage hook of the lock, in the lock's order: proxies for out-of-process plugins,
    direct function hooks for in-process ones."""
    for stage, names in lock.stages.items():
        hooks = []
        for name in names:
            plugin = lock.plugin(name)
            hook = plugin.stage(stage) if plugin is not None else StageHook()
            timeout_s, scope = hook.timeout_s, hook.scope
            source: Callable[[StageContext], HookCall | None]
            if plugin is not None and plugin.run is not None and plugin.run.inproc is not None:
                resolve = _inproc_resolver(supervisor, name, stage)
                source = FunctionHook(name, stage, timeout_s=timeout_s, scope=scope, resolve=resolve)
            else:
                source = RemoteHook(supervisor, name, stage, timeout_s=timeout_s, scope=scope)
            hooks.append((name, source))
        dispatcher.register_all(stage, hooks)
