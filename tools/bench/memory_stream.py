"""The *stream* protocol of the memory benchmark: LoCoMo through the product's own memory path.

Each conversation is fed turn by turn into a real `SessionStore` and `ColdStore` on disk through
`SessionMemory` — the code the kernel runs before every LLM request, with its budget, pinning, overflow
and recall rules: every LoCoMo turn is a user input (``"speaker: text"``, at the session's date), the
request for it is prepared (history pruned, pruned events moved to L2), a short answer is stored as the
model's response, and the embedder indexes the new events, as it does between turns in the kernel. Then
each question is asked as a new turn in the same session, and the benchmark reads what the request would
carry: **evidence in context** = the share of the question's evidence turns among the events of the
prepared messages (L1 after pruning plus whatever was recalled from L2), averaged over questions.

The model never calls a tool here: what comes back comes back because the memory layer brought it.
Budgets are history budgets (the window is set so that `history_budget` gives exactly this many tokens).
Embeddings of the conversation are cached on disk by text (the same model's output, reused across runs);
the questions are embedded anew, so the prepare latency includes the query embedding as in the kernel.
"""

from __future__ import annotations

import asyncio
import hashlib
import pickle
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from hologram.memory.cold import ColdStore
from hologram.memory.embed import Embedder
from hologram.memory.overflow import TARGET_FILL
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

ANSWER = "Noted."


class CachedEmbedder:
    """The embedder, with its vectors remembered by text on disk: the same model output, computed once."""

    def __init__(self, inner: Embedder, cache_dir: Path) -> None:
        self.inner = inner
        self.path = cache_dir / f"stream-{hashlib.sha256(inner.model_id.encode()).hexdigest()[:12]}.pkl"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            self.vectors = pickle.loads(self.path.read_bytes())
        self.added = 0
        self.uncached: set[str] = set()
        """Texts always embedded anew (the questions: their embedding is part of the prepare latency the
        benchmark reports, as it is in the kernel)."""

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self.uncached and any(t in self.uncached for t in texts):
            return np.asarray(self.inner.embed(texts), dtype=np.float32)
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self.vectors[text] = vector
            self.added += len(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        if self.added:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(self.vectors, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.replace(self.path)
            self.added = 0


@dataclass
class StreamTurn:
    dia_id: str
    text: str
    ts: float


@dataclass
class StreamResult:
    """Per budget: evidence in context per question (held-out or not), prepare latencies, L2 size."""

    recall: dict[int, list[float]] = field(default_factory=dict)
    held_out: dict[int, list[float]] = field(default_factory=dict)
    latency_ms: dict[int, list[float]] = field(default_factory=dict)
    l2_size: dict[int, list[int]] = field(default_factory=dict)
    recalled: dict[int, list[int]] = field(default_factory=dict)


def session_times(doc: dict[str, Any]) -> dict[int, float]:
    """Session number → its start as a timestamp ("1:56 pm on 8 May, 2023")."""
    out = {}
    for key, value in doc.items():
        if key.startswith("session_") and key.endswith("_date_time"):
            number = int(key.split("_")[1])
            try:
                out[number] = datetime.strptime(str(value), "%I:%M %p on %d %B, %Y").timestamp()
            except ValueError:
                out[number] = 0.0
    return out


async def _run_conversation(
    turns: Sequence[StreamTurn],
    questions: Sequence[tuple[str, set[str]]],
    budget: int,
    embedder: Embedder | None,
    root: Path,
    pinned: int,
) -> tuple[list[float], list[float], int, list[int]]:
    store = SessionStore(root / "sessions.db")
    memory = SessionMemory(store, ColdStore(root / "cold.db"), embedder, pinned_recent=pinned)
    window = int(budget / TARGET_FILL) + 1
    sid = store.create_session("bench")
    turn_of: dict[int, str] = {}

    async def one(text: str, ts: float) -> Any:
        seq = store.append(sid, "input", {"text": text}, ts=ts)
        started = time.perf_counter()
        prepared = await memory.prepare(sid, text, window_tokens=window, fixed_tokens=0)
        elapsed = (time.perf_counter() - started) * 1000
        store.append(sid, "response", {"content": ANSWER, "reasoning": None, "tool_calls": []}, ts=ts)
        await memory.index(sid)  # the kernel embeds between turns, in the background
        return seq, prepared, elapsed

    if isinstance(embedder, CachedEmbedder):
        embedder.uncached = {text for text, _ in questions}
    for turn in turns:
        seq, _, _ = await one(turn.text, turn.ts)
        turn_of[seq] = turn.dia_id
    scores, latencies, recalled = [], [], []
    end = max((t.ts for t in turns), default=0.0) + 3600
    for text, evidence in questions:
        # Each question against the state the conversation left (not after the previous questions): the
        # request `prepare` would send for it, with nothing stored or moved.
        started = time.perf_counter()
        prepared = await memory.preview(sid, text, window_tokens=window, fixed_tokens=0, now=end)
        latencies.append((time.perf_counter() - started) * 1000)
        seen = {turn_of[s] for s in prepared.seqs if s in turn_of}
        scores.append(len(evidence & seen) / len(evidence))
        recalled.append(len(prepared.recalled))
    l2 = len(memory.cold)
    await memory.aclose()
    store.close()
    return scores, latencies, l2, recalled


def run_stream(
    conversations: Sequence[tuple[str, list[StreamTurn], list[tuple[str, set[str]]]]],
    budgets: Sequence[int],
    embedder: Embedder | None,
    *,
    pinned: int,
    dev_split: frozenset[str],
) -> StreamResult:
    result = StreamResult()
    for name, turns, questions in conversations:
        for budget in budgets:
            with tempfile.TemporaryDirectory() as tmp:
                scores, latencies, l2, recalled = asyncio.run(
                    _run_conversation(turns, questions, budget, embedder, Path(tmp), pinned)
                )
            result.recall.setdefault(budget, []).extend(scores)
            if name not in dev_split:
                result.held_out.setdefault(budget, []).extend(scores)
            result.latency_ms.setdefault(budget, []).extend(latencies)
            result.l2_size.setdefault(budget, []).append(l2)
            result.recalled.setdefault(budget, []).extend(recalled)
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
    return result


def percentile(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))] if s else 0.0


def report(result: StreamResult, budgets: Sequence[int]) -> None:
    print("stream protocol: evidence in context (the product's path: SessionMemory, on-disk L1/L2, no tool call)")
    header = (
        f"{'budget':>7} | {'all':>6} | {'held-out':>8} | {'prepare p50':>11} | {'p99':>7} | "
        f"{'L2 size':>7} | {'recalled/q':>10}"
    )
    print(header)
    print("-" * len(header))
    for b in budgets:
        lat = result.latency_ms[b]
        every, held = statistics.fmean(result.recall[b]), statistics.fmean(result.held_out.get(b) or [0.0])
        p50, p99 = percentile(lat, 50), percentile(lat, 99)
        print(
            f"{b:>7} | {every:>6.3f} | {held:>8.3f} | {p50:>8.2f} ms | {p99:>4.1f} ms | "
            f"{statistics.fmean(result.l2_size[b]):>7.0f} | {statistics.fmean(result.recalled[b] or [0]):>10.1f}"
        )
