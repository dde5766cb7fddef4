"""The seven stages of an agent turn: pluggy hookspecs, remote proxies, the context hooks see.

    dispatcher = StageDispatcher()
    install_from_lock(dispatcher, lock, supervisor)        # the lock's order; proxies for remote plugins
    dispatcher.register("on_input", "mine", FunctionHook("mine", "on_input", my_function))
    stopped = await dispatcher.run("on_input", ctx)        # True: a hook denied or responded

The hook contract (what a hook sees and may return) is in `hologram.stages.hookspecs`; docs/agent.md.
"""

from hologram.stages.context import TOOL_STAGES, VISIBLE, WRITABLE, HookCall, StageContext
from hologram.stages.dispatch import StageDispatcher
from hologram.stages.hookspecs import PROJECT, StageSpec, hookimpl, hookspec
from hologram.stages.proxies import FunctionHook, RemoteHook, install_from_lock

__all__ = [
    "PROJECT",
    "TOOL_STAGES",
    "VISIBLE",
    "WRITABLE",
    "FunctionHook",
    "HookCall",
    "RemoteHook",
    "StageContext",
    "StageDispatcher",
    "StageSpec",
    "hookimpl",
    "hookspec",
    "install_from_lock",
]
