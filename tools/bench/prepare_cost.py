"""What one request's memory step costs as sessions grow: `SessionMemory.prepare` at soak turns N.

    .venv/bin/python tools/bench/prepare_cost.py [--turns 10000] [--at 500,5000,10000] [--sessions 4]
                                                 [--window 50] [--model] [--keep DIR] [--json out.json]
    .venv/bin/python tools/bench/prepare_cost.py --instructions DIR [--requests 10]

Why this and not the soak's latency: the soak's turn latency is wall-clock on a shared machine (other
processes, the provider round trip, the plugins), while what grows with a session's history is the CPU the
kernel's memory step spends per request. This drives `SessionMemory` directly — the code every request runs —
with the soak's own feed (`sweep.py --only soak`: an English or a Chinese input, a response calling
`files_write` and `notes_search`, their two results, the answer, the output; round-robin over `--sessions`),
with the soak's two requests a turn (`prepare` after the input and after the tool results, a 6,000-token
window, so every request prunes and ranks L1 ∪ L2), and the background indexing finished between requests (as
it is, on a kernel that waits for a person).

At each turn of `--at` it reports, over the last `--window` turns' requests, the median CPU time of one
`prepare` on the calling thread (``time.thread_time``: the event loop's share, what delays every other turn)
and of the whole process (``time.process_time``: with the cold store's writes in worker threads), and the
session's indexed events and segments. ``--model`` loads the embedding model (the soak's kernel has it:
vectors and the dense score); without it scoring is BM25 only.

CPU time still moves with the machine's load (caches, memory bandwidth). ``--keep DIR`` saves the data
directory at each `--at` turn (SQLite files by their backup API, a consistent copy) with the embeddings of a
few soak-like inputs; ``--instructions DIR`` then counts, under ``valgrind --tool=callgrind``, the
instructions of one request's ranking at each saved state: a fresh copy of the state, the first session
previewed (`SessionMemory.preview`: the same ranking and fitting as `prepare`, nothing moved) for
`--requests` new inputs, minus the same run without them; and a turn's later request (the same input previewed
again right after: what a turn's second LLM step ranks against), minus the run without those. Instruction
counts do not depend on the load, so
two versions of the code can be compared on the same saved states one after the other (run this file with
the other version on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hologram.memory.cold.store import ColdStore
from hologram.memory.session_memory import COLD_DB, INDEX_DIR, SessionMemory
from hologram.memory.text.tokenizer import wait_for_jieba, warm_up
from hologram.sessions import SessionStore

ENGLISH = "Please keep a note that the meeting moved to Thursday afternoon, and check the file."
CHINESE = "请记下会议改到星期四下午了，然后检查一下文件。"
ANSWER = "Noted; the file is fine. " * 8
WINDOW_TOKENS, FIXED_TOKENS = 6000, 1400
REPLAY = "replay.npz"
REPLAY_INPUTS = 24


def _calls(n: int) -> list[dict[str, Any]]:
    content = json.dumps({"path": "soak.txt", "content": "x\n" * 20})
    return [
        {"id": f"f{n}", "name": "files_write", "arguments": content},
        {"id": f"n{n}", "name": "notes_search", "arguments": json.dumps({"query": "meeting thursday"})},
    ]


def soak_input(i: int) -> str:
    return f"{ENGLISH if i % 2 == 0 else CHINESE} ({i})"


async def _drain(memory: SessionMemory, sid: str) -> None:
    """Wait for the indexing `prepare` scheduled (vectors, sealing, merges), off the measured requests."""
    state = memory._sessions.get(sid)
    task = state.index_task if state is not None else None
    if task is not None and not task.done():
        await task
    elif memory.embedder is not None:
        await memory.index(sid)


async def _request(memory: SessionMemory, sid: str, text: str, costs: deque[tuple[float, float]]) -> None:
    thread, process = time.thread_time(), time.process_time()
    await memory.prepare(sid, text, window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED_TOKENS)
    costs.append((time.thread_time() - thread, time.process_time() - process))
    await _drain(memory, sid)


async def soak_turn(
    memory: SessionMemory, store: SessionStore, sid: str, i: int, costs: deque[tuple[float, float]]
) -> None:
    """One turn of the soak's feed, with its two requests."""
    text, turn = soak_input_event(store, sid, i)
    await _request(memory, sid, text, costs)
    soak_calls(store, sid, i, turn)
    await _request(memory, sid, text, costs)
    soak_answer(store, sid, turn)


