"""Questions, requests and statements (memory/text/utterance.py): what memory across sessions recalls and what the L3
extractor must not store as a fact.

Mutation check (done): `is_question` without the Chinese question words turns
``test_chinese_questions_without_a_question_mark`` red.
"""

from __future__ import annotations

import pytest

from hologram.memory.text.utterance import is_question, is_request, tells


@pytest.mark.parametrize(
    "text",
    [
        "My car's licence plate is KX-4471.",
        "Oh, before I forget, my sister Imogen just moved to Lisbon.",
        "The gate code for my building is 5829.",
        "备用钥匙放在门口那盆绿萝下面。",
        "我的车是一辆白色的比亚迪汉，车牌号沪B62817。",
        "What a week. By the way, I'm allergic to penicillin.",
    ],
)
def test_statements_tell(text: str) -> None:
    assert tells(text)


@pytest.mark.parametrize(
    "text",
    [
        "What is my car's licence plate?",
        "Can you explain how a heat pump works?",
        "Write a short poem about rain.",
        "Help me plan a trip to Rome.",
        "我的车牌号是多少？",
        "帮我写一首诗。",
        "hi",
        "ok thanks",
        "",
    ],
)
def test_questions_and_requests_do_not(text: str) -> None:
    assert not tells(text)


def test_chinese_questions_without_a_question_mark() -> None:
    assert is_question("我的车牌号是多少") and is_question("你知道我住哪") and is_question("明天下雨吗")
    assert not is_question("我的车牌号是沪B62817")


def test_requests() -> None:
    assert is_request("Please remind me tomorrow") and is_request("请把文件发给我")
    assert not is_request("My plumber is Gareth")
