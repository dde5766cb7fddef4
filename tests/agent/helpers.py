"""Building a real agent for tests: the real provider chain against the strict mock, a real SQLite store,
real stage dispatch, and kernel tools (real in-kernel tools, not stand-ins) that record when they ran."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hologram.agent import Agent, KernelTool, ToolInvocation, ToolRegistry
from hologram.llm import ProviderChain, ProviderSettings
from hologram.sessions import SessionStore
from hologram.settings import AgentSettings
from hologram.stages import StageDispatcher
from mock_llm import MockLLM

OBJ = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def provider(mock: MockLLM, name: str = "p1", **kw: Any) -> ProviderSettings:
    kw.setdefault("kind", mock.state.vendor)
    kw.setdefault("model", "deepseek-chat" if mock.state.vendor == "deepseek" else "gpt-4o-mini")
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("max_retries", 0)
    return ProviderSettings(name=name, base_url=mock.base_url, **kw)


class Timeline:
    """Enter/exit times of tool runs, to prove (or disprove) overlap."""

    def __init__(self) -> None:
        self.spans: dict[str, tuple[float, float]] = {}

    def overlapped(self) -> bool:
        spans = sorted(self.spans.values())
        return any(b[0] < a[1] for a, b in itertools.pairwise(spans))


def sleeper(name: str, timeline: Timeline, *, parallel_safe: bool, delay: float = 0.05) -> KernelTool:
    async def handler(arguments: dict[str, Any], inv: ToolInvocation) -> str:
        start = time.monotonic()
        await asyncio.sleep(delay)
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
    **provider_kw: Any,
) -> Agent:
    mocks = [mocks] if isinstance(mocks, MockLLM) else list(mocks)
    chain = ProviderChain([provider(m, f"p{i + 1}", **provider_kw) for i, m in enumerate(mocks)], sleep=_no_sleep)
    registry = ToolRegistry()
    for tool in tools:
        registry.add_kernel_tool(tool)
    return Agent(
        llm=chain,
        store=SessionStore(tmp / "sessions.db"),
        tools=registry,
        stages=stages or StageDispatcher(),
        settings=AgentSettings(max_steps=max_steps, system_prompt="be brief"),
    )


async def _no_sleep(seconds: float) -> None:
    return None


def calls(*pairs: tuple[str, str, str]) -> list[dict[str, str]]:
    return [{"id": i, "name": n, "arguments": a} for i, n, a in pairs]
