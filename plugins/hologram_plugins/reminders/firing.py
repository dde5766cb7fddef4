"""The scheduler: sleeps until the next reminder is due, then starts a turn in its session (the agent speaks first).

A reminder's turn is started through ``kernel.turns`` as a channel starts one, so every client watching the
session (the web page, `hologram chat`, an A2A subscriber) gets its events. The turn's input says what it is
(`input_text`, documented in docs/plugins.md). A reminder found overdue by more than `LATE_AFTER` — the
kernel was not running at its time, or the machine slept — fires once, marked late; a repeating one that
missed several times says how many and goes on from its next time after now. The file is saved after the
turn has started (a kernel killed in between fires it again on the next start: at least once, never lost).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hologram_plugins.reminders.clock import Clock
from hologram_plugins.reminders.schedule import describe, occurrences_between
from hologram_plugins.reminders.store import Reminder, ReminderFile

log = logging.getLogger("hologram_plugins.reminders")

LATE_AFTER = timedelta(seconds=60)
RETRY_AFTER = timedelta(seconds=30)  # a turn that could not start (the kernel stopping) is tried again
StartTurn = Callable[[Reminder, str], Awaitable[str]]  # (reminder, input text) → the turn's id


def shown(instant: datetime, tz: ZoneInfo) -> str:
    return instant.astimezone(tz).isoformat(timespec="minutes")


def span(delta: timedelta) -> str:
    """``2 h 5 min``, ``45 s``: how long, for a person."""
    seconds = int(delta.total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)} s"
    minutes = seconds // 60
    days, rest = divmod(minutes, 1440)
    hours, minutes = divmod(rest, 60)
    parts = (f"{days} d" if days else "", f"{hours} h" if hours else "", f"{minutes} min" if minutes else "")
    return " ".join(p for p in parts if p)


def input_text(reminder: Reminder, due: datetime, now: datetime, *, missed: int = 1, at_start: bool = False) -> str:
    """What the reminder's turn says to the model, e.g.
    ``[reminder 1a2b3c4d set at 2026-03-01T09:12+01:00 for 2026-03-01T10:00+01:00 (Europe/Berlin)] Call mom``;
    a repeating one adds ``; repeats: cron '0 9 * * 1-5'``, a late one ``; late by 3 h 2 min`` (and why, when
    the kernel was not running then; how many times, when it missed more than one)."""
    tz = ZoneInfo(reminder.timezone)
    created = datetime.fromisoformat(reminder.created)
    head = f"reminder {reminder.id} set at {shown(created, tz)} for {shown(due, tz)} ({reminder.timezone})"
    if reminder.kind != "once":
        head += f"; repeats: {describe(reminder.kind, reminder.rule)}"
    if now - due > LATE_AFTER:
        head += f"; late by {span(now - due)}"
        if at_start:
            head += ": Hologram was not running at that time"
        if missed > 1:
            head += f"; its time passed {missed} times, said once"
    return f"[{head}] {reminder.text}"


class Scheduler:
    def __init__(self, store: ReminderFile, clock: Clock, start_turn: StartTurn) -> None:
        self.store = store
        self.clock = clock
        self.start_turn = start_turn
        self.wake = asyncio.Event()
        self.retry: dict[str, datetime] = {}  # reminder id → not before (its turn could not start)
        self.errors: dict[str, str] = {}  # reminder id → why its last turn could not start
        self.passes = 0

    def poke(self) -> None:
        """A reminder was added or cancelled: look at the schedule again now."""
        self.wake.set()

    async def run(self) -> None:
        while True:
            await self.clock.sleep_until(self.next_wake(), self.wake)
            try:
                await self.fire_due()
            except Exception:  # a bug must not stop every later reminder: logged, tried again on the next pass
                log.exception("reminders: a pass of the scheduler failed")
                await asyncio.sleep(1)

    async def fire_due(self) -> None:
        """Fire what is due now. The plugin's start runs the first pass before it answers the kernel, so the
        reminders missed while it was down have started their turns once the plugin is ready."""
        self.wake.clear()
        now = self.clock.now()
        for reminder in self.store.active():
            due = reminder.due_at()
            if due is not None and due <= now and self.retry.get(reminder.id, due) <= now:
                await self.fire(reminder, due, now)
        self.passes += 1

    def next_wake(self) -> datetime | None:
        times = [max(r.due_at() or now_floor(), self.retry.get(r.id, now_floor())) for r in self.store.active()]
        return min(times, default=None)

    async def fire(self, reminder: Reminder, due: datetime, now: datetime) -> None:
        tz = ZoneInfo(reminder.timezone)
        missed, following = 1, None
        if reminder.kind != "once":
            start = datetime.fromisoformat(reminder.start)
            extra, following = occurrences_between(reminder.kind, reminder.rule, start, due, now, tz)
            missed += extra
        text = input_text(reminder, due, now, missed=missed, at_start=self.passes == 0)
        try:
            turn = await self.start_turn(reminder, text)
        except Exception as exc:
            self.retry[reminder.id] = now + RETRY_AFTER
            self.errors[reminder.id] = f"{type(exc).__name__}: {exc}"
            log.warning("reminder %s: its turn could not start (%s); trying again in 30 s", reminder.id, exc)
            return
        self.retry.pop(reminder.id, None)
        self.errors.pop(reminder.id, None)
        stamp = now.isoformat()
        reminder.fired += 1
        reminder.last_fired, reminder.last_turn = stamp, turn
        if following is None:
            reminder.state, reminder.due, reminder.finished = "done", None, stamp
        else:
            reminder.due = following.isoformat()
        log.info("reminder %s fired (turn %s)%s", reminder.id, turn, " late" if now - due > LATE_AFTER else "")
        try:
            self.store.save()
        except OSError as exc:  # kept in memory: it does not fire again in this run; said in the log
            log.error("reminder %s fired but %s could not be written: %s", reminder.id, self.store.path, exc)


def now_floor() -> datetime:
    return datetime.min.replace(tzinfo=timezone.utc)
