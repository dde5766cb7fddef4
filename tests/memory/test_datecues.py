"""A calendar date in a request selects that day's turns (memory/text/datecues.py, through timecues.time_window).

Mutation checks (done): with ``time_window`` no longer asking ``date_window`` the request about 3 June has none
of that day's turns (``test_a_named_day_brings_that_days_turns`` red); with the year-less rule taking this
year's day even when it is after the request, ``test_a_date_without_a_year_is_the_latest_one_before`` red."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query
from hologram.memory.text.datecues import date_window
from hologram.memory.text.timecues import time_window

NOW = datetime(2023, 8, 1, 12).timestamp()
JUNE_3 = datetime(2023, 6, 3).timestamp()


@pytest.mark.parametrize(
    "text",
    [
        "What new activity did Maria start, as mentioned on 3 June, 2023?",
        "what did I say on June 3rd, 2023",
        "the 3rd of June",
        "notes from 2023-06-03",
        "我2023年6月3日说了什么？",
        "6月3号那天聊了什么",
    ],
)
def test_the_day_a_date_names(text: str) -> None:
    assert date_window(text, NOW) == (JUNE_3, datetime(2023, 6, 4).timestamp())
    assert time_window(text, NOW) == date_window(text, NOW)


@pytest.mark.parametrize("text", ["May I ask?", "in 2023", "on 31 June 2023", "3 of them", "version 2.3"])
def test_no_day_no_window(text: str) -> None:
    assert date_window(text, NOW) is None


def test_a_date_without_a_year_is_the_latest_one_before() -> None:
    start, _ = date_window("what happened on 5 September?", NOW) or (0.0, 0.0)
    assert datetime.fromtimestamp(start) == datetime(2022, 9, 5)


def test_a_relative_cue_comes_first() -> None:
    start, _ = time_window("yesterday, not 3 June", NOW) or (0.0, 0.0)
    assert datetime.fromtimestamp(start) == datetime(2023, 7, 31)


def test_a_named_day_brings_that_days_turns() -> None:
    """Turns of many days about the same things; the question names one day: its turns rank first."""
    index = SessionIndex()
    days = [datetime(2023, 5, d, 10).timestamp() for d in range(1, 31)] + [datetime(2023, 6, 3, 10).timestamp()]
    for i, ts in enumerate(days):
        index.add(i + 1, f"ev{i}", "input", f"Maria: I started a new hobby, painting class number {i}", 10,
                  group=None, ts=ts)  # fmt: skip
    scores = index.scores(build_query(index, "What hobby did Maria start, as mentioned on 3 June, 2023?", now=NOW))
    assert int(np.argmax(scores)) == len(days) - 1
