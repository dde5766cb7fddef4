"""A `run.module` plugin for the zygote tests: it reports what its process looks like from the inside.

The fd table is captured on the first line of plugin code, before the SDK's event loop opens its own fds:
at that point a plugin must see exactly stdin/stdout/stderr and the fds the kernel passed, as with exec.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Any


def _fd_table() -> dict[int, str]:
    table = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the listing's own fd, closed by now
            table[int(name)] = os.readlink(f"/proc/self/fd/{name}")
    return table


def _handlers() -> dict[str, str]:
    named = {}
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGHUP, signal.SIGUSR1):
        handler = signal.getsignal(signum)
        named[signum.name] = getattr(handler, "__name__", str(handler))
    return named


FDS_AT_START = _fd_table()
SIGNALS_AT_START = _handlers()
NAME_AT_START = __name__
if os.environ.get("ZYGOTE_PLUG_RAISE"):
    raise RuntimeError("zygote_plug refuses to start")

from hologram.sdk import Plugin, StartContext  # noqa: E402

plugin = Plugin(os.environ.get("HOLOGRAM_PLUGIN", "zygote-plug"))


@plugin.on_start
async def start(ctx: StartContext) -> None:
    if ctx.config.get("wedge"):
        # Outlives stdin EOF and SIGTERM: a non-daemon thread is joined at exit, forever. Only SIGKILL ends it.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=threading.Event().wait, name="wedge").start()


@plugin.tool("probe")
async def probe() -> dict[str, Any]:
    """What the process looks like from the inside; the SDK sends it as the result's JSON content."""
    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "sid": os.getsid(0),
        "pgid": os.getpgid(0),
        "cwd": os.getcwd(),
        "env": dict(os.environ),
        "fds": {str(k): v for k, v in FDS_AT_START.items()},
        "name": NAME_AT_START,
        "argv": sys.argv,
        "path0": sys.path[0],
        "signals": SIGNALS_AT_START,
        "blocked": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
        "refused": sorted(name for name, module in sys.modules.items() if module is None),
    }


@plugin.tool("quit")
async def quit(code: int) -> str:
    def leave() -> None:
        raise SystemExit(code)

    import asyncio

    asyncio.get_running_loop().call_later(0.05, leave)
    return "leaving"


if __name__ == "__main__":
    plugin.run()
