"""The second hop: the named person's turns that resemble what matched best (memory/rank/second_hop.py).

A list question ("What outdoor activities has Andrew done?") finds one member ("we went fishing at the lake")
by its own query; another ("going camping in the mountains") shares no word and no meaning with the question,
only with the first member. The hop lifts it — for Andrew's inputs only, not the other speaker's turn that
says the same — and only when the question names one speaker.

Mutation checks (done): ``WEIGHT = 0`` turns both tests red (nothing lifted; camping not in the request);
the ``theirs`` mask dropped from the lift turns ``test_the_named_persons_lookalike_is_lifted`` red (Audrey's
camping lifted too); the call in ``SessionMemory._prepare_locked`` removed turns
``test_a_list_questions_other_member_reaches_the_request`` red. In ``SessionIndex.cosines_to_events`` the tail skipped or the
horizon ignored turns ``test_cosines_to_events_in_segments_tail_and_horizon`` red.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank import second_hop as hop
from hologram.memory.rank.query import build_query
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

QUESTION = "What outdoor activities has Andrew done?"
TOPIC = "outdoor activities done"  # what memory/rank/reformulate.py makes of it
FOUND = "Andrew: we went fishing at the lake last weekend, it was great outdoors"
MEMBER = "Andrew: my girlfriend and I are going camping in the mountains soon"
LOOKALIKE = "Audrey: my partner and I are going camping in the mountains soon"
FILLERS = [
    f"{'Andrew' if i % 2 else 'Audrey'}: {w} has been keeping me busy lately, number {i}"
    for i, w in enumerate(
        [
            "work",
            "taxes",
            "cooking",
            "painting",
            "reading",
            "bills",
            "meetings",
            "laundry",
            "errands",
            "cleaning",
            "emails",
            "chores",
        ]
        * 3
    )
]
DIM = 64


class ChosenEmbedder:
    """Unit vectors by text: the question, its topic and FOUND share axis 0; FOUND, MEMBER and LOOKALIKE share
    axis 1; every other text an axis of its own (orthogonal to all)."""

    model_id = "chosen-hop"
    fingerprint = "chosen-hop/64"
    dimension = DIM

    def __init__(self) -> None:
        self.axes: dict[str, int] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            if text in (QUESTION, TOPIC):
                out[i, 0] = 1.0
            elif text == FOUND:
                out[i, [0, 1]] = 1.0 / np.sqrt(2)
            elif text in (MEMBER, LOOKALIKE):
                out[i, 1] = 1.0
            else:
                out[i, 2 + self.axes.setdefault(text, len(self.axes) % (DIM - 2))] = 1.0
        return out


def _index() -> tuple[SessionIndex, dict[str, int]]:
    index = SessionIndex()
    texts = [FOUND, *FILLERS[:10], MEMBER, LOOKALIKE, *FILLERS[10:]]
    at = {t: index.add(i + 1, f"e{i}", "input", t, 20, group=None, ts=1000.0 + i) for i, t in enumerate(texts)}
    index.set_vectors(ChosenEmbedder.fingerprint, list(range(len(texts))), ChosenEmbedder().embed(texts))
    return index, at


def test_the_named_persons_lookalike_is_lifted() -> None:
    index, at = _index()
    query = build_query(index, QUESTION, now=0)
    assert query.speaker, "the question names Andrew"
    query_vector = np.zeros(DIM, dtype=np.float32)
    query_vector[0] = 1.0
    query = replace(query, dense=query_vector, fingerprint=ChosenEmbedder.fingerprint)
    base = index.scores(query)
    assert int(np.argmax(base)) == at[FOUND], "the path: the question's own query finds FOUND first"
    assert abs(base[at[MEMBER]] - base[at[LOOKALIKE]]) < 0.5, "without the hop MEMBER is no better than Audrey's"
    with index.reading():
        lifted = hop.second_hop(index, base, query, horizon=None)
    assert lifted[at[MEMBER]] - base[at[MEMBER]] > 0.5 * hop.WEIGHT
    assert lifted[at[LOOKALIKE]] == base[at[LOOKALIKE]], "the other speaker's turn is not lifted"
    assert lifted[at[FOUND]] == base[at[FOUND]], "a source is not lifted by itself"
    assert lifted[at[MEMBER]] > lifted[at[LOOKALIKE]] + 0.5 * hop.WEIGHT
    unnamed = replace(query, speaker=0)
    with index.reading():
        assert hop.second_hop(index, base, unnamed, horizon=None) is base, "no speaker named: no hop"


@pytest.mark.parametrize("on", [True, False])
def test_a_list_questions_other_member_reaches_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on: bool
) -> None:
    if not on:
        monkeypatch.setattr(hop, "WEIGHT", 0.0)
    store = SessionStore(tmp_path / "sessions.db")
    cold = ColdStore(tmp_path / "cold.db")
    memory = SessionMemory(store, cold, ChosenEmbedder(), pinned_recent=2)  # type: ignore[arg-type]
    sid = store.create_session("t")

    async def run() -> list[str]:
        for text in [FOUND, *FILLERS[:10], MEMBER, LOOKALIKE, *FILLERS[10:]]:
            store.append(sid, "input", {"text": text})
            await memory.prepare(sid, text, window_tokens=600, fixed_tokens=0)
            store.append(sid, "response", {"content": "Noted.", "reasoning": None, "tool_calls": []})
            await memory.index(sid)
        prepared = await memory.preview(sid, QUESTION, window_tokens=600, fixed_tokens=0)
        return [m.content for m in prepared.messages if isinstance(m.content, str)]

    try:
        sent = "\n".join(asyncio.run(run()))
        assert FOUND in sent, "the path: the question's own match is sent"
        assert LOOKALIKE not in sent
        assert (MEMBER in sent) == on
    finally:
        asyncio.run(memory.aclose())
        cold.close()
        store.close()


def test_cosines_to_events_in_segments_tail_and_horizon(tmp_path: Path) -> None:
    """``SessionIndex.cosines_to_events`` reads sealed segments and the tail alike, and only the newest
    `horizon` events: the same values as the vectors' own products (int8 rounding aside)."""
    texts = [FOUND, *FILLERS[:10], MEMBER, LOOKALIKE, *FILLERS[10:]]
    vectors = ChosenEmbedder().embed(texts)
    index = SessionIndex(tmp_path, seal_events=8)
    for k in range(0, len(texts), 8):
        chunk = texts[k : k + 8]
        for i, t in enumerate(chunk, start=k):
            index.add(i + 1, f"e{i}", "input", t, 20, group=None, ts=1000.0 + i)
        index.set_vectors(ChosenEmbedder.fingerprint, list(range(k, k + len(chunk))), vectors[k : k + len(chunk)])
        index.seal(vectors=True)
    assert index.segments >= 2 and index.sealed < len(texts), "the path: segments and a tail both read"
    sources = [0, 11]
    want = (vectors @ vectors[sources].T).max(axis=1)
    with index.reading():
        got = index.cosines_to_events(sources)
        near = index.cosines_to_events(sources, horizon=10)
    assert got is not None and near is not None
    np.testing.assert_allclose(got, want, atol=0.02)
    assert np.isneginf(near[: len(texts) - 10]).all(), "beyond the horizon: no cosine"
    np.testing.assert_allclose(near[len(texts) - 10 :], want[len(texts) - 10 :], atol=0.02)
