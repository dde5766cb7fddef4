"""Running a stage: pluggy picks the hooks and their order, this module runs them and folds in the answers.

Order. pluggy calls hookimpls last-registered-first. Each (plugin, stage) pair is registered as its own
pluggy plugin holding one hookimpl, and the pairs of a stage are registered in *reverse* lock order, so
pluggy's LIFO call order is exactly the lock's order for every stage independently (a plugin can be first
in one stage and last in another). `register` keeps that rule for hooks added later: a new hook runs
after the ones already there unless `first=True`.

Views. In-process hooks get a private copy of the stage's view (`StageContext.view`), which they may
mutate without touching kernel state. Copying is most of a hook's cost (a ``post_action`` view holds every
tool call of the response), so consecutive in-process hooks share one copy for as long as it still
equals the context — compared, in C, right before each hook; a hook that mutated it, or that answered
(which may change the context), makes the next one get a fresh copy. The one thing this asks of a hook: treat the
view as yours during the call, and copy what you keep for later.

Batches. The tool stages run once per tool call, and asking pluggy which hooks apply costs ~2.5 µs plus
~1 µs per hook each time — most of a no-op hook's cost at 50 calls per response. Within one batch of
calls the answer can only differ by the call's tool plugin (``own_tools`` scope), so `Executor` passes a
memo and pluggy is asked once per stage and tool plugin per batch. A source opts in with
``batch_stable = True`` (`FunctionHook`, `RemoteHook`: their answer depends on nothing else); a stage with
any other source is asked per call, as before. A plugin that stops in the middle of a batch still loses
its hooks at once: `RemoteHook` checks the plugin's state when it runs, and skips it.

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

from hologram.base.protocol import STAGE_NAMES
from hologram.stages.context import HookCall, StageContext
from hologram.stages.hookspecs import PROJECT, StageSpec, hookimpl

HookSource = Callable[[StageContext], "HookCall | None"]
BatchMemo = dict[tuple[str, "str | None"], list[HookCall]]


class StageDispatcher:
    """The stage hooks of a kernel, in order, and the loop that runs them."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(StageSpec)
        self._hooks: dict[str, list[tuple[str, HookSource]]] = {stage: [] for stage in STAGE_NAMES}
        self._callers = {stage: getattr(self.pm.hook, stage) for stage in STAGE_NAMES}  # ~0.5 µs per run
        self._batch_stable = dict.fromkeys(STAGE_NAMES, True)  # every source's answer may be kept per batch

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
        self._batch_stable[stage] = all(getattr(source, "batch_stable", False) for _, source in self._hooks[stage])
        for name, impl in list(self.pm.list_name_plugin()):
            if name.endswith(f"/{stage}") and impl is not None:
                self.pm.unregister(impl)
        for plugin, source in reversed(self._hooks[stage]):  # LIFO: the last registered is called first
            self.pm.register(_impl_object(stage, source), name=f"{plugin}/{stage}")

    async def run(self, stage: str, ctx: StageContext, *, batch: BatchMemo | None = None) -> bool:
        """Run the hooks of ``stage`` on ``ctx``; True when one of them denied or responded.

        ``batch``: a dict the caller keeps for one batch of tool calls (`Executor`), in which pluggy's
        answer — which hooks apply — is kept per stage and tool plugin, instead of asking again for every
        call (see "Batches" above)."""
        if not self._hooks[stage]:
            return False
        if batch is not None and self._batch_stable[stage]:
            key = (stage, ctx.call_plugin)
            calls = batch.get(key)
            if calls is None:
                calls = batch[key] = self._callers[stage](ctx=ctx)
        else:
            calls = self._callers[stage](ctx=ctx)
        current: dict[str, Any] | None = None  # the view as the context is now; shares the kernel's objects
        private: dict[str, Any] | None = None  # the copy in-process hooks get, handed on while == current
        for call in calls:
            if call.remote:  # serialised before anything else runs: no copy needed
                view = current = current or ctx.view(stage, private=False)
            else:
                if private is not None:  # handed on unless the last hook mutated it
                    current = current or ctx.view(stage, private=False)
                    if private != current:
                        private = None
                view = private = private or ctx.view(stage)
            started = time.monotonic()
            try:
                answer: Any = call.run(view)
                if answer is not None and type(answer) is not dict and inspect.isawaitable(answer):
                    answer = await (answer if call.remote else asyncio.wait_for(answer, call.timeout_s))
            except asyncio.TimeoutError:
                ctx.record_error(call.plugin, stage, f"timed out after {call.timeout_s:g} s")
                continue
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                kind = "timed out" if type(exc).__name__ == "RequestTimeout" else "failed"
                ctx.record_error(call.plugin, stage, f"{kind} after {time.monotonic() - started:.2f} s: {exc}")
                continue
            if answer is not None:
                current = private = None  # the answer may change the context: fresh views from here on
                if ctx.apply(stage, call.plugin, answer):
                    return True
        return False


def _impl_object(stage: str, source: HookSource) -> Any:
    """A pluggy plugin with one hookimpl, named after the stage, that asks ``source`` for a call. A source
    with a ``hook`` method that is already a hookimpl (`FunctionHook`, `RemoteHook`) is registered as it is:
    one Python call less per hook and run."""
    method = getattr(source, "hook", None)
    if inspect.ismethod(method) and hasattr(method, f"{PROJECT}_impl"):
        return SimpleNamespace(**{stage: method})

    def impl(ctx: StageContext) -> HookCall | None:
        return source(ctx)

    return SimpleNamespace(**{stage: hookimpl(impl)})
