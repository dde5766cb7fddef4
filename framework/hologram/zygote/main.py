"""The zygote process: import the SDK once, then fork a ready-made interpreter for every `run.module` plugin.

    python -m hologram.zygote.main SOCKET_FD KERNEL_PID

Why: on a small machine a plugin's start-up is CPU-bound — interpreter start plus importing `hologram.sdk`
(asyncio above all) is ~150-180 ms of CPU per plugin, while a fork of this pre-imported process costs a few
ms. The kernel (`hologram.supervisor.zygote`) talks to us over a SOCK_SEQPACKET socketpair, one JSON object
per message:

    kernel → zygote  {"id", "module", "env", "cwd", "fds": [0, 1, 2, target…]} + as many fds (SCM_RIGHTS)
    zygote → kernel  {"ready": pid} once, after the imports
                     {"id", "pid"} or {"id", "error"} per request, right after the fork
                     {"exited": pid, "returncode": n} when a child ends (negative: killed by signal -n)

This process stays single-threaded and runs no event loop, so a forked child inherits neither threads nor a
loop. Children are reaped from the main loop: SIGCHLD only writes to a wakeup pipe that poll() watches. The
zygote dies with the kernel (PR_SET_PDEATHSIG, set by setpriv and again here) and leaves when its socket
closes; its children die with it (their own PR_SET_PDEATHSIG), so nothing outlives the kernel.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import select
import signal
import socket
import sys
from typing import Any

from hologram.base._unused_imports import allow_unused_imports, refuse_unused_imports
from hologram.zygote import child as zygote_child
from hologram.zygote.settle import settle

PRELOAD = (
    "asyncio",
    "json",
    "logging",
    # The contracts' library: a plugin's config is a pydantic model the SDK validates at start. Loaded here once,
    # its compiled core's relocated pages and its modules' objects are shared by every child instead of each
    # plugin writing its own copy (tests/guard/test_runtime_imports.py).
    "pydantic",
    "pydantic.main",
    "pydantic.fields",
    "pydantic.functional_validators",
    "hologram.base._loop",
    "hologram.sdk",
    "hologram.sdk._runtime",
    "hologram.sdk._plugin",
    "hologram.sdk._hooks",
    "hologram.sdk._views",
)
# What the SDK imports later, while it starts serving (measured: sys.modules of a forked synthetic plugin at
# exit minus the zygote's), or what most plugins import; importing is all that happens here — no loop, no
# thread, no connection exists before the fork. uvloop is optional, like in `hologram.base._loop`.
PRELOAD_OPTIONAL = (
    "pathlib",
    "concurrent.futures.thread",
    "queue",
    "urllib.parse",
    "ipaddress",
    "fnmatch",
    "shutil",  # these three: every shipped plugin imports them (hologram_plugins.files.workspace)
    "tempfile",
    "random",
    "uvloop",
    # The shipped plugins' shared modules (absent without hologram_plugins): a module a child imports is its
    # own memory, and importing writes to pages it shares with us (interned strings, sys.modules), while one
    # preloaded here is shared by every child. Each has no side effect at import (environment and files
    # are read per call). Default graph: 8.3-9.4 -> ~7.5 MB PSS per plugin, tools/bench/footprint.py --turns.
    "hologram_plugins.files.workspace",
    "hologram_plugins._process.runner",
    "hologram_plugins._process.run",
    "hologram_plugins._process.tree",
    "hologram_plugins.web.guard",
    "hologram_plugins.web.html_text",
    "hologram_plugins._time",  # calendar's, reminders' and todos' times
    # The shipped plugins themselves. A plugin's first import in a child costs ~2.5 MB of copied pages whatever
    # its size — the import system's own objects, the interned names, the module dicts it writes — and notes'
    # two modules are 93 kB (tools/bench/footprint.py --turns: notes 8.0 -> 6.4 MB, zygote plus plugins -6 MB).
    # http too since it serves on h11 alone (hologram_plugins/http/http11.py): 10.0 -> 7.5 MB, the others
    # +0.2 MB each for their share of the zygote's extra pages, the total -0.9 MB; with uvicorn it was +4 MB in
    # the zygote for -3 MB in http. None of these does anything at import but define (tests/guard holds it).
    "hologram_plugins.a2a",  # defines its plugin, its mount and a lazy app; the a2a-sdk loads on the first request
    "hologram_plugins.admin",  # its three tools; everything it does is a kernel facility call
    "hologram_plugins.agents",  # agent_delegate: a child turn through kernel.turns
    "hologram_plugins.browser",  # its config and tools; websockets and Chromium come with the first call
    "hologram_plugins.calendar",
    "hologram_plugins.code",
    "hologram_plugins.files",
    "hologram_plugins.http",
    # The OpenAI-compatible API's module, which http imports on its first /v1 request: imported there it was
    # +0.5 MB private in http for the life of the process (9.6 -> 9.1 MB after serving, the tree's total the
    # same: tools/bench/sweep.py --only turn,footprint).
    "hologram_plugins.http.openai_api",
    # The turn API's params, whose `StartParams` checks every turn http starts (POST /api/turns, /v1's chat
    # completions: hologram_plugins/http/channel.py): imported in http at its first turn, it made that turn 6.4x a
    # warm one (~50-180 ms of pydantic and dataclass class building on the 2-core host, issue 39 item 9); here it
    # is ~0.4 MB shared instead of the same private in http once a turn came. Its validator is built by
    # `build_models` below.
    "hologram.api.params",
    "hologram_plugins.mcp",  # its config and a lazy /mcp app; the MCP SDK loads only with a server configured
    "hologram_plugins.notes",
    "hologram_plugins.qq",  # its config only; websockets and markdown-it-py load only when QQ is configured
    "hologram_plugins.reminders",  # croniter and dateutil load with the first repeating reminder
    "hologram_plugins.rss",
    "hologram_plugins.shell",
    "hologram_plugins.skills",
    "hologram_plugins.terminal",  # its config and key names; pyte loads with the first terminal
    "hologram_plugins.todos",
    "hologram_plugins.web",
    "zoneinfo",
    "unicodedata",
    "hashlib",
)
MAX_MESSAGE = 1024 * 1024  # a request carries the whole environment; the kernel's send fails above its limit
MAX_FDS = 64


#: Pydantic models of the preloaded modules built before the fork (``defer_build`` leaves it to their first
#: validation, which would run in a child, on its event loop, into its own memory): (module, class).
PRELOAD_MODELS = (("hologram.api.params", "StartParams"),)


def preload() -> None:
    """What every SDK plugin imports; children find it in sys.modules instead of importing it again."""
    for name in PRELOAD:
        importlib.import_module(name)
    for name in PRELOAD_OPTIONAL:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    build_models()


def build_models() -> None:
    """Build the validators of `PRELOAD_MODELS` whose module was preloaded (a model's first check in a child is
    then a call, not a schema build)."""
    for module, name in PRELOAD_MODELS:
        loaded = sys.modules.get(module)
        model = getattr(loaded, name, None)
        if model is not None:
            model.model_rebuild()


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.sendall(json.dumps(message).encode())


class Zygote:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.pid = os.getpid()
        # What a fresh interpreter has; restored in every child before it runs the plugin.
        self.signal_defaults = {s: signal.getsignal(s) for s in signal.valid_signals() if _settable(s)}
        self.path = list(sys.path)
        self.pythonpath = os.environ.get("PYTHONPATH", "")
        self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # only to wake poll() via the wakeup fd
        signal.set_wakeup_fd(self.wake_w, warn_on_full_buffer=False)

    def serve(self) -> None:
        poller = select.poll()
        poller.register(self.sock.fileno(), select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        send(self.sock, {"ready": self.pid})
        while True:
            for fd, _ in poller.poll():
                if fd == self.wake_r:
                    with contextlib.suppress(BlockingIOError):
                        while os.read(self.wake_r, 4096):
                            pass
                    self.reap()
                elif not self.receive():
                    return  # the kernel closed its end

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            send(self.sock, {"exited": pid, "returncode": os.waitstatus_to_exitcode(status)})

    def receive(self) -> bool:
        data, fds, flags, _ = socket.recv_fds(self.sock, MAX_MESSAGE, MAX_FDS)
        if not data and not fds:
            return False
        request: dict[str, Any] = {}
        try:
            request = json.loads(data)
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise ValueError("request truncated")
            if len(fds) != len(request["fds"]):
                raise ValueError(f"{len(fds)} fds received for {len(request['fds'])} targets")
            pid = self.fork(request, fds)
        except Exception as exc:
            send(self.sock, {"id": request.get("id"), "error": f"{type(exc).__name__}: {exc}"})
        else:
            send(self.sock, {"id": request["id"], "pid": pid})
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    def fork(self, request: dict[str, Any], fds: list[int]) -> int:
        forget_import_caches()
        pid = os.fork()
        if pid:
            return pid
        code = 1
        try:
            self.sock.detach()  # its fd is closed with the others; the object must never close a reused number
            allow_unused_imports()  # the plugin's own code may import trio (hologram/base/_unused_imports.py)
            code = zygote_child.become(
                request,
                fds,
                zygote_pid=self.pid,
                signal_defaults=self.signal_defaults,
                zygote_path=self.path,
                zygote_pythonpath=self.pythonpath,
            )
        except BaseException:
            with contextlib.suppress(Exception):
                import traceback

                traceback.print_exc()
        finally:
            os._exit(code)


def forget_import_caches() -> None:
    """What `importlib.invalidate_caches` is for — directory listings taken before a plugin's files were
    written — done here, before the fork, and more: the path finders are dropped, not only marked stale.

    Done in the child, it replaced every cached listing the zygote held (sets of file names, freed in the
    child: a write to each of their pages) and re-read them (+0.46 MB copied in a fork-emulating probe); a
    child now finds no finder and makes one for each directory it imports from. The zygote imports nothing
    after the preload, so from the second fork on this is a loop over an empty cache."""
    importlib.invalidate_caches()
    sys.path_importer_cache.clear()


def _settable(signum: signal.Signals) -> bool:
    return signum not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(signum) is not None


def main(argv: list[str]) -> int:
    sock_fd, kernel_pid = int(argv[1]), int(argv[2])
    zygote_child.die_with_parent(kernel_pid)
    sock = socket.socket(fileno=sock_fd)
    os.umask(0o077)  # what the plugins it forks write is the user's alone, whoever started the kernel
    refuse_unused_imports()  # inherited by every child (hologram/base/_unused_imports.py)
    preload()
    settle()  # hologram/zygote/settle.py: fewer of the zygote's pages copied into each child
    Zygote(sock).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
