"""Where a long session's memory goes: bytes the kernel's memory layer keeps per tool-using turn, by source line.

    .venv/bin/python tools/bench/memory_growth.py [--turns 500] [--warm 200] [--top 15] [--model] [--varied]

A companion to `sweep.py --soak` (which measures the whole kernel's PSS, the number users get): this drives
`SessionMemory` — the code every request runs — directly, on one session fed like the soak feeds it (an input,
a response with a tool call, its result, an answer, an output per turn), calls `prepare` before every turn with
a small window so pruning and L2 run, and reports what `tracemalloc` sees allocated and still held between
the warm-up and the end. Without ``--model`` scoring is BM25 only (no vectors: what is left is the Python
objects); with it the embedding model loads and vectors are included. It is how the composition in
docs/performance.md ("Why PSS still grows in the soak") was measured.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import tracemalloc
from pathlib import Path

from hologram.memory.session_memory import SessionMemory
from hologram.sessions import SessionStore

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "notes",
    "files",
    "write",
    "search",
    "report",
    "meeting",
    "budget",
    "plan",
    "会议",
    "预算",
    "计划",
    "报告",
]


NAMES = ["Elena", "Marco", "Aiko", "Tomas", "Priya", "Jonas", "王芳", "李雷"]
THINGS = ["car", "dentist", "flight", "passport", "sister's wedding", "new job", "apartment", "bike"]
PLACES = ["Lisbon", "Osaka", "Denver", "Tallinn", "杭州", "成都"]


def said(t: int) -> str:
    """A statement a person makes in passing (a fact with a name, a place, a number, a code), English or
    Chinese: what memory across sessions keeps (utterance.tells) and what a real session's vocabulary grows by."""
    name, thing, place = NAMES[t % len(NAMES)], THINGS[(t // 3) % len(THINGS)], PLACES[(t // 7) % len(PLACES)]
    if t % 2:
        return f"我的{thing}的事改到{t % 28 + 1}号了，{name}会在{place}等我，编号是HX-{t:05d}。"
    return f"My {thing} appointment with {name} moved to March {t % 28 + 1} in {place}, code ZX-{t:05d}."


def _add_turn(store: SessionStore, sid: str, t: int, varied: bool = False) -> None:
    words = " ".join(WORDS[(t + k) % len(WORDS)] for k in range(8))
    text = said(t) if varied else f"turn {t}: please look into {words}"
    store.append(sid, "input", {"text": text}, turn=str(t))
    call = {"id": f"c{t}", "name": "notes_search", "arguments": f'{{"query": "{words}"}}'}
    response = store.append(sid, "response", {"content": "", "tool_calls": [call]}, turn=str(t))
    store.add_result(sid, response, f"c{t}", {"content": f"found {t} notes about {words} " * 5}, turn=str(t))
    store.append(sid, "response", {"content": f"Here is what I found about {words}."}, turn=str(t))
    store.append(sid, "output", {"text": f"Here is what I found about {words}."}, turn=str(t))


async def _run(turns: int, warm: int, top: int, model: bool, varied: bool = False) -> None:
    data = Path(tempfile.mkdtemp(prefix="hologram-growth-"))
    store = SessionStore.in_data_dir(data)
    memory = SessionMemory.open(data, store, load_model=model)
    if model:
        await asyncio.to_thread(memory.embedder_ready.wait, 120)
    sid = store.create_session("cli")

    async def turn(t: int) -> None:
        _add_turn(store, sid, t, varied)
        await memory.prepare(sid, "what about the budget plan", window_tokens=6000, fixed_tokens=1000)
        if model:
            await memory.index(sid)

    for t in range(warm):
        await turn(t)
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    began = time.perf_counter()
    for t in range(warm, warm + turns):
        await turn(t)
    elapsed = time.perf_counter() - began
    after = tracemalloc.take_snapshot()
    stats = after.compare_to(before, "lineno")
    total = sum(s.size_diff for s in stats)
    kind = "statements with new names, numbers and codes (--varied)" if varied else "the same request"
    print(f"{turns} turns after {warm} of warm-up ({'with' if model else 'without'} the embedding model; {kind})")
    print(f"held: +{total / 1e6:.1f} MB, {total / turns / 1e3:.1f} kB per turn; {elapsed / turns * 1e3:.1f} ms a turn")
    for stat in stats[:top]:
        frame = stat.traceback[0]
        print(f"{stat.size_diff / turns:9,.0f} B/turn  {frame.filename}:{frame.lineno}")
    await memory.aclose()
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--warm", type=int, default=200)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--model", action="store_true", help="load the embedding model (vectors included)")
    parser.add_argument("--varied", action="store_true", help="inputs are statements with new words each turn")
    args = parser.parse_args()
    asyncio.run(_run(args.turns, args.warm, args.top, args.model, args.varied))


if __name__ == "__main__":
    main()
