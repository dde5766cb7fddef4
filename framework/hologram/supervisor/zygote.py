"""The kernel's side of the zygote: spawn `run.module` plugins by forking a pre-imported interpreter.

Why: on a 2-core machine `hologram up` is CPU-bound, and ~150-180 ms of every `python -m` plugin's CPU goes to
interpreter start and importing `hologram.sdk` (asyncio above all). One zygote process
(`hologram.zygote.main`) pays that once; each plugin is then a fork of it, ready in a few ms.

The kernel keeps the plugin's pipes and inherited fds exactly as in the classic path and sends them over a
SOCK_SEQPACKET socketpair (SCM_RIGHTS) with the env, cwd and module; the zygote forks, answers with the pid
and later with the exit status, which `ZygoteProcess` presents as an `asyncio.subprocess.Process`, so the
supervisor cannot tell the two paths apart.

Whenever the zygote cannot serve a request — not started yet and failing to start, dead, different
interpreter start-up settings, a request too big — `spawn_module` returns None and the caller spawns the
classic way; a dead zygote is restarted lazily on the next module spawn. `HOLOGRAM_ZYGOTE=0` turns it off.
So does a change of the site directories' `.pth` files since the zygote started (`hologram plugin add` of an
editable plugin adds one): its forks would lack the new `sys.path` entries a fresh `python -m` reads, so module
plugins are spawned the classic way from then on (the zygote cannot be replaced: its children die with it).
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import errno
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hologram.base import sitepaths
from hologram.rpc.streams import open_pipe_streams
from hologram.supervisor.environment import PLUGIN_FIXED_ENV, scrubbed_environ

log = logging.getLogger("hologram.supervisor.zygote")

ENV_SWITCH = "HOLOGRAM_ZYGOTE"
MAIN_MODULE = "hologram.zygote.main"
START_TIMEOUT_S = 20.0  # imports of a cold zygote on a loaded machine
REQUEST_TIMEOUT_S = 10.0  # a fork answer takes ms; longer means the zygote is wedged
RETRY_AFTER_FAILED_START_S = 30.0  # do not pay a failing zygote start on every spawn
# Read by a fresh interpreter only at start-up: a zygote can serve a request only if these are equal. The
# others (PYTHONPATH, the bytecode cache settings) are applied in the child (`hologram.zygote.child`).
RUNTIME_APPLIED = frozenset({"PYTHONPATH", "PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE"})
SETPRIV = shutil.which("setpriv")


def under_setpriv(argv: Sequence[str]) -> list[str]:
    """``argv`` run by ``setpriv --pdeathsig KILL`` (dies with the kernel; see `supervisor.child`), or as it
    is where setpriv is missing."""
    return list(argv) if SETPRIV is None else [SETPRIV, "--pdeathsig", "KILL", "--", *argv]


class ZygoteUnavailable(Exception):
    """This request cannot go through the zygote; the caller falls back to a classic spawn."""


def enabled() -> bool:
    return os.environ.get(ENV_SWITCH, "1") != "0" and sys.platform.startswith("linux")


def module_of(argv: Sequence[str]) -> str | None:
    """MODULE if `argv` is exactly `python -m MODULE` with the kernel's own interpreter, else None."""
    if len(argv) == 3 and argv[0] == sys.executable and argv[1] == "-m":
        return argv[2]
    return None


def _startup_relevant(name: str) -> bool:
    return (name.startswith("PYTHON") and name not in RUNTIME_APPLIED) or name == "LANG" or name.startswith("LC_")


