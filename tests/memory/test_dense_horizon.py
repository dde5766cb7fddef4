"""A long session's request computes the dense product over its newest events and its words' best older
passages only (session_index.DENSE_HORIZON, issue 39 item 7), and still recalls a far-back event its words match.

One real session of ~12,000 events (SessionStore, ColdStore and index segments on disk), fed as the soak feeds
it (tools/bench/prepare_scale.py's turns, a committed request every 50 turns, the indexing drained), with a
fact said at its start; the questions are asked with `preview` (nothing moved), so the tests share the session.
Vectors come from a deterministic embedder that hashes each text (the dense product's cost, no model).

Mutation checks (done): the bound's condition off (``n > horizon`` never true in ``SessionIndex._cosine``)
turns ``test_a_request_in_a_long_session_computes_a_bounded_dense_product`` red, and so does computing the
sealed newest segments' cosines again for a turn's later request (``known = None`` in
``SessionIndex.passage_cosines_at``); a bound that drops the old
part's words too (``bm25[:first_recent] = 0`` in ``SessionIndex.scores`` before the lexical z-score) turns
``test_a_far_back_fact_whose_words_match_is_recalled_from_a_12k_event_session`` red.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hologram.memory.cold.store import ColdStore
from hologram.memory.index.session_index import DENSE_HORIZON, FAR_DENSE
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

FACT = "The spare key to the boathouse is taped under the third blue flowerpot, behind the shed."
QUESTION = "Where is the spare key to the boathouse?"
EVENTS = 12_000
WINDOW, FIXED = 6000, 1400


class HashEmbedder:
    """Unit vectors from a hash of each text (64-d)."""

    model_id = "hash-64"
    fingerprint = "hash-64"
    dimension = 64

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for k, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
            row = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
            out[k] = row / np.linalg.norm(row)
        return out

    def load(self) -> None:
        return None


@dataclass
class Long:
    mem: SessionMemory
    sid: str
    fact_seq: int


def _feed(store: SessionStore, sid: str, i: int) -> None:
    text = ("Please keep a note that the meeting moved to Thursday afternoon, and check the file."
            if i % 2 == 0 else "请记下会议改到星期四下午了，然后检查一下文件。")  # fmt: skip
    store.append(sid, "input", {"text": f"{text} ({i})"})
    store.append(sid, "response", {"content": "Noted; the file is fine.", "reasoning": None})


async def _build(root: Path) -> Long:
    store = SessionStore(root / "sessions.db")
    mem = SessionMemory(store, ColdStore(root / "cold.db"), HashEmbedder(), index_dir=root / "index")
    sid = store.create_session("cli", "long")
    fact_seq = store.append(sid, "input", {"text": FACT})
    store.append(sid, "response", {"content": "Noted.", "reasoning": None})
    i = 0
    while True:
        _feed(store, sid, i)
        i += 1
        if i % 50 == 0:
            await mem.prepare(sid, "and the file?", window_tokens=WINDOW, fixed_tokens=FIXED)
            await mem.index(sid)
            if len(mem._state(sid).index) >= EVENTS:
                return Long(mem, sid, fact_seq)


@pytest.fixture(scope="module")
def long(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Long]:
    built = asyncio.run(_build(tmp_path_factory.mktemp("dense-horizon")))
    yield built
    built.mem.cold.close()
    built.mem.store.close()


def _ask(long: Long, text: str) -> object:
    return asyncio.run(long.mem.preview(long.sid, text, window_tokens=WINDOW, fixed_tokens=FIXED))


def test_a_far_back_fact_whose_words_match_is_recalled_from_a_12k_event_session(long: Long) -> None:
    index = long.mem._state(long.sid).index
    assert len(index) >= EVENTS and index.segments > 1 and long.mem.dense_horizon < len(index)
    assert long.fact_seq not in _ask(long, "and what about the meeting file?").seqs  # type: ignore[attr-defined]
    prepared = _ask(long, QUESTION)
    assert long.fact_seq in prepared.recalled_seqs  # type: ignore[attr-defined]  # from L2, ~12,000 events back
    assert long.fact_seq in prepared.seqs  # type: ignore[attr-defined]


def test_a_request_in_a_long_session_computes_a_bounded_dense_product(long: Long) -> None:
    index = long.mem._state(long.sid).index
    n, horizon = len(index), long.mem.dense_horizon
    with index.reading():
        newest = index.passages - int(index.first_passage[n - horizon])
    _ask(long, f"{QUESTION} (1)")
    first = index.dense_rows
    assert 0 < first <= newest + FAR_DENSE  # the newest events' passages and the words' best older
    assert first < index.passages / 4
    _ask(long, f"{QUESTION} (1)")  # a turn's later request (the same input): the sealed newest ones are kept
    assert index.dense_rows < first
    long.mem.dense_horizon = sys.maxsize  # the whole product, as before: the count sees every passage
    try:
        _ask(long, f"{QUESTION} (2)")
        assert index.dense_rows == index.passages
    finally:
        long.mem.dense_horizon = DENSE_HORIZON
