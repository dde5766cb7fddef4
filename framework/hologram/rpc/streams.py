"""asyncio byte streams for the two ends of the control channel.

Why not simply `create_subprocess_exec(stdin=PIPE, stdout=PIPE)`: asyncio's pipe transport reads with a
256 KiB buffer, and every `os.read` that large makes glibc mmap/munmap a fresh block — measured at ~35 µs
per read on the target VM, twice per round trip, which alone blows the 150 µs budget. We create the pipes
ourselves and read in 64 KiB steps (an allocation served from the heap). The same applies on the plugin side
to its own stdin/stdout (`open_stdio`).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

READ_SIZE = 64 * 1024  # below glibc's mmap threshold (128 KiB): reads are served from the heap
# StreamReader's limit only sets its pause threshold for `read(n)` (2 × limit); 1 MiB keeps big lines fast.
STREAM_LIMIT = 1024 * 1024


async def open_pipe_streams(
    read_fd: int, write_fd: int, *, limit: int = STREAM_LIMIT
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Wrap two pipe fds (taking ownership of both) as a StreamReader / StreamWriter with backpressure."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_fd, "rb", buffering=0)
    )
    if hasattr(read_transport, "max_size"):  # asyncio's pipe transport; uvloop's reads 64 KiB itself
        read_transport.max_size = READ_SIZE  # see module docstring
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", buffering=0)
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def open_stdio(*, limit: int = STREAM_LIMIT) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Plugin side: this process's stdin/stdout as asyncio streams.

    The fds are duplicated (fd 0/1 stay valid for the rest of the program), and `sys.stdout` is pointed at
    stderr, because a stray `print()` on the control channel is a protocol error the kernel counts against
    the plugin. stdin/stdout must be pipes, sockets or ttys — the kernel always gives pipes.
    """
    streams = await open_pipe_streams(os.dup(0), os.dup(1), limit=limit)
    sys.stdout = sys.stderr
    return streams


async def spawn(
    argv: Sequence[str], *, pass_fds: Sequence[int] = (), limit: int = STREAM_LIMIT, **kwargs: Any
) -> tuple[asyncio.subprocess.Process, asyncio.StreamReader, asyncio.StreamWriter]:
    """Kernel side: start a plugin with pipes on its stdin/stdout; returns (process, its stdout, its stdin).

    `pass_fds` are inherited at the same numbers (arena, ring, eventfd); other keyword arguments (env, cwd,
    stderr, start_new_session …) go to `asyncio.create_subprocess_exec`.
    """
    child_in, to_child = os.pipe()
    from_child, child_out = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=child_in, stdout=child_out, pass_fds=tuple(pass_fds), **kwargs
        )
    except BaseException:
        for fd in (to_child, from_child):
            os.close(fd)
        raise
    finally:
        os.close(child_in)
        os.close(child_out)
    reader, writer = await open_pipe_streams(from_child, to_child, limit=limit)
    return proc, reader, writer
