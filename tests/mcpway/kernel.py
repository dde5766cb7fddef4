"""A real `hologram up` with the shipped ``mcp`` plugin and the fixture MCP server (fixture_server.py) twice:
``fix`` over stdio (the plugin starts it) and ``web`` over streamable HTTP (the test starts it, on a free port).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.e2e.kernel import HOLOGRAM, E2EKernel, env
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until

FIXTURE = Path(__file__).resolve().parent / "fixture_server.py"
APPROVAL_TIMEOUT_S = 30  # a failure bound: the tests answer at once


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpFixture:
    """fixture_server.py --http PORT as a process of the test (killed and started again by the tests)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / "web.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        environment = {**os.environ, "FIXTURE_LOG": str(self.log)}
        self.process = subprocess.Popen(
            [sys.executable, str(FIXTURE), "--http", str(self.port)],
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        def listening() -> bool:
            if self.process is not None and self.process.poll() is not None:
                raise AssertionError(f"the HTTP fixture exited: {self.process.returncode}")
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True

        wait_until(listening, timeout=30, what="the HTTP fixture to listen", retry_on=(OSError,))

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


class McpKernel(E2EKernel):
    """`hologram up` with the mcp plugin configured for ``fix`` (stdio) and ``web`` (HTTP)."""

    def __init__(self, root: Path, mock: MockLLM, web: HttpFixture) -> None:
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        self.pid_file, self.fix_log = root / "fix.pid", root / "fix.log"
        manifests = root / "manifests"
        copy_shipped("mcp", manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        write_settings(
            self.data / "settings.toml",
            f"[agent]\nmax_steps = 4\n\n[approvals]\ntimeout_s = {APPROVAL_TIMEOUT_S}\n\n"
            '[approvals.tools.mcp_fix_picture]\nmode = "allow"\n\n'  # the policy lets one tool run unasked
            "[plugins.mcp]\nretry_max_s = 2\npoll_s = 60\n\n"  # a change within 10 s is announced, not polled
            f"[plugins.mcp.servers.fix]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(FIXTURE))}]\n"
            f"env = {{ FIXTURE_PID_FILE = {json.dumps(str(self.pid_file))}, FIXTURE_LOG = {json.dumps(str(self.fix_log))} }}\n\n"
            # the same server over the initialize handshake (MCP before 2026-07-28): list_changed notifications
            f"[plugins.mcp.servers.old]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(FIXTURE))}]\n"
            'protocol = "legacy"\n\n'
            f"[plugins.mcp.servers.web]\nurl = {json.dumps(web.url)}\ntoken = 'not-checked-by-the-fixture'\n\n"
            + provider_toml(mock, "mock"),
        )

    def mcp_plugin(self) -> dict[str, Any]:
        [plugin] = [p for p in self.status()["plugins"] if p["name"] == "mcp"]
        return plugin

    def wait_tools(self, *names: str, present: bool = True, status: str = "", timeout: float = 60) -> dict[str, Any]:
        """Until every one of ``names`` is (or none is) a tool of the running mcp plugin, and its status line
        contains ``status``."""
        return wait_until(
            self.mcp_plugin,
            accept=lambda p: all((n in p["tools"]) == present for n in names) and status in p["status"],
            timeout=timeout,
            what=f"{names} {'registered' if present else 'gone'} and the status saying {status!r}",
            interval=0.1,
        )

    def fix_calls(self) -> list[str]:
        return self.fix_log.read_text().splitlines() if self.fix_log.exists() else []

    def fix_pids(self) -> tuple[int, int]:
        """(the stdio fixture server, the child it started in a session of its own)."""
        server, child = self.pid_file.read_text().split()
        return int(server), int(child)

    def kill_fix_server(self) -> int:
        """SIGKILL the stdio fixture server itself (not its guardian); returns its pid."""
        pid = self.fix_pids()[0]
        os.kill(pid, signal.SIGKILL)
        return pid


def hologram_mcp_argv(data: Path) -> list[str]:
    """`hologram mcp --data DIR` as this interpreter runs it (what an MCP client's config starts)."""
    return [*HOLOGRAM, "mcp", "--data", str(data)]


__all__ = ["APPROVAL_TIMEOUT_S", "HttpFixture", "McpKernel", "call", "env", "hologram_mcp_argv"]
