"""End to end: `hologram up --watch` adopts a rebuilt lock and the next turn runs the stage hooks in the new
order (the agent re-installs them from ``kernel.lock`` when it changed: `hologram.agent.attach.StageOrderSync`).

Two out-of-process plugins hook ``before_output`` and each appends its tag; editing one manifest's order
moves its tag. Mutation check (done): making `StageOrderSync.__call__` skip re-installing turns this red
(the answer after the edit is still "answer [a] [b]").
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hologram.kernel.control import call
from mock_llm import MockLLM
from tests.kit.wait import wait_until

from .kernel import HOLOGRAM, NOT_YET, E2EKernel, env

pytestmark = pytest.mark.slow

PLUGIN = """
import os
from hologram.sdk import Plugin

NAME = os.environ["ORDER_TAG"]
plugin = Plugin("order-" + NAME)


@plugin.stage("before_output")
def tag(ctx):
    return {"output": ctx["output"] + " [" + NAME + "]"}


if __name__ == "__main__":
    plugin.run()
"""

MANIFEST = """\
[plugin]
name = "order-{tag}"
version = "0.1.0"
description = "appends [{tag}] to the answer"
run = {{ module = "agent_order_plugin", env = {{ PYTHONPATH = "{path}", ORDER_TAG = "{tag}" }} }}

[stages]
before_output = {{ order = {order} }}
"""


class WatchingKernel:
    def __init__(self, root: Path, mock: MockLLM) -> None:
        self.base = E2EKernel(root, [mock])
        self.root = root
        self.manifests = root / "manifests"
        self.code = root / "code"
        self.code.mkdir()
        (self.code / "agent_order_plugin.py").write_text(PLUGIN)
        self.write_manifest("a", 10)
        self.write_manifest("b", 20)
        self.base.hologram("build", "--no-discover", "-m", str(self.manifests), "-o", str(self.base.lock), check=True)
        self.output: list[str] = []
        self.process = subprocess.Popen(
            [*HOLOGRAM, "up", "--port", "0", "--watch", "--lock", str(self.base.lock), "--data", str(self.base.data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env(),
            cwd=root,
        )
        self.base.process = self.process
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_all_ready()

    def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            for line in self.process.stdout:
                self.output.append(line)
        except ValueError:  # the pipe was closed by stop() while this thread was reading: the end
            return

    def write_manifest(self, tag: str, order: int) -> None:
        text = MANIFEST.format(tag=tag, path=self.code, order=order)
        (self.manifests / f"order-{tag}.toml").write_text(text)

    def wait_all_ready(self, timeout: float = 30) -> None:
        def plugin_states() -> dict[str, str]:
            assert self.process.poll() is None, "".join(self.output)
            return {p["name"]: p["state"] for p in call(self.base.data, "status", timeout=2)["plugins"]}

        try:
            wait_until(
                plugin_states, accept=lambda states: states and all(s == "ready" for s in states.values()),
                timeout=timeout, what="the plugins to be ready", interval=0.1, retry_on=NOT_YET,
            )  # fmt: skip
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the kernel printed:\n" + "".join(self.output)) from None

    def wait_output(self, text: str, timeout: float = 30) -> None:
        try:
            wait_until(lambda: any(text in line for line in self.output), timeout=timeout, what=f"{text!r} printed")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the kernel printed:\n{''.join(self.output)}") from None


@pytest.fixture
def kernel(tmp_path: Path, deepseek: MockLLM) -> Iterator[tuple[WatchingKernel, MockLLM]]:
    k = WatchingKernel(tmp_path, deepseek)
    try:
        yield k, deepseek
    finally:
        k.base.stop()


def test_a_manifest_edit_under_watch_reorders_the_hooks_of_the_next_turn(
    kernel: tuple[WatchingKernel, MockLLM],
) -> None:
    k, mock = kernel
    mock.script([{"reasoning_content": "r", "content": "answer"}])
    first = k.base.ask("hi")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "answer [a] [b]"

    k.write_manifest("a", 30)  # a now runs after b
    k.wait_output("watch: lock rebuilt")
    k.wait_all_ready()
    mock.script([{"reasoning_content": "r", "content": "answer"}])
    second = k.base.ask("hi again")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "answer [b] [a]"
    assert mock.rejections == []