def soak_input_event(store: SessionStore, sid: str, i: int) -> tuple[str, str]:
    """The soak turn's input, stored: its text and turn id (prepare_scale.py feeds the same turns)."""
    text, turn = soak_input(i), f"t{i}"
    store.append(sid, "input", {"text": text}, turn=turn)
    return text, turn


def soak_calls(store: SessionStore, sid: str, i: int, turn: str) -> None:
    """The soak turn's response calling two tools, and their results."""
    calls = _calls(i)
    response = store.append(
        sid, "response", {"content": "", "reasoning": "use the tools", "tool_calls": calls}, turn=turn
    )
    store.add_result(sid, response, calls[0]["id"],
                     {"name": "files_write", "content": "overwrote soak.txt (40 bytes)", "is_error": False,
                      "status": "ok"}, turn=turn)  # fmt: skip
    store.add_result(sid, response, calls[1]["id"],
                     {"name": "notes_search", "content": "no notes contain 'meeting thursday'", "is_error": False,
                      "status": "ok"}, turn=turn)  # fmt: skip


def soak_answer(store: SessionStore, sid: str, turn: str) -> None:
    """The soak turn's answer and its end."""
    store.append(sid, "response", {"content": ANSWER, "reasoning": "done", "tool_calls": []}, turn=turn)
    store.append(sid, "output", {"text": ANSWER, "ended_by": "answer", "errors": []}, turn=turn)


def _keep(memory: SessionMemory, data: Path, target: Path, sid: str) -> None:
    """A consistent copy of `data` (SQLite files through their backup API) and the replay inputs' vectors."""
    target.mkdir(parents=True)
    for path in data.rglob("*"):
        rel = path.relative_to(data)
        if path.is_dir():
            (target / rel).mkdir(parents=True, exist_ok=True)
        elif path.suffix == ".db":
            with sqlite3.connect(path) as src, sqlite3.connect(target / rel) as dst:
                src.backup(dst)
        elif not path.name.endswith(("-wal", "-shm")):
            shutil.copy2(path, target / rel)
    texts = [f"{soak_input(j)} (replay)" for j in range(REPLAY_INPUTS)]
    embedder = memory.embedder
    vectors = embedder.embed(texts) if embedder is not None else np.zeros((0, 0), dtype=np.float32)
    fingerprint = embedder.fingerprint if embedder is not None else ""
    np.savez(target / REPLAY, texts=np.array(texts), vectors=vectors, fingerprint=fingerprint, session=sid)


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="hologram-prepare-cost-"))
    store = SessionStore.in_data_dir(data)
    memory = SessionMemory.open(data, store, load_model=args.model)
    if args.model:
        await asyncio.to_thread(memory.embedder_ready.wait, 300)
    sids = [store.create_session("bench") for _ in range(args.sessions)]
    at = sorted(int(a) for a in args.at.split(","))
    costs: deque[tuple[float, float]] = deque(maxlen=2 * args.window)  # two requests a turn
    rows: list[dict[str, Any]] = []
    began = time.perf_counter()
    for i in range(args.turns):
        sid = sids[i % args.sessions]
        await soak_turn(memory, store, sid, i, costs)
        if at and i + 1 == at[0]:
            at.pop(0)
            index = memory._sessions[sid].index
            row = {
                "turn": i + 1,
                "requests": len(costs),
                "thread_cpu_ms": 1000 * statistics.median(c[0] for c in costs),
                "process_cpu_ms": 1000 * statistics.median(c[1] for c in costs),
                "events_per_session": len(index),
                "segments": index.segments,
                "l2_events": len(memory.cold),
            }
            rows.append(row)
            print(
                f"turn {row['turn']:>6}: prepare CPU median {row['thread_cpu_ms']:.2f} ms (thread), "
                f"{row['process_cpu_ms']:.2f} ms (process) over {row['requests']} requests; "
                f"{row['events_per_session']} events and {row['segments']} segments a session, "
                f"{row['l2_events']} in L2; {time.perf_counter() - began:.0f} s",
                flush=True,
            )
            if args.keep is not None:
                _keep(memory, data, args.keep / f"turn-{i + 1}", sids[0])
            if not at:
                break
    await memory.aclose()
    store.close()
    shutil.rmtree(data, ignore_errors=True)
    first, last = rows[0], rows[-1]
    ratio = last["thread_cpu_ms"] / first["thread_cpu_ms"]
    print(f"prepare CPU (thread) at turn {last['turn']} / turn {first['turn']}: {ratio:.2f}x")
    return {"args": vars(args), "rows": rows, "ratio": ratio}


# -- instructions (callgrind) ---------------------------------------------------------------------------------


