"""Test embedders for memory's tests: a hashed bag of words and vectors chosen by text, both recording what
they embedded (texts, calls, threads), so a test can assert the path it reached — embedded once, off the loop's
thread, the topic as well as the question.

Deterministic across runs: words hash by their characters, not by Python's per-process string hash."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np


class RecordingEmbedder:
    """What every test embedder here records; `vectors` says how texts become rows."""

    model_id = "recording"
    fingerprint = "recording"
    dimension = 16

    def __init__(self) -> None:
        self.texts: Counter[str] = Counter()
        """Every text embedded, with how many times."""
        self.calls = 0
        self.threads: set[int] = set()
        """The threads `embed` ran on (the kernel embeds in a worker, never on the loop's thread)."""
        self.slow_for: str | None = None
        """Embedding a text containing this waits for `gate` (a model still busy when a request comes)."""
        self.gate = threading.Event()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.add(threading.get_ident())
        self.calls += 1
        self.texts.update(texts)
        if self.slow_for is not None and any(self.slow_for in t for t in texts):
            self.gate.wait(10)
        return self.vectors(texts)

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def load(self) -> None:
        """Nothing to load (the kernel's background load calls it)."""


class BagOfWordsEmbedder(RecordingEmbedder):
    """A 16-d hashed bag of words, rows of unit length (a blank text a zero row): texts sharing words are near."""

    model_id = "bag-of-words"
    fingerprint = "bag-of-words/16"

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, sum(map(ord, word)) % self.dimension] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class ChosenEmbedder(RecordingEmbedder):
    """Unit vectors chosen by text: each text of `axes` on its axis, every other text on the last one."""

    model_id = "chosen"

    def __init__(self, axes: Mapping[str, int]) -> None:
        super().__init__()
        self.axes = dict(axes)
        self.dimension = max(self.axes.values(), default=-1) + 2
        self.fingerprint = f"chosen/{self.dimension}"

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, self.axes.get(text, self.dimension - 1)] = 1.0
        return out
