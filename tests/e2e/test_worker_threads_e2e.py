"""The kernel's worker threads are fixed at "ready" (hologram/kernel/executor.py, issue 39 item 7): a real
`hologram up`, its threads read from /proc/PID/task — at "ready" (the start-up heap frozen) the loop's executor
has all its `WORKERS` threads, named in /proc; a burst of concurrent turns in many sessions (each turn's
indexing, scene and trim in the executor at once) starts no thread that outlives it. Before, the loop's lazy
executor started a thread whenever a job found none idle, and glibc gave each new one a malloc arena: a step of
the kernel's anonymous memory at a random turn of the soak.

Mutation checks (done): `install` not setting the loop's default executor — red (no thread named
hologram-worker at "ready"; the burst starts the loop's own lazy workers); `install` not starting the threads
(the jobs not submitted) — red (none at "ready").
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hologram.clients import TurnClient
from hologram.kernel.executor import THREAD_PREFIX, WORKERS
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import E2EKernel

pytestmark = pytest.mark.slow

BURST = 8  # sessions whose turns run at once: more than the workers, so the executor's queue is used


def threads(pid: int) -> dict[int, str]:
    """The process's threads now: id → name in /proc."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:  # ended while read
            continue
    return out


def test_the_workers_are_all_started_at_ready_and_a_burst_of_turns_adds_none(tmp_path: Path) -> None:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        kernel.start()
        try:
            assert kernel.process is not None
            wait_until(
                lambda: kernel.status()["kernel"]["heap_frozen"], timeout=180, what='"ready" (the heap frozen)',
                interval=0.2,
            )  # fmt: skip
            pid = int(kernel.status()["kernel"]["pid"])
            at_ready = threads(pid)
            workers = [tid for tid, name in at_ready.items() if name == THREAD_PREFIX[:15]]
            assert len(workers) == WORKERS, at_ready

            mock.script([], default={"reasoning_content": "ok", "content": "Noted, thanks."})

            async def burst() -> list[str]:
                async with await TurnClient.connect(kernel.data, client="burst") as client:
                    streams = await asyncio.gather(
                        *(client.start(f"Please remember item {i}: 第{i}项 the blue folder.") for i in range(BURST))
                    )
                    ended = await asyncio.gather(*(s.result() for s in streams))
                return [e.stop_reason for e in ended]

            assert asyncio.run(burst()) == ["answer"] * BURST
            assert len(mock.requests) >= BURST, "the turns reached the provider"
            # the turns' work after their answers (indexing, scenes, the idle trim) has run once the kernel trims
            wait_until(lambda: kernel.status()["memory"], accept=lambda m: m.get("embedder_ready"), timeout=60,
                       what="memory ready")  # fmt: skip
            after = threads(pid)
            new = {tid: name for tid, name in after.items() if tid not in at_ready}
            assert new == {}, f"threads started by the burst: {new}"
            assert sorted(t for t, n in after.items() if n == THREAD_PREFIX[:15]) == sorted(workers)
        finally:
            kernel.stop()
