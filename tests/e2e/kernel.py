"""A real `hologram up` for the e2e tests: manifests, lock, settings pointing at strict mocks, the process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from hologram.api import turn as api
from hologram.base.errors import HologramError
from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until

PLUGINS = Path(__file__).resolve().parent / "plugins"
HOLOGRAM = [sys.executable, "-m", "hologram"]

TOOLS_MANIFEST = """\
[plugin]
name = "e2e-tools"
version = "0.1.0"
description = "e2e tools"
run = {{ module = "e2e_tools", env = {{ PYTHONPATH = "{path}" }} }}

[stages]
before_toolcall = {{ order = 10 }}
on_input = {{ order = 10 }}

[[tools]]
name = "lookup"
description = "look x up"
parallel_safe = true
parameters = {{ type = "object", properties = {{ x = {{ type = "integer" }} }}, required = ["x"] }}

[[tools]]
name = "crash"
description = "dies mid-call"
parallel_safe = false
parameters = {{ type = "object", properties = {{ x = {{ type = "integer" }} }}, required = ["x"] }}

[start]
restart = "always"
"""

INPROC_MANIFEST = """\
[plugin]
name = "e2e-inproc"
version = "0.1.0"
description = "e2e in-process hook"
run = { inproc = "e2e_inproc" }

[stages]
before_output = { order = 50 }
"""


def env() -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = os.pathsep.join([str(PLUGINS), out.get("PYTHONPATH", "")])
    return out


# what the control socket raises before the kernel serves it (not bound yet, or not answering yet)
NOT_YET = (HologramError, OSError, ValueError)


def wait_for_graph(process: subprocess.Popen[str], data: Path, timeout: float = 60) -> None:
    """Until every plugin of the kernel `process` serves from `data` is ready; fails if it exits first."""

    def plugin_states() -> dict[str, str]:
        if process.poll() is not None:
            raise AssertionError(f"hologram up exited: {process.stdout.read() if process.stdout else ''}")
        # a `[start] lazy` plugin left for its first tool call counts as up (docs/manifest.md)
        return {
            p["name"]: "ready" if p.get("on_demand") else p["state"] for p in call(data, "status", timeout=5)["plugins"]
        }

    wait_until(
        plugin_states, accept=lambda states: all(s == "ready" for s in states.values()), timeout=timeout,
        what="the kernel's plugins to be ready", interval=0.1, retry_on=NOT_YET,
    )  # fmt: skip


class E2EKernel:
    def __init__(self, root: Path, mocks: list[MockLLM], *, cooldown_s: float = 0.05) -> None:
        self.root = root
        self.data = root / "data"
        self.lock = root / "hologram.lock"
        self.mocks = mocks
        self.process: subprocess.Popen[str] | None = None
        manifests = root / "manifests"
        manifests.mkdir(parents=True, exist_ok=True)
        (manifests / "e2e-tools.toml").write_text(TOOLS_MANIFEST.format(path=PLUGINS))
        (manifests / "e2e-inproc.toml").write_text(INPROC_MANIFEST)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir(exist_ok=True)
        # A provider that failed cools down (llm/health.py) for a moment only: the tests of a module share one
        # kernel, and one test's dead provider must not be skipped in the next test's turn.
        settings = f"[agent]\nmax_steps = 6\n\n[llm]\ncooldown_s = {cooldown_s}\n"
        for i, mock in enumerate(mocks):
            settings += "\n" + provider_toml(mock, f"p{i + 1}")
        write_settings(self.data / "settings.toml", settings)

    def hologram(self, *args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [*HOLOGRAM, *args], capture_output=True, text=True, env=env(), cwd=self.root, timeout=timeout
        )
        if check and result.returncode != 0:
            raise AssertionError(f"hologram {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result

    def ask(self, text: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.hologram("ask", "--data", str(self.data), *extra, text)

    def start(self) -> None:
        self.process = subprocess.Popen(
            [*HOLOGRAM, "up", "--port", "0", "--lock", str(self.lock), "--data", str(self.data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env(),
            cwd=self.root,
        )
        try:
            wait_for_graph(self.process, self.data)
        except BaseException:  # a start that fails (a plugin that never gets ready) must not leave a kernel behind
            self.stop()
            raise

    def status(self) -> dict[str, Any]:
        result: dict[str, Any] = call(self.data, "status")
        return result

    def events(self, session: str) -> dict[str, Any]:
        result: dict[str, Any] = call(self.data, api.SESSIONS_READ, {"session": session})
        return result

    def wait_providers_healthy(self, timeout: float = 30) -> None:
        """Until no provider cools down (a failure in an earlier test made one skip turns for a moment)."""
        wait_until(
            lambda: self.status().get("providers", []), accept=lambda ps: all(p["state"] != "cooling" for p in ps),
            timeout=timeout, what="no provider cooling down",
        )  # fmt: skip

    def wait_ready(self, plugin: str, timeout: float = 15) -> None:
        wait_until(
            lambda: {p["name"]: p["state"] for p in self.status()["plugins"]}.get(plugin),
            accept=lambda state: state == "ready", timeout=timeout, what=f"{plugin} ready again", interval=0.1,
        )  # fmt: skip

    def stop(self) -> str:
        if self.process is None:
            return ""
        self.process.send_signal(signal.SIGINT)
        try:
            # a failure bound: the kernel exits only once its start-up loads (jieba, the embedding model) are done
            out, _ = self.process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        self.process = None
        return out


def session_of(result: subprocess.CompletedProcess[str]) -> str:
    for line in result.stderr.splitlines()[::-1]:
        if line.startswith("session "):
            return line.split()[1]
    raise AssertionError(f"no session id in: {result.stderr}")


def as_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(result.stdout)
    return data
