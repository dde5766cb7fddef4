"""A calendar date in a request ("on 3 June, 2023", "June 3rd", "2023-06-03", "2023年6月3日", "6月3号"): the
day it names, as a time window (:func:`hologram.memory.text.timecues.time_window` asks here when no relative cue
matched).

Why: "What did Maria start, as she mentioned on 3 June, 2023?" names the day its answer was said, and the turns
carry their real times — but only relative cues ("yesterday", "上周") were read, so the date was three BM25
terms matching any turn that says "June". A day's window makes that day's turns rank first
(:data:`~hologram.memory.index.session_index.TIME_SELECT`), as "yesterday" does. Day precision only: a month or a
year named alone would put a month of turns ahead of everything else. A date without a year is the latest
such day not after the request's time. Measured on LoCoMo's stream protocol (58 of its 1,540 questions name a
day): see docs/memory.md, issue 39.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

__all__ = ["date_window"]

_MONTHS = {
    name: i
    for i, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_DIGIT = re.compile(r"\d")
_PATTERNS = [
    re.compile(r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"(?:(?P<y>(?:19|20)\d{2})\s*年\s*)?(?P<m>\d{1,2})\s*月\s*(?P<d>\d{1,2})\s*[日号]"),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I),
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b", re.I),
]


def date_window(text: str, now: float) -> tuple[float, float] | None:
    """The day (start, end; epoch seconds, local time) the first calendar date in `text` names, or None."""
    if _DIGIT.search(text) is None:  # every form has a digit: most inputs end here, in one C scan
        return None
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            day = _day_of(m, now)
            if day is not None:
                return day.timestamp(), (day + timedelta(days=1)).timestamp()
    return None


def _day_of(m: re.Match[str], now: float) -> datetime | None:
    groups = m.groupdict()
    if groups.get("m") is not None:
        month, day, year = int(groups["m"]), int(groups["d"]), groups.get("y")
    else:
        month, day, year = _MONTHS[groups["month"].lower()], int(groups["day"]), groups.get("year")
    today = datetime.fromtimestamp(now)
    try:
        if year is not None:
            return datetime(int(year), month, day)
        found = datetime(today.year, month, day)
        return found if found <= today else datetime(today.year - 1, month, day)
    except ValueError:  # 31 June, 29 February of a common year: no such day
        return None
