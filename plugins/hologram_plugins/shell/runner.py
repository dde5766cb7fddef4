"""Running a child process for a tool: wall-clock timeout, output cap, streamed chunks, no orphans.

Shared by shell_run and code_run. The child gets its own session (so a timeout kills its whole process
group, grandchildren included), dies with the plugin (PR_SET_PDEATHSIG), and an environment without the
kernel's secrets. Output past the cap is drained and counted, not kept: a chatty command cannot exhaust the
plugin's memory or the model's context, and it is not killed just for talking.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

CHUNK = 4096
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH)", re.IGNORECASE)
OnChunk = Callable[[str, str], Awaitable[None]]  # (stream, text)

_prctl: Callable[..., int] | None
try:  # looked up before any fork: nothing may be loaded between fork and exec
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # pragma: no cover - not Linux
    _prctl = None


@dataclass
class RunResult:
    exit_code: int | None
    output: str
    dropped_bytes: int
    timed_out: bool
    seconds: float

    def summary(self, limit_bytes: int, timeout_s: float) -> str:
        """Output plus a footer a model can act on: exit status, truncation, timeout."""
        notes = []
        if self.dropped_bytes:
            notes.append(f"output exceeded {limit_bytes} bytes; {self.dropped_bytes} more bytes were dropped")
        if self.timed_out:
            notes.append(f"timed out after {timeout_s:g} s; the process group was killed")
        elif self.exit_code is not None and self.exit_code < 0:
            notes.append(f"killed by signal {-self.exit_code}")
        else:
            notes.append(f"exit code {self.exit_code}")
        notes.append(f"{self.seconds:.2f} s")
        body = self.output if self.output.endswith("\n") or not self.output else self.output + "\n"
        return f"{body}[{'; '.join(notes)}]"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The plugin's environment without API keys, tokens, passwords or Hologram's own variables."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k) and not k.startswith("HOLOGRAM_")}
    env.setdefault("LANG", "C.UTF-8")
    env["TERM"] = "dumb"
    env.update(extra or {})
    return env


def die_with_parent() -> None:
    """preexec: SIGKILL this child when the plugin dies, so a crashed plugin leaves no runaway commands."""
    if _prctl is not None:
        _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    max_output_bytes: int,
    on_chunk: OnChunk | None = None,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
) -> RunResult:
    started = time.monotonic()

    def preexec_fn() -> None:
        die_with_parent()
        if preexec is not None:
            preexec()

    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=str(cwd),
        env=env if env is not None else child_env(),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )
    kept = bytearray()
    dropped = 0
    lock = asyncio.Lock()

    async def pump(stream: asyncio.StreamReader | None, name: str) -> None:
        nonlocal dropped
        assert stream is not None
        while chunk := await stream.read(CHUNK):
            async with lock:
                room = max_output_bytes - len(kept)
                part, dropped = chunk[:room], dropped + max(0, len(chunk) - room)
                kept.extend(part)
                if part and on_chunk is not None:
                    with contextlib.suppress(Exception):  # a lost event must not lose the output
                        await on_chunk(name, part.decode("utf-8", errors="replace"))

    pumps = asyncio.ensure_future(asyncio.gather(pump(process.stdout, "stdout"), pump(process.stderr, "stderr")))
    timed_out = False
    try:
        await asyncio.wait_for(process.wait(), timeout_s)
    except asyncio.TimeoutError:
        timed_out = True
        _kill_group(process.pid)
    try:  # what is still in the pipes; a background child holding them open gets a moment, then the kill
        await asyncio.wait_for(asyncio.shield(pumps), 1.0)
    except asyncio.TimeoutError:
        pass
    finally:
        _kill_group(process.pid)  # also ends anything the command left running in the background
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), 5)
        pumps.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pumps
    output = kept.decode("utf-8", errors="replace")
    return RunResult(process.returncode, output, dropped, timed_out, time.monotonic() - started)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
