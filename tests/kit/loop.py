"""The one event-loop driver of the suite.

pytest-asyncio is not a dependency: a test that awaits something calls ``run(main())``. Every run has a
deadline, so a hung pipe or a lost wake-up fails that test with the coroutine's name instead of stalling
the suite until pytest-timeout kills it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")

DEADLINE_S = 120.0  # a failure bound, not an expected duration: no single test coroutine takes this long


def run(main: Awaitable[T], *, timeout: float | None = DEADLINE_S) -> T:
    """Run `main` on a fresh event loop and return its result; ``timeout=None`` for no deadline."""

    async def guarded() -> T:
        task = asyncio.ensure_future(main)
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            task.cancel()
            await asyncio.wait({task})  # its cleanup (a harness's exit) runs, as `wait_for`'s did
            raise AssertionError(f"{main!r} did not finish within {timeout:g} s")
        # a TimeoutError of the test's own (an RPC request's bound, `RequestTimeout`) is raised as it is: it used to be
        # caught with the deadline's and reported as "did not finish within 120 s" when the test had failed at 20
        return task.result()

    return asyncio.run(guarded())
