"""`make up`'s exact path: `hologram build` then `hologram up` in a directory, with every default — the lock
at ./hologram.lock and the data directory ./.hologram, *relative* — and the built-in plugins.

The fault this guards against (issue 10): each plugin runs in its own working directory and re-resolved the
relative data path from there, so `files_write` wrote into `.hologram/plugins/files/.hologram/workspace/`
while `shell_run` ran in `.hologram/plugins/shell/.hologram/workspace/` and could not see the file, and a
note made under the default was invisible after a restart with the directory written absolute. Tests that
pass absolute paths never saw it.

Mutation check (done): `prepare_data_dir` and `Kernel` not resolving the data directory turns both tests
red (shell and code do not see the file; the workspace appears nested under `plugins/`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings

from .kernel import env, wait_for_graph

pytestmark = pytest.mark.slow

HOLOGRAM = [sys.executable, "-m", "hologram"]


def tool_call(call_id: str, name: str, **arguments: Any) -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": json.dumps(arguments)}


class DefaultUp:
    """`hologram up` with no --lock and no --data, in `root` (as `make up` runs it in the checkout)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.process: subprocess.Popen[str] | None = None

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*HOLOGRAM, *args], capture_output=True, text=True, env=env(), cwd=self.root, timeout=60)

    def start(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [*HOLOGRAM, "up", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env(),
            cwd=self.root,
        )
        wait_for_graph(self.process, self.root / ".hologram")

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.communicate()
            self.process = None

    def ask(self, text: str, *args: str) -> dict[str, Any]:
        result = self.run("ask", "--json", *args, text)
        assert result.returncode == 0, result.stderr
        answer: dict[str, Any] = json.loads(result.stdout)
        return answer


@pytest.fixture
def up(tmp_path: Path, mock: MockLLM) -> Iterator[DefaultUp]:
    root = tmp_path / "checkout"
    root.mkdir()
    kernel = DefaultUp(root)
    built = kernel.run("build")
    assert built.returncode == 0, built.stderr
    data = root / ".hologram"
    data.mkdir(mode=0o700)
    write_settings(
        data / "settings.toml",
        "[agent]\nmax_steps = 8\n\n"
        + provider_toml(mock)
        + '\n[plugins.shell]\nmode = "allow"\n\n[plugins.code]\nmode = "allow"\n',
    )
    mock.reset()
    yield kernel
    kernel.stop()


def tool_results(mock: MockLLM) -> dict[str, str]:
    body = mock.requests[-1].body
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}


def test_files_shell_and_code_share_one_workspace_under_the_default_relative_data_dir(
    up: DefaultUp, mock: MockLLM
) -> None:
    up.start()
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [tool_call("w", "files_write", path="hello.txt", content="hi there\n")],
            },
            {"reasoning_content": "r", "tool_calls": [tool_call("s", "shell_run", command="ls; cat hello.txt; pwd")]},
            {
                "reasoning_content": "r",
                "tool_calls": [tool_call("c", "code_run", code="print(open('hello.txt').read())")],
            },
            {"reasoning_content": "r", "content": "done"},
        ]
    )
    answer = up.ask("write a file and look at it")
    assert answer["output"] == "done", answer
    assert mock.rejections == []
    seen = tool_results(mock)
    workspace = (up.root / ".hologram" / "workspace").resolve()
    assert (workspace / "hello.txt").read_text() == "hi there\n"  # files wrote where the data dir says
    assert "hello.txt" in seen["s"] and "hi there" in seen["s"], seen["s"]  # shell sees it ...
    assert str(workspace) in seen["s"], seen["s"]  # ... from the one workspace
    assert "hi there" in seen["c"] and "[exit code 0" in seen["c"], seen["c"]  # code reads it
    nested = list((up.root / ".hologram" / "plugins").rglob(".hologram"))
    assert nested == [], f"a plugin re-resolved the relative data dir: {nested}"


def test_a_note_made_under_the_default_survives_a_restart_with_the_directory_written_absolute(
    up: DefaultUp, mock: MockLLM
) -> None:
    up.start()
    mock.script(
        [
            {
                "reasoning_content": "r",
                "tool_calls": [tool_call("n", "notes_create", title="Trip", body="Lisbon in May")],
            },
            {"reasoning_content": "r", "content": "noted"},
        ]
    )
    assert up.ask("note my trip")["output"] == "noted"
    up.stop()

    absolute = str((up.root / ".hologram").resolve())
    assert os.path.isabs(absolute)
    up.start("--data", absolute)
    mock.reset()
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [tool_call("l", "notes_search", query="Lisbon")]},
            {"reasoning_content": "r", "content": "found"},
        ]
    )
    assert up.ask("where am I going?", "--data", absolute)["output"] == "found"
    assert "Trip" in tool_results(mock)["l"], tool_results(mock)
