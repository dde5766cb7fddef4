"""A month named with its year ("in August 2023", "during March, 2023", "2023年8月"): a nudge towards that
month's turns, never a selection (issue 39 item 1).

Why a nudge and not a window like a day's (:mod:`hologram.memory.text.datecues`): a month of a long session holds
more turns than a request fits, and "as of December 2023" or "the week before 16 November" ask about other
times than the month's own — a selection (``TIME_SELECT``) would put a month of turns ahead of everything. So
the month's events get :data:`MONTH_BOOST` after the turn-neighbour smoothing, the same clear-nudge size as a
relative cue's (``TIME_BOOST``). Only with a year: "in May" alone is also a verb's modal and a name. A day in
the input (a :func:`~hologram.memory.text.timecues.time_window`) takes precedence: the query then carries no month.

Measured on LoCoMo's stream protocol at 4k (one streamed state per conversation, ``preview``, re-streamed with
this code; 23 of the dev split's 383 questions and 146 of the other 1,153 name a month and year), over
memory/rank/says_nothing.py: dev 0.942 → 0.942 (its month questions were already found), held-out 0.906 → 0.907,
temporal 0.937 → 0.941 — within a conversation's noise (42 0.912 → 0.907, 50 0.892 → 0.899). Boost 1 and 2 gave
more on the held-out set in a trial (0.915 against 0.912) and were not chosen: the dev split cannot tell them
apart, so that would be fitting on the held-out set.
"""

from __future__ import annotations

import re
from datetime import datetime

__all__ = ["MONTH_BOOST", "month_window"]

#: Added after smoothing to each event of the month named (z-score units; the size of ``TIME_BOOST``).
MONTH_BOOST = 0.5

_NAMES = (
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sept", "sep"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"),
)  # fmt: skip
_MONTHS = {name: i for i, names in enumerate(_NAMES, start=1) for name in names}
_EN = re.compile(
    r"\b(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?,?\s+(?P<year>(?:19|20)\d{2})\b", re.I
)
_ZH = re.compile(r"(?P<year>(?:19|20)\d{2})\s*年\s*(?P<m>\d{1,2})\s*月(?!\s*\d)")
_DIGIT = re.compile(r"\d")


def month_window(text: str) -> tuple[float, float] | None:
    """The month (start, end; epoch seconds, local time) the first month-and-year in `text` names, or None."""
    if _DIGIT.search(text) is None:  # every form has a year's digits: most inputs end here
        return None
    m = _EN.search(text)
    if m is not None:
        month, year = _MONTHS[m.group("month").lower()], int(m.group("year"))
    else:
        z = _ZH.search(text)
        if z is None:
            return None
        month, year = int(z.group("m")), int(z.group("year"))
        if not 1 <= month <= 12:
            return None
    start = datetime(year, month, 1)
    end = datetime(year + 1, 1, 1) if month == 12 else datetime(year, month + 1, 1)
    return start.timestamp(), end.timestamp()
