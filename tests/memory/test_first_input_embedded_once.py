"""A new session's first input on an empty data directory is embedded once, not twice (issue 39 item 9).

The first turn after "ready" ran the sentence model twice on the same input (per-job cProfile of the kernel's
worker threads, docs/performance.md): across.db held nothing to recall, so the request embedded no query; the
background indexing then embedded the input as a passage, and across.db's indexing — which looks only in the
query cache — embedded it again. Real SessionStore, ColdStore and across.db on disk; the embedder counts texts.

Mutation check (done): `_index_across` ignoring `computed` (the query cache alone, as before) turns
``test_the_first_input_is_embedded_once`` red: the input is embedded twice.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

FIRST = "hello, a question about my garden and the printer"


class CountingEmbedder:
    """A deterministic 16-d hashed bag of words that counts every text it embeds."""

    model_id = "counting"
    fingerprint = "counting/16"
    dimension = 16

    def __init__(self) -> None:
        self.texts: Counter[str] = Counter()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.update(texts)
        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % 16] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def test_the_first_input_is_embedded_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    memory = SessionMemory.open(tmp_path, store, load_model=False)
    embedder = CountingEmbedder()
    memory.embedder = embedder  # type: ignore[assignment]
    memory.embedder_ready.set()
    try:
        assert memory.across is not None  # across.db is open: its indexing is what embedded the input again

        async def first_turn() -> None:
            store.append("s1", "input", {"text": FIRST})
            await memory.prepare("s1", FIRST, window_tokens=4000, fixed_tokens=0)  # schedules the indexing
            task = memory._sessions["s1"].index_task
            assert task is not None  # the path the kernel takes: the request's background indexing
            await task

        asyncio.run(first_turn())
        assert embedder.texts[FIRST] == 1, embedder.texts
        assert memory.across.unembedded() == 0  # across.db has the input's vector all the same
    finally:
        asyncio.run(memory.aclose())
        store.close()
