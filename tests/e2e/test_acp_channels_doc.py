"""docs/channels.md's Zed snippet, run as Zed runs it: its exact command line (the placeholder checkout
``/path/to/hologram`` replaced by a test checkout — a venv's `hologram`, a data directory and a lock), spawned
by the `agent-client-protocol` package's client side, with no kernel running.

What is proven: `hologram acp` starts the kernel for that data directory, a prompt is answered through it,
and when the editor closes the connection the kernel it started is stopped (no process outlives the editor);
with ``--no-start``, or with a kernel that cannot start, the editor gets one clear error naming the fix.

Mutation check (done): `KernelLink.aclose` not stopping the kernel it started turns the snippet test red (the
kernel outlives the editor until PR_SET_PDEATHSIG's SIGTERM reaches it; its "Hologram stopped." is not logged).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.schema import AgentMessageChunk, Implementation

from mock_llm import MockLLM
from tests.kit.providers import provider_toml, write_settings

from .test_acp_e2e import Editor

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
PLACEHOLDER = "/path/to/hologram"


def zed_server() -> dict[str, Any]:
    """The one server of the ``agent_servers`` snippet under "### Zed" in docs/channels.md."""
    text = (REPO / "docs" / "channels.md").read_text(encoding="utf-8")
    section = text.split("\n### Zed\n", 1)[1].split("\n### ", 1)[0]
    [block] = re.findall(r"```json\n(.*?)```", section, re.S)
    [server] = json.loads(block)["agent_servers"].values()
    assert server["type"] == "custom"
    return dict(server)


def checkout(root: Path, mock: MockLLM) -> None:
    """What the snippet's paths name, under `root`: the venv's `hologram`, a lock, a data dir with settings."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "hologram").symlink_to(Path(sys.executable).parent / "hologram")
    (root / "manifests").mkdir()
    built = subprocess.run(
        [sys.executable, "-m", "hologram", "build", "--no-discover", "-m", str(root / "manifests"),
         "-o", str(root / "hologram.lock")], capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    write_settings(root / ".hologram" / "settings.toml", provider_toml(mock))


def command_line(root: Path) -> tuple[str, list[str], dict[str, str]]:
    server = zed_server()
    command = server["command"].replace(PLACEHOLDER, str(root))
    args = [a.replace(PLACEHOLDER, str(root)) for a in server["args"]]
    return command, args, dict(server.get("env") or {})


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_zed_snippet_starts_a_kernel_answers_and_stops_it_when_the_editor_leaves(
    tmp_path: Path, mock: MockLLM
) -> None:
    mock.reset()
    checkout(tmp_path, mock)
    command, args, env = command_line(tmp_path)
    assert Path(command).name == "hologram" and args[0] == "acp", "the snippet runs `hologram acp`"
    editor = Editor()
    log = (tmp_path / "acp-stderr.log").open("ab")

    async def go() -> tuple[int, int | None]:
        async with spawn_agent_process(
            editor, command, *args, env=env,
            transport_kwargs={"stderr": log.fileno(), "shutdown_timeout": 120.0},  # it stops its kernel first
        ) as (conn, process):  # fmt: skip
            await conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_info=Implementation(name="zed", version="1")
            )
            session = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
            kernel_pid = int((tmp_path / ".hologram" / "kernel.pid").read_text())
            mock.script([{"reasoning_content": "r", "content": "hello from the kernel acp started"}])
            done = await conn.prompt(session_id=session, prompt=[text_block("hello")])
            assert done.stop_reason == "end_turn"
        return kernel_pid, process.returncode

    try:
        kernel_pid, code = asyncio.run(asyncio.wait_for(go(), 300))
    finally:
        log.close()
    stderr = (tmp_path / "acp-stderr.log").read_text()
    assert "no kernel runs with" in stderr and "starting one" in stderr, stderr[-2000:]
    assert editor.text(AgentMessageChunk) == "hello from the kernel acp started"
    assert code == 0, f"hologram acp exited {code} after the editor closed stdin:\n{stderr[-2000:]}"
    assert kernel_pid != 0 and not alive(kernel_pid), "the kernel acp started was stopped with it"
    assert "Hologram stopped." in stderr, "the kernel stopped cleanly (SIGTERM), not killed"
    assert mock.rejections == []


def test_no_kernel_and_no_start_is_one_clear_error(tmp_path: Path, mock: MockLLM) -> None:
    checkout(tmp_path, mock)
    command, args, env = command_line(tmp_path)

    async def go() -> RequestError:
        async with spawn_agent_process(Editor(), command, *args, "--no-start", env=env) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            with pytest.raises(RequestError) as raised:
                await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return raised.value

    error = asyncio.run(asyncio.wait_for(go(), 60))
    assert "no kernel is running with this data directory" in str(error) and "hologram up" in str(error)


def test_a_kernel_that_cannot_start_is_its_own_error_in_the_editor(tmp_path: Path, mock: MockLLM) -> None:
    checkout(tmp_path, mock)
    # `hologram up` refuses a damaged lock (a missing one it now builds itself)
    (tmp_path / "hologram.lock").write_text("this is [ not toml\n", encoding="utf-8")
    command, args, env = command_line(tmp_path)

    async def go() -> RequestError:
        async with spawn_agent_process(Editor(), command, *args, env=env) as (conn, _):
            await conn.initialize(protocol_version=PROTOCOL_VERSION)
            with pytest.raises(RequestError) as raised:
                await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
            return raised.value

    error = asyncio.run(asyncio.wait_for(go(), 120))
    message = str(error)
    assert "exited with status 1" in message and "hologram.lock" in message, message
    assert "hologram build" in message, f"the kernel's own fix reaches the editor: {message}"
