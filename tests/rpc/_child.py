"""A plugin-shaped child process for the rpc tests: speaks JSON-RPC on its stdin/stdout.

Run as `python _child.py`; everything it maps (arenas, ring, eventfd) it learns from `attach` requests,
the way a real plugin learns them from `initialize`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
from typing import Any

from hologram.rpc import (
    APPLICATION_ERROR,
    Arena,
    AsyncRingReader,
    Connection,
    RingReader,
    RpcError,
    open_stdio,
    parse_ref,
)


class Child:
    def __init__(self, conn: Connection, writer: asyncio.StreamWriter) -> None:
        self.conn = conn
        self.writer = writer
        self.arenas: dict[str, Arena] = {}
        self.out: Arena | None = None
        self.ring: RingReader | None = None
        self.aring: AsyncRingReader | None = None
        self.active = 0
        self.max_active = 0
        self.stoppable_started = 0
        self.stoppable_cancelled = 0
        self.released = 0  # `last_first` requests answered so far
        for name in dir(self):
            if name.startswith("m_"):
                conn.register(name[2:].replace("__", "/"), getattr(self, name))

    async def m_echo(self, params: Any) -> Any:
        return params

    async def m_sleep(self, params: Any) -> Any:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(params["s"])
        finally:
            self.active -= 1
        return params["value"]

    async def m_stoppable(self, params: Any) -> Any:
        """Work until cancelled ($/cancel); with `answer`, reply to the cancel with a final result."""
        self.stoppable_started += 1
        try:
            await asyncio.sleep(params["s"])
        except asyncio.CancelledError:
            self.stoppable_cancelled += 1
            if params.get("answer"):
                return {"stopped": True}
            raise
        return "finished"

    async def m_stoppable__counts(self, params: Any) -> Any:
        return {"started": self.stoppable_started, "cancelled": self.stoppable_cancelled}

    async def m_max_active(self, params: Any) -> int:
        return self.max_active

    async def m_last_first(self, params: Any) -> Any:
        """Hold each request until `n` of them are open at once, then answer them last-first (the highest
        `value` first): answers come back in reverse order by construction, not by racing sleeps."""
        n, value = params["n"], params["value"]
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        deadline = asyncio.get_running_loop().time() + 20  # a failure bound only
        try:
            while self.max_active < n or self.released != n - 1 - value:
                if asyncio.get_running_loop().time() > deadline:
                    raise RpcError(APPLICATION_ERROR, f"only {self.max_active} of {n} requests were open at once")
                await asyncio.sleep(0.001)
        finally:
            self.active -= 1
        self.released += 1
        return value

    async def m_idle(self, params: Any) -> Any:
        """Answer once no `sleep` is running: every answer of those was written to stdout before this one."""
        while self.active:
            await asyncio.sleep(0.005)
        return "idle"

    async def m_call_back(self, params: Any) -> Any:
        """Call the parent while the parent's request to us is still open (nested, other direction)."""
        return await self.conn.request(params["method"], params.get("params"))

    async def m_fail(self, params: Any) -> Any:
        if params["kind"] == "rpc":
            raise RpcError(APPLICATION_ERROR, "tool said no", {"why": "test"})
        raise ValueError("boom")

    async def m_stats(self, params: Any) -> Any:
        return {"malformed": self.conn.malformed_count, "pid": os.getpid()}

    async def m_raw(self, params: Any) -> Any:
        """Write raw bytes to stdout (garbage for the parent), then answer normally."""
        data = params["data"] * params.get("repeat", 1) + params.get("tail", "")
        self.writer.write(data.encode("latin-1"))
        await self.writer.drain()
        return "ok"

    async def m_attach(self, params: Any) -> Any:
        for spec in params.get("arenas", []):
            self.arenas[spec["id"]] = Arena.attach(spec)
        if "out" in params:
            self.out = Arena.attach(params["out"], allocate=True)
            self.arenas[self.out.id] = self.out
        if "ring" in params:
            self.ring = RingReader(params["ring"], types=params.get("types"), start=params.get("start", "latest"))
            if "eventfd" in params:
                self.aring = AsyncRingReader(self.ring, params["eventfd"])
        return "attached"

    async def m_arena__digest(self, params: Any) -> Any:
        ref = parse_ref(params)
        data = self.arenas[ref["arena"]].read_bytes(ref)
        return {"length": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    async def m_arena__copy(self, params: Any) -> Any:
        """Benchmark path: copy the payload out of shared memory, as a real consumer would."""
        ref = parse_ref(params)
        return len(self.arenas[ref["arena"]].read_bytes(ref))

    async def m_arena__produce(self, params: Any) -> Any:
        assert self.out is not None
        data = bytes([params["byte"]]) * params["size"]
        return self.out.write(data)

    async def m_arena__free(self, params: Any) -> Any:
        assert self.out is not None
        self.out.free(parse_ref(params))
        return self.out.allocator.used

    async def m_inline__copy(self, params: Any) -> Any:
        import base64

        return len(base64.b64decode(params["b64"]))

    async def m_ring__read(self, params: Any) -> Any:
        assert self.ring is not None
        result = self.ring.read(params.get("max", 1024) if params else 1024)
        return {"missed": result.missed, "events": [e.data() for e in result.events]}

    async def m_ring__wait(self, params: Any) -> Any:
        """Collect events through the eventfd-driven async reader until `count` arrived."""
        assert self.aring is not None
        events: list[Any] = []
        missed = 0
        while len(events) + missed < params["count"]:
            result = await self.aring.get()
            events += [e.data() for e in result.events]
            missed += result.missed
        return {"missed": missed, "events": events}


async def main() -> None:
    reader, writer = await open_stdio()
    conn = Connection(reader, writer, name="child")
    Child(conn, writer)
    await conn.serve()


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
