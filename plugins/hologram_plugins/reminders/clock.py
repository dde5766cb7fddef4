"""What time it is for the reminders: the system clock, or a file a test controls.

`HOLOGRAM_REMINDERS_CLOCK=/path/file` makes the plugin read "now" from that file (one ISO 8601 instant with an
offset, e.g. ``2026-03-01T09:00:00+00:00``) on every look, and wake when the file changes instead of sleeping
until the next reminder is due. It is the seam the tests use to move time by hours across a kernel restart
without waiting and without patching the plugin's code: the plugin runs as it always does, only its clock
is read elsewhere. Unset (the product), the plugin uses the system clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from datetime import datetime, timezone
from pathlib import Path

CLOCK_ENV = "HOLOGRAM_REMINDERS_CLOCK"
LONGEST_SLEEP_S = 60.0  # the system clock is looked at again at least this often (suspend, a clock change)
FILE_POLL_S = 0.05


class ClockError(ValueError):
    """The clock file cannot be read as an instant; the message names the file and the fix."""


class Clock:
    """The system clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)

    async def sleep_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        """Return at `when` (None: only when woken), when `wake` is set, or after `LONGEST_SLEEP_S`."""
        delay = LONGEST_SLEEP_S if when is None else (when - self.now()).total_seconds()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(wake.wait(), max(0.0, min(delay, LONGEST_SLEEP_S)))


class FileClock(Clock):
    """Now is what the file says; the scheduler wakes when it says something new."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._last = self._read()

    def _read(self) -> datetime:
        try:
            text = self.path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ClockError(f"{CLOCK_ENV}: cannot read {self.path}: {exc.strerror}") from None
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            value = None
        if value is None or value.tzinfo is None:
            raise ClockError(f"{CLOCK_ENV}: {self.path} holds {text[:40]!r}; write an instant with an offset")
        return value.astimezone(timezone.utc)

    def now(self) -> datetime:
        with contextlib.suppress(ClockError):  # a test half-way through writing it: the time it said last
            self._last = self._read()
        return self._last

    async def sleep_until(self, when: datetime | None, wake: asyncio.Event) -> None:
        start = self.now()
        while not wake.is_set():
            now = self.now()
            if now != start or (when is not None and now >= when):
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wake.wait(), FILE_POLL_S)


def clock_from_environment() -> Clock:
    path = os.environ.get(CLOCK_ENV, "").strip()
    return FileClock(Path(path)) if path else Clock()
