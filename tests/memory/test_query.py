"""Query understanding without an LLM call (memory/rank/query.py, memory/text/timecues.py): follow-ups carry the
previous turn, distinctive names and numbers weigh double, time cues give a window — English and Chinese.

Mutation checks (done): dropping the ``not names`` condition of the previous-turn rule turns
``test_an_input_that_names_something_stands_alone`` red; dropping the distinctive-share check turns
``test_a_name_everywhere_is_not_boosted`` red."""

from __future__ import annotations

from datetime import datetime

import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query, names_in
from hologram.memory.text.timecues import time_window
from hologram.memory.text.tokenizer import tokenize, wait_for_jieba, warm_up


def index_of(texts: list[str]) -> SessionIndex:
    index = SessionIndex()
    for i, text in enumerate(texts):
        index.add(i + 1, f"ev{i}", "input", text, 10, group=None, ts=1000.0 + i)
    return index


def test_names_and_numbers_in_english_and_chinese() -> None:
    warm_up()
    assert wait_for_jieba(60)
    assert names_in("When did we visit Reykjavik with Anna in 2023?") >= {"reykjavik", "anna", "2023"}
    assert "when" not in names_in("When did we go?"), "the first word of a sentence is not a name"
    assert "北京" in names_in("我们上次去北京是什么时候？")


def test_a_follow_up_that_names_nothing_carries_the_previous_turn() -> None:
    index = index_of(["the lake house wifi password is BLUE-HERON-42"] + [f"other talk {i}" for i in range(30)])
    q = build_query(index, "why?", now=0, previous_text="what is the lake house wifi password")
    assert q.terms["wifi"] == 0.5 and q.terms["lake"] == 0.5, "the previous turn, at half weight"
    zh = build_query(index, "那个为什么？", now=0, previous_text="湖边小屋的无线密码")
    assert any(w == 0.5 for w in zh.terms.values())


def test_an_input_that_names_something_stands_alone() -> None:
    index = index_of(["Anna moved to Reykjavik"] + [f"other talk {i}" for i in range(30)])
    q = build_query(index, "And Reykjavik?", now=0, previous_text="the lake house wifi password")
    assert "wifi" not in q.terms


def test_a_distinctive_name_weighs_double() -> None:
    index = index_of(["Anna moved to Reykjavik"] + [f"other talk {i}" for i in range(30)])
    q = build_query(index, "Where did Anna move to, Reykjavik or Oslo?", now=0)
    assert q.terms["reykjavik"] == 2.0 and q.terms["anna"] == 2.0
    assert q.terms["move"] == 1.0


def test_a_name_everywhere_is_not_boosted() -> None:
    index = index_of([f"Caroline: talk about topic {i}" for i in range(40)])
    q = build_query(index, "What did Caroline say about the topic?", now=0)
    assert q.terms[tokenize("Caroline")[0]] == 1.0, "a speaker's name is in every turn: no boost"


NOW = datetime(2026, 5, 14, 15, 30).timestamp()  # a Thursday


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did I say yesterday?", datetime(2026, 5, 13), datetime(2026, 5, 14)),
        ("我昨天说了什么？", datetime(2026, 5, 13), datetime(2026, 5, 14)),
        ("the plan from last week", datetime(2026, 5, 4), datetime(2026, 5, 11)),
        ("上周的计划", datetime(2026, 5, 4), datetime(2026, 5, 11)),
        ("last month's bill", datetime(2026, 4, 1), datetime(2026, 5, 1)),
        ("去年的旅行", datetime(2025, 1, 1), datetime(2026, 1, 1)),
        # issue 39: "the day before yesterday" was read as "yesterday"
        ("what did I tell you the day before yesterday?", datetime(2026, 5, 12), datetime(2026, 5, 13)),
        ("我前天说了什么？", datetime(2026, 5, 12), datetime(2026, 5, 13)),
        ("大前天的会", datetime(2026, 5, 11), datetime(2026, 5, 12)),
    ],
)
def test_time_cues(text: str, start: datetime, end: datetime) -> None:
    assert time_window(text, NOW) == (start.timestamp(), end.timestamp())


def test_no_cue_no_window() -> None:
    assert time_window("what is the wifi password?", NOW) is None
    assert time_window("yesterday", 0) is None, "an untimed request narrows nothing"


def test_a_time_cue_boosts_the_events_inside_its_window() -> None:
    index = SessionIndex()
    day = 86400.0
    for i in range(10):
        index.add(i + 1, f"ev{i}", "input", "we talked about the garden", 10, group=None, ts=NOW - (9 - i) * day)
    q = build_query(index, "what did we say about the garden yesterday?", now=NOW)
    scores = index.scores(q)
    assert int(scores.argmax()) == 8, "the event of yesterday"
