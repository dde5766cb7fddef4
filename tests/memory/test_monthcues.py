"""A month named with its year nudges the ranking towards that month's turns, never selects them
(memory/text/monthcues.py).

Mutation check (done): with the nudge's line in ``SessionIndex.scores`` removed
``test_the_months_turn_outranks_the_same_words_a_month_earlier`` is red; with the month's end computed as
``month + 1`` in December (no year change) ``test_month_windows`` is red (a ValueError).
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query
from hologram.memory.text.monthcues import MONTH_BOOST, month_window

NOW = datetime(2023, 9, 1).timestamp()


def _month(text: str) -> tuple[datetime, datetime] | None:
    w = month_window(text)
    return None if w is None else (datetime.fromtimestamp(w[0]), datetime.fromtimestamp(w[1]))


def test_month_windows() -> None:
    assert _month("Which city was Calvin visiting in August 2023?") == (datetime(2023, 8, 1), datetime(2023, 9, 1))
    assert _month("during March, 2023") == (datetime(2023, 3, 1), datetime(2023, 4, 1))
    assert _month("Sept. 2022") == (datetime(2022, 9, 1), datetime(2022, 10, 1))
    assert _month("in December 2023") == (datetime(2023, 12, 1), datetime(2024, 1, 1))
    assert _month("2023年8月他去了哪里？") == (datetime(2023, 8, 1), datetime(2023, 9, 1))
    assert _month("in May") is None, "no year: 'may' is also a modal"
    assert _month("2023年8月3日") is None, "a day is datecues.py's"
    assert _month("what did I say?") is None


def _session() -> tuple[SessionIndex, int, int, int]:
    index = SessionIndex()
    july, august = datetime(2023, 7, 10).timestamp(), datetime(2023, 8, 10).timestamp()
    texts = [
        (july, "Calvin: the studio session went late again, we recorded two songs"),
        (july, "Calvin: visiting the old harbour city with the band was fun"),
        (july, "Dave: the carburettor of the Mustang is finally rebuilt and the Mustang runs again"),
        (august, "Calvin: visiting the old harbour city with my cousin and his two dogs was fun"),
        (august, "Dave: the garage is busy, three cars waiting for new brakes"),
    ]
    at = [index.add(i + 1, f"e{i}", "input", t, 20, group=None, ts=ts + 60 * i) for i, (ts, t) in enumerate(texts)]
    return index, at[1], at[3], at[2]


def test_the_months_turn_outranks_the_same_words_a_month_earlier() -> None:
    index, in_july, in_august, _ = _session()
    query = build_query(index, "Which city was Calvin visiting in August 2023?", now=NOW)
    assert query.month is not None and query.window is None
    scores = index.scores(query)
    before = index.scores(build_query(index, "Which city was Calvin visiting?", now=NOW))
    assert before[in_july] > before[in_august], "the path: without the month the July turn ranks higher"
    assert scores[in_august] > scores[in_july]
    assert scores[in_august] - before[in_august] == pytest.approx(MONTH_BOOST)
    assert scores[in_july] == pytest.approx(before[in_july]), "outside the month nothing changes"


def test_a_nudge_not_a_selection() -> None:
    index, _, _, mustang = _session()
    query = build_query(index, "How is the Mustang doing in August 2023?", now=NOW)
    scores = index.scores(query)
    assert int(np.argmax(scores)) == mustang, "a July turn that answers still outranks August's chatter"
    day = build_query(index, "What happened on 10 August, 2023?", now=NOW)
    assert day.window is not None and day.month is None, "a day's window takes precedence over its month"
