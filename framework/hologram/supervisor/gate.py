"""How many plugins may be in the CPU-bound part of their start at once.

A plugin's start is two parts: its process coming up to the handshake (a fork of the zygote, the SDK
connecting, the ``initialize`` answer: a few ms of CPU, all of it runnable at once), then its own
``on_start`` until it announces its facilities (often waiting: a network, a file, a model). Launching is
readiness-driven, so a graph whose plugins all need only the kernel releases all of them at the same moment:
with 50 plugins, 50 processes became runnable together on a 2-core machine. The scheduler shares the cores
per task (and, with autogroup, per session: every plugin has its own), so the kernel — which is also
answering the first turn — got a fiftieth of them: its first answer came 0.14 s later with 50 plugins than
with 8 while its own CPU grew by 0.02 s (tools/bench/sweep.py --only start; tools/bench/startup.py --kernel).
Starting more processes at once than there are cores makes none of them ready sooner.

So a plugin takes a slot from spawn until its process is up — it says so with the ``$/starting``
notification as its own start code begins (the SDK sends it on receiving ``initialize``, docs/protocol.md),
or its ``initialize`` answer comes — and at most `slots` (four times the cores) are taken. ``on_start`` runs
outside the gate, so a plugin that waits there never holds up another. A slot is also given back after
`HOLD_S` whatever the plugin does (one that sends no ``$/starting`` and starts slowly): the gate paces, it
never makes a plugin that is slow to answer block the others for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable

__all__ = ["HOLD_S", "StartGate", "default_slots"]

HOLD_S = 0.25
"""The longest one plugin keeps its slot; a forked SDK plugin is up in a few ms, a fresh interpreter in ~0.1 s."""


def default_slots() -> int:
    """Four times the cores this process may run on: enough to keep every core busy while some wait (for the
    zygote's fork, on I/O). Measured with 50 plugins on 2 cores (sweep.py --only start --starts 7, twice):
    first answer 0.54-0.55 s ungated, 0.41-0.44 s with 4 slots, 0.42-0.43 s with 8; all ready 0.59, 0.64-0.67
    and 0.61-0.62 s (the kernel's turn now runs first, and the last plugin waits for it)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - every Linux has it
        cores = os.cpu_count() or 1
    return max(4, 4 * cores)


class StartGate:
    """At most `slots` plugins between spawn and handshake (module docstring)."""

    def __init__(self, slots: int | None = None, hold_s: float = HOLD_S) -> None:
        self.slots = slots if slots is not None else default_slots()
        self.hold_s = hold_s
        self._semaphore = asyncio.Semaphore(self.slots)
        self.inside = 0
        """Plugins holding a slot now (what the tests watch)."""
        self.most_inside = 0

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[Callable[[], None]]:
        """Wait for a slot; yields the call that gives it back early (idempotent; leaving gives it back too)."""
        await self._semaphore.acquire()
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.inside -= 1
                self._semaphore.release()

        timer = asyncio.get_running_loop().call_later(self.hold_s, release)
        try:
            yield release
        finally:
            timer.cancel()
            release()
