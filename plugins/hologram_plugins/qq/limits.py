"""Rate limits per group and per person: so many answers per window, then one short notice, then silence until
the window lets one through again. The clock is a parameter: the limiter counts, it does not sleep, so a test
drives it by count whatever the machine's speed."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from enum import Enum


class Verdict(Enum):
    ALLOWED = "allowed"
    NOTICE = "notice"  # over the limit, the first time in this window: say so once
    SILENT = "silent"  # over the limit again: nothing


class RateLimit:
    def __init__(self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window_s = window_s
        self.clock = clock
        self._times: dict[str, deque[float]] = {}
        self._noticed: dict[str, float] = {}  # key → when its notice was sent

    def check(self, key: str) -> Verdict:
        """Whether an answer for ``key`` may go now; an allowed one is counted."""
        now = self.clock()
        times = self._times.setdefault(key, deque())
        while times and now - times[0] >= self.window_s:
            times.popleft()
        if len(times) < self.limit:
            times.append(now)
            self._noticed.pop(key, None)
            return Verdict.ALLOWED
        noticed = self._noticed.get(key)
        if noticed is not None and now - noticed < self.window_s:
            return Verdict.SILENT
        self._noticed[key] = now
        return Verdict.NOTICE

    def refund(self, key: str) -> None:
        """Take back the last allowed answer of ``key`` (the other limit refused it)."""
        times = self._times.get(key)
        if times:
            times.pop()
