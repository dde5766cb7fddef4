"""The ACP connection's way to the kernel: the running kernel's control socket, or a kernel of its own.

An editor spawns ``hologram acp`` when the user opens the agent panel, whether or not ``hologram up`` runs.
When no kernel answers for the data directory, this starts one — ``hologram up`` as a child process, its
output on this process's stderr (the editor's log; stdout is the ACP channel) — and stops it when the editor
closes the connection: a kernel nobody asked for must not outlive the editor that needed it (and it dies with
this process even on SIGKILL: PR_SET_PDEATHSIG). A kernel that was already running is left alone. Why a child
and not a daemon: the user who runs ``hologram up`` themselves keeps it; the one who never did gets a kernel
exactly as long as the editor talks to it.

The connection is made on first use and made again after the kernel went away (restarted by its user), so a
long editor session survives a kernel restart; the prompt that was running when it went fails with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import sys
from pathlib import Path

from hologram.clients import TurnClient
from hologram.clients.errors import HologramError, Problem

START_TIMEOUT_S = 180.0  # a first start loads the embedding model; a failure bound, not an expected time
STOP_TIMEOUT_S = 30.0  # SIGTERM drains a running turn (10 s at most) and stops the plugins; then SIGKILL
RELAY_DRAIN_S = 5.0  # the kernel's last output, once it exited (a grandchild holding the pipe must not hold us)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the kernel child before exec: SIGTERM it (a clean stop) when this process dies, however it dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)


class KernelLink:
    """One control-socket client for the ACP connection (`client`), and the kernel child if it started one."""

    def __init__(self, data_dir: Path, lock: Path, *, client: str, version: str, start: bool = True) -> None:
        self.data_dir = data_dir
        self.lock = lock
        self.name = client
        self.version = version
        self.start = start  # may start a kernel when none runs
        self.child: asyncio.subprocess.Process | None = None
        self.said: list[str] = []  # the kernel child's last error line and what followed (its hint)
        self._relay: asyncio.Future[None] | None = None
        self._client: TurnClient | None = None
        self._connecting = asyncio.Lock()

    async def client(self) -> TurnClient:
        """The connected client; connects (and starts a kernel when none runs) on first use and after the
        kernel went away. Raises `HologramError` with the reason and the fix."""
        async with self._connecting:
            if self._client is not None and not self._client.connection.closed:
                return self._client
            if self._client is not None:
                await self._client.aclose()
                self._client = None
            try:
                self._client = await self._connect()
            except HologramError:
                if not self.start or (self.child is not None and self.child.returncode is None):
                    raise
                self._client = await self._start_kernel()
            return self._client

    async def _connect(self) -> TurnClient:
        return await TurnClient.connect(self.data_dir, client=self.name, approvals=True, version=self.version)

    async def _start_kernel(self) -> TurnClient:
        """``hologram up`` for the data directory, then the connection once its control socket answers. When
        another kernel took the directory meanwhile (a second editor window), that one is used."""
        argv = [sys.executable, "-m", "hologram", "up", "--data", str(self.data_dir), "--lock", str(self.lock)]
        print(f"hologram acp: no kernel runs with {self.data_dir}; starting one: {' '.join(argv[1:])}", file=sys.stderr)
        self.child = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            preexec_fn=_die_with_parent,
        )  # fmt: skip
        self._relay = asyncio.ensure_future(self._relay_output(self.child))
        exited = asyncio.ensure_future(self._exited(self.child))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT_S
        delay = 0.05
        while True:
            try:
                return await self._connect()
            except HologramError:
                if exited.done():
                    break
            if loop.time() > deadline:
                exited.cancel()
                await self.stop_kernel()
                raise HologramError(
                    Problem(
                        f"the kernel started for {self.data_dir} did not answer within {START_TIMEOUT_S:g} s",
                        hint=f"see its log in {self.data_dir / 'logs'}, or start it yourself with `hologram up`",
                    )
                ) from None
            await asyncio.wait({exited}, timeout=delay)
            delay = min(delay * 2, 1.0)
        code, self.child = self.child.returncode, None
        try:  # it stopped at once: another kernel took the directory between our try and its start?
            return await self._connect()
        except HologramError:
            said = f": {' '.join(self.said)}" if self.said else ""
            raise HologramError(
                Problem(
                    f"`hologram up --data {self.data_dir} --lock {self.lock}` exited with status {code}{said}",
                    hint="fix that and open the agent again, or start the kernel yourself with `hologram up`",
                )
            ) from None

    async def _relay_output(self, child: asyncio.subprocess.Process) -> None:
        """The kernel's output, line by line, to this process's stderr (the editor's log); its last error is
        what a failed start says to the editor (its error line and hint)."""
        assert child.stdout is not None
        async for raw in child.stdout:
            line = raw.decode(errors="replace").rstrip()
            if line:
                self.said = [line] if "error:" in line else [*self.said[-3:], line.strip()]
                print(f"hologram up: {line}", file=sys.stderr, flush=True)

    async def _exited(self, child: asyncio.subprocess.Process) -> None:
        """The child exited and everything it printed was relayed."""
        await child.wait()
        if self._relay is not None:
            await self._relay

    async def aclose(self) -> None:
        """Close the connection (the kernel cancels a turn nobody watches any more), then stop the kernel this
        process started, if it did."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await self.stop_kernel()

    async def stop_kernel(self) -> None:
        child, self.child = self.child, None
        if child is None or child.returncode is not None:
            return
        child.send_signal(signal.SIGTERM)  # `hologram up` drains on SIGTERM: the session stays valid
        try:
            await asyncio.wait_for(child.wait(), STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            child.kill()
            await child.wait()
        if self._relay is not None:  # its last lines ("Hologram stopped.") reach the log before this exits
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._relay, RELAY_DRAIN_S)
