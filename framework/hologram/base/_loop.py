"""Which event loop runs the kernel and SDK plugins.

uvloop (libuv) when installed: the plugin protocol's round trip is a few loop iterations on each side, and
uvloop makes each cheaper — measured 141–157 µs p50 against 156–207 µs for the stdlib loop, interleaved
runs of tools/bench/rpc.py on the same machine. `HOLOGRAM_EVENT_LOOP=asyncio` chooses the stdlib loop
(for debugging, or a platform without uvloop); behaviour is the same either way.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_name() -> str:
    if os.environ.get("HOLOGRAM_EVENT_LOOP", "").lower() == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    if loop_name() == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
