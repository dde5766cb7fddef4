"""Running a tool's command: wall-clock timeout, output cap, streamed chunks, and a call that owns its processes.

Shared by shell_run and code_run. The command runs under a guardian process of its own (guardian.py,
tree.py) that kills the call's whole process tree — descendants that called setsid or double-forked
included — when the command exits (what it left in the background), at the timeout, when the call is
cancelled (the kernel's `$/cancel`: Ctrl-C, the kernel's own tool timeout), when the plugin dies, and when
the tree grows past `max_processes`. The result says what was stopped and what was killed. The environment
has no kernel secrets. Output past the cap is drained and counted, not kept: a chatty command cannot
exhaust the plugin's memory or the model's context, and it is not killed just for talking.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hologram_plugins._process.tree import Rlimit, TreeReport, guardian_argv, killed_note, parse_report, read_report

CHUNK = 4096
GUARDIAN_WAIT_S = 15.0  # the guardian gives up on unkillable processes after 10 s and reports them
DRAIN_S = 1.0  # after the tree is gone: what is still in the pipes (a survivor may hold them open)
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH)", re.IGNORECASE)
OnChunk = Callable[[str, str], Awaitable[None]]  # (stream, text)


@dataclass
class RunResult:
    exit_code: int | None
    output: str
    dropped_bytes: int
    stopped: str | None  # None (the command ended by itself) | "timeout" | "cancelled" | "limit"
    seconds: float
    tree: TreeReport = field(default_factory=TreeReport)
    max_processes: int = 0

    @property
    def timed_out(self) -> bool:
        return self.stopped == "timeout"

    def summary(self, limit_bytes: int, timeout_s: float) -> str:
        """Output plus a footer a model can act on: exit status or why it was stopped, truncation, what was
        killed — e.g. `[exit code 0; 1.02 s; killed 1 process left running in the background: sleep (pid 7)]`."""
        notes = []
        if self.dropped_bytes:
            notes.append(f"output exceeded {limit_bytes} bytes; {self.dropped_bytes} more bytes were dropped")
        if self.stopped == "timeout":
            notes.append(f"timed out after {timeout_s:g} s")
        elif self.stopped == "cancelled":
            notes.append("stopped: the call was cancelled")
        elif self.stopped == "limit":
            notes.append(f"stopped: more than {self.max_processes} processes at once (config max_processes)")
        elif self.exit_code is None:
            notes.append("exit status unknown: the process guardian failed")
        elif self.exit_code < 0:
            notes.append(f"killed by signal {-self.exit_code}")
        else:
            notes.append(f"exit code {self.exit_code}")
        notes.append(f"{self.seconds:.2f} s")
        killed = killed_note(self.tree, background=self.stopped is None)
        if killed:
            notes.append(killed)
        body = self.output if self.output.endswith("\n") or not self.output else self.output + "\n"
        return f"{body}[{'; '.join(notes)}]"


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The plugin's environment without API keys, tokens, passwords or Hologram's own variables."""
    env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k) and not k.startswith("HOLOGRAM_")}
    env.setdefault("LANG", "C.UTF-8")
    env["TERM"] = "dumb"
    env.update(extra or {})
    return env


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    timeout_s: float,
    max_output_bytes: int,
    max_processes: int,
    on_chunk: OnChunk | None = None,
    env: dict[str, str] | None = None,
    rlimits: Sequence[Rlimit] = (),
) -> RunResult:
    """Run `argv` under a guardian; return when its whole process tree is gone.

    A cancelled caller gets a result too, not the CancelledError: the kernel waits a moment for the
    answer to its `$/cancel`, so the model can read what was stopped (hologram.agent.executor)."""
    started = time.monotonic()
    report_read, report_write = os.pipe()
    try:
        process = await asyncio.create_subprocess_exec(
            *guardian_argv(argv, report_fd=report_write, max_processes=max_processes, rlimits=rlimits),
            cwd=str(cwd),
            env=env if env is not None else child_env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C in the plugin's terminal is not the command's business
            pass_fds=(report_write,),
        )
    except BaseException:
        os.close(report_read)
        raise
    finally:
        os.close(report_write)
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
    stopped: str | None = None
    try:
        try:
            await asyncio.wait_for(process.wait(), timeout_s)
        except asyncio.TimeoutError:
            stopped = "timeout"
        except asyncio.CancelledError:
            stopped = "cancelled"
            _uncancel()
        if stopped is not None:
            _signal(process, signal.SIGTERM)  # the guardian kills the tree, reports and exits
        await _reaped(process)
        tree = parse_report(read_report(report_read))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(pumps), DRAIN_S)
    finally:
        os.close(report_read)
        pumps.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pumps
    if tree.reason == "limit":
        stopped = "limit"
    output = kept.decode("utf-8", errors="replace")
    seconds = time.monotonic() - started
    return RunResult(tree.exit_code, output, dropped, stopped, seconds, tree, max_processes)


async def _reaped(process: asyncio.subprocess.Process) -> None:
    """Wait for the guardian to finish its kill; if it hangs (it never should), kill its process group."""
    try:
        await asyncio.wait_for(process.wait(), GUARDIAN_WAIT_S)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()


def _signal(process: asyncio.subprocess.Process, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(number)


def _uncancel() -> None:
    """We answer a cancel with a result instead of re-raising; clear the task's cancel request (3.11+), so
    `asyncio.timeout` scopes further up the handler keep working."""
    task = asyncio.current_task()
    uncancel = getattr(task, "uncancel", None)
    if uncancel is not None:
        uncancel()
