"""Launching and supervising plugins: readiness-driven start, crash policy, graceful stop.

The names below load on first use, so `hologram up` can import `supervisor.zygote` and start the zygote
before the rest of the kernel is imported (hologram/cli/up_cmd.py).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hologram.supervisor.core import Supervisor
    from hologram.supervisor.crash import CRASH_WINDOW_S, RESTART_DELAYS_S, CrashPolicy
    from hologram.supervisor.managed import ManagedPlugin, PluginSpec, StartFailed
    from hologram.supervisor.state import State

__all__ = [
    "CRASH_WINDOW_S",
    "RESTART_DELAYS_S",
    "CrashPolicy",
    "ManagedPlugin",
    "PluginSpec",
    "StartFailed",
    "State",
    "Supervisor",
]

_HOME = {
    "Supervisor": "core",
    "CRASH_WINDOW_S": "crash",
    "RESTART_DELAYS_S": "crash",
    "CrashPolicy": "crash",
    "ManagedPlugin": "managed",
    "PluginSpec": "managed",
    "StartFailed": "managed",
    "State": "state",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'hologram.supervisor' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hologram.supervisor.{home}"), name)
