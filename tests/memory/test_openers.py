"""The message after a pause, which tells what happened meanwhile, ranks above the chatter around it
(memory/openers.py).

Mutation check (done): with the boost's line in ``SessionIndex.scores`` removed
``test_the_news_after_a_pause_outranks_a_reply_that_matches_as_well`` is red; with the gap compared the other
way (``np.less``) ``test_which_events_open_a_scene`` is red.
"""

from __future__ import annotations

import numpy as np
import pytest

from hologram.memory import session_index
from hologram.memory.openers import OPENER_GAP_S, openers
from hologram.memory.query import build_query
from hologram.memory.session_index import SessionIndex

DAY = 86_400.0


def test_which_events_open_a_scene() -> None:
    ts = np.array([0.0, 60.0, 120.0, 120.0 + OPENER_GAP_S + 1, 120.0 + OPENER_GAP_S + 2, 10 * DAY])
    is_input = np.array([True, True, True, True, True, False])
    assert openers(ts, is_input).tolist() == [True, False, False, True, False, False], (
        "the first input, the input after an hour's silence; not a turn a minute later, nor a response"
    )
    assert openers(np.zeros(0), np.zeros(0, dtype=bool)).size == 0


def _session() -> tuple[SessionIndex, int, int]:
    """Two days of chatter; the second day opens with news of a fishing trip, and a reply on the first day
    mentions fishing as much."""
    index = SessionIndex()
    day1 = [
        "Audrey: the dogs loved the new park near my place, we walked for hours",
        "Andrew: work has been piling up, quarterly reports every evening this week",
        "Audrey: my cousin went fishing at a lake once and says it is boring and cold, and far away from the city",
        "Andrew: I am still looking for a flat that allows pets, landlords are strict",
    ]
    day2 = [
        "Andrew: Hey Audrey! Last weekend my girlfriend and I went fishing at the lake, caught nothing but loved it",
        "Audrey: that sounds like a lovely weekend, the weather was great too",
        "Andrew: next time we will bring sandwiches and a better rod",
    ]
    at = {}
    for i, text in enumerate(day1):
        at[text] = index.add(2 * i + 1, f"a{i}", "input", text, 20, group=None, ts=1000.0 + 60 * i)
    for i, text in enumerate(day2):
        at[text] = index.add(100 + i, f"b{i}", "input", text, 20, group=None, ts=1000.0 + DAY + 60 * i)
    return index, at[day2[0]], at[day1[2]]


def test_the_news_after_a_pause_outranks_a_reply_that_matches_as_well(monkeypatch: pytest.MonkeyPatch) -> None:
    index, opener, reply = _session()
    query = build_query(index, "Who went fishing at the lake?", now=0)
    scores = index.scores(query)
    monkeypatch.setattr(session_index, "OPENER_BOOST", 0.0)
    plain = index.scores(query)
    assert plain[reply] >= plain[opener], "the path: without the boost the long news ranks no higher"
    assert scores[opener] > scores[reply] and scores[opener] == pytest.approx(plain[opener] + 0.25)
