"""The kernel's allocator as it runs (hologram/base/_heap.py `limit_arenas`, `allocator`): a real `hologram up`,
read from the kernel itself — its `status` (the allocator its interpreter uses, from the interpreter) and its
/proc/PID/maps and /proc/PID/mem (glibc's thread arenas). At "ready" its worker threads have all started and
malloc-ed at the same moment (hologram/kernel/executor.py), which without the cap gives each of them an arena of
its own; with it the kernel holds the main arena and at most ARENA_MAX - 1 more, after a burst of turns too.
Arenas, not heaps: an arena that outgrows its 64 MiB heap goes on in a second one (CI once saw two heaps, one
arena, at "ready"; tests/tools/test_thread_arenas.py).

Mutation check (done): `up` not calling `limit_arenas` — red (9 thread arenas in 10 heaps at "ready")."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from bench._threads import thread_arenas, thread_heaps
from hologram.base._heap import ARENA_MAX
from hologram.clients import TurnClient
from hologram.kernel.executor import WORKERS
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import E2EKernel

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc, /proc")]


def test_the_kernel_runs_pymalloc_with_its_threads_sharing_capped_malloc_arenas(tmp_path: Path) -> None:
    with MockLLM("deepseek") as mock:
        kernel = E2EKernel(tmp_path, [mock])
        kernel.start()
        try:
            wait_until(
                lambda: kernel.status()["kernel"]["heap_frozen"], timeout=180, what='"ready" (the heap frozen)',
                interval=0.2,
            )  # fmt: skip
            info = kernel.status()["kernel"]
            pid = int(info["pid"])
            assert info["allocator"] == "pymalloc" and info["allocated_blocks"] > 0
            assert len(list(Path(f"/proc/{pid}/task").iterdir())) > WORKERS  # the loop, the workers, others
            assert thread_arenas(pid) <= ARENA_MAX - 1, (
                f"{thread_arenas(pid)} thread arenas ({thread_heaps(pid)} heaps)"
            )

            mock.script([], default={"reasoning_content": "ok", "content": "Noted, thanks."})

            async def burst() -> list[str]:
                async with await TurnClient.connect(kernel.data, client="burst") as client:
                    streams = await asyncio.gather(*(client.start(f"Remember item {i}: 第{i}项") for i in range(6)))
                    return [(await s.result()).stop_reason for s in streams]

            assert asyncio.run(burst()) == ["answer"] * 6
            assert thread_arenas(pid) <= ARENA_MAX - 1, (
                f"{thread_arenas(pid)} thread arenas ({thread_heaps(pid)} heaps)"
            )
        finally:
            kernel.stop()
