"""What the topic query (hologram.memory.rank.reformulate) costs a request: preview CPU with it and without it.

    PYTHONPATH=tools/bench nice -n 10 .venv/bin/python tools/bench/topic_cost.py LOCOMO [--conversation 41]

One LoCoMo conversation is streamed into a real SessionStore, ColdStore and on-disk index through
`SessionMemory` (as memory_stream.py does, with its cached turn vectors), then every question is previewed with
the topic query on and off alternately, in two rounds of opposite order, the query-vector cache cleared before
each preview so both embed their query. CPU is the whole process's (``time.process_time``: every thread, the
embedding's worker included), because the second embedding is what the topic adds. docs/memory.md, "evidence7b".
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from memory_stream import ANSWER, CachedEmbedder

import hologram.memory.session_memory as session_memory
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.embedder import load_embedder, preference
from hologram.memory.rank.reformulate import topic_of
from hologram.sessions import SessionStore
from memory import Conversation, load_locomo


def _no_topic(text: str, speakers: object = ()) -> None:
    return None


async def measure(conv: Conversation, root: Path, cache_dir: Path) -> None:
    inner = load_embedder(preference(None))
    if inner is None:
        raise SystemExit("no embedding model installed")
    embedder = CachedEmbedder(inner, cache_dir)
    store = SessionStore(root / "sessions.db")
    memory = session_memory.SessionMemory(
        store, ColdStore(root / "cold.db"), embedder, pinned_recent=10, index_dir=root / "index"
    )
    sid = store.create_session("bench")
    for (_, text), ts in zip(conv.turns, conv.times, strict=True):
        store.append(sid, "input", {"text": text}, ts=ts)
        await memory.prepare(sid, text, window_tokens=5001, fixed_tokens=0)
        store.append(sid, "response", {"content": ANSWER, "reasoning": None, "tool_calls": []}, ts=ts)
        await memory.index(sid)
    embedder.save()
    embedder.uncached = {q.text for q in conv.questions}
    inner.embed(["warm up"])
    end = conv.times[-1] + 3600
    on: list[float] = []
    off: list[float] = []
    for first in (True, False):
        for q in conv.questions:
            for mode in (first, not first):
                session_memory.topic_of = topic_of if mode else _no_topic  # type: ignore[assignment]
                memory._query_vectors.clear()
                started = time.process_time()
                await memory.preview(sid, q.text, window_tokens=5001, fixed_tokens=0, now=end)
                (on if mode else off).append((time.process_time() - started) * 1000)
    session_memory.topic_of = topic_of
    speakers = memory._state(sid).index.speakers
    rewritten = sum(topic_of(q.text, speakers) is not None for q in conv.questions)
    costs = []
    for q in conv.questions:
        started = time.perf_counter()
        topic_of(q.text, speakers)
        costs.append((time.perf_counter() - started) * 1e6)
    print(
        f"conversation {conv.name}: {len(conv.turns)} turns, {len(conv.questions)} questions, {rewritten} with a "
        f"topic; preview CPU (process) p50 with the topic {statistics.median(on):.2f} ms, without "
        f"{statistics.median(off):.2f} ms (mean {statistics.fmean(on):.2f} / {statistics.fmean(off):.2f}); "
        f"topic_of p50 {statistics.median(costs):.1f} us"
    )
    await memory.aclose()
    store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("locomo", type=Path)
    ap.add_argument("--conversation", default="41")
    ap.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "hologram-bench-embed")
    args = ap.parse_args()
    conv = next((c for c in load_locomo(args.locomo) if c.name == args.conversation), None)
    if conv is None:
        raise SystemExit(f"{args.locomo}: no conversation {args.conversation}")
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(measure(conv, Path(tmp), args.cache_dir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
