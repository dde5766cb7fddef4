"""Spawning the test child for real: fork/exec, inherited fds, JSON-RPC over its stdin/stdout."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from asyncio import StreamWriter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hologram.rpc import Connection
from hologram.rpc.streams import spawn

CHILD = Path(__file__).with_name("_child.py")


@dataclass
class Spawned:
    conn: Connection
    proc: asyncio.subprocess.Process
    serve: asyncio.Task[None]
    stdin: StreamWriter
    malformed: list[tuple[str, str]] = field(default_factory=list)


@contextlib.asynccontextmanager
async def spawn_child(
    pass_fds: Sequence[int] = (), max_line: int = 16 * 1024 * 1024, argv: Sequence[str] | None = None
) -> AsyncIterator[Spawned]:
    proc, reader, writer = await spawn(argv or (sys.executable, str(CHILD)), pass_fds=pass_fds)
    bad: list[tuple[str, str]] = []
    conn = Connection(reader, writer, name="kernel", max_line=max_line, on_malformed=lambda x, r: bad.append((x, r)))
    spawned = Spawned(conn, proc, asyncio.create_task(conn.serve()), writer, bad)
    try:
        yield spawned
    finally:
        conn.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        spawned.serve.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await spawned.serve


async def gather_all(*calls: Callable[[], Awaitable[Any]]) -> list[Any]:
    return list(await asyncio.gather(*(c() for c in calls)))
