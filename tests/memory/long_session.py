"""One real long session for the tests of a request's bounds (test_dense_horizon, test_score_window): a fact said
at its start, then the soak's turns (an English and a Chinese input taking turns, each answered), with a committed
request every 50 turns and the indexing drained — SessionStore, ColdStore and index segments on disk. Vectors come
from a deterministic embedder that hashes each text (the dense product's cost, no model)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

FACT = "The spare key to the boathouse is taped under the third blue flowerpot, behind the shed."
QUESTION = "Where is the spare key to the boathouse?"
FIXED = 1400


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
    window_tokens: int

    def ask(self, text: str) -> object:
        """A request's ranking and fit for `text` (`preview`: nothing moved, so the tests share the session)."""
        return asyncio.run(self.mem.preview(self.sid, text, window_tokens=self.window_tokens, fixed_tokens=FIXED))

    def close(self) -> None:
        self.mem.cold.close()
        self.mem.store.close()


def feed(store: SessionStore, sid: str, i: int) -> None:
    text = ("Please keep a note that the meeting moved to Thursday afternoon, and check the file."
            if i % 2 == 0 else "请记下会议改到星期四下午了，然后检查一下文件。")  # fmt: skip
    store.append(sid, "input", {"text": f"{text} ({i})"})
    store.append(sid, "response", {"content": "Noted; the file is fine.", "reasoning": None})


async def build(root: Path, events: int, window_tokens: int, score_window: int | None = None) -> Long:
    """The session once its index holds `events` events; `score_window` replaces the memory's (a small one makes
    a short session "long")."""
    store = SessionStore(root / "sessions.db")
    mem = SessionMemory(store, ColdStore(root / "cold.db"), HashEmbedder(), index_dir=root / "index")
    if score_window is not None:
        mem.score_window = score_window
    sid = store.create_session("cli", "long")
    fact_seq = store.append(sid, "input", {"text": FACT})
    store.append(sid, "response", {"content": "Noted.", "reasoning": None})
    i = 0
    while True:
        feed(store, sid, i)
        i += 1
        if i % 50 == 0:
            await mem.prepare(sid, "and the file?", window_tokens=window_tokens, fixed_tokens=FIXED)
            await mem.index(sid)
            if len(mem._state(sid).index) >= events:
                return Long(mem, sid, fact_seq, window_tokens)
