"""ACP (Zed's Agent Client Protocol) over stdio: `hologram acp`, the agent an editor spawns.

JSON-RPC 2.0 on stdin/stdout, served by the ``agent-client-protocol`` package's agent side (`acp.run_agent`:
the protocol's framing, schema models and validation, kept by the protocol's authors); this package maps it onto
the turn API through `hologram.clients.TurnClient` and nothing else (`agent`, `content`, `updates`), and reaches
or starts the kernel (`kernel`). docs/channels.md says how to connect Zed and any ACP client.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path
from typing import cast

from hologram import __version__

__all__ = ["serve"]


async def serve(data_dir: Path, lock: Path, *, start: bool = True) -> int:
    """Serve one editor on stdin/stdout until it closes stdin (or SIGTERM/SIGINT); then close the kernel
    connection — the kernel cancels a turn nobody watches any more, the session stays valid — and stop the
    kernel this process started, if it did. Returns the exit status: 0 when the editor closed stdin, 128 + the
    signal's number when a signal stopped it."""
    from acp import run_agent
    from acp.interfaces import Agent

    from hologram.channels.acp.agent import HologramAgent
    from hologram.channels.acp.kernel import KernelLink

    link = KernelLink(data_dir, lock, client="acp", version=__version__, start=start)
    agent = HologramAgent(link)
    # a cast, not a subclass of the Protocol: a method the agent does not define must stay absent, so that the
    # package answers "method not found" for it (a Protocol's inherited stub would answer null)
    serving = asyncio.ensure_future(run_agent(cast(Agent, agent)))
    loop = asyncio.get_running_loop()
    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        stopped_by.append(signum)
        serving.cancel()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await link.aclose()
    return 128 + stopped_by[0] if stopped_by else 0
