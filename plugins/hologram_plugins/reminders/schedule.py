"""When a reminder is due: once (at a time, or after a delay), or again and again by a cron line or an RRULE.

Recurrence is computed in the reminder's own time zone, on wall-clock times, by kept libraries: ``croniter``
for cron lines, ``dateutil.rrule`` for RFC 5545 RRULEs. So "every day at 09:00 Europe/Berlin" stays at 09:00
across the DST changes (the UTC instant moves by an hour); a time the spring jump skips comes an hour
later by the clock, the first of a repeated autumn hour counts. Both libraries are imported by the first
reminder that repeats, not with the plugin (tests/plugins/test_idle_imports.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal
from zoneinfo import ZoneInfo

from hologram_plugins._time import TimeError, parse_instant

Kind = Literal["once", "cron", "rrule"]
MAX_MISSED = 10_000  # occurrences counted while catching up after a long stop (a cron line every minute)

_UNITS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400, "w": 604800}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|min|m|sec|s)", re.IGNORECASE)
_UNTIL_UTC = re.compile(r"UNTIL=(\d{8}T\d{6})Z", re.IGNORECASE)
_ISO = re.compile(r"P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)


class WhenError(ValueError):
    """A time, delay or rule the model gave that cannot be used; the message says how to write it."""


@dataclass(frozen=True)
class Plan:
    """A reminder's schedule: its kind, its rule ("" when once), its first due instant (UTC), and the local
    start the rule counts from (an RRULE's DTSTART; for cron, where counting began)."""

    kind: Kind
    rule: str
    due: datetime
    start: datetime


def parse_delay(text: str) -> timedelta:
    """``"90s"``, ``"10m"``, ``"1h30m"``, ``"2 d"``, ``"1w"`` or ISO 8601's ``"PT10M"``."""
    value = text.strip()
    iso = _ISO.match(value)
    if iso and value.upper() != "P":
        weeks, days, hours, minutes, seconds = (float(g) if g else 0.0 for g in iso.groups())
        return timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    parts = _PART.findall(value)
    if not parts or _PART.sub("", value).strip(" ,and"):
        raise WhenError(f"cannot read the delay {text!r}; write it like '90s', '10m', '1h30m', '2d' or 'PT10M'")
    return timedelta(seconds=sum(float(n) * _UNITS[u.lower()] for n, u in parts))


def plan(
    now: datetime,
    tz: ZoneInfo,
    *,
    at: str | None = None,
    after: str | None = None,
    cron: str | None = None,
    rrule: str | None = None,
) -> Plan:
    """The schedule of a new reminder from exactly one of ``at``/``after``/``cron``/``rrule`` (an RRULE or a
    cron line may take ``at`` as its start: the first time counted from)."""
    given = [name for name, value in (("after", after), ("cron", cron), ("rrule", rrule)) if value]
    if len(given) > 1 or (after and at):
        raise WhenError("give one of at, after, cron or rrule (an rrule or cron may also take at as its start)")
    try:
        start = parse_instant(at, tz) if at else now.astimezone(tz)
    except TimeError as exc:
        raise WhenError(str(exc)) from None
    if after:
        delay = parse_delay(after)
        if delay <= timedelta(0):
            raise WhenError(f"the delay {after!r} is not in the future")
        due = now + delay
        return Plan("once", "", due, due.astimezone(tz))
    if cron:
        rule = " ".join(cron.split())
        check_cron(rule)
        first = next_occurrence("cron", rule, start, max(start - timedelta(seconds=1), now), tz)
        assert first is not None  # a valid cron line always has a next time
        return Plan("cron", rule, first, start)
    if rrule:
        rule = rrule.strip().removeprefix("RRULE:").removeprefix("rrule:").strip()
        check_rrule(rule, start, tz)
        first = next_occurrence("rrule", rule, start, max(start - timedelta(seconds=1), now), tz)
        if first is None:
            raise WhenError(f"the rule {rrule!r} has no time after {start.isoformat(timespec='minutes')}")
        return Plan("rrule", rule, first, start)
    if not at:
        raise WhenError("say when: at (a time), after (a delay like '10m'), cron or rrule")
    due = start.astimezone(timezone.utc)
    if due <= now:
        raise WhenError(f"{at!r} is in the past (now it is {now.astimezone(tz).isoformat(timespec='minutes')})")
    return Plan("once", "", due, start)


def check_cron(rule: str) -> None:
    from croniter import croniter

    if len(rule.split()) != 5 or not croniter.is_valid(rule):
        raise WhenError(
            f"cannot read the cron line {rule!r}; write five fields: minute hour day month weekday, "
            "e.g. '0 9 * * 1-5' (09:00 on weekdays)"
        )


def _recurrence(rule: str, start: datetime, tz: ZoneInfo) -> Any:
    """The RRULE counted on naive wall-clock times in the reminder's zone (an aware DTSTART would make dateutil
    step across a DST change by wall clock but compare by offset); an UNTIL in UTC (``…Z``) is moved into the
    zone, as dateutil takes no UTC UNTIL beside a naive start."""
    from dateutil.rrule import rrulestr

    def local(match: re.Match[str]) -> str:
        moment = datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
        return "UNTIL=" + moment.astimezone(tz).strftime("%Y%m%dT%H%M%S")

    return rrulestr(_UNTIL_UTC.sub(local, rule), dtstart=start.astimezone(tz).replace(tzinfo=None))


def check_rrule(rule: str, start: datetime, tz: ZoneInfo) -> None:
    try:
        _recurrence(rule, start, tz)
    except (ValueError, TypeError) as exc:
        raise WhenError(f"cannot read the rule {rule!r} ({exc}); write an RRULE like 'FREQ=WEEKLY;BYDAY=MO'") from None


def next_occurrence(kind: Kind, rule: str, start: datetime, after: datetime, tz: ZoneInfo) -> datetime | None:
    """The first time of the rule strictly after ``after``, as a UTC instant; None when the rule has ended
    (an RRULE with COUNT or UNTIL) or the reminder was once."""
    if kind == "cron":
        from croniter import croniter

        local = croniter(rule, after.astimezone(tz)).get_next(datetime)  # aware: croniter keeps the offsets
        return local.astimezone(timezone.utc)
    if kind == "rrule":
        recurrence = _recurrence(rule, start, tz)
        floor = after.astimezone(tz).replace(tzinfo=None)
        while True:
            found = recurrence.after(floor)
            if found is None:
                return None
            instant = _instant(found, tz)
            if instant > after:
                return instant
            floor = found  # the wall clock repeats an hour in autumn: step past it
    return None


def occurrences_between(
    kind: Kind, rule: str, start: datetime, after: datetime, until: datetime, tz: ZoneInfo
) -> tuple[int, datetime | None]:
    """How many times the rule falls in (after, until], and the first time after ``until`` (None: ended)."""
    count, moment = 0, after
    while count < MAX_MISSED:
        found = next_occurrence(kind, rule, start, moment, tz)
        if found is None or found > until:
            return count, found
        count, moment = count + 1, found
    return count, next_occurrence(kind, rule, start, until, tz)


def _instant(local: datetime, tz: ZoneInfo) -> datetime:
    """A wall-clock time in ``tz`` as a UTC instant: the first of a repeated hour; a time the spring jump skips
    (02:30) is read with the offset before the jump, so it comes as the clock shows 03:30."""
    return local.replace(tzinfo=tz, fold=0).astimezone(timezone.utc)


def describe(kind: Kind, rule: str) -> str:
    return {"once": "once", "cron": f"cron {rule!r}", "rrule": f"RRULE {rule!r}"}[kind]
