"""End to end: a tool call owns its processes when the *kernel* abandons it — a real `hologram up` with the
shell plugin, the strict DeepSeek mock, and `hologram ask` as the client.

- the agent's `tool_timeout_s` (3 s here; the shell's own timeout is 60 s): the kernel sends `$/cancel`,
  the plugin kills the call's tree and answers within the kernel's grace, and the model reads what was
  killed behind the timeout text;
- Ctrl-C of `hologram ask` (SIGINT: it sends `turn/cancel`, the kernel cancels the turn and the call);
- kill -9 of the shell plugin mid-call, and kill -9 of the kernel mid-call (the plugin dies with the
  kernel, the call's guardian with the plugin);
- a concurrent batch of two `parallel_safe` plugin calls past the timeout: each gets its own grace
  (tests/e2e/plugins/e2e_stoppable.py).

Each command starts a background process that has left the command's session and lost its parent —
`(setsid sh -c '…' &)` — so only the guardian can still find it. Each test waits for that process's pid
file before it triggers its path, then waits until the pid and every process with the scenario's marker
are gone, and only then checks that the file the command would have written later is absent.
Shell runs with `mode = "allow"`: approvals are not what these tests are about (tests/e2e/test_tools_e2e.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mock_llm import MockLLM
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until
from tests.proctree import Marker, alive, read_pid

from .kernel import HOLOGRAM, PLUGINS, E2EKernel, env

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TOOL_TIMEOUT_S = 3


class ShellKernel(E2EKernel):
    """`E2EKernel` with just the built-in shell plugin, which runs every call, and a short tool timeout."""

    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): that one builds the e2e plugins
        self.root = root
        self.data = root / "data"
        self.lock = root / "hologram.lock"
        self.mocks = [mock]
        self.process = None
        manifests = root / "manifests"
        manifests.mkdir(parents=True, exist_ok=True)
        copy_shipped("shell", manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir(exist_ok=True)
        write_settings(
            self.data / "settings.toml",
            f"[agent]\nmax_steps = 4\ntool_timeout_s = {TOOL_TIMEOUT_S}\n\n"
            '[plugins.shell]\nmode = "allow"\n\n' + provider_toml(mock),
        )
        self.workspace.mkdir(exist_ok=True)

    @property
    def workspace(self) -> Path:
        return self.data / "workspace"  # the shipped manifest: workspace = "../../workspace"

    def ask_in_background(self, text: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [*HOLOGRAM, "ask", "--data", str(self.data), text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
            cwd=self.root,
        )

    def plugin_pid(self, name: str) -> int:
        pid = next(p["pid"] for p in self.status()["plugins"] if p["name"] == name)
        assert isinstance(pid, int), self.status()
        return pid


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[ShellKernel]:
    k = ShellKernel(tmp_path_factory.mktemp("procs"), mock)
    k.start()
    yield k
    k.stop()


@pytest.fixture
def marker(kernel: ShellKernel, mock: MockLLM) -> Iterator[Marker]:
    mock.reset()
    for name in ("bg.pid", "late"):
        (kernel.workspace / name).unlink(missing_ok=True)
    m = Marker(kernel.workspace)
    yield m
    m.cleanup()


def _script_shell_call(mock: MockLLM, marker: Marker, *, answer: bool = True) -> str:
    command = f"(setsid sh -c '{marker.background()}' &); sleep {marker.sleep}"
    call = {"id": "p1", "name": "shell_run", "arguments": json.dumps({"command": command})}
    mock.script([{"reasoning_content": "run it", "tool_calls": [call]}, *([{"content": "done"}] if answer else [])])
    return command


def _tool_result(mock: MockLLM, call_id: str) -> str:
    messages = mock.requests[-1].body["messages"]
    return str(next(m["content"] for m in messages if m["role"] == "tool" and m["tool_call_id"] == call_id))


def test_the_agents_tool_timeout_stops_the_command_and_the_model_reads_what_was_killed(
    kernel: ShellKernel, mock: MockLLM, marker: Marker
) -> None:
    """Mutation checks (done): `Connection._expire` not sending `$/cancel` — the plugin never hears of the
    timeout, so no report comes within the grace and the model gets the bare timeout text (and the command
    would run on for its own 60 s); a zero grace (`CANCEL_GRACE_S = 0` in agent/executor.py) loses the
    plugin's report the same way."""
    _script_shell_call(mock, marker)
    result = kernel.ask("run the slow thing")
    assert result.returncode == 0, result.stderr
    pid = read_pid(marker.pid_file)
    seen = _tool_result(mock, "p1")
    assert seen.startswith(f"error: shell_run did not answer within {TOOL_TIMEOUT_S} s and was stopped; it reported:")
    assert "[stopped: the call was cancelled;" in seen and f"sh (pid {pid})" in seen, seen
    assert mock.rejections == [], mock.rejections
    marker.assert_all_gone(pid)


