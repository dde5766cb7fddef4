"""Hook sources: where a stage hook's code actually runs.

- `RemoteHook`: an out-of-process plugin; the call is forwarded with ``supervisor.invoke_stage`` (the
  plugin protocol's ``stage/invoke``) and the plugin's own timeout from the lock.
- `FunctionHook`: a Python function in the kernel process, called directly (no RPC, no thread): in-process
  plugins (``run.inproc``: the SDK ``Plugin``'s stage function) and hooks the kernel adds itself.

Every source checks on each call whether it applies: a plugin that is not ready has its hooks detached
(a crash detaches them, a restart re-attaches them with no re-registration), and a tool-stage hook with
scope ``own_tools`` sees only calls of its own plugin's tools.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hologram.stages.context import TOOL_STAGES, HookCall, StageContext
from hologram.stages.dispatch import StageDispatcher

if TYPE_CHECKING:
    from hologram.lock import Lock
    from hologram.supervisor import Supervisor

log = logging.getLogger("hologram.stages")
DEFAULT_TIMEOUT_S = 10.0


def _in_scope(stage: str, scope: str, plugin: str, ctx: StageContext) -> bool:
    return scope != "own_tools" or stage not in TOOL_STAGES or ctx.call_plugin == plugin


class RemoteHook:
    """Forwards one plugin's hook for one stage over RPC."""

    def __init__(self, supervisor: Supervisor, plugin: str, stage: str, *, timeout_s: float, scope: str) -> None:
        self.supervisor = supervisor
        self.plugin = plugin
        self.stage = stage
        self.timeout_s = timeout_s
        self.scope = scope

    def _run(self, view: dict[str, Any]) -> Awaitable[Any]:
        return self.supervisor.invoke_stage(self.plugin, self.stage, view, timeout=self.timeout_s)

    def __call__(self, ctx: StageContext) -> HookCall | None:
        managed = self.supervisor.plugins.get(self.plugin)
        if managed is None or managed.state.value != "ready" or self.stage not in managed.stages:
            return None
        if not _in_scope(self.stage, self.scope, self.plugin, ctx):
            return None
        return HookCall(self.plugin, self._run, self.timeout_s, remote=True)


class FunctionHook:
    """Calls a Python function in the kernel process; sync functions are called inline, async awaited."""

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
        self._function = function
        self._resolve = resolve

    def __call__(self, ctx: StageContext) -> HookCall | None:
        function = self._function if self._resolve is None else self._resolve()
        if function is None or not _in_scope(self.stage, self.scope, self.plugin, ctx):
            return None
        return HookCall(self.plugin, function, self.timeout_s, remote=False)


def _inproc_resolver(supervisor: Supervisor, plugin: str, module: str, stage: str) -> Callable[[], Any]:
    """The SDK plugin's stage function while the plugin is ready, else None (detached)."""

    def resolve() -> Any:
        managed = supervisor.plugins.get(plugin)
        if managed is None or managed.state.value != "ready":
            return None
        try:
            sdk_plugin = getattr(importlib.import_module(module), "plugin", None)
        except ImportError:
            return None
        stages = getattr(sdk_plugin, "stages", None)
        return stages.get(stage) if isinstance(stages, dict) else None

    return resolve


def install_from_lock(dispatcher: StageDispatcher, lock: Lock, supervisor: Supervisor) -> None:
    """Register every stage hook of the lock, in the lock's order: proxies for out-of-process plugins,
    direct function hooks for in-process ones."""
    for stage, names in lock.stages.items():
        hooks = []
        for name in names:
            entry = lock.plugin(name) or {}
            settings = (entry.get("stages") or {}).get(stage) or {}
            timeout_s = float(settings.get("timeout_s", DEFAULT_TIMEOUT_S))
            scope = str(settings.get("scope", "all"))
            run = entry.get("run") or {}
            source: Callable[[StageContext], HookCall | None]
            if "inproc" in run:
                resolve = _inproc_resolver(supervisor, name, str(run["inproc"]), stage)
                source = FunctionHook(name, stage, timeout_s=timeout_s, scope=scope, resolve=resolve)
            else:
                source = RemoteHook(supervisor, name, stage, timeout_s=timeout_s, scope=scope)
            hooks.append((name, source))
        dispatcher.register_all(stage, hooks)
