"""calendar: events in an `.ics` file — add (with a time zone), list by range, delete by uid.

Times without an offset are wall-clock times in the call's `timezone` (default `config.timezone`, "UTC");
listing shows every time with its offset in the zone asked for. See hologram_plugins/_time.py for the DST rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta
from datetime import timezone as _timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hologram.sdk import Plugin, StartContext, tool_error
from hologram_plugins._time import ONE_DAY, TimeError, parse_date, parse_instant, show, utc, zone
from hologram_plugins.calendar.store import CalendarFile

UTC = _timezone.utc  # tools take a `timezone` argument, which shadows the module name inside them


class CalendarConfig(BaseModel):
    """settings.toml's ``[plugins.calendar]``, checked at start (its JSON Schema:
    manifests/calendar.config.schema.json)."""

    model_config = ConfigDict(extra="forbid")  # a misspelt key fails the start, naming it

    file: str = Field(
        "calendar.ics", min_length=1, description="The iCalendar file, relative to the plugin's data dir, or absolute."
    )
    timezone: str = Field("UTC", description="IANA zone of times given without an offset, e.g. 'Europe/Berlin'.")

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:  # a bad zone fails the start naming the key, not the first tool call
            zone(value, "UTC")
        except TimeError as exc:
            raise ValueError(str(exc)) from None
        return value


@dataclass(frozen=True)
class CalendarState:
    file: CalendarFile
    timezone: str  # the default zone of times without an offset

    @classmethod
    def start(cls, ctx: StartContext[CalendarConfig]) -> CalendarState:
        return cls(CalendarFile(Path(ctx.data_dir) / ctx.config.file), ctx.config.timezone)


plugin = Plugin("calendar", state=CalendarState.start, config=CalendarConfig)


@plugin.tool("calendar_add")
def calendar_add(
    summary: str,
    start: str,
    end: str | None = None,
    duration_minutes: float | None = None,
    timezone: str | None = None,
    all_day: bool = False,
    location: str = "",
    description: str = "",
) -> dict[str, Any] | str:
    try:
        tz = zone(timezone, plugin.state.timezone)
        first: datetime | date
        last: datetime | date
        if all_day:
            first = parse_date(start)
            last = parse_date(end) + ONE_DAY if end else first + ONE_DAY  # DTEND of a date is exclusive
            if last <= first:
                return tool_error("end is before start")
        else:
            first = parse_instant(start, tz)
            if end:
                last = parse_instant(end, tz)
            else:
                # Durations are absolute: 60 minutes from 01:30 on the spring-forward night ends at 03:30.
                minutes = 60.0 if duration_minutes is None else float(duration_minutes)
                last = (first.astimezone(UTC) + timedelta(minutes=minutes)).astimezone(tz)
            if utc(last, tz) <= utc(first, tz):
                return tool_error(f"the event must end after it starts ({show(first, tz)} → {show(last, tz)})")
    except TimeError as exc:
        return tool_error(str(exc))
    uid = plugin.state.file.add(summary, first, last, location, description)
    if all_day:
        return f"added {summary!r} on {first} (all day) [uid {uid}]"
    length = utc(last, tz) - utc(first, tz)
    return f"added {summary!r}: {show(first, tz)} – {show(last, tz)} ({_length(length)}) [uid {uid}]"


def _length(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    hours, minutes = divmod(minutes, 60)
    return " ".join(part for part in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "") if part)


@plugin.tool("calendar_list")
def calendar_list(
    start: str | None = None, end: str | None = None, timezone: str | None = None
) -> dict[str, Any] | str:
    try:
        tz = zone(timezone, plugin.state.timezone)
        now = datetime.now(tz).replace(second=0, microsecond=0)
        first = parse_instant(start, tz) if start else now.replace(hour=0, minute=0)
        if end:
            last = parse_instant(end, tz)
            if len(end.strip()) == 10:  # a bare end date includes that whole day
                last = (utc(last, tz) + ONE_DAY).astimezone(tz)
        else:
            last = (utc(first, tz) + timedelta(days=7)).astimezone(tz)
    except TimeError as exc:
        return tool_error(str(exc))
    entries = plugin.state.file.between(utc(first, tz), utc(last, tz), tz)
    span = f"{show(first, tz)} – {show(last, tz)}"
    if not entries:
        return f"no events between {span}"
    return f"{len(entries)} event(s) between {span} ({tz.key}):\n" + "\n".join(e.line(tz) for e in entries)


@plugin.tool("calendar_delete")
def calendar_delete(uid: str) -> dict[str, Any] | str:
    removed = plugin.state.file.delete(uid.strip())
    if removed is None:
        return tool_error(f"no event with uid {uid!r}; calendar_list shows the uids")
    return f"deleted {removed.summary!r} [uid {removed.uid}]"
