"""Waiting for plugins to settle after a command changed them, so the command can say how they ended up.

`hologram plugin add` waits for the plugins it added, `hologram plugin restart|start` for the one it restarted:
woken by the supervisor's state changes (no polling), bounded by the plugins' start timeouts — a plugin that
waits for a provider that never comes is reported as waiting, not waited for without end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from hologram.supervisor import ManagedPlugin, State

if TYPE_CHECKING:
    from hologram.kernel.core import Kernel

SETTLE_FACTOR = 2.0  # a plugin is waited for up to this many times its start timeout (it may queue at the gate)


async def settle(kernel: Kernel, names: Iterable[str], unsettled: Collection[State]) -> None:
    """Until none of `names` is in an `unsettled` state, at most `SETTLE_FACTOR` times their longest start
    timeout."""
    supervisor = kernel.supervisor
    plugins = [supervisor.plugins[n] for n in names if n in supervisor.plugins]
    if not plugins:
        return
    settled = asyncio.Event()

    def check(_: ManagedPlugin | None = None) -> None:
        if all(p.state not in unsettled for p in plugins):
            settled.set()

    kernel.add_listener(check)
    try:
        check()
        bound = SETTLE_FACTOR * max(p.spec.start_timeout_s for p in plugins)
        await asyncio.wait_for(settled.wait(), bound)
    except asyncio.TimeoutError:
        pass
    finally:
        supervisor.listeners.remove(check)
