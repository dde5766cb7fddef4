"""Time cues in a request ("yesterday", "last week", "昨天", "上周"): the time window they point at.

A question that says *when* narrows where its answer is; the ranking gives events inside the window a boost
(never a filter: people misremember dates). Relative to the request's own time. Only unambiguous cues are
read; anything else gives no window.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta

from hologram.memory.text.datecues import date_window

__all__ = ["time_window"]

_DAY = 86400.0
Window = tuple[float, float]


def _day_start(now: float, days_back: int) -> float:
    d = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=days_back)
    return d.timestamp()


def _days(back: int) -> Callable[[float, re.Match[str]], Window]:
    return lambda now, _m: (_day_start(now, back), _day_start(now, back) + _DAY)


def _week(back: int) -> Callable[[float, re.Match[str]], Window]:
    def window(now: float, _m: re.Match[str]) -> Window:
        monday = _day_start(now, datetime.fromtimestamp(now).weekday())
        start = monday - back * 7 * _DAY
        return start, start + 7 * _DAY

    return window


def _month(back: int) -> Callable[[float, re.Match[str]], Window]:
    def window(now: float, _m: re.Match[str]) -> Window:
        d = datetime.fromtimestamp(now).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        for _ in range(back):
            d = (d - timedelta(days=1)).replace(day=1)
        nxt = (d + timedelta(days=32)).replace(day=1)
        return d.timestamp(), nxt.timestamp()

    return window


def _year(back: int) -> Callable[[float, re.Match[str]], Window]:
    def window(now: float, _m: re.Match[str]) -> Window:
        y = datetime.fromtimestamp(now).year - back
        return datetime(y, 1, 1).timestamp(), datetime(y + 1, 1, 1).timestamp()

    return window


def _ago(now: float, m: re.Match[str]) -> Window:
    n = int(m.group("n"))
    unit = m.group("unit").lower()
    span = {"day": _DAY, "week": 7 * _DAY, "month": 30 * _DAY, "天": _DAY, "周": 7 * _DAY, "星期": 7 * _DAY}
    step = span.get(unit.rstrip("s"), span.get(unit, _DAY))
    centre = now - n * step
    return centre - step, centre + step


_CUES: list[tuple[re.Pattern[str], Callable[[float, re.Match[str]], Window]]] = [
    (re.compile(r"\b(?P<n>\d{1,3})\s+(?P<unit>days?|weeks?|months?)\s+ago\b", re.I), _ago),
    (re.compile(r"(?P<n>\d{1,3})\s*(?P<unit>天|周|星期)前"), _ago),
    # before "yesterday": "the day before yesterday" names it too (issue 39: it was read as yesterday)
    (re.compile(r"\bday before yesterday\b", re.I), _days(2)),
    (re.compile(r"\b(yesterday|last night)\b|昨天|昨晚|昨日"), _days(1)),
    (re.compile(r"大前天"), _days(3)),
    (re.compile(r"前天|前日"), _days(2)),
    (re.compile(r"\b(today|this morning|tonight)\b|今天|今早|今晚|今日"), _days(0)),
    (re.compile(r"\blast week\b|上周|上星期|上个星期|上礼拜"), _week(1)),
    (re.compile(r"\bthis week\b|本周|这周|这个星期"), _week(0)),
    (re.compile(r"\blast month\b|上个月|上月"), _month(1)),
    (re.compile(r"\bthis month\b|这个月|本月"), _month(0)),
    (re.compile(r"\blast year\b|去年"), _year(1)),
    (re.compile(r"\bthis year\b|今年"), _year(0)),
]


def time_window(text: str, now: float) -> Window | None:
    """The window (start, end) in epoch seconds the first time cue of `text` names, or None."""
    if now <= 0:
        return None
    for pattern, window in _CUES:
        m = pattern.search(text)
        if m is not None:
            return window(now, m)
    return date_window(text, now)  # a calendar date: its day (memory/text/datecues.py)
