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
from pathlib import Path

from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

from .embedders import BagOfWordsEmbedder

FIRST = "hello, a question about my garden and the printer"


def test_the_first_input_is_embedded_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    memory = SessionMemory.open(tmp_path, store, load_model=False)
    embedder = BagOfWordsEmbedder()
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
