"""Plugin states as `hologram status` shows them, and the snapshot the control socket returns."""

from __future__ import annotations

from enum import Enum


class State(str, Enum):
    WAITING = "waiting"  # not started: some required facility is not ready yet
    STARTING = "starting"  # process spawned, handshake or readiness pending
    READY = "ready"  # every provided facility announced ready
    CRASHED = "crashed"  # exited unexpectedly; a restart is scheduled
    STOPPING = "stopping"
    STOPPED = "stopped"  # stopped on purpose (shutdown, `hologram plugin stop`, or exited cleanly)
    FAILED = "failed"  # will not be restarted automatically: see the reason

    @property
    def running(self) -> bool:
        return self in (State.STARTING, State.READY, State.STOPPING)

    @property
    def settled(self) -> bool:
        """No transition is in flight: the state stays until something outside changes it."""
        return self in (State.READY, State.STOPPED, State.FAILED)
