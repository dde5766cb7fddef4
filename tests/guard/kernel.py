"""The default graph under a real `hologram up`, for the guards: every shipped plugin, the strict mock as its
only provider, and counts read from /proc (open file descriptors and PSS of the kernel's whole process tree).

The graph is what `hologram build` locks on a user's machine (the built-in manifests, discovered as users get
them), so a guard measures what users run; only the provider differs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from bench.proctree import tree
from mock_llm import MockLLM
from tests.e2e.kernel import wait_for_graph
from tests.kit.providers import provider_toml, write_settings

HOLOGRAM = [sys.executable, "-m", "hologram"]
CONTEXT_WINDOW = 4000  # tokens: small, so pruning and cold context run within a short soak, as in a long one


def pss_kb(pid: int) -> int:
    """Proportional set size in kB (/proc/PID/smaps_rollup): shared pages counted once across the tree."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/smaps_rollup has no Pss line")


def open_fds(pid: int) -> list[str]:
    """What each open descriptor of `pid` points at (so a failure can say what leaked)."""
    out = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed between listing and reading
            out.append(os.readlink(fd))
    return out


class GuardKernel:
    """`hologram build` (built-ins) + `hologram up` in `root`, talking to `mock`."""

    def __init__(self, root: Path, mock: MockLLM) -> None:
        self.root, self.mock = root, mock
        self.data, self.lock = root / "data", root / "hologram.lock"
        self.process: subprocess.Popen[str] | None = None
        self._output: IO[str] | None = None
        subprocess.run([*HOLOGRAM, "build", "-o", str(self.lock)], cwd=root, check=True, capture_output=True)
        write_settings(
            self.data / "settings.toml",
            "[agent]\nmax_steps = 4\n\n" + provider_toml(mock, "mock", context_window=CONTEXT_WINDOW),
        )

    def start(self, *, python_options: Sequence[str] = (), output: Path | None = None) -> None:
        """`python_options`: the interpreter's (``-X importtime``); `output`: a file for what the kernel
        prints, instead of a pipe that is read at `stop` (a verbose kernel would fill the pipe and stall)."""
        sink: IO[str] | int = subprocess.PIPE
        if output is not None:
            sink = self._output = output.open("w", encoding="utf-8")
        up = [sys.executable, *python_options, "-m", "hologram", "up", "--port", "0"]
        self.process = subprocess.Popen(
            [*up, "--lock", str(self.lock), "--data", str(self.data)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=self.root,
        )
        wait_for_graph(self.process, self.data)

    @property
    def pid(self) -> int:
        assert self.process is not None, "the kernel is not running"
        return self.process.pid

    def pss_kb(self) -> int:
        total = 0
        for pid in tree(self.pid):
            with contextlib.suppress(OSError):
                total += pss_kb(pid)
        return total

    def fds(self) -> dict[int, list[str]]:
        """Open descriptors per process of the tree."""
        out = {}
        for pid in tree(self.pid):
            with contextlib.suppress(OSError):
                out[pid] = open_fds(pid)
        return out

    def stop(self) -> str:
        if self.process is None:
            return ""
        self.process.send_signal(signal.SIGINT)
        try:
            out, _ = self.process.communicate(timeout=60)  # a failure bound: start-up loads finish first
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        self.process = None
        if self._output is not None:
            self._output.close()
            self._output = None
        return out or ""
