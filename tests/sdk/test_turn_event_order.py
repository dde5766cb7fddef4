"""A plugin's turn-event hooks see the events in the order the kernel sent them, none dropped.

The connection runs each notification's handler as its own task; a hook that awaits (a relay writing to a
socket) would let the next event overtake it, and a relay that forwards a delta after the turn's end has
lost that delta. Driven over a real connection (a socket pair), as the kernel sends them.
"""

from __future__ import annotations

import asyncio
import random
import socket
from typing import Any

from hologram.base import protocol
from hologram.rpc import Connection
from hologram.sdk import Plugin
from hologram.sdk._runtime import Runtime

EVENTS = 400


async def _pair() -> tuple[Connection, Runtime, Plugin[Any], list[int], list[int]]:
    ours, theirs = socket.socketpair()
    kernel_reader, kernel_writer = await asyncio.open_connection(sock=ours)
    plugin_reader, plugin_writer = await asyncio.open_connection(sock=theirs)
    plugin: Plugin[Any] = Plugin("relay")
    awaited: list[int] = []
    plain: list[int] = []
    jitter = random.Random(7)

    @plugin.on_turn_event
    async def relay(event: dict[str, Any]) -> None:
        for _ in range(jitter.randrange(4)):  # a write that sometimes waits, as a socket's does
            await asyncio.sleep(0)
        awaited.append(event["seq"])

    @plugin.on_turn_event
    def count(event: dict[str, Any]) -> None:
        plain.append(event["seq"])

    runtime = Runtime(plugin, plugin_reader, plugin_writer)
    return Connection(kernel_reader, kernel_writer, name="kernel"), runtime, plugin, awaited, plain


def test_hooks_see_every_event_in_the_order_sent() -> None:
    async def main() -> None:
        kernel, runtime, _plugin, awaited, plain = await _pair()
        serving = [asyncio.ensure_future(kernel.serve()), asyncio.ensure_future(runtime.connection.serve())]
        try:
            for seq in range(1, EVENTS + 1):
                await kernel.notify(protocol.TURN_EVENT, {"type": "item.delta", "session": "s", "seq": seq})
            while len(awaited) < EVENTS or len(plain) < EVENTS:
                await asyncio.sleep(0.01)  # until every event went through both hooks
            assert awaited == list(range(1, EVENTS + 1))
            assert plain == list(range(1, EVENTS + 1))
        finally:
            kernel.close()
            runtime.connection.close()
            for task in serving:
                task.cancel()
            await asyncio.gather(*serving, return_exceptions=True)

    asyncio.run(asyncio.wait_for(main(), 60))
