"""Main-thread CPU of building the provider chain and its first request, as `attach_agent` and the first turn do.

    .venv/bin/python tools/bench/chain_start.py [--rounds 6]

Each round is a fresh interpreter (imports are what is measured): httpx imported first (the kernel has it by
the time the agent attaches), then `ProviderChain([...])` to an http:// strict mock in-process (its server
thread is not counted: `time.thread_time` is the main thread's CPU) and one completion through it. Run the
old code with ``PYTHONPATH=/tmp/before-<you>/framework:...`` to compare in one sitting.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent  # mock_llm

CHILD = """
import asyncio, time
import httpx
from hologram.llm import ChatRequest, Message, ProviderChain, ProviderSettings
from mock_llm import MockLLM
mock = MockLLM("deepseek").start()
mock.script([{"content": "x"}])
t0 = time.thread_time()
chain = ProviderChain([ProviderSettings(name="p", kind="deepseek", base_url=mock.base_url, model="deepseek-chat")])
t1 = time.thread_time()
async def go():
    try:
        await chain.complete(ChatRequest([Message.user("hi")]))
    finally:
        await chain.aclose()
asyncio.run(go())
t2 = time.thread_time()
mock.stop()
print(t1 - t0, t2 - t1)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    build: list[float] = []
    first: list[float] = []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (os.environ.get("PYTHONPATH"), str(TOOLS))))}
    for _ in range(args.rounds):
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, capture_output=True, text=True).stdout
        b, f = (float(x) for x in out.split())
        build.append(b)
        first.append(f)
    total = [b + f for b, f in zip(build, first, strict=True)]
    for name, values in (("build the chain", build), ("first request", first), ("total", total)):
        each = ", ".join(f"{1e3 * v:.0f}" for v in values)
        print(f"{name:16} median {1e3 * statistics.median(values):6.1f} ms  ({each})")


if __name__ == "__main__":
    main()
