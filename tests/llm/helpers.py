"""Shared bits of the provider tests: a sleep recorder, a fake clock, a chain using both (the loop driver and
the provider settings are the kit's: tests/kit/loop.py, tests/kit/providers.py)."""

from __future__ import annotations

from typing import Any

from hologram.llm import ProviderChain, ProviderSettings


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
