"""Evidence in one long session: LoCoMo's conversations streamed one after another into a single session.

    PYTHONPATH=tools/bench .venv/bin/python tools/bench/memory_long.py /work/shared/data/locomo10 [--budget 4000]
                                                                      [--windows 4096,2048]

Why: the stream protocol (memory_stream.py) gives each conversation a session of its own, and LoCoMo's longest
has fewer than 1,500 events — inside the scoring window (memory/index/window.py, 4,096 events), so that
benchmark ranks every session whole and cannot see what the window decides. A person's one long chat can have
ten thousand events. Here all ten conversations go into one session (11,764 events), each shifted in time to
follow the one before by a month, turn by turn through `SessionMemory` on disk as the kernel does (prepare,
a short answer, indexing), and then every question of every conversation is previewed against that final
state, once for each scoring window of ``--windows`` (a preview stores nothing, so each window sees the same
state). Evidence in context as in the stream protocol, by conversation: the first conversations are ~11,000
events back, the last one inside any window.

Measured (issue 39 item 7, 4k, 1,536 questions): window 4,096 0.782, 2,048 0.734 — conversations 47 and 48,
2,150–4,900 events back, 0.838 → 0.672 and 0.916 → 0.733. A request's cost follows the window (the soak's
latency at 10,000 turns against its early turns, side by side: 1.09× with 4,096, 1.03× with 2,048); the window
stays 4,096.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/bench: memory, memory_stream

from memory_stream import ANSWER, TARGET_FILL, CachedEmbedder, _sent

import memory as bench
from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

GAP_S = 30 * 86400  # between one conversation's last turn and the next one's first


async def run(data: Path, budget: int, windows: list[int], cache_dir: Path) -> dict[int, dict[str, float]]:
    """Each window's evidence in context per conversation (the questions' mean)."""
    loaded = bench.load_embedder(bench.preference(bench.EMBEDDERS[0]))
    embedder = CachedEmbedder(loaded, cache_dir) if loaded is not None else None
    conversations = bench.load_locomo(data)
    window_tokens = int(budget / TARGET_FILL) + 1
    out: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = SessionStore(root / "sessions.db")
        memory = SessionMemory(store, ColdStore(root / "cold.db"), embedder, pinned_recent=10, index_dir=root / "index")
        sid = store.create_session("bench")
        turn_of: dict[int, str] = {}
        text_of: dict[int, str] = {}
        questions: list[tuple[str, str, set[str]]] = []
        shift, began, end = 0.0, time.perf_counter(), 0.0
        for conv in conversations:
            if not conv.times:
                continue
            shift += (end - min(conv.times) + GAP_S) if end else 0.0
            for (tid, text), ts in zip(conv.turns, conv.times, strict=True):
                seq = store.append(sid, "input", {"text": text}, ts=ts + shift)
                await memory.prepare(sid, text, window_tokens=window_tokens, fixed_tokens=0)
                store.append(sid, "response", {"content": ANSWER, "reasoning": None, "tool_calls": []}, ts=ts + shift)
                await memory.index(sid)
                turn_of[seq], text_of[seq] = f"{conv.name}/{tid}", text
            end = max(conv.times) + shift
            questions += [(conv.name, q.text, {f"{conv.name}/{e}" for e in q.evidence}) for q in conv.questions]
            events = len(memory._state(sid).index)
            print(f"  conversation {conv.name} fed: {events:,} events, {time.perf_counter() - began:.0f} s", flush=True)
        if isinstance(embedder, CachedEmbedder):
            embedder.save()
        for window in windows:
            memory.score_window = window
            scores: dict[str, list[float]] = {}
            latencies = []
            for name, text, evidence in questions:
                started = time.perf_counter()
                prepared = await memory.preview(sid, text, window_tokens=window_tokens, fixed_tokens=0, now=end + 3600)
                latencies.append(time.perf_counter() - started)
                seen = _sent(prepared, turn_of, text_of)
                scores.setdefault(name, []).append(len(evidence & seen) / len(evidence))
            out[window] = {name: statistics.fmean(s) for name, s in scores.items()}
            every = [x for s in scores.values() for x in s]
            print(
                f"window {window:,}: evidence in context {statistics.fmean(every):.3f} over {len(every)} questions; "
                f"by conversation {', '.join(f'{k} {v:.3f}' for k, v in out[window].items())}; "
                f"preview p50 {1000 * statistics.median(latencies):.1f} ms",
                flush=True,
            )
        await memory.aclose()
        store.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", type=Path, help="LoCoMo's directory (locomo10.json)")
    parser.add_argument("--budget", type=int, default=4000, help="history budget, tokens")
    parser.add_argument("--windows", default="4096,2048", help="scoring windows to compare, events")
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "hologram-bench-embed")
    args = parser.parse_args()
    windows = [int(w) for w in args.windows.split(",") if w]
    asyncio.run(run(args.data_dir, args.budget, windows, args.cache_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
