"""Test plugin (out of process): tools that return an image the way browser_screenshot does (a blob with a mime)."""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from hologram.sdk import Plugin

plugin = Plugin("e2e-images")


def png(width: int, height: int, fill: int) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + bytes([fill]) * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@plugin.tool("snap")
async def snap(fill: int, inline: bool = False, noise: int = 0) -> dict[str, Any]:
    """A 40x30 grey PNG through the arena (or inline base64), ``noise`` random-looking bytes after it."""
    data = png(40, 30, fill) + bytes((i * 7919) % 251 for i in range(noise))
    blob = {"base64": base64.b64encode(data).decode()} if inline else plugin.blob(data)
    return {"content": f"snapped {len(data)} bytes", "blob": blob, "mime": "image/png"}


@plugin.tool("arena")
async def arena() -> str:
    """How many regions of this plugin's own arena are live: 0 once the kernel released every blob."""
    own = plugin._runtime.own_arena  # the test's look inside: nothing a plugin needs
    return str(len(own.allocator.live) if own is not None else -1)


if __name__ == "__main__":
    plugin.run()
