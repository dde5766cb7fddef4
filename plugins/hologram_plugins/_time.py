"""Times as a model writes them ("2025-03-30T09:00", "2025-03-30", "…+02:00") turned into exact instants:
shared by the calendar, reminders and todos plugins.

All arithmetic and comparison happen in UTC: Python subtracts two datetimes that share a tzinfo by wall
clock, so 01:30–03:30 Europe/Berlin on the spring-forward night would count as two hours instead of one.
Local times that do not exist (skipped by a DST jump) are refused rather than silently shifted.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class TimeError(ValueError):
    """A time or zone the model gave that cannot be used; the message says how to write it."""


def zone(name: str | None, default: str) -> ZoneInfo:
    key = (name or default).strip()
    try:
        return ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError):
        raise TimeError(f"unknown time zone {key!r}; use an IANA name like 'Europe/Berlin' or 'UTC'") from None


def zone_name(value: str) -> str:
    """`value` when it names a time zone: the config models' check of a ``timezone`` key (a plain ValueError, so
    the start failure names settings.toml's line and key with this message)."""
    try:
        zone(value, "UTC")
    except TimeError as exc:
        raise ValueError(str(exc)) from None
    return value


def localize(naive: datetime, tz: ZoneInfo) -> datetime:
    """`naive` as a wall-clock time in `tz`; refuses times a DST jump skips, takes the first of repeated ones."""
    aware = naive.replace(tzinfo=tz, fold=0)
    if aware.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None) != naive:
        raise TimeError(f"{naive.isoformat()} does not exist in {tz.key}: the clocks skip that time (DST change)")
    return aware


def parse_instant(text: str, tz: ZoneInfo) -> datetime:
    """An ISO 8601 date-time; without an offset it is local time in `tz`. A bare date means its midnight."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"  # Python 3.10's fromisoformat does not know "Z"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise TimeError(f"cannot read {text!r}; write ISO 8601 like '2025-03-30T09:00' or '2025-03-30'") from None
    if parsed.tzinfo is None:
        return localize(parsed, tz)
    return parsed.astimezone(tz)


def parse_date(text: str) -> date:
    try:
        return date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise TimeError(f"cannot read the date {text!r}; write it as YYYY-MM-DD") from None


def utc(value: datetime | date, tz: tzinfo) -> datetime:
    """Any DTSTART/DTEND value as a UTC instant; dates and floating times are read in `tz`."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if value.tzinfo is None:  # stored floating time: lenient, a file written elsewhere must still list
        value = value.replace(tzinfo=tz)
    return value.astimezone(timezone.utc)


def show(value: datetime | date, tz: ZoneInfo) -> str:
    """How a time is shown to the model: ISO 8601 with the offset, in the zone it asked for."""
    if not isinstance(value, datetime):
        return value.isoformat()
    return utc(value, tz).astimezone(tz).isoformat(timespec="minutes")


ONE_DAY = timedelta(days=1)
