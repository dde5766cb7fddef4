"""Launching and supervising plugins: readiness-driven start, crash policy, graceful stop."""

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
