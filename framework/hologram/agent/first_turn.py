"""What the first turn after "ready" would do once and no later turn does, done before "ready".

Issue 39 item 9: the first answer after "ready" within 1.2x a warm turn. The imports and the pydantic models a
first turn touched load in `hologram up`'s start-up thread already (hologram/kernel/preload.py); what was left
on the event loop, by a cProfile of the kernel's main thread over the first turn against a warm one
(docs/performance.md), were one-time set-ups that each belong to some part of the kernel and ran lazily:

* the turn events' number block — a write and an fsync (`SeqCounter.reserve_ahead`; ~2.6 ms of the loop);
* the argument checks of every tool's schema (`ToolRegistry.compile_checks`; ~0.9 ms for the default graph);
* the provider chain's transport with its context and the environment's proxies (`ProviderChain.prepare`);
* the lock's tool effects and channel defaults (`ChannelPolicies.prepare`);
* two threads: the WAL checkpointer's (started by the first commit) and the default executor's first worker
  (started by the first ``asyncio.to_thread``), each start waiting for the thread to run.

`warm` does them in `hologram up` once the launch is over, before the start-up heap is frozen (so what they
allocate is frozen with it) and before the summary line says "ready". Each is idempotent and what a turn
would do anyway, so a turn that arrives earlier (clients may connect before "ready") just does it first.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hologram.agent.service import TurnService

log = logging.getLogger("hologram.agent")

EXECUTOR_THREADS = 2  # workers a turn keeps busy at once (the scene's and memory's indexing): started ahead
_START_WAIT_S = 1.0  # a worker that cannot meet the others in this long is left as it is (a loaded machine)


async def warm(service: TurnService) -> None:
    """Do the first turn's one-time set-ups now (module docstring). Never raises: a set-up that fails is done
    by the first turn instead, as before."""
    from hologram.llm.chain import ProviderChain

    agent = service.agent
    steps = (
        ("event numbers", service.hub.reserve_seq),
        ("checkpoint thread", agent.store.start_checkpoints),
        ("tool checks", agent.tools.compile_checks),
        ("provider transport", agent.llm.prepare if isinstance(agent.llm, ProviderChain) else None),
        ("channel policies", agent.policies.prepare if agent.policies is not None else None),
    )
    for what, step in steps:
        if step is None:
            continue
        try:
            step()
        except Exception:  # a first turn does it again, and reports what fails then
            log.debug("warming %s for the first turn failed", what, exc_info=True)
    await executor_threads(EXECUTOR_THREADS)


async def executor_threads(count: int) -> None:
    """Start `count` workers of the loop's default executor: each job waits for the others, so the executor
    cannot hand them all to one thread (it starts a thread only when none is idle)."""
    meet = threading.Barrier(count, timeout=_START_WAIT_S)

    def job() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            meet.wait()

    loop = asyncio.get_running_loop()
    await asyncio.gather(*(loop.run_in_executor(None, job) for _ in range(count)))
