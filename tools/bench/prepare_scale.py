"""Does one request's ranking stay bounded as a session grows? `SessionMemory.preview` CPU at 1k … 24k events.

    .venv/bin/python tools/bench/prepare_scale.py [--at 1000,4000,12000,24000] [--requests 21] [--every 25]
                                                  [--model] [--window N] [--ab-window] [--json out.json]

Why: the 10,000-turn soak's kernel CPU a turn rose ~1.1-1.27x (issue 39 item 7), all of it in
`SessionMemory._prepare_locked` ranking every event of a session (each of the soak's four sessions reaches
~12,000 events). This streams the soak's own feed (tools/bench/prepare_cost.py: an English or a Chinese input,
a response calling `files_write` and `notes_search`, their two results, the answer, the output) into one real
session — `SessionStore`, `ColdStore` and index segments on disk — with one committed `prepare` every
`--every` turns (so L1 keeps moving to L2 as in the soak, without paying a request a turn while it streams), the
background indexing drained after each. At each `--at` count of indexed events it asks `--requests` fresh
inputs (`preview`: the same ranking and fitting as `prepare`, nothing moved) and reports the median CPU time of
one on the calling thread (``time.thread_time``: what the event loop spends, robust to other processes on a
shared host, unlike wall time), as a ratio to the first `--at` point measured in the same run.

``--ab-window``: at each point every other request runs without the scoring window (memory/index/window.py),
interleaved with the windowed ones, so the two medians share the host's load (a loaded host moves thread CPU
too: caches and clock are shared).

Vectors: by default a deterministic embedder that hashes each text to a unit vector (256-d): the dense product
over the session's passages costs what a model's vectors cost, and streaming 24,000 events needs no model.
``--model`` loads the product's embedding model instead (slower to stream; the soak's kernel has it).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench

from bench.prepare_cost import (
    FIXED_TOKENS,
    WINDOW_TOKENS,
    _drain,
    soak_answer,
    soak_calls,
    soak_input,
    soak_input_event,
)
from hologram.memory.session_memory import SessionMemory
from hologram.memory.text.tokenizer import wait_for_jieba, warm_up
from hologram.sessions import SessionStore

DIMENSION = 256


class HashEmbedder:
    """Unit vectors from a hash of each text: the cost of a model's vectors in the index, no model."""

    model_id = "hash-256"
    fingerprint = "hash-256"
    dimension = DIMENSION

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for k, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
            row = np.random.default_rng(seed).standard_normal(DIMENSION).astype(np.float32)
            out[k] = row / np.linalg.norm(row)
        return out

    def load(self) -> None:
        return None


def feed_turn(store: SessionStore, sid: str, i: int) -> None:
    """The events of one soak turn (prepare_cost.soak_turn's, without its two requests)."""
    _, turn = soak_input_event(store, sid, i)
    soak_calls(store, sid, i, turn)
    soak_answer(store, sid, turn)


async def _probe(memory: SessionMemory, sid: str, requests: int, at: int, *, ab: bool = False) -> dict[str, Any]:
    """The median thread CPU of `requests` previews. `ab`: every other request without the scoring window
    (memory/index/window.py; ``score_window`` unbounded), reported as ``cpu_ms_unbounded`` — both from the
    same requests' sitting, interleaved, so the host's load falls on both alike."""
    costs: list[float] = []
    unbounded: list[float] = []
    held = recalled = 0
    window = memory.score_window
    for k in range(2 * requests if ab else requests):
        off = ab and k % 2 == 1
        memory.score_window = sys.maxsize if off else window
        text = f"{soak_input(at + k)} (probe {k})"
        started = time.thread_time()
        prepared = await memory.preview(sid, text, window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED_TOKENS)
        (unbounded if off else costs).append(time.thread_time() - started)
        if not off:
            held, recalled = prepared.held, len(prepared.recalled)
    memory.score_window = window
    out = {"cpu_ms": 1000 * statistics.median(costs[1:] if len(costs) > 2 else costs), "l2": held,
           "recalled": recalled}  # fmt: skip
    if ab:
        out["cpu_ms_unbounded"] = 1000 * statistics.median(unbounded[1:] if len(unbounded) > 2 else unbounded)
    return out


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="hologram-prepare-scale-"))
    store = SessionStore.in_data_dir(data)
    memory = SessionMemory.open(data, store, load_model=args.model)
    if args.horizon is not None:
        memory.dense_horizon = args.horizon or sys.maxsize
    if args.window is not None:
        memory.score_window = args.window or sys.maxsize
    if args.model:
        await asyncio.to_thread(memory.embedder_ready.wait, 300)
    else:
        memory.embedder = HashEmbedder()
        memory.embedder_ready.set()
    warm_up()
    wait_for_jieba()
    sid = store.create_session("bench")
    targets = sorted(int(a) for a in args.at.split(","))
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    i = 0
    while targets:
        feed_turn(store, sid, i)
        i += 1
        if i % args.every == 0:
            await memory.prepare(sid, soak_input(i), window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED_TOKENS)
            await _drain(memory, sid)
            events = len(memory._sessions[sid].index)
            if events >= targets[0]:
                targets.pop(0)
                row = {"events": events, **await _probe(memory, sid, args.requests, i, ab=args.ab_window)}
                row["segments"] = memory._sessions[sid].index.segments
                rows.append(row)
                print(f"{events:>6} events ({row['segments']} segments, {row['l2']} in L2): preview CPU p50 "
                      f"{row['cpu_ms']:.2f} ms (thread), {row['recalled']} recalled; "
                      f"{time.perf_counter() - began:.0f} s"
                      + (f"; without the window {row['cpu_ms_unbounded']:.2f} ms" if args.ab_window else ""),
                      flush=True)  # fmt: skip
    await memory.aclose()
    store.close()
    shutil.rmtree(data, ignore_errors=True)
    base = rows[0]["cpu_ms"]
    for row in rows:
        row["ratio"] = row["cpu_ms"] / base
    print("ratio to the first point: " + ", ".join(f"{r['events']}: {r['ratio']:.2f}x" for r in rows))
    if args.ab_window:
        first = rows[0]["cpu_ms_unbounded"]
        print("without the window: " + ", ".join(f"{r['events']}: {r['cpu_ms_unbounded'] / first:.2f}x" for r in rows))
    return {"args": vars(args), "rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--at", default="1000,4000,12000,24000", help="indexed events to measure at")
    parser.add_argument("--requests", type=int, default=21, help="previews measured at each point")
    parser.add_argument("--every", type=int, default=25, help="turns between two committed prepares")
    parser.add_argument("--model", action="store_true", help="the product's embedding model (else hashed vectors)")
    parser.add_argument("--horizon", type=int, help="dense horizon in events (session_index.DENSE_HORIZON; 0: none)")
    parser.add_argument("--window", type=int, help="scoring window in events (memory/index/window.py; 0: none)")
    parser.add_argument("--ab-window", action="store_true",
                        help="every other request without the scoring window, both medians reported")  # fmt: skip
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(_run(args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