def startup_key(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The part of an environment a fresh interpreter reads at start-up only (hash seed, -X options, locale …)."""
    return tuple(sorted((k, v) for k, v in env.items() if _startup_relevant(k)))


class ZygoteProcess(asyncio.subprocess.Process):
    """A plugin forked by the zygote, with the face of `asyncio.subprocess.Process` the supervisor uses.

    It is not the kernel's child: the exit status comes from the zygote. `super().__init__` is deliberately
    not called — there is no subprocess transport behind this object.
    """

    def __init__(self, pid: int, exited: asyncio.Future[int], stderr: asyncio.StreamReader) -> None:
        self.pid = pid
        self.stdin = None
        self.stdout = None
        self.stderr = stderr
        self._exited = exited

    def __repr__(self) -> str:
        return f"<ZygoteProcess {self.pid}>"

    @property
    def returncode(self) -> int | None:
        if self._exited.done() and not self._exited.cancelled():
            return self._exited.result()
        return None

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def send_signal(self, signal: int) -> None:
        if self.returncode is not None:  # as asyncio: the pid may already belong to someone else
            raise ProcessLookupError(self.pid)
        os.kill(self.pid, signal)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def communicate(self, input: bytes | bytearray | memoryview | None = None) -> tuple[bytes, bytes]:
        raise NotImplementedError("plugins talk over their own pipes; communicate() is not used")


class ZygoteServer:
    """One running zygote: its process, the socket to it, requests in flight and children alive.

    The process and socket live as long as the kernel process; only the socket's reader is bound to an event
    loop, and it moves to a new loop when one starts spawning (each test's `asyncio.run`).
    """

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        sock: socket.socket,
        key: tuple[tuple[str, str], ...],
        site: sitepaths.Fingerprint = (),
    ) -> None:
        self.popen = popen
        self.sock = sock
        self.key = key
        self.site = site  # the .pth files when it started: its sys.path is that of a fresh interpreter then
        self.site_changed = False
        self.alive = True
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ready: asyncio.Future[int] | None = None
        self.pending: dict[int, asyncio.Future[tuple[int, asyncio.Future[int]]]] = {}
        self.children: dict[int, asyncio.Future[int]] = {}
        self.next_id = 0

    @classmethod
    async def start(cls, env: Mapping[str, str]) -> ZygoteServer:
        return await cls.launch(env).until_ready()

    @classmethod
    def launch(cls, env: Mapping[str, str]) -> ZygoteServer:
        """The zygote process, started; no event loop needed (`prestart` runs before there is one). Call from
        the thread that lives as long as the kernel: PR_SET_PDEATHSIG follows the thread that forked it."""
        site = sitepaths.fingerprint()  # before the start: a .pth added meanwhile only makes it look stale
        kernel_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = [sys.executable, "-m", MAIN_MODULE, str(zygote_end.fileno()), str(os.getpid())]
        argv = under_setpriv(argv)
        log_r, log_w = os.pipe()
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_w,
                pass_fds=(zygote_end.fileno(),),
                # scrubbed: a forked plugin inherits the zygote's memory, so no secret may live in it
                env={k: v for k, v in scrubbed_environ().items() if not _startup_relevant(k)}
                | {k: v for k, v in env.items() if _startup_relevant(k)},
                start_new_session=True,  # a Ctrl-C in the terminal is for the kernel only
            )
        except BaseException:
            kernel_end.close()
            os.close(log_r)
            raise
        finally:
            zygote_end.close()
            os.close(log_w)
        threading.Thread(target=_log_and_reap, args=(log_r, popen), name="zygote-log", daemon=True).start()
        kernel_end.setblocking(False)
        return cls(popen, kernel_end, startup_key(env), site)

    def serves_this_site(self) -> bool:
        """False once the site directories' `.pth` files differ from those it started with (said once)."""
        if not self.site_changed and sitepaths.fingerprint() != self.site:
            self.site_changed = True
            log.info(
                "the site directories' .pth files changed since zygote %d started: module plugins are spawned "
                "the classic way from now on",
                self.popen.pid,
            )
        return not self.site_changed

    async def until_ready(self) -> ZygoteServer:
        """Bind to the running loop and wait for the zygote's "ready" (it waits in the socket if it came
        before the loop existed)."""
        server = self
        server.bind(asyncio.get_running_loop())
        if server.ready is None:  # lost while binding
            raise ZygoteUnavailable("zygote did not start: it is gone")
        try:
            pid = await asyncio.wait_for(asyncio.shield(server.ready), START_TIMEOUT_S)
        except (asyncio.TimeoutError, ZygoteUnavailable) as exc:
            server.lost(f"did not start: {exc or 'timed out'}")
            raise ZygoteUnavailable(f"zygote did not start: {exc or 'timed out'}") from None
        except BaseException:
            server.lost("start cancelled")
            raise
        log.info("zygote %d ready", pid)
        return server

    # -- event loop binding ----------------------------------------------------------------------------

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Read the socket from `loop`; what was in flight on a previous loop can no longer be answered."""
        if self.loop is loop or not self.alive:
            return
        old, self.loop = self.loop, loop
        if old is not None:
            if not old.is_closed():
                old.remove_reader(self.sock.fileno())
            for future in [*self.pending.values(), *self.children.values()]:
                with contextlib.suppress(RuntimeError):  # futures of a closed loop
                    future.cancel()  # type: ignore[attr-defined]
            self.pending.clear()
            self.children.clear()
        if self.ready is None:
            self.ready = loop.create_future()
        elif not self.ready.done():
            self.lost("its start was on an event loop that went away")
            return
        loop.add_reader(self.sock.fileno(), self._readable)

    # -- requests --------------------------------------------------------------------------------------

    async def spawn(
        self, module: str, env: Mapping[str, str], cwd: Path, fds: Sequence[tuple[int, int]]
    ) -> tuple[int, asyncio.Future[int]]:
        """Fork `module` with `fds` = [(kernel fd, fd number in the child)]; returns (pid, its exit future)."""
        if not self.alive or self.loop is None:
            raise ZygoteUnavailable("zygote is gone")
        self.next_id += 1
        request_id = self.next_id
        payload = json.dumps(
            {"id": request_id, "module": module, "env": dict(env), "cwd": str(cwd), "fds": [t for _, t in fds]}
        ).encode()
        answer: asyncio.Future[tuple[int, asyncio.Future[int]]] = self.loop.create_future()
        self.pending[request_id] = answer
        try:
            await self._send(payload, [fd for fd, _ in fds])
            return await asyncio.wait_for(asyncio.shield(answer), REQUEST_TIMEOUT_S)
        except asyncio.TimeoutError:
            self.lost(f"no answer to a spawn request within {REQUEST_TIMEOUT_S:g} s")
            raise ZygoteUnavailable("zygote did not answer") from None
        except BaseException:
            if answer.done() and not answer.cancelled() and answer.exception() is None:
                _kill(answer.result()[0])  # cancelled after the fork: nobody would own the child
            raise
        finally:
            self.pending.pop(request_id, None)

    async def _send(self, payload: bytes, fds: list[int]) -> None:
        assert self.loop is not None
        ancillary = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))]
        while True:
            try:
                self.sock.sendmsg([payload], ancillary)
                return
            except BlockingIOError:
                writable: asyncio.Future[None] = self.loop.create_future()
                self.loop.add_writer(self.sock.fileno(), writable.set_result, None)
                try:
                    await writable
                finally:
                    self.loop.remove_writer(self.sock.fileno())
            except OSError as exc:
                if exc.errno != errno.EMSGSIZE:
                    self.lost(f"cannot send to it: {exc}")
                raise ZygoteUnavailable(f"cannot send the request: {exc}") from None

    def _readable(self) -> None:
        while self.alive:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            except OSError as exc:
                self.lost(f"socket error: {exc}")
                return
            if not data:
                self.lost(f"exited ({_describe(self.popen.poll())})")
                return
            self._dispatch(json.loads(data))

    def _dispatch(self, message: dict[str, Any]) -> None:
        assert self.loop is not None
        if "exited" in message:
            child = self.children.pop(int(message["exited"]), None)
            if child is not None and not child.done():
                child.set_result(int(message["returncode"]))
        elif "pid" in message:
            pid = int(message["pid"])
            exited: asyncio.Future[int] = self.loop.create_future()
            self.children[pid] = exited
            answer = self.pending.get(message["id"])
            if answer is None or answer.done():
                _kill(pid)  # the requester gave up meanwhile
            else:
                answer.set_result((pid, exited))
        elif "error" in message:
            answer = self.pending.get(message["id"])
            if answer is not None and not answer.done():
                answer.set_exception(ZygoteUnavailable(str(message["error"])))
        elif "ready" in message and self.ready is not None and not self.ready.done():
            self.ready.set_result(int(message["ready"]))

    # -- losing it ---------------------------------------------------------------------------------------

    def lost(self, reason: str) -> None:
        """The zygote is gone or unusable: fail what waits, report its children dead once they are."""
        if not self.alive:
            return
        self.alive = False
        log.warning(
            "zygote %d lost: %s; module plugins are spawned the classic way until it restarts", self.popen.pid, reason
        )
        if self.loop is not None and not self.loop.is_closed():
            self.loop.remove_reader(self.sock.fileno())
        self.sock.close()
        with contextlib.suppress(OSError):
            self.popen.kill()  # reaped by its log thread
        failure = ZygoteUnavailable(f"zygote lost: {reason}")
        for answer in self.pending.values():
            if not answer.done():
                answer.set_exception(failure)
                answer.exception()  # retrieved: a request may have stopped waiting
        if self.ready is not None and not self.ready.done():
            self.ready.set_exception(failure)
        for pid, exited in self.children.items():
            if not exited.done() and self.loop is not None and not self.loop.is_closed():
                _when_dead(self.loop, pid, exited)  # PR_SET_PDEATHSIG kills it with the zygote
        self.children.clear()


def _when_dead(loop: asyncio.AbstractEventLoop, pid: int, exited: asyncio.Future[int]) -> None:
    """Resolve `exited` with -SIGKILL once `pid` is really gone (pidfd: readable when the process ends)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # already gone (or no pidfd on this kernel: it dies within moments anyway)
        exited.set_result(-signal.SIGKILL)
        return

    def gone() -> None:
        loop.remove_reader(pidfd)
        os.close(pidfd)
        if not exited.done():
            exited.set_result(-signal.SIGKILL)

    loop.add_reader(pidfd, gone)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _describe(code: int | None) -> str:
    if code is None:
        return "still running"
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _log_and_reap(fd: int, popen: subprocess.Popen[bytes]) -> None:
    """The zygote's stderr (import errors, a crash) into the kernel log; then collect its exit status."""
    with open(fd, "rb") as stream:
        for line in stream:
            log.warning("[zygote] %s", line.decode("utf-8", "replace").rstrip())
    popen.wait()


# -- the one zygote of this kernel ----------------------------------------------------------------------


class _Registry:
    """Starts the zygote on first use, once even when many spawns ask at the same time, and again after it died."""

    def __init__(self) -> None:
        self.server: ZygoteServer | None = None
        self.starting: asyncio.Task[ZygoteServer] | None = None
        self.retry_at = 0.0
        self.early: ZygoteServer | None = None  # started by `prestart`, not yet claimed by a spawn

    def prestart(self, env: Mapping[str, str]) -> None:
        if self.early is not None or self.server is not None or not enabled():
            return
        try:
            self.early = ZygoteServer.launch(env)
        except OSError as exc:  # the first spawn tries again, and falls back to the classic path
            log.info("zygote not prestarted: %s", exc)

    def _claim_early(self, loop: asyncio.AbstractEventLoop, env: Mapping[str, str]) -> bool:
        early, self.early = self.early, None
        if early is None:
            return False
        if early.key != startup_key(env):  # started with other interpreter settings: of no use
            early.lost("prestarted with other interpreter start-up settings")
            return False
        self.starting = loop.create_task(early.until_ready())
        return True

    async def get(self, env: Mapping[str, str]) -> ZygoteServer | None:
        loop = asyncio.get_running_loop()
        if self.server is not None and not self.server.alive:
            self.server = None
        if self.server is None:
            if time.monotonic() < self.retry_at:
                return None
            if (self.starting is None or self.starting.get_loop() is not loop) and not self._claim_early(loop, env):
                self.starting = loop.create_task(ZygoteServer.start(env))
            starting = self.starting
            assert starting is not None
            try:
                server = await asyncio.shield(starting)
            except (ZygoteUnavailable, OSError) as exc:
                if self.starting is starting:
                    self.starting = None
                    self.retry_at = time.monotonic() + RETRY_AFTER_FAILED_START_S
                    log.warning("zygote unavailable (%s); retrying in %g s", exc, RETRY_AFTER_FAILED_START_S)
                return None
            if self.starting is starting:
                self.starting = None
                self.server = server
        current = self.server
        if current is None:
            return None
        current.bind(loop)
        usable = current.alive and current.key == startup_key(env) and current.serves_this_site()
        return current if usable else None


_registry = _Registry()


def prestart() -> None:
    """Start the zygote now, before the kernel's imports and event loop (`hologram up`'s first lines): its
    own start (interpreter + `hologram.sdk`, ~0.2-0.8 s) then runs on the other core instead of delaying the
    first plugin. Used by the first module spawn whose interpreter settings are a plugin's default ones."""
    _registry.prestart(scrubbed_environ() | PLUGIN_FIXED_ENV)


async def spawn_module(
    module: str, *, env: Mapping[str, str], cwd: Path, pass_fds: Sequence[int]
) -> tuple[asyncio.subprocess.Process, asyncio.StreamReader, asyncio.StreamWriter] | None:
    """`python -m module` through the zygote; None when it cannot serve this request (spawn classically)."""
    server = await _registry.get(env)
    if server is None:
        return None
    child_in, to_child = os.pipe()
    from_child, child_out = os.pipe()
    err_r, err_w = os.pipe()
    ours = (to_child, from_child, err_r)
    targets = [(child_in, 0), (child_out, 1), (err_w, 2), *((fd, fd) for fd in pass_fds)]
    try:
        pid, exited = await server.spawn(module, env, cwd, targets)
    except ZygoteUnavailable as exc:
        log.info("spawning %s the classic way: %s", module, exc)
        for fd in ours:
            os.close(fd)
        return None
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in (child_in, child_out, err_w):
            os.close(fd)
    loop = asyncio.get_running_loop()
    stderr = asyncio.StreamReader(limit=2**16, loop=loop)  # asyncio's default for a subprocess pipe
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), os.fdopen(err_r, "rb", buffering=0))
    reader, writer = await open_pipe_streams(from_child, to_child)
    return ZygoteProcess(pid, exited, stderr), reader, writer
