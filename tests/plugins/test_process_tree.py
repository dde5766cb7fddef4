"""A tool call owns its processes: shell_run and code_run kill the call's whole process tree, through the
real plugin process (PluginHarness), with real commands that try to escape it.

Every scenario proves it took its path (its background process wrote its pid before the kill; the result
names that pid), then waits until that pid and every process carrying the scenario's marker are gone, and
only then checks that the file the command would have written later is absent (tests/proctree.py).
The kernel-side paths (the agent's tool timeout, Ctrl-C of `hologram ask`, kill -9 of the kernel) are in
tests/e2e/test_tool_processes_e2e.py.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hologram.rpc import ConnectionClosed
from hologram.sdk.testing import PluginHarness
from tests.kit.loop import run
from tests.plugins.helpers import harness, ok
from tests.proctree import Marker, read_pid

pytestmark = pytest.mark.slow


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[Marker]:
    ws = tmp_path / "ws"
    ws.mkdir()
    m = Marker(ws)
    yield m
    m.cleanup()


def _plugin(name: str, marker: Marker, **config: Any) -> PluginHarness:
    return harness(name, config={"workspace": str(marker.workspace), "mode": "allow", **config})


def _wait_started(marker: Marker) -> str:
    """Shell: block until the background process wrote its pid (so it runs before whatever stops the call)."""
    return f"while [ ! -s {marker.pid_file.name} ]; do sleep 0.01; done; echo started"


def test_shell_timeout_kills_a_setsid_process_whose_parent_already_exited(marker: Marker) -> None:
    """`(setsid sh -c … &)`: the subshell exits at once, so the sh is an orphan in a session of its own —
    outside the command's process group, and without the guardian re-parented to PID 1. The shell's own
    timeout must still kill it. Mutation check (done): not setting PR_SET_CHILD_SUBREAPER in guardian.main
    lets the sh and its sleep run on (the process group kill before this change did not reach them either);
    that mutation turns every test of this module red except the last two."""
    command = f"(setsid sh -c '{marker.background()}' &); {_wait_started(marker)}; sleep {marker.sleep}"

    async def go() -> str:
        async with _plugin("shell", marker) as h:
            return ok(await h.call_tool("shell_run", {"command": command, "timeout_s": 3}))

    result = run(go())
    pid = read_pid(marker.pid_file)
    assert result.startswith("started\n"), result
    assert "[timed out after 3 s;" in result and f"sh (pid {pid})" in result, result
    marker.assert_all_gone(pid)


def test_code_run_kills_a_new_session_child_it_left_running(marker: Marker) -> None:
    """`subprocess.Popen(..., start_new_session=True)` and exit: the snippet ends normally, its child lives
    on in its own session. It is killed when the call returns, and the result says so.
    Mutation check (done): without PR_SET_CHILD_SUBREAPER the child is re-parented to PID 1 and survives."""
    code = (
        "import os, subprocess, time\n"
        f"subprocess.Popen(['sh', '-c', {marker.background()!r}], start_new_session=True)\n"
        f"while not os.path.exists({marker.pid_file.name!r}) or not open({marker.pid_file.name!r}).read().strip():\n"
        "    time.sleep(0.01)\n"
        "print('started')\n"
    )

    async def go() -> str:
        async with _plugin("code", marker) as h:
            return ok(await h.call_tool("code_run", {"code": code}))

    result = run(go())
    pid = read_pid(marker.pid_file)
    assert result.startswith("started\n") and "[exit code 0;" in result, result
    assert "left running in the background: " in result and f"sh (pid {pid})" in result, result
    marker.assert_all_gone(pid)


def test_code_run_kills_a_double_forked_daemon(marker: Marker) -> None:
    """The classic daemon: fork, setsid, fork again, the middle process exits — the grandchild has no parent
    in the call and a session of its own. Mutation check (done): without PR_SET_CHILD_SUBREAPER it survives;
    with the guardian skipping its kill when the command exits normally, it survives too."""
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sh', ['sh', '-c', {marker.background()!r}])\n"
        "    os._exit(0)\n"
        "os.wait()\n"
        f"while not os.path.exists({marker.pid_file.name!r}) or not open({marker.pid_file.name!r}).read().strip():\n"
        "    time.sleep(0.01)\n"
        "print('started')\n"
    )

    async def go() -> str:
        async with _plugin("code", marker) as h:
            return ok(await h.call_tool("code_run", {"code": code}))

    result = run(go())
    pid = read_pid(marker.pid_file)
    assert result.startswith("started\n") and "[exit code 0;" in result, result
    assert f"sh (pid {pid})" in result and "left running in the background" in result, result
    marker.assert_all_gone(pid)


def test_a_cancelled_call_kills_its_tree(marker: Marker) -> None:
    """The caller of `tool/invoke` is cancelled mid-call (what the kernel does when a turn is cancelled):
    `$/cancel` reaches the plugin, the SDK cancels the tool's handler, and the runner has the guardian kill
    the tree — long before the command's own 60 s timeout. Mutation checks (done): `Connection.request`
    not sending `$/cancel` when cancelled, or `Connection._on_cancel` ignoring it, leaves the command
    running (and writing the late file)."""
    command = f"(setsid sh -c '{marker.background()}' &); sleep {marker.sleep}"

    async def go() -> None:
        async with _plugin("shell", marker) as h:
            call = asyncio.ensure_future(h.call_tool("shell_run", {"command": command}))
            await asyncio.to_thread(read_pid, marker.pid_file)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            await asyncio.to_thread(marker.assert_all_gone, read_pid(marker.pid_file))

    run(go())


def test_a_timed_out_invoke_gets_the_plugins_report_of_what_it_stopped(marker: Marker) -> None:
    """The kernel's tool timeout at the protocol level: `request(timeout, grace)` cancels, and the plugin's
    answer to the cancel — the result naming what it killed — arrives as `RequestTimeout.answer`.
    (The agent's use of it, through `hologram up`, is tests/e2e/test_tool_processes_e2e.py.)
    Mutation check (done): `Connection._expire` not sending `$/cancel` leaves the call running: no answer
    within the grace, and the processes live on."""
    from hologram.base import protocol
    from hologram.rpc import RequestTimeout

    command = f"(setsid sh -c '{marker.background()}' &); sleep {marker.sleep}"

    async def go() -> Any:
        async with _plugin("shell", marker) as h:
            connection = h.plugin.runtime.connection  # type: ignore[union-attr]
            params = {"name": "shell_run", "arguments": {"command": command}, "call_id": "c1", "session_id": "s"}
            with pytest.raises(RequestTimeout) as caught:
                await connection.request(protocol.TOOL_INVOKE, params, timeout=3, grace=20)
            return caught.value.answer

    answer = run(go())
    pid = read_pid(marker.pid_file)
    assert isinstance(answer, dict), answer
    assert "[stopped: the call was cancelled;" in answer["content"] and f"sh (pid {pid})" in answer["content"], answer
    marker.assert_all_gone(pid)


def test_kill_9_of_the_plugin_mid_call_kills_the_calls_tree(marker: Marker) -> None:
    """The shell plugin is SIGKILLed while its command runs: nothing in the plugin can react, so the
    guardian's death signal (PR_SET_PDEATHSIG=SIGTERM on the plugin) must.
    Mutation check (done): dropping `prctl(PR_SET_PDEATHSIG, SIGTERM)` in guardian.main leaves the guardian
    waiting and the command running to its end (the late file appears)."""
    command = f"(setsid sh -c '{marker.background()}' &); sleep {marker.sleep}"

    async def go() -> None:
        async with _plugin("shell", marker) as h:
            call = asyncio.ensure_future(h.call_tool("shell_run", {"command": command}))
            pid = await asyncio.to_thread(read_pid, marker.pid_file)
            plugin_pid = h.plugin.pid
            assert plugin_pid is not None
            os.kill(plugin_pid, signal.SIGKILL)
            with pytest.raises(ConnectionClosed):
                await call
            await asyncio.to_thread(marker.assert_all_gone, pid)

    run(go())


def test_code_run_stops_a_fork_loop_at_max_processes(marker: Marker) -> None:
    """150 forked children that all stay alive: past 64 (the default `max_processes`) the call is stopped and
    every one is killed — long before the 20 s timeout. That more than 64 existed is in the report (it
    killed them). Mutation checks (done): a guardian that never checks the limit runs into the timeout
    ("timed out after 20 s"), and 150 forks succeed, as in the issue; without PR_SET_CHILD_SUBREAPER,
    children forked between the guardian's scan and its kill are orphaned to PID 1 and survive."""
    code = (
        "import os, time\n"
        "for i in range(150):\n"
        "    if os.fork() == 0:\n"
        f"        time.sleep({marker.sleep})\n"
        "        os._exit(0)\n"
        "print('forked all')\n"
        f"time.sleep({marker.sleep})\n"
        f"open({marker.late_file.name!r}, 'w').close()\n"
    )

    async def go() -> tuple[str, float]:
        async with _plugin("code", marker) as h:
            started = time.monotonic()
            result = ok(await h.call_tool("code_run", {"code": code, "timeout_s": 20}))
            return result, time.monotonic() - started

    result, seconds = run(go())
    assert "[stopped: more than 64 processes at once (config max_processes);" in result, result
    killed = re.search(r"killed (\d+) processes: ", result)
    assert killed is not None and int(killed.group(1)) > 64, result
    assert seconds < 20, seconds
    marker.assert_all_gone(-1)


def test_shell_max_processes_comes_from_the_config(marker: Marker) -> None:
    """shell's limit (default 256) is `max_processes` in its config; 20 background sleeps pass 8.
    Mutation check (done): the guardian not checking the limit turns it red."""
    command = f"for i in $(seq 20); do sleep {marker.sleep} & done; wait"

    async def go() -> str:
        async with _plugin("shell", marker, max_processes=8) as h:
            return ok(await h.call_tool("shell_run", {"command": command, "timeout_s": 20}))

    result = run(go())
    assert "[stopped: more than 8 processes at once (config max_processes);" in result, result
    marker.assert_all_gone(-1)


def test_a_quick_command_reports_nothing_killed(marker: Marker) -> None:
    """The common case: nothing left behind, nothing in the footer about killing (and no /proc scan). `yes`
    dies of SIGPIPE as in a terminal — the guardian's Python ignores SIGPIPE, the command must not: with the
    signal left ignored, `yes` prints "Broken pipe" and the footer gets an error exit."""

    async def go() -> str:
        async with _plugin("shell", marker) as h:
            return ok(await h.call_tool("shell_run", {"command": "echo hi; yes | head -1"}))

    result = run(go())
    assert re.fullmatch(r"hi\ny\n\[exit code 0; \d+\.\d\d s\]", result), result