def test_ctrl_c_of_hologram_ask_stops_the_command(kernel: ShellKernel, mock: MockLLM, marker: Marker) -> None:
    """SIGINT to `hologram ask` (what Ctrl-C at its terminal sends): `turn/cancel`, the turn and its call are
    cancelled, `$/cancel` reaches the plugin. Mutation check (done): `Connection.request` not sending
    `$/cancel` when its caller is cancelled leaves the command running after `ask` exited 130."""
    _script_shell_call(mock, marker, answer=False)
    ask = kernel.ask_in_background("run the slow thing")
    try:
        pid = read_pid(marker.pid_file)
        ask.send_signal(signal.SIGINT)
        _, stderr = ask.communicate(timeout=30)
    finally:
        if ask.poll() is None:
            ask.kill()
    assert ask.returncode == 130, stderr
    assert "cancelled" in stderr, stderr
    marker.assert_all_gone(pid)
    assert len(mock.requests) == 1 and mock.rejections == []


def test_kill_9_of_the_shell_plugin_mid_call_kills_the_calls_processes(
    kernel: ShellKernel, mock: MockLLM, marker: Marker
) -> None:
    """Mutation check (done): no PR_SET_PDEATHSIG on the guardian leaves the command running to its end."""
    _script_shell_call(mock, marker)
    ask = kernel.ask_in_background("run the slow thing")
    try:
        pid = read_pid(marker.pid_file)
        os.kill(kernel.plugin_pid("shell"), signal.SIGKILL)
        ask.communicate(timeout=60)
    finally:
        if ask.poll() is None:
            ask.kill()
    assert ask.returncode == 0
    assert _tool_result(mock, "p1").startswith("error: plugin shell stopped while running shell_run")
    marker.assert_all_gone(pid)
    kernel.wait_ready("shell", timeout=30)  # restarted under the crash policy, for the next test


def test_kill_9_of_the_kernel_mid_call_kills_the_calls_processes(tmp_path: Path, mock: MockLLM, marker: Marker) -> None:
    """The kernel dies with SIGKILL: its plugins die with it (PR_SET_PDEATHSIG, through the zygote), and the
    call's guardian dies with the plugin — killing the call's tree first. This kernel is the test's own.
    Mutation check (done): no PR_SET_PDEATHSIG on the guardian leaves the command running to its end."""
    own = ShellKernel(tmp_path / "k", mock)
    own.start()
    marker.workspace = own.workspace
    _script_shell_call(mock, marker, answer=False)
    ask = own.ask_in_background("run the slow thing")
    try:
        pid = read_pid(marker.pid_file)
        assert own.process is not None
        shell = own.plugin_pid("shell")
        own.process.kill()  # SIGKILL
        own.process.wait(timeout=30)
        own.process = None
        wait_until(lambda: not alive(shell), timeout=30, what="the shell plugin to die with the kernel")
        marker.assert_all_gone(pid)
    finally:
        ask.kill()
        ask.wait()
        own.stop()


STOPPABLE_MANIFEST = """\
[plugin]
name = "e2e-stoppable"
version = "0.1.0"
description = "a tool that runs until cancelled"
run = {{ module = "e2e_stoppable", env = {{ PYTHONPATH = "{path}" }} }}

[[tools]]
name = "stoppable"
description = "runs until cancelled"
parallel_safe = true
parameters = {{ type = "object", properties = {{ x = {{ type = "integer" }} }}, required = ["x"] }}
"""


class StoppableKernel(E2EKernel):
    """`E2EKernel` with only tests/e2e/plugins/e2e_stoppable.py, and the short tool timeout."""

    def __init__(self, root: Path, mock: MockLLM) -> None:  # no super(): that one builds the e2e plugins
        self.root = root
        self.data = root / "data"
        self.lock = root / "hologram.lock"
        self.mocks = [mock]
        self.process = None
        manifests = root / "manifests"
        manifests.mkdir(parents=True, exist_ok=True)
        (manifests / "e2e-stoppable.toml").write_text(STOPPABLE_MANIFEST.format(path=PLUGINS))
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir(exist_ok=True)
        write_settings(
            self.data / "settings.toml",
            f"[agent]\nmax_steps = 4\ntool_timeout_s = {TOOL_TIMEOUT_S}\n\n" + provider_toml(mock),
        )


def test_a_concurrent_batch_that_times_out_gives_each_plugin_call_its_grace(tmp_path: Path, mock: MockLLM) -> None:
    """Two `parallel_safe` plugin calls in one batch, both past the agent's timeout: each gets `$/cancel` and
    its grace, so the model reads each one's own "stopped" answer (the tool also proves the two ran at
    once). Mutation check (done): the batch deadline cancelling the plugin calls too (as before this change:
    it fires before their RPC timeouts) gives both the bare timeout text."""
    kernel = StoppableKernel(tmp_path, mock)
    mock.reset()
    calls = [{"id": f"s{x}", "name": "stoppable", "arguments": json.dumps({"x": x})} for x in (1, 2)]
    mock.script([{"reasoning_content": "both", "tool_calls": calls}, {"content": "done"}])
    kernel.start()
    try:
        result = kernel.ask("run both")
    finally:
        kernel.stop()
    assert result.returncode == 0, result.stderr
    for x in (1, 2):
        seen = _tool_result(mock, f"s{x}")
        stopped = f"error: stoppable did not answer within {TOOL_TIMEOUT_S} s and was stopped; it reported:\n"
        assert seen == f"{stopped}stopped x={x} (2 running at once)", seen
    assert mock.rejections == []
