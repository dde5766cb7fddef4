"""Checking from outside that a tool call's processes are gone: by pid, and by a marker in their command line.

Each scenario puts a unique marker into everything it starts (`Marker.sleep` is a `sleep` duration nobody
else uses, e.g. `134.052117`, so it appears in the command line of the sleep, of the shell running it and of
a Python snippet containing it) and has its background process write its pid to a file first. A test then
waits for the pid file (the process really started), triggers the path it tests, and waits — with a
generous deadline, polling with `tests.kit.wait.wait_until`, never a fixed sleep — until neither the pid nor
any process with the marker is alive. Only then does it check that the file the command would have written
afterwards is absent.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from dataclasses import dataclass
from pathlib import Path

from tests.kit.wait import wait_until

DEADLINE_S = 30.0  # a failure deadline, not an expected duration: the kill itself takes milliseconds


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split(b" ", 1)[0].decode()


def alive(pid: int) -> bool:
    """Running (or stopped), not gone and not a zombie."""
    return _state(pid) not in (None, "Z", "X")


def pids_with(marker: str) -> list[int]:
    """Live processes whose command line contains `marker` (this test process excluded)."""
    needle = marker.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and alive(int(name)):
            found.append(int(name))
    return found


def read_pid(path: Path, timeout: float = DEADLINE_S) -> int:
    """The pid a background process wrote to `path` (waits for it: proof the process started)."""
    wait_until(
        lambda: path.exists() and path.read_text().strip().isdigit(), timeout=timeout, what=f"{path.name} written"
    )
    return int(path.read_text().strip())


@dataclass
class Marker:
    """A unique `sleep` duration, and where its scenario's files go."""

    workspace: Path
    sleep: str = ""

    def __post_init__(self) -> None:
        self.sleep = self.sleep or f"134.{secrets.randbelow(10**6):06d}"

    @property
    def pid_file(self) -> Path:
        return self.workspace / "bg.pid"

    @property
    def late_file(self) -> Path:
        return self.workspace / "late"

    def background(self) -> str:
        """A shell snippet: write our pid, sleep, then write the late file (what must never happen)."""
        return f"echo $$ > {self.pid_file.name}; sleep {self.sleep}; touch {self.late_file.name}"

    def assert_all_gone(self, pid: int, timeout: float = DEADLINE_S) -> None:
        """Wait until `pid` and every process with the marker are gone, then check nothing wrote the late file."""
        wait_until(
            lambda: [p for p in [pid] if alive(p)] + pids_with(self.sleep),
            accept=lambda living: not living,
            timeout=timeout,
            what=f"the call's processes to die (pid {pid} and marker {self.sleep})",
        )
        assert not self.late_file.exists(), "the command went on after it was supposedly killed"

    def cleanup(self) -> None:
        """After a failed test: kill what this scenario started (only processes carrying its marker)."""
        for pid in pids_with(self.sleep):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def __str__(self) -> str:
        return f"marker {self.sleep}: alive {pids_with(self.sleep)}"
