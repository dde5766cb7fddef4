"""shell: workspace, timeout, output cap, streaming — through the real protocol. Whether a call may run at all is
the kernel's decision before the plugin sees it (tests/agent/test_approvals.py, tests/e2e/test_approvals_e2e.py)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hologram.rpc import RingReader
from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.kit.wait import wait_until
from tests.plugins.helpers import harness, ok


def _shell(tmp_path: Path, **config: Any) -> PluginHarness:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return harness("shell", config={"workspace": str(ws), **config})


async def _run(h: PluginHarness, command: str, call_id: str, **extra: Any) -> dict[str, Any]:
    """What the kernel sends once the call is approved (approval itself: tests/agent/test_approvals.py)."""
    return await h.call_tool("shell_run", {"command": command, **extra}, call_id=call_id, session_id="s1")


def test_runs_in_the_workspace_streaming_output(tmp_path: Path) -> None:

    async def go() -> None:
        async with _shell(tmp_path) as h:
            events = RingReader(h.ring.spec(), types=["tool_output"])
            result = ok(await _run(h, "pwd; echo hello; echo oops >&2; exit 3", "c1"))
            assert result.splitlines()[0] == str((tmp_path / "ws").resolve())
            assert "hello" in result and "oops" in result and "exit code 3" in result
            streamed = [e.data() for e in events.read().events]
            assert {e["stream"] for e in streamed} == {"stdout", "stderr"}
            assert all(e["call_id"] == "c1" and e["source"] == "shell" for e in streamed)
            assert "hello" in "".join(e["text"] for e in streamed if e["stream"] == "stdout")
            events.close()

    run(go())


def test_a_call_with_an_explicit_null_argument_runs(tmp_path: Path) -> None:
    """Models often send optional arguments as null; the call runs with the default timeout."""

    async def go() -> None:
        async with _shell(tmp_path) as h:
            result = ok(await _run(h, "echo with-null", "c1", timeout_s=None))
            assert "with-null" in result

    run(go())


def _alive(pid: int) -> bool:
    """Running (a zombie left for a reaper that does not reap counts as gone)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    """The background job dies with the command at the timeout. Checked on the job's process itself: the file
    it would touch comes only after 300 s, so its absence a moment later proves nothing by itself. The
    timeout (2 s) leaves the command ample time to have started its job; 30 s of ``sleep`` stay far past it."""

    async def go() -> None:
        async with _shell(tmp_path) as h:
            started = time.monotonic()
            command = "(sleep 300; touch late) & echo $! > job.pid; sleep 30"
            result = ok(await _run(h, command, "c1", timeout_s=2))
            assert time.monotonic() - started < 20
            assert "timed out after 2 s" in result

    run(go())
    job = int((tmp_path / "ws" / "job.pid").read_text())
    # a failure bound: SIGKILL to the group is immediate
    wait_until(lambda: not _alive(job), timeout=30, what="the background job to die with the timed-out command")
    assert not (tmp_path / "ws" / "late").exists()


def test_oversized_output_is_capped(tmp_path: Path) -> None:
    """A megabyte of output comes back as at most the cap plus a footer saying how much was dropped.

    Mutation-checked: keeping every chunk in runner.pump (ignoring `room`) fails the length assertion.
    """

    async def go() -> None:
        async with _shell(tmp_path, max_output_bytes=1000) as h:
            result = ok(await _run(h, "head -c 1000000 /dev/zero | tr '\\0' a", "c1"))
            assert len(result) < 1200
            assert result.startswith("a" * 1000)
            assert "output exceeded 1000 bytes; 999000 more bytes were dropped" in result

    run(go())


def test_secrets_are_not_in_the_command_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin starts from a scrubbed environment (supervisor/environment.py): a provider key and a
    variable nobody passed never reach a command; what a program needs to run (here an LC_ variable) does."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-secret")
    monkeypatch.setenv("UNPASSED_SETTING", "leaked")
    monkeypatch.setenv("LC_HOLOGRAM_TEST", "visible")

    async def go() -> None:
        async with _shell(tmp_path) as h:
            command = "echo ${DEEPSEEK_API_KEY:-none} ${UNPASSED_SETTING:-scrubbed} $LC_HOLOGRAM_TEST"
            result = ok(await _run(h, command, "c1"))
            assert result.startswith("none scrubbed visible"), result

    run(go())
