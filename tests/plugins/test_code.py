"""code: Python in a limited child process, behind the same approval policy as shell."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.plugins.helpers import err, harness, ok


def _code(tmp_path: Path, approved: bool = True, **config: Any) -> PluginHarness:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)

    def approve(caller: str, **params: Any) -> dict[str, Any]:
        return {"approved": approved, "reason": "" if approved else "no"}

    return harness("code", config={"workspace": str(ws), **config}, provide={"kernel.sessions": {"approve": approve}})


async def _approved(h: PluginHarness, code: str, call_id: str, **extra: Any) -> str:
    context = {"tool": "code_run", "arguments": {"code": code, **extra}, "call_id": call_id, "session_id": "s"}
    assert await h.call_stage("before_toolcall", context) is None
    return ok(await h.call_tool("code_run", {"code": code, **extra}, call_id=call_id))


def test_runs_isolated_python_in_the_workspace(tmp_path: Path) -> None:
    program = "import os, sys\nopen('out.txt', 'w').write('hi')\nprint(os.getcwd())\nprint(sys.flags.isolated, '你好')"

    async def go() -> None:
        async with _code(tmp_path) as h:
            result = await _approved(h, program, "c1")
            lines = result.splitlines()
            assert lines[0] == str((tmp_path / "ws").resolve())
            assert lines[1] == "1 你好"
            assert "exit code 0" in lines[-1]
            failing = await _approved(h, "raise SystemExit('bad input')", "c2")
            assert "bad input" in failing and "exit code 1" in failing

    run(go())
    assert (tmp_path / "ws" / "out.txt").read_text() == "hi"


def test_code_without_approval_is_refused(tmp_path: Path) -> None:
    """Mutation-checked: with `refusal()` returning None the direct call runs and creates the file."""

    async def go() -> None:
        async with _code(tmp_path, approved=False) as h:
            program = "open('pwned', 'w').write('x')"
            context = {"tool": "code_run", "arguments": {"code": program}, "call_id": "c1"}
            verdict = await h.call_stage("before_toolcall", context)
            assert verdict == {"deny": "the user did not approve this code_run call: no"}
            assert "refused" in err(await h.call_tool("code_run", {"code": program}, call_id="c1"))

    run(go())
    assert not (tmp_path / "ws" / "pwned").exists()


def test_memory_cpu_time_and_output_limits(tmp_path: Path) -> None:
    async def go() -> None:
        async with _code(tmp_path, mode="allow", memory_mb=200, cpu_s=1, max_output_bytes=2000) as h:
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


def test_deny_mode(tmp_path: Path) -> None:
    async def go() -> None:
        async with _code(tmp_path, mode="deny") as h:
            context = {"tool": "code_run", "arguments": {"code": "1"}, "call_id": "c1"}
            assert await h.call_stage("before_toolcall", context) == {
                "deny": "code_run is disabled by policy (mode = deny)"
            }
            assert "mode = deny" in err(await h.call_tool("code_run", {"code": "1"}, call_id="c1"))

    run(go())
