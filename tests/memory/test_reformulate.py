"""An English question's topic as a second dense query (hologram.memory.rank.reformulate; issue 39 item 1).

The rewrite itself, and the request's path: a real SessionStore and ColdStore on disk, an embedder that gives
chosen texts chosen vectors, so the query vector the index scores with can be read exactly.

Mutation checks (done): `_query` without the blend (the question's vector alone) turns
``test_a_question_is_queried_with_its_topic`` red; the lower-case condition dropped from the function-word rule
(every "May" removed) turns ``test_capitalised_words_mid_sentence_stay`` red; the label rule dropped turns
``test_the_named_speaker_and_question_words_go`` red.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.rank.reformulate import MAX_CHARS, blend, topic_of
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

from .embedders import ChosenEmbedder


def test_the_named_speaker_and_question_words_go() -> None:
    topic = topic_of("What outdoor activities has Andrew done other than hiking?", ["andrew", "audrey"])
    assert topic == "outdoor activities done other than hiking"
    assert topic_of("Where did Audrey's dog go?", ["audrey"]) == "dog go"


def test_capitalised_words_mid_sentence_stay() -> None:
    # "May" the month and "Will" the person are not the modal verbs; a sentence's first word is lower-cased
    assert topic_of("Who did Maria have dinner with on May 3, 2023?", ["maria"]) == "dinner with on May 3, 2023"
    assert topic_of("What did Will bring?") == "Will bring"


@pytest.mark.parametrize(
    "text",
    [
        "I went fishing with my dad last weekend.",  # a statement: its one vector is its topic already
        "我们上周去哪里钓鱼了？",  # Chinese: the paraphrase set's guard, not rewritten
        "Why?",  # nothing left
        "fishing trips?",  # nothing removed
        "What " + "really " * (MAX_CHARS // 7) + "happened?",  # long
    ],
)
def test_no_second_query(text: str) -> None:
    assert topic_of(text) is None


def test_blend_is_the_unit_sum() -> None:
    a = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    b = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    np.testing.assert_allclose(blend(a, b), np.array([1, 1, 0]) / np.sqrt(2), rtol=1e-6)
    assert blend(a, np.zeros(3, dtype=np.float32)) is a  # a blank topic's zero vector: the question alone


QUESTION = "What outdoor activities has Andrew done?"
TOPIC = "outdoor activities done"


def test_a_question_is_queried_with_its_topic(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    cold = ColdStore(tmp_path / "cold.db")
    embedder = ChosenEmbedder({QUESTION: 0, TOPIC: 1})
    memory = SessionMemory(store, cold, embedder)  # type: ignore[arg-type]
    sid = store.create_session("t")

    async def ask() -> np.ndarray | None:
        for text in ("Andrew: we went fishing at the lake", "Audrey: that sounds lovely"):
            store.append(sid, "input", {"text": text})
            await memory.prepare(sid, text, window_tokens=4000, fixed_tokens=0)
            store.append(sid, "response", {"content": "Noted.", "reasoning": None, "tool_calls": []})
            await memory.index(sid)
        query = await memory._query(sid, memory._state(sid), QUESTION, now=None, current_input=None)
        return query.dense

    try:
        dense = asyncio.run(ask())
        assert memory._state(sid).index.speakers == ("andrew", "audrey")  # the labels the rewrite removes
        assert embedder.texts[TOPIC] == 1  # the topic was embedded, once
        assert dense is not None
        np.testing.assert_allclose(dense, np.array([1, 1, 0]) / np.sqrt(2), rtol=1e-6)
        # a statement keeps its own vector alone
        statement = asyncio.run(memory._query(sid, memory._state(sid), "we like hiking", now=None, current_input=None))
        assert statement.dense is not None
        np.testing.assert_allclose(statement.dense, [0, 0, 1])
    finally:
        asyncio.run(memory.aclose())
        cold.close()
        store.close()
