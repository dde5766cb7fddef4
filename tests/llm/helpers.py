"""Shared bits of the provider tests: settings pointing at a mock, a sleep recorder, a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from hologram.llm import ProviderChain, ProviderSettings
from mock_llm import MockLLM

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def provider(mock: MockLLM, name: str = "p1", **kw: Any) -> ProviderSettings:
    kw.setdefault("kind", mock.state.vendor)
    kw.setdefault("model", "deepseek-chat" if mock.state.vendor == "deepseek" else "gpt-4o-mini")
    kw.setdefault("timeout_s", 5.0)
    return ProviderSettings(name=name, base_url=mock.base_url, **kw)


class Sleeps:
    """Records the waits the chain asks for, and advances the fake clock by them."""

    def __init__(self, clock: FakeClock | None = None) -> None:
        self.calls: list[float] = []
        self.clock = clock

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if self.clock is not None:
            self.clock.now += seconds


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def chain(
    *providers: ProviderSettings, sleeps: Sleeps | None = None, clock: FakeClock | None = None, **kw: Any
) -> ProviderChain:
    return ProviderChain(list(providers), sleep=sleeps or Sleeps(), clock=clock or FakeClock(), **kw)
