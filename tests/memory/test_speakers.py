"""Another speaker's question is a pointer to the named person's answer, not the answer (memory/rank/speakers.py).

Mutation checks (done): with the penalty block in ``SessionIndex.scores`` removed
``test_the_named_persons_answer_outranks_the_other_speakers_question`` is red; with ``speakers`` not written
into a sealed segment's meta (``seal``) ``test_slots_survive_sealing_merging_and_a_restart`` is red at the
restart, and not carried through ``_merge`` it is red at the restart too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hologram.memory.index import session_index
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query
from hologram.memory.rank.speakers import (
    ASKS_BIT,
    KIND_MASK,
    MAX_SPEAKERS,
    SPEAKER_SHIFT,
    asks,
    named_speaker,
    speaker_label,
)

FILLER = [
    "Audrey: the weather was lovely on the coast, we walked along the harbour for hours",
    "Andrew: work has been busy this month with the quarterly reports and audits",
    "Audrey: I finally finished the novel about the lighthouse keeper and his family",
    "Andrew: my sister is visiting next weekend and we plan to bake bread together",
]
OTHERS_QUESTION = "Audrey: Your dogs look great in the pictures, so I wonder which indoor games you play with them?"
ANSWER = "Andrew: we do puzzle feeders and hide and seek in the flat, they love it."
QUESTION = "What indoor games does Andrew play with his dogs?"


def _feed(index: SessionIndex, texts: list[str], start: int = 0) -> dict[str, int]:
    return {
        text: index.add(start + i + 1, f"ev{start + i}", "input", text, 20, group=None, ts=1000.0 + start + i)
        for i, text in enumerate(texts)
    }


def _slot(index: SessionIndex, at: int) -> int:
    with index.reading():
        return (int(index._cols().column("kind")[at]) >> SPEAKER_SHIFT) & MAX_SPEAKERS


def test_labels_questions_and_the_named_speaker() -> None:
    assert speaker_label("Audrey: That's great!") == "audrey"
    assert speaker_label("小雨：我们去杭州了") == "小雨"
    assert speaker_label("https://example.com is down") is None, "a URL's scheme is no speaker"
    assert speaker_label("the plan: leave at six") is None, "a label is the message's first word"
    assert asks("Nice! Which park was it?") and not asks("We went to the park.")
    assert named_speaker("What has Andrew done with his dogs?", ["audrey", "andrew"]) == 2
    assert named_speaker("What did Audrey and Andrew plan?", ["audrey", "andrew"]) == 0, "two named: none"
    assert named_speaker("Where did Andrewson go?", ["audrey", "andrew"]) == 0, "a word, not a substring"
    assert named_speaker("小雨去过哪些城市？", ["老王", "小雨"]) == 2


def test_the_named_persons_answer_outranks_the_other_speakers_question(monkeypatch: pytest.MonkeyPatch) -> None:
    index = SessionIndex()
    at = _feed(index, [*FILLER, OTHERS_QUESTION, ANSWER, *FILLER])
    query = build_query(index, QUESTION, now=0)
    assert query.speaker == _slot(index, at[ANSWER]) != _slot(index, at[OTHERS_QUESTION]) != 0
    with index.reading():
        kind = index._cols().column("kind")
    assert kind[at[OTHERS_QUESTION]] & ASKS_BIT and not kind[at[ANSWER]] & ASKS_BIT
    assert (kind & KIND_MASK == 1).all(), "the kind code itself is unchanged"
    monkeypatch.setattr(session_index, "OTHER_ASKS_PENALTY", 0.0)
    plain = index.scores(query)
    assert int(np.argmax(plain)) == at[OTHERS_QUESTION], "the path: unpenalised, the other's question is first"
    monkeypatch.undo()
    scores = index.scores(query)
    assert int(np.argmax(scores)) == at[ANSWER]
    assert scores[at[ANSWER]] == plain[at[ANSWER]], "the answer keeps its share of the question's score"
    both = build_query(index, "What indoor games do Audrey and Andrew play with the dogs?", now=0)
    assert both.speaker == 0, "two speakers named: no one's questions are the other's"


def test_a_session_without_labels_ranks_as_before() -> None:
    index = SessionIndex()
    _feed(index, [t.split(": ", 1)[1] for t in [*FILLER, OTHERS_QUESTION, ANSWER]])
    with index.reading():
        kind = index._cols().column("kind")
    assert not (kind & ((MAX_SPEAKERS << SPEAKER_SHIFT) | ASKS_BIT)).any(), "no slot, no asks bit"
    assert build_query(index, QUESTION, now=0).speaker == 0


def test_slots_survive_sealing_merging_and_a_restart(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path, seal_events=4)
    texts = [*FILLER * 3, "Caroline: Are you coming to the picnic?", *FILLER * 2, *FILLER[:3]]
    for k in range(0, len(texts), 4):
        _feed(index, texts[k : k + 4], start=k)
        index.seal(vectors=False)
    while plan := index.merge_plan():
        assert index.merge(plan)
    assert index.segments < len(texts) // 4
    assert index.speaker_named("What did Caroline ask?") == 3, "carried through a merge"
    again = SessionIndex(tmp_path, seal_events=4)
    assert again.speaker_named("What did Caroline ask?") == 3, "read back from the segments' meta"
    assert again.speaker_named("What did Andrew say?") == 2
    _feed(again, ["Dana: hello there, I am new here"], start=100)
    assert again.speaker_named("What did Dana say?") == 4, "a new label takes the next slot after a restart"
