"""code: Python in a limited child process (approval is the kernel's: tests/agent/test_approvals.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.plugins.helpers import harness, ok


def _code(tmp_path: Path, **config: Any) -> PluginHarness:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return harness("code", config={"workspace": str(ws), **config})


async def _run(h: PluginHarness, code: str, call_id: str, **extra: Any) -> str:
    return ok(await h.call_tool("code_run", {"code": code, **extra}, call_id=call_id))


def test_runs_isolated_python_in_the_workspace(tmp_path: Path) -> None:
    program = "import os, sys\nopen('out.txt', 'w').write('hi')\nprint(os.getcwd())\nprint(sys.flags.isolated, '你好')"

    async def go() -> None:
        async with _code(tmp_path) as h:
            result = await _run(h, program, "c1")
            lines = result.splitlines()
            assert lines[0] == str((tmp_path / "ws").resolve())
            assert lines[1] == "1 你好"
            assert "exit code 0" in lines[-1]
            failing = await _run(h, "raise SystemExit('bad input')", "c2")
            assert "bad input" in failing and "exit code 1" in failing

    run(go())
    assert (tmp_path / "ws" / "out.txt").read_text() == "hi"


def test_memory_cpu_time_and_output_limits(tmp_path: Path) -> None:
    async def go() -> None:
        async with _code(tmp_path, memory_mb=200, cpu_s=1, max_output_bytes=2000) as h:
            memory = ok(await h.call_tool("code_run", {"code": "x = bytearray(1024 * 1024 * 1024)\nprint('no')"}))
            assert "MemoryError" in memory and "exit code 1" in memory
            started = time.monotonic()
            # 1 s of CPU takes longer than 1 s of wall time on a busy machine: bounds far from it, and from each other
            cpu = ok(await h.call_tool("code_run", {"code": "while True: pass", "timeout_s": 40}))
            assert "killed by signal" in cpu, cpu
            assert time.monotonic() - started < 20
            wall = ok(await h.call_tool("code_run", {"code": "import time; time.sleep(30)", "timeout_s": 0.5}))
            assert "timed out after 0.5 s" in wall
            big = ok(await h.call_tool("code_run", {"code": "print('y' * 1_000_000)"}))
            assert len(big) < 2200 and "output exceeded 2000 bytes" in big

    run(go())
