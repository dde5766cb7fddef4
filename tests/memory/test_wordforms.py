"""Irregular forms of one word meet in the query (memory/text/wordforms.py, memory/rank/expand.py ``with_forms``).

Mutation check (done): without the ``with_forms`` call in ``build_query``
``test_a_question_in_the_perfect_finds_the_turn_told_in_the_past`` is red (the answer ranks below the turn
that only shares "car"); with ``other_forms`` returning the term itself (no other forms) the same test and
``test_other_forms_are_the_words_forms_as_the_tokenizer_spells_them`` are red."""

from __future__ import annotations

import numpy as np

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.expand import with_forms
from hologram.memory.rank.query import build_query
from hologram.memory.text.tokenizer import tokenize
from hologram.memory.text.wordforms import FORMS, other_forms

FILLER = [
    "Sam: the weather was lovely at the lake today",
    "Evan: I cooked pasta with fresh basil for dinner",
    "Sam: my sister sent me a postcard from Lisbon",
    "Evan: the car wash downtown had a long queue",
    "Sam: we watched a documentary about whales",
    "Evan: my new Prius broke down on the highway yesterday",
    "Sam: work has been calm this week",
    "Evan: I planted tomatoes on the balcony",
]


def one(word: str) -> str:
    terms = tokenize(word)
    assert len(terms) == 1, terms
    return terms[0]


def test_other_forms_are_the_words_forms_as_the_tokenizer_spells_them() -> None:
    assert set(other_forms(one("broken"))) == {one("break"), one("broke")}
    assert set(other_forms(one("went"))) == {one("go"), one("gone")}
    assert one("bought") in other_forms(one("buying")), "a regular form reaches the irregular ones through its stem"
    assert one("children") in other_forms(one("child"))
    assert other_forms(one("painted")) == (), "the stemmer joins regular forms already"
    assert other_forms(one("personality")) == (), "'personality' is stemmed 'person': people is not its form"
    for line in FORMS:  # no framing verb, no light verb (their forms are everywhere)
        assert not any(
            w in {"say", "said", "tell", "told", "be", "have", "do", "get", "got", "make", "made"} for w in line.split()
        )


def test_with_forms_keeps_the_querys_own_weights() -> None:
    weights = {one("broken"): 2.0, one("broke"): 0.5, one("car"): 1.0}
    out = with_forms(weights)
    assert out[one("break")] == 2.0, "another form weighs what the form asked weighs"
    assert out[one("broke")] == 0.5, "a form the query has keeps its own weight"
    assert out[one("car")] == 1.0 and len(out) == 4


def test_a_question_in_the_perfect_finds_the_turn_told_in_the_past() -> None:
    index = SessionIndex()
    for i, text in enumerate(FILLER * 4):
        index.add(i + 1, f"ev{i}", "input", text, 10, group=None, ts=1000.0 + i)
    told = [i for i, text in enumerate(FILLER * 4) if "broke" in text]
    query = build_query(index, "What kinds of things did Evan have broken?", now=0)
    assert query.terms[one("broke")] == query.terms[one("broken")]
    scores = index.scores(query)
    best = np.flatnonzero(scores == scores.max()).tolist()
    assert set(best) <= set(told), "the turn where it broke ranks first"
