"""tools/bench/_kernel.py `stop_on_terminate`: a bench tool killed with SIGTERM stops the kernel it started.

A real bench process (a child interpreter running `BenchKernel` as the tools do: start, then work in ``try`` with
``stop`` in ``finally``) and a real `hologram up`; the test sends the tool SIGTERM and waits for the kernel's pid
to be gone. Mutation check (done): `BenchKernel.start` not calling `stop_on_terminate` — red (the kernel outlives
the tool)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")]

TOOL = """
import sys, time
from pathlib import Path
from bench._kernel import BenchKernel
kernel = BenchKernel(Path(sys.argv[1]), "", builtins=True)
try:
    kernel.start(timeout=120)
    print(kernel.status()["kernel"]["pid"], flush=True)
    time.sleep(600)
finally:
    kernel.stop()
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_bench_tool_stopped_by_sigterm_stops_its_kernel(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "tools"), str(root)])}
    tool = subprocess.Popen(
        [sys.executable, "-c", TOOL, str(tmp_path / "k")], stdout=subprocess.PIPE, text=True, env=env
    )
    assert tool.stdout is not None
    kernel_pid = 0
    try:
        kernel_pid = int(tool.stdout.readline())
        assert alive(kernel_pid)
        tool.send_signal(signal.SIGTERM)
        assert tool.wait(timeout=60) == 128 + signal.SIGTERM
        wait_until(lambda: not alive(kernel_pid), timeout=60, what="the kernel gone with its tool")
    finally:
        if tool.poll() is None:
            tool.kill()
            tool.wait()
        if kernel_pid and alive(kernel_pid):  # a failed run leaves no kernel behind: stopped as the tool stops it
            os.kill(kernel_pid, signal.SIGINT)
            wait_until(lambda: not alive(kernel_pid), timeout=60, what="the left kernel stopped")
