"""Running a stage: pluggy picks the hooks and their order, this module runs them and folds in the answers.

Order. pluggy calls hookimpls last-registered-first. Each (plugin, stage) pair is registered as its own
pluggy plugin holding one hookimpl, and the pairs of a stage are registered in *reverse* lock order, so
pluggy's LIFO call order is exactly the lock's order for every stage independently (a plugin can be first
in one stage and last in another). `register` keeps that rule for hooks added later: a new hook runs
after the ones already there unless `first=True`.

Failure. A hook that raises, times out or answers garbage costs an entry in ``ctx.errors`` and a log line;
the stage goes on with the next hook and the turn never fails because of a hook.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import pluggy

from hologram.protocol import STAGE_NAMES
from hologram.stages.context import HookCall, StageContext
from hologram.stages.hookspecs import PROJECT, StageSpec, hookimpl

HookSource = Callable[[StageContext], "HookCall | None"]


class StageDispatcher:
    """The stage hooks of a kernel, in order, and the loop that runs them."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(StageSpec)
        self._hooks: dict[str, list[tuple[str, HookSource]]] = {stage: [] for stage in STAGE_NAMES}
        self.calls = 0  # hooks run (for the benchmark and tests)

    def order(self, stage: str) -> list[str]:
        """Plugin names hooking ``stage``, in the order they run."""
        return [name for name, _ in self._hooks[stage]]

    def register(self, stage: str, plugin: str, source: HookSource, *, first: bool = False) -> None:
        """Add a hook. It runs after the existing hooks of the stage (before them with ``first``)."""
        if stage not in self._hooks:
            raise ValueError(f"unknown stage {stage!r}; stages are: {', '.join(STAGE_NAMES)}")
        hooks = self._hooks[stage]
        hooks.insert(0, (plugin, source)) if first else hooks.append((plugin, source))
        self._reregister(stage)

    def register_all(self, stage: str, ordered: Iterable[tuple[str, HookSource]]) -> None:
        """Replace a stage's hooks with these, in this order."""
        self._hooks[stage] = list(ordered)
        self._reregister(stage)

    def _reregister(self, stage: str) -> None:
        for name, impl in list(self.pm.list_name_plugin()):
            if name.endswith(f"/{stage}") and impl is not None:
                self.pm.unregister(impl)
        for plugin, source in reversed(self._hooks[stage]):  # LIFO: the last registered is called first
            self.pm.register(_impl_object(stage, source), name=f"{plugin}/{stage}")

    def has_hooks(self, stage: str) -> bool:
        return bool(self._hooks[stage])

    async def run(self, stage: str, ctx: StageContext) -> bool:
        """Run the hooks of ``stage`` on ``ctx``; True when one of them denied or responded."""
        if not self._hooks[stage]:
            return False
        calls: list[HookCall] = getattr(self.pm.hook, stage)(ctx=ctx)
        for call in calls:
            self.calls += 1
            started = time.monotonic()
            try:
                answer = call.run(ctx.view(stage, private=not call.remote))
                if inspect.isawaitable(answer):
                    answer = await (asyncio.wait_for(answer, call.timeout_s) if not call.remote else answer)
            except asyncio.TimeoutError:
                ctx.record_error(call.plugin, stage, f"timed out after {call.timeout_s:g} s")
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                kind = "timed out" if type(exc).__name__ == "RequestTimeout" else "failed"
                ctx.record_error(call.plugin, stage, f"{kind} after {time.monotonic() - started:.2f} s: {exc}")
                continue
            if ctx.apply(stage, call.plugin, answer):
                return True
        return False


def _impl_object(stage: str, source: HookSource) -> Any:
    """A pluggy plugin with one hookimpl, named after the stage, that asks ``source`` for a call."""

    def impl(ctx: StageContext) -> HookCall | None:
        return source(ctx)

    return SimpleNamespace(**{stage: hookimpl(impl)})
