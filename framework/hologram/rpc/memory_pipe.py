"""An in-memory byte channel with the reader/writer shape of a pipe, for in-process (`inproc`) plugins.

In-process plugins speak the same protocol as out-of-process ones, through the same `Connection` and SDK
runtime; only the transport differs. One code path means an author can move a plugin in or out of the
kernel with a one-line manifest change, and the kernel treats both alike (crash detection included).
"""

from __future__ import annotations

import asyncio


class MemoryWriter:
    """Feeds what is written straight into the peer's StreamReader."""

    def __init__(self, peer: asyncio.StreamReader) -> None:
        self._peer = peer
        self._closing = False

    def write(self, data: bytes) -> None:
        if not self._closing:
            self._peer.feed_data(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)  # a cooperative yield, like a real transport's drain under load

    def close(self) -> None:
        if not self._closing:
            self._closing = True
            self._peer.feed_eof()

    def is_closing(self) -> bool:
        return self._closing


def memory_pipe_pair() -> tuple[tuple[asyncio.StreamReader, MemoryWriter], tuple[asyncio.StreamReader, MemoryWriter]]:
    """Two connected ends: (reader, writer) for the kernel and (reader, writer) for the plugin."""
    kernel_reads = asyncio.StreamReader()
    plugin_reads = asyncio.StreamReader()
    return (kernel_reads, MemoryWriter(plugin_reads)), (plugin_reads, MemoryWriter(kernel_reads))
