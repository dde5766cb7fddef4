"""Words for the same people and animals reach each other in the query (memory/text/concepts.py,
memory/rank/expand.py ``with_related``).

Mutation check (done): without the ``with_related`` call in ``build_query``
``test_a_question_about_the_family_finds_the_turns_about_the_kids`` and its Chinese twin are red (the turns
that only share "weekend"/周末 rank first); with ``RELATED_WEIGHT`` 1 ``test_with_related_weighs_half`` is red;
with the one-way relations made two-way ``test_a_wider_word_reaches_the_narrower_not_back`` is red."""

from __future__ import annotations

import numpy as np
import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.expand import RELATED_WEIGHT, with_related
from hologram.memory.rank.query import build_query
from hologram.memory.text.concepts import related_terms
from hologram.memory.text.tokenizer import tokenize, wait_for_jieba, warm_up


def one(word: str) -> str:
    terms = tokenize(word)
    assert len(terms) == 1, terms
    return terms[0]


def test_a_wider_word_reaches_the_narrower_not_back() -> None:
    assert {one("kids"), one("son"), one("husband")} <= related_terms(one("family"))
    assert one("family") not in related_terms(one("son")), "a son is family; 'son' does not ask about the family"
    assert one("puppy") in related_terms(one("dog")) and one("dog") in related_terms(one("puppies")), "synonyms"
    assert one("dog") in related_terms(one("pet")) and one("pet") not in related_terms(one("dog"))
    assert one("gf") in related_terms(one("girlfriend"))
    assert {"狗狗", "猫咪"} <= related_terms("宠物") and "宠物" not in related_terms("狗狗")
    assert "老婆" in related_terms("爱人")
    assert related_terms(one("weather")) == frozenset()


def test_with_related_weighs_half() -> None:
    out = with_related({one("family"): 1.0, one("kids"): 0.5, one("museum"): 2.0})
    assert out[one("son")] == RELATED_WEIGHT == 0.5, "half the asked word's weight"
    assert out[one("kids")] == 0.5, "a term the query has keeps its own weight"
    assert out[one("museum")] == 2.0 and one("family") in out


def ranked_first(texts: list[str], question: str) -> set[int]:
    index = SessionIndex()
    for i, text in enumerate(texts):
        index.add(i + 1, f"ev{i}", "input", text, 10, group=None, ts=1000.0 + i)
    scores = index.scores(build_query(index, question, now=0))
    top = np.argsort(-scores, kind="stable")[:2]
    return {texts.index(texts[int(i)]) for i in top}


def test_a_question_about_the_family_finds_the_turns_about_the_kids() -> None:
    texts = [
        "Melanie: the weekend was rainy so I read a novel",
        "Caroline: I painted a sunset this weekend",
        "Melanie: yesterday I took the kids to the museum",
        "Caroline: my counselling course starts next week",
        "Melanie: we went camping with my fam, roasting marshmallows",
        "Caroline: the weekend market had great peaches",
    ] * 3
    assert ranked_first(texts, "What activities has Melanie done with her family?") <= {2, 4}


@pytest.fixture(scope="module")
def jieba() -> None:
    warm_up()
    assert wait_for_jieba(60)


def test_a_chinese_question_about_pets_finds_the_dog(jieba: None) -> None:
    texts = [
        "小雨：周末下雨，我在家看书",
        "阿杰：周末去爬山了，风景很好",
        "小雨：我家狗狗昨天学会了握手",
        "阿杰：下周要出差去广州",
        "小雨：周末的菜市场很热闹",
    ] * 3
    assert ranked_first(texts, "小雨周末和她的宠物做了什么？") == {2}
