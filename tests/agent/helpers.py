"""Building a real agent for tests: the real provider chain against the strict mock, a real SQLite store,
real stage dispatch, and kernel tools (real in-kernel tools, not stand-ins) that record when they ran."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hologram.agent import Agent, KernelTool, ToolInvocation, ToolRegistry
from hologram.config.settings import AgentSettings
from hologram.llm import ProviderChain
from hologram.sessions import SessionStore
from hologram.stages import StageDispatcher
from mock_llm import MockLLM
from tests.kit.providers import provider
from tests.kit.wait import wait_until_async

OBJ = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


class Timeline:
    """Enter/exit times of tool runs, to prove (or disprove) overlap.

    ``together``: each run is held until that many runs are in at once (a rendezvous), so calls that really
    run concurrently overlap however slow the machine is, instead of racing their sleeps. The wait gives up
    `RENDEZVOUS_S` after the first run arrived (a failure bound: calls run one by one never meet).
    """

    RENDEZVOUS_S = 10.0

    def __init__(self, together: int = 0) -> None:
        self.spans: dict[str, tuple[float, float]] = {}
        self.started: list[str] = []  # call ids, in the order their runs began
        self.together = together
        self._running = 0
        self._all_in = asyncio.Event()
        self._give_up_at: float | None = None

    def overlapped(self) -> bool:
        spans = sorted(self.spans.values())
        return any(b[0] < a[1] for a, b in itertools.pairwise(spans))

    async def enter(self, call_id: str) -> None:
        self.started.append(call_id)
        self._running += 1
        if not self.together:
            return
        if self._running >= self.together:
            self._all_in.set()
        if self._give_up_at is None:
            self._give_up_at = time.monotonic() + self.RENDEZVOUS_S
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._all_in.wait(), max(0.0, self._give_up_at - time.monotonic()))

    def leave(self) -> None:
        self._running -= 1

    async def wait_started(self, count: int, timeout: float = 30.0) -> None:
        """Until `count` runs have begun (the turn reached its tools), with a failure bound."""
        await wait_until_async(
            lambda: list(self.started), accept=lambda began: len(began) >= count, timeout=timeout,
            what=f"{count} tool runs to begin",
        )  # fmt: skip


def sleeper(name: str, timeline: Timeline, *, parallel_safe: bool, delay: float = 0.05) -> KernelTool:
    async def handler(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        start = time.monotonic()
        await timeline.enter(inv.call_id)
        try:
            await asyncio.sleep(delay)
        finally:
            timeline.leave()
        timeline.spans[inv.call_id] = (start, time.monotonic())
        return f"{name}:{arguments['x']}"

    return KernelTool(name, f"sleep then echo x ({name})", handler, OBJ, parallel_safe)


def make_agent(
    tmp: Path,
    mocks: Sequence[MockLLM] | MockLLM,
    *,
    tools: Sequence[KernelTool] = (),
    stages: StageDispatcher | None = None,
    max_steps: int = 8,
    agent_settings: dict[str, Any] | None = None,
    **provider_kw: Any,
) -> Agent:
    mocks = [mocks] if isinstance(mocks, MockLLM) else list(mocks)
    provider_kw.setdefault("max_retries", 0)
    chain = ProviderChain([provider(m, f"p{i + 1}", **provider_kw) for i, m in enumerate(mocks)], sleep=_no_sleep)
    registry = ToolRegistry()
    for tool in tools:
        registry.add_kernel_tool(tool)
    return Agent(
        llm=chain,
        store=SessionStore(tmp / "sessions.db"),
        tools=registry,
        stages=stages or StageDispatcher(),
        settings=AgentSettings(max_steps=max_steps, system_prompt="be brief", **(agent_settings or {})),
    )


async def _no_sleep(seconds: float) -> None:
    return None


def calls(*pairs: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"id": i, "name": n, "arguments": a} for i, n, a in pairs]
