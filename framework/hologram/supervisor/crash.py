"""The crash policy from the original system: restart after 1 s, 2 s, 3 s; the 4th crash within 5 minutes
stops automatic restarts until a person runs `hologram plugin restart NAME`.

The window slides: a crash older than 5 minutes no longer counts, so a plugin that crashes once a day is
restarted forever, while one in a crash loop is stopped after four tries. The clock is injectable so the
policy is tested without waiting.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence

RESTART_DELAYS_S: tuple[float, ...] = (1.0, 2.0, 3.0)
CRASH_WINDOW_S = 300.0


class CrashPolicy:
    def __init__(
        self,
        *,
        delays: Sequence[float] = RESTART_DELAYS_S,
        window_s: float = CRASH_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.delays = tuple(delays)
        self.window_s = window_s
        self._clock = clock
        self._crashes: deque[float] = deque()

    @property
    def recent_crashes(self) -> int:
        self._forget_old(self._clock())
        return len(self._crashes)

    def record_crash(self) -> float | None:
        """Record a crash now; return the delay before restarting, or None when restarts must stop."""
        now = self._clock()
        self._forget_old(now)
        self._crashes.append(now)
        count = len(self._crashes)
        return self.delays[count - 1] if count <= len(self.delays) else None

    def reset(self) -> None:
        """A person asked for a restart: start counting afresh."""
        self._crashes.clear()

    def _forget_old(self, now: float) -> None:
        while self._crashes and now - self._crashes[0] > self.window_s:
            self._crashes.popleft()
