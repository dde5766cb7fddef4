"""`hologram up | tee` and then Ctrl-C (issue 41 item 6): the interrupt reaches the whole process group, so
`tee` is gone before the kernel has stopped its plugins, and each line the kernel then writes meets a closed
pipe. The kernel must stop as it would have — every plugin stopped, "kernel stopped" in the log, exit 0 —
with no traceback anywhere in the log (it had 14-16 ``BrokenPipeError`` tracebacks), and say once that the
terminal went away.

Mutation checked: `Progress` printing with ``print(..., flush=True)`` instead of `say` — the supervisor logs a
"state listener failed" traceback per state change.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import HOLOGRAM, NOT_YET, E2EKernel, env

pytestmark = pytest.mark.slow


def test_up_piped_to_tee_stops_cleanly_when_ctrl_c_reaches_the_group(tmp_path: Path, mock: MockLLM) -> None:
    kernel = E2EKernel(tmp_path, [mock])
    copy, code_file = tmp_path / "up.txt", tmp_path / "up.code"
    up = [*HOLOGRAM, "up", "--port", "0", "--lock", str(kernel.lock), "--data", str(kernel.data)]
    # a shell pipeline in its own session and process group, as at a terminal; the subshell keeps up's status
    pipeline = '( "${@:3}"; echo $? > "$2" ) 2>&1 | tee "$1" > /dev/null'
    shell = subprocess.Popen(
        ["bash", "-c", pipeline, "bash", str(copy), str(code_file), *up], env=env(), cwd=tmp_path,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_until(
            lambda: call(kernel.data, "status", timeout=5)["plugins"],
            accept=lambda plugins: all(p["state"] == "ready" or p.get("on_demand") for p in plugins),
            timeout=60, what="every plugin ready", retry_on=NOT_YET,
        )  # fmt: skip
        wait_until(lambda: "Hologram is up" in copy.read_text(), timeout=60, what="the summary line through tee")
        # "ready" comes after the start-up loads and the heap's freeze, not beside them (issue 39 item 9: the
        # first answer after it as fast as a warm one); the kernel sets heap_frozen just before the line
        assert call(kernel.data, "status", timeout=5)["kernel"]["heap_frozen"] > 0
        os.killpg(shell.pid, signal.SIGINT)  # Ctrl-C at the terminal: the whole group, tee included
        shell.wait(timeout=60)
        code = wait_until(lambda: code_file.read_text().strip(), timeout=60, what="hologram up's exit status")
    finally:
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
    [log] = (kernel.data / "logs").glob("hologram-*.log")
    text = log.read_text()
    assert "Traceback" not in text and "BrokenPipe" not in text, text[-3000:]
    assert "the terminal's stdout closed" in text, text[-3000:]  # the path under test was taken
    assert "kernel stopped" in text, text[-3000:]
    assert code == "0", code
