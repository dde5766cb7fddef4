"""What the kernel knows about the memory graph's process, and when it starts a new one (issue 39 item 8).

States: ``closed`` (never needed yet, or closed), ``running``, ``restarting`` (it crashed; the next use after
the crash policy's delay starts a new one), ``stopped`` (no more restarts until the kernel starts again).

**Two rules, by where the crash happened.**

* *While opening*: the database library crashed reading the file — a damaged ``graph.kz`` (4 KB of random
  bytes in its middle segfaults Kùzu at open, three seeds of three). One more try at once; a second crash at
  open stops: trying again would only crash again, and the fix is a person's (`hologram doctor --repair`
  sets the file aside). L1, L2 and turns go on without L3.
* *While working*: the kernel's crash policy (``hologram.supervisor.crash``, as for plugins): a new process
  after 1 s, 2 s, 3 s; the fourth crash within 5 minutes stops.

Every problem text names the file, what happened and the fix, for ``hologram status`` and the kernel's notices.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from hologram.memory.graph.remote import GraphWorkerCrashed, describe_exit
from hologram.supervisor.crash import CrashPolicy

__all__ = ["OPEN_TRIES", "GraphHealth"]

#: Crashes at open in a row after which the graph is taken for damaged and no longer opened.
OPEN_TRIES = 2

State = Literal["closed", "running", "restarting", "stopped"]


class GraphHealth:
    """The graph process's state and the crash rules (module docstring)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self.state: State = "closed"
        self.pid: int | None = None
        self.crashes = 0
        """Crashes since the kernel started (all of them; the policy counts only the recent ones)."""
        self.last_crash: str | None = None
        self._clock = clock
        self._policy = CrashPolicy(clock=clock)
        self._open_crashes = 0
        self._retry_at = 0.0

    @property
    def fix(self) -> str:
        return (
            f"stop the kernel, then run `hologram doctor --repair --data {self.path.parent}`: it sets the graph "
            "aside (kept beside it) and L3 starts again from what cools next"
        )

    def may_start(self) -> bool:
        """Whether a new process may be started now (not stopped, and past the restart delay)."""
        return self.state != "stopped" and self._clock() >= self._retry_at

    def started(self, pid: int | None) -> None:
        self.state, self.pid, self._open_crashes = "running", pid, 0

    def closed(self) -> None:
        if self.state == "running":
            self.state, self.pid = "closed", None

    def crashed(self, exc: GraphWorkerCrashed, *, at_open: bool) -> str:
        """Record a crash; returns the problem to report. After it, :attr:`state` says whether to try again
        (``restarting``: at once when :meth:`may_start`) or not (``stopped``)."""
        self.crashes += 1
        self.pid = None
        how = describe_exit(exc.returncode)
        self.last_crash = f"{how} while {exc.doing}"
        if at_open:
            self._open_crashes += 1
            if self._open_crashes >= OPEN_TRIES:
                self.state = "stopped"
                return (
                    f"{self.path}: the memory graph (L3) crashed {self._open_crashes} times while opening (its "
                    f"process {how}): the file is probably damaged. Memory goes on without L3 (L1, L2 and turns "
                    f"are not affected); fix: {self.fix}"
                )
            self.state = "restarting"
            return f"{self.path}: the memory graph's process {how} while opening the graph; trying once more"
        delay = self._policy.record_crash()
        if delay is None:
            self.state = "stopped"
            return (
                f"{self.path}: the memory graph's process crashed {self._policy.recent_crashes} times in "
                f"{self._policy.window_s / 60:.0f} minutes (last: {self.last_crash}); it is not restarted and "
                f"memory goes on without L3 (L1, L2 and turns are not affected); fix: {self.fix}, or restart "
                "the kernel to try again"
            )
        self.state = "restarting"
        self._retry_at = self._clock() + delay
        return (
            f"{self.path}: the memory graph's process {self.last_crash}; a new one starts when L3 is next needed, "
            f"after {delay:.0f} s (crash {self._policy.recent_crashes} of {len(self._policy.delays)} allowed in "
            f"{self._policy.window_s / 60:.0f} minutes); if it keeps crashing: {self.fix}"
        )

    def status(self) -> dict[str, Any]:
        return {"l3_state": self.state, "l3_pid": self.pid, "l3_crashes": self.crashes}
