"""A name the session gives a pet or a person joins a question that asks by the noun (memory/text/namings.py,
SessionIndex.named, memory/rank/expand.py ``with_named``).

Mutation checks (done): without the ``with_named`` call in ``build_query``
``test_a_question_by_the_noun_finds_the_turns_that_say_the_name`` is red; not writing ``namings`` into the
sealed segment's meta (``seal``) turns ``test_namings_survive_sealing_merging_and_a_restart`` red at the
restart; not carrying them through ``_merge`` turns it red after the merge; without the sentence-start
lookbehind ``test_namings_are_read_from_appositions_not_lists`` is red ("Thankfully, my son's ok")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.expand import with_named
from hologram.memory.rank.query import build_query
from hologram.memory.text.namings import namings
from hologram.memory.text.tokenizer import tokenize, wait_for_jieba, warm_up


def one(word: str) -> str:
    terms = tokenize(word)
    assert len(terms) == 1, terms
    return terms[0]


def test_namings_are_read_from_appositions_not_lists() -> None:
    toby, puppy = one("Toby"), one("puppy")
    assert namings("Hey! So much has changed - meet Toby, my puppy. He's a joy") == [(puppy, toby)]
    assert namings("My pup Toby loves cute sweaters") == [(one("pup"), toby)]
    assert namings("We adopted another puppy called Pixie.") == [(puppy, one("Pixie"))]
    assert namings("a trip for my daughter Sara's birthday") == [(one("daughter"), one("Sara"))]
    assert namings("My girlfriend, Toby and I are going camping") == [], "a list, not a name"
    assert namings("Thankfully, my son's ok") == [], "a sentence's first word names nobody"
    assert namings("I miss my dog, Thanks for asking") == []
    assert namings("我家狗狗叫豆豆，特别乖") == [("狗狗", "豆豆")]
    assert namings("我女儿叫小雨，今年五岁") == [("女儿", "小雨")]
    assert namings("我家的猫咪叫咪咪。") == [("猫咪", "咪咪")]
    assert namings("我叫小雨，很高兴认识你") == [], "a name of one's own is not a pet's"
    assert namings("the weather was lovely at the lake") == []


def test_with_named_gives_the_name_the_nouns_weight() -> None:
    names = {one("puppy"): {one("Toby")}}
    out = with_named({one("dog"): 1.0, one("puppy"): 0.5}, lambda t: names.get(t, set()))
    assert out[one("Toby")] == 0.5, "the puppy's name weighs what 'puppy' weighs"
    assert with_named({one("Toby"): 2.0, one("puppy"): 1.0}, lambda t: names.get(t, set()))[one("Toby")] == 2.0


def _feed(index: SessionIndex, texts: list[str], start: int = 0) -> None:
    for i, text in enumerate(texts, start=start):
        index.add(i + 1, f"ev{i}", "input", text, 10, group=None, ts=1000.0 + i)


FILLER = [
    "Andrew: work has been piling up this week",
    "Audrey: I baked bread with rosemary",
    "Andrew: the city traffic is terrible lately",
    "Audrey: my neighbour repainted her fence",
]


CN_FILLER = ["阿杰：这周工作特别忙", "小雨：我烤了一个蛋糕", "阿杰：最近城里堵车很厉害", "小雨：邻居把篱笆刷了一遍"]


@pytest.fixture(scope="module")
def jieba() -> None:
    warm_up()
    assert wait_for_jieba(60)


def test_a_question_by_the_noun_finds_the_turns_that_say_the_name() -> None:
    index = SessionIndex()
    texts = ["Andrew: big news - meet Toby, my puppy!", *FILLER * 3, "Andrew: took Toby out for a hike today", *FILLER]
    _feed(index, texts)
    query = build_query(index, "What has Andrew done with his dogs?", now=0)
    assert query.terms[one("Toby")] == query.terms[one("puppy")] == 0.5
    scores = index.scores(query)
    hike = texts.index("Andrew: took Toby out for a hike today")
    assert scores[hike] > max(scores[i] for i, t in enumerate(texts) if t in FILLER), "the hike with Toby first"


def test_a_chinese_question_by_the_noun_finds_the_name(jieba: None) -> None:
    index = SessionIndex()
    texts = ["小雨：我家狗狗叫豆豆，特别乖", *CN_FILLER * 3, "小雨：今天带豆豆去公园跑了一圈", *CN_FILLER]
    _feed(index, texts)
    query = build_query(index, "小雨的宠物平时做什么？", now=0)
    assert query.terms["豆豆"] == query.terms["狗狗"] == 0.5, "宠物 reaches 狗狗, and 狗狗 its name"
    scores = index.scores(query)
    park = texts.index("小雨：今天带豆豆去公园跑了一圈")
    assert scores[park] > max(scores[i] for i, t in enumerate(texts) if t in CN_FILLER)


def test_namings_survive_sealing_merging_and_a_restart(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path, seal_events=4)
    # the naming in the fourth of six segments: one of the four newest, which are merged
    texts = [*FILLER * 3, "Audrey: we adopted another puppy called Pixie", *FILLER * 2, *FILLER[:3]]
    pixie, puppy = one("Pixie"), one("puppy")
    for k in range(0, len(texts), 4):
        _feed(index, texts[k : k + 4], start=k)
        assert index.named(puppy) == ({pixie} if k >= 12 else set()), "in the tail, then in its segment"
        index.seal(vectors=False)
    assert index.segments > 1
    merged = 0
    while plan := index.merge_plan():
        assert index.merge(plan)
        merged += 1
    assert merged and index.segments < len(texts) // 4
    assert index.named(puppy) == {pixie}, "carried through a merge"
    again = SessionIndex(tmp_path, seal_events=4)
    assert again.named(puppy) == {pixie}, "read back from the segments' meta"
    assert again.named(one("dog")) == set()
    assert np.isfinite(again.scores(build_query(again, "Where did Audrey get her puppy?", now=0))).all()
