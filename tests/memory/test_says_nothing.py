"""An earlier question does not take the room of the statement that answers it (memory/rank/says_nothing.py).

Mutation check (done): with ``asks_only`` returning False the two pleasantry tests are red; with the penalty line in ``SessionIndex.scores`` made 0 the earlier question ranks
first again (``test_an_earlier_question_lends_its_score_and_the_answer_ranks_first`` red); with the bit never
set in ``SessionIndex.add`` that test and ``test_the_mark_survives_a_seal`` are red.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hologram.memory.index import session_index
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query
from hologram.memory.rank.says_nothing import SAYS_NOTHING_BIT, asks_only, says_nothing

FILLER = [
    "Caroline: the weather was lovely on the coast, we walked along the harbour for hours",
    "Melanie: work has been busy this month with the quarterly reports and audits",
    "Caroline: I finally finished the novel about the lighthouse keeper and his family",
    "Melanie: my sister is visiting next weekend and we plan to bake bread together",
]
QUESTION = "Caroline: What is the name of your new dog?"
ANSWER = "Melanie: my new dog is Rex! He chews every shoe in the hall and sleeps on the sofa."


def _session(directory: Path | None = None) -> tuple[SessionIndex, int, int]:
    index = SessionIndex(directory, seal_events=8) if directory else SessionIndex()
    texts = [*FILLER, QUESTION, ANSWER, *FILLER]
    at = {}
    for i, text in enumerate(texts):
        at[text] = index.add(i + 1, f"ev{i}", "input", text, 20, group=None, ts=1000.0 + i)
    return index, at[QUESTION], at[ANSWER]


def test_what_states_nothing() -> None:
    assert says_nothing("input", "Audrey: That's awesome! What is his name?")
    assert says_nothing("input", "Thanks!") and says_nothing("response", "还有别的问题吗？")
    assert says_nothing("input", "小雨：好的")
    assert not says_nothing("input", "Andrew: meet Toby, my puppy")
    assert not says_nothing("input", "我的车牌号是沪B62817")
    assert not says_nothing("response", ""), "a tool call's empty response is not judged"
    assert not says_nothing("tool_result", "ok?"), "nor is a tool's result"


def test_an_earlier_question_lends_its_score_and_the_answer_ranks_first(monkeypatch: pytest.MonkeyPatch) -> None:
    index, question, answer = _session()
    query = build_query(index, "What is the name of Melanie's new dog?", now=0)
    monkeypatch.setattr(session_index, "OTHER_ASKS_PENALTY", 0.0)  # this rule alone (memory/rank/speakers.py)
    with monkeypatch.context() as patch:
        patch.setattr(session_index, "SAYS_NOTHING_PENALTY", 0.0)
        plain = index.scores(query)
    assert int(np.argmax(plain)) == question, "the path: without the penalty the earlier question ranks first"
    scores = index.scores(query)
    assert int(np.argmax(scores)) == answer, "the statement that answers it first"
    assert scores[answer] == plain[answer], "the answer keeps its share of the question's score"


def test_the_mark_survives_a_seal(tmp_path: Path) -> None:
    memory, question, answer = _session()
    sealed, _, _ = _session(tmp_path)
    assert sealed.seal(vectors=False) > 0 and sealed.sealed > 0
    with sealed.reading():
        kinds = sealed._cols().column("kind")
    assert kinds[question] & SAYS_NOTHING_BIT and not kinds[answer] & SAYS_NOTHING_BIT
    query = build_query(memory, "What is the name of Melanie's new dog?", now=0)
    assert np.allclose(sealed.scores(query), memory.scores(query))


def test_a_question_wrapped_in_a_pleasantry_states_nothing() -> None:
    assert asks_only("That's so cute! What sort of activities do you do to stay mentally stimulated?")
    assert says_nothing("input", "Andrew: That's so cute! What sort of activities do you do to stay sharp?")
    assert says_nothing("input", "小雨：哇，真可爱！你们平时都玩些什么？")
    assert not says_nothing("input", "Andrew: I went to Paris with my sister last week. Have you been?")
    assert not says_nothing("input", "小雨：我上周和妹妹去了杭州，西湖真的很美。你去过吗？")
    assert not asks_only("That's so cute!"), "no question: a short statement is judged by tells alone"


def test_the_answer_outranks_a_question_wrapped_in_a_pleasantry(monkeypatch: pytest.MonkeyPatch) -> None:
    index = SessionIndex()
    question = "Caroline: That's so lovely! What do you name your new dog?"
    texts = [*FILLER, question, ANSWER, *FILLER]
    at = {
        text: index.add(i + 1, f"ev{i}", "input", text, 20, group=None, ts=1000.0 + i) for i, text in enumerate(texts)
    }
    query = build_query(index, "What is the name of Melanie's new dog?", now=0)
    monkeypatch.setattr(session_index, "OTHER_ASKS_PENALTY", 0.0)  # this rule alone (memory/rank/speakers.py)
    with monkeypatch.context() as patch:
        patch.setattr(session_index, "SAYS_NOTHING_PENALTY", 0.0)
        assert int(np.argmax(index.scores(query))) == at[question], "the path: unpenalised, it ranks first"
    assert int(np.argmax(index.scores(query))) == at[ANSWER]
