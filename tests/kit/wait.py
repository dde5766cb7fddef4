"""Waiting for a condition the test cannot be told about by an event: the one poll loop of the suite.

Prefer an event (an `asyncio.Event`, a line on a pipe, a state listener) where the code under test offers
one. Where it does not — a process dies, a row reaches the database file, a plugin's state moves inside a
kernel subprocess — poll the condition with `wait_until`: the timeout is a failure bound, never an expected
duration, and the failure says what was awaited and the last value seen, so a red test explains itself.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

INTERVAL_S = 0.02

_NOTHING = object()


class _Poll:
    """The bookkeeping both loops share: the deadline, the last value seen, the failure message."""

    def __init__(
        self,
        timeout: float,
        what: str,
        accept: Callable[[Any], object] | None,
        retry_on: tuple[type[BaseException], ...],
    ) -> None:
        self.deadline = time.monotonic() + timeout
        self.timeout, self.what, self.accept, self.retry_on = timeout, what, accept, retry_on
        self.last: object = _NOTHING

    def done(self, value: object) -> bool:
        self.last = value
        return bool(self.accept(value) if self.accept is not None else value)

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def failure(self) -> AssertionError:
        seen = "nothing (the predicate never returned)" if self.last is _NOTHING else repr(self.last)
        return AssertionError(f"timed out after {self.timeout:g} s waiting for {self.what}; last value seen: {seen}")


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float,
    what: str,
    accept: Callable[[T], object] | None = None,
    interval: float = INTERVAL_S,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Call `predicate` until its value is truthy (or `accept(value)` is), and return that value.

    `accept` lets the failure report the whole value a condition is about (a status dict, not ``False``).
    Exceptions of the types in `retry_on` count as "not yet" (a control socket that is not bound yet) and
    are reported as the last value if time runs out; any other exception propagates at once, so a predicate
    can end the wait early by raising (the process under test exited).
    """
    poll = _Poll(timeout, what, accept, retry_on)
    while True:
        try:
            value = predicate()
        except retry_on as exc:
            poll.last = exc
        else:
            if poll.done(value):
                return value
        if poll.expired():
            raise poll.failure()
        time.sleep(interval)


async def wait_until_async(
    predicate: Callable[[], T | Awaitable[T]],
    *,
    timeout: float,
    what: str,
    accept: Callable[[T], object] | None = None,
    interval: float = INTERVAL_S,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """`wait_until` in a coroutine: the loop runs while it waits (the condition usually changes on it), and
    `predicate` may be a coroutine function (ask a peer for its counters)."""
    poll = _Poll(timeout, what, accept, retry_on)
    while True:
        try:
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
        except retry_on as exc:
            poll.last = exc
        else:
            if poll.done(value):
                return value
        if poll.expired():
            raise poll.failure()
        await asyncio.sleep(interval)