class ReplayEmbedder:
    """The saved vectors of the replay inputs (so that the counted run loads no model): any other text is an
    error, which would mean the run embedded something the soak's kernel would not have."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray, fingerprint: str) -> None:
        self._by_text = dict(zip(texts, vectors, strict=True))
        self._fingerprint = fingerprint

    @property
    def model_id(self) -> str:
        return "replay"

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def dimension(self) -> int:
        return int(next(iter(self._by_text.values())).shape[0])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._by_text[t] for t in texts])


async def _replay(state: Path, requests: int, later: bool = False) -> None:
    saved = np.load(state / REPLAY)
    texts = [str(t) for t in saved["texts"]]
    embedder = ReplayEmbedder(texts, saved["vectors"], str(saved["fingerprint"])) if saved["vectors"].size else None
    store = SessionStore.in_data_dir(state)
    memory = SessionMemory(store, ColdStore(state / COLD_DB), embedder, index_dir=state / INDEX_DIR)
    warm_up()
    wait_for_jieba()
    sid = str(saved["session"])
    now = time.time()
    for k, text in enumerate(texts[: 1 + requests]):
        await memory.preview(sid, text, window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED_TOKENS, now=now)
        if later and k:  # the turn's later request: the same input again (its tool results are not replayed)
            await memory.preview(sid, text, window_tokens=WINDOW_TOKENS, fixed_tokens=FIXED_TOKENS, now=now)
        if k == 0:  # the first reads the log's tail and opens the index, in both runs; then, as the kernel
            gc.collect()  # does once its loads are done (hologram/base/_heap.py), the heap so far is frozen: a full
            gc.freeze()  # collection over jieba's dictionary would count more than a request
    await memory.aclose()
    store.close()


def _instructions(state: Path, requests: int, later: bool = False) -> int:
    """Instructions callgrind counts for a replay of `requests` requests (`later`: each followed by a turn's
    later request with the same input) on a fresh copy of `state`."""
    with tempfile.TemporaryDirectory(prefix="hologram-replay-") as tmp:
        copy = Path(tmp) / "state"
        shutil.copytree(state, copy)
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
             sys.executable, __file__, "--replay", str(copy), "--requests", str(requests),
             *(["--later"] if later else [])],
            capture_output=True, text=True, check=True,
            # one BLAS thread: an idle OpenBLAS worker spins, and under valgrind its spinning counts with the
            # run's length, not with the code measured
            env={**os.environ, "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"},
        )  # fmt: skip
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count in valgrind's output: {done.stderr[-2000:]}")
    return int(found.group(1))


def _count(directory: Path, requests: int) -> dict[str, Any]:
    rows = []
    for state in sorted(directory.glob("turn-*"), key=lambda p: int(p.name.split("-")[1])):
        base, loaded = _instructions(state, 0), _instructions(state, requests)
        per = (loaded - base) / requests
        later = (_instructions(state, requests, later=True) - loaded) / requests
        rows.append({"turn": int(state.name.split("-")[1]), "instructions_per_request": per,
                     "instructions_per_later_request": later})  # fmt: skip
        print(f"{state.name}: {per / 1e6:.2f} M instructions a turn's first request, {later / 1e6:.2f} M a later "
              f"one with the same input ({requests} requests)", flush=True)  # fmt: skip
    ratio = rows[-1]["instructions_per_request"] / rows[0]["instructions_per_request"]
    later_ratio = rows[-1]["instructions_per_later_request"] / rows[0]["instructions_per_later_request"]
    print(f"instructions a request at {rows[-1]['turn']} / at {rows[0]['turn']}: {ratio:.2f}x (first), "
          f"{later_ratio:.2f}x (later)")  # fmt: skip
    return {"rows": rows, "ratio": ratio, "later_ratio": later_ratio}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument("--at", default="500,5000,10000", help="soak turns to measure at")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--window", type=int, default=50, help="turns measured before each --at")
    parser.add_argument("--model", action="store_true", help="load the embedding model (vectors, dense score)")
    parser.add_argument("--keep", type=Path, help="save the data directory at each --at turn here")
    parser.add_argument("--instructions", type=Path, help="count instructions a request at the states kept here")
    parser.add_argument("--requests", type=int, default=10, help="requests a counted replay makes")
    parser.add_argument("--replay", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--later", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (0 if args.replay else 1) <= args.requests < REPLAY_INPUTS:
        parser.error(f"--requests must be 1-{REPLAY_INPUTS - 1}")
    if args.replay is not None:
        asyncio.run(_replay(args.replay, args.requests, args.later))
        return 0
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: already exists (the states are written into a new directory)")
    result = _count(args.instructions, args.requests) if args.instructions else asyncio.run(_run(args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
