"""Waiting for a condition the test cannot be told about by an event: the one poll loop of the suite.

Prefer an event (an `asyncio.Event`, a line on a pipe, a state listener) where the code under test offers
one. Where it does not — a process dies, a row reaches the database file, a plugin's state moves inside a
kernel subprocess — poll the condition with `wait_until`: the timeout is a failure bound, never an expected
duration, and the failure says what was awaited and the last value seen, so a red test explains itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

INTERVAL_S = 0.02

_NOTHING = object()


def _timed_out(what: str, timeout: float, last: object) -> AssertionError:
    seen = "nothing (the predicate never returned)" if last is _NOTHING else repr(last)
    return AssertionError(f"timed out after {timeout:g} s waiting for {what}; last value seen: {seen}")


def wait_until(
    predicate: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = INTERVAL_S,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """Call `predicate` until it returns a truthy value, and return that value.

    Exceptions of the types in `retry_on` count as "not yet" (a control socket that is not bound yet) and
    are reported as the last value if time runs out; any other exception propagates at once, so a predicate
    can end the wait early by raising (the process under test exited).
    """
    deadline = time.monotonic() + timeout
    last: object = _NOTHING
    while True:
        try:
            value = predicate()
        except retry_on as exc:
            last = exc
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, last)
        time.sleep(interval)


async def wait_until_async(
    predicate: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = INTERVAL_S,
    retry_on: tuple[type[BaseException], ...] = (),
) -> T:
    """`wait_until` for a coroutine: the loop keeps running (the condition usually changes on it)."""
    deadline = time.monotonic() + timeout
    last: object = _NOTHING
    while True:
        try:
            value = predicate()
        except retry_on as exc:
            last = exc
        else:
            if value:
                return value
            last = value
        if time.monotonic() >= deadline:
            raise _timed_out(what, timeout, last)
        await asyncio.sleep(interval)
