"""The calendar file: one standard `.ics` (RFC 5545) that any calendar application can open or subscribe to.

Times are written with their IANA zone (`DTSTART;TZID=Europe/Berlin:…`) plus the VTIMEZONE definitions the
standard requires, so an event stays at 09:00 local time even if the zone's rules change. The file is read
fresh on every call (a person may edit it) and replaced atomically on every write.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from hologram_plugins._time import ONE_DAY, show, utc
from hologram_plugins.files.workspace import atomic_write

if TYPE_CHECKING:
    from icalendar import Calendar, Component

# icalendar (and recurring-ical-events) is imported by the first call that reads or writes the file, not with the
# plugin: it is ~140 ms of start-up and ~4 MB of the idle plugin process (tools/bench/footprint.py --turns).

PRODID = "-//Hologram//calendar plugin//EN"


@dataclass
class Entry:
    uid: str
    summary: str
    start: datetime | date
    end: datetime | date
    location: str
    description: str
    repeats: bool

    def line(self, tz: ZoneInfo) -> str:
        when = f"{show(self.start, tz)} – {show(self.end, tz)}"
        if not isinstance(self.start, datetime):
            last = self.end - ONE_DAY  # DTEND of an all-day event is exclusive
            when = f"{self.start.isoformat()} (all day)" if last == self.start else f"{self.start} – {last} (all day)"
        extra = "".join(
            (
                f"; at {self.location}" if self.location else "",
                " (repeats)" * self.repeats,
            )
        )
        return f"- {when}: {self.summary}{extra} [uid {self.uid}]"


class CalendarFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> Calendar:
        from icalendar import Calendar

        if not self.path.exists():
            calendar = Calendar()
            calendar.add("prodid", PRODID)
            calendar.add("version", "2.0")
            return calendar
        return Calendar.from_ical(self.path.read_bytes())

    def save(self, calendar: Calendar) -> None:
        calendar.add_missing_timezones()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, calendar.to_ical())

    def add(
        self, summary: str, start: datetime | date, end: datetime | date, location: str = "", description: str = ""
    ) -> str:
        from icalendar import Event

        event = Event()
        uid = f"{uuid.uuid4()}@hologram"
        event.add("uid", uid)
        event.add("dtstamp", datetime.now(timezone.utc))
        event.add("summary", summary)
        event.add("dtstart", start)
        event.add("dtend", end)
        if location:
            event.add("location", location)
        if description:
            event.add("description", description)
        with self._lock:
            calendar = self.load()
            calendar.add_component(event)
            self.save(calendar)
        return uid

    def delete(self, uid: str) -> Entry | None:
        with self._lock:
            calendar = self.load()
            kept, removed = [], None
            for component in calendar.subcomponents:
                if component.name == "VEVENT" and str(component.get("uid")) == uid:
                    removed = component
                else:
                    kept.append(component)
            if removed is None:
                return None
            calendar.subcomponents = kept
            self.save(calendar)
        return _entry(removed)

    def between(self, start: datetime, end: datetime, tz: ZoneInfo) -> list[Entry]:
        """Events overlapping [start, end), compared as UTC instants; all-day events by their dates in `tz`.

        A recurring event (RRULE, RDATE, EXDATE, and occurrences moved by a RECURRENCE-ID override, as other
        calendar applications write them) is expanded into its occurrences in the range by
        ``recurring-ical-events``, each listed with the series' uid. The library is asked for a day more on
        each side (its rules for dates and floating times are its own) and the overlap is decided here."""
        import recurring_ical_events

        calendar = self.load()
        series = {
            str(e.get("uid", ""))
            for e in calendar.walk("VEVENT")
            if any(k in e for k in ("RRULE", "RDATE", "RECURRENCE-ID"))
        }
        found = []
        for component in recurring_ical_events.of(calendar).between(start - ONE_DAY, end + ONE_DAY):
            entry = _entry(component, series)
            if entry is None:
                continue
            if utc(entry.start, tz) < end and utc(entry.end, tz) > start:
                found.append(entry)
        return sorted(found, key=lambda e: utc(e.start, tz))


def _entry(component: Component, series: set[str] | None = None) -> Entry | None:
    """The event as listed; ``series``: the uids of recurring events (an occurrence the library expanded no
    longer carries its rule)."""
    if component.get("dtstart") is None:
        return None
    start = component.get("dtstart").dt
    if component.get("dtend") is not None:
        end = component.get("dtend").dt
    elif component.get("duration") is not None:
        end = start + component.get("duration").dt
    else:  # RFC 5545: a date lasts one day, a date-time is an instant
        end = start + ONE_DAY if not isinstance(start, datetime) else start
    return Entry(
        uid=str(component.get("uid", "")),
        summary=str(component.get("summary", "(no title)")),
        start=start,
        end=end,
        location=str(component.get("location", "")),
        description=str(component.get("description", "")),
        repeats=component.get("rrule") is not None or str(component.get("uid", "")) in (series or ()),
    )
