"""An editor's MCP servers, connected for its session alone: `hologram acp` as a real subprocess under the
`agent-client-protocol` package's client side, a real `hologram up` with the shipped ``mcp`` plugin (no server
in settings), the fixture MCP server (built with the `mcp` package's server API) given in ``session/new``, and
the strict mock as the model.

What is proven:
- the server the editor passes in ``session/new`` is started for that session (``sessions/mcp``): a prompt whose
  scripted model calls its tool asks the editor's permission, the call reaches the server, the result is in the
  session's history; the tool was offered (named in ``tools_load``) to that session's model;
- another session of the same editor is not offered the tool, and a call of it by name there is refused as an
  unknown tool (never reaching the server, never asked);
- when the editor closes the connection, the server it brought is stopped (its process is gone);
- ``sessions/mcp`` refuses a session that does not exist and a server with both ``command`` and ``url``, each
  with the field and the fix.

Mutation checks (done, each turned the named test red): the registry offering session tools to every session
(`ToolRegistry.snapshot` without the session filter: another session saw the tool); the ACP agent not calling
``sessions/mcp`` (the prompt's call was an unknown tool); the kernel not releasing a gone connection's servers
(`TurnService.connection_gone` without ``release``: the server process outlived the editor).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp.schema import EnvVariable, McpServerStdio

from hologram.clients import TurnClient
from hologram.clients.errors import RpcError
from mock_llm import MockLLM
from tests.e2e.kernel import E2EKernel
from tests.e2e.test_acp_e2e import Editor, acp
from tests.kit.manifests import copy_shipped
from tests.kit.providers import provider_toml, write_settings
from tests.kit.wait import wait_until

from .kernel import FIXTURE

pytestmark = pytest.mark.slow
TOOL = "mcp_fixture_echo"  # the fixture's echo, as the editor named the server "fixture"


class SessionKernel(E2EKernel):
    """`hologram up` with the shipped mcp plugin and no server configured: every server comes from a client."""

    def __init__(self, root: Path, mock: MockLLM) -> None:
        self.root, self.mocks, self.process = root, [mock], None
        self.data, self.lock = root / "data", root / "hologram.lock"
        manifests = root / "manifests"
        copy_shipped("mcp", manifests)
        self.hologram("build", "--no-discover", "-m", str(manifests), "-o", str(self.lock), check=True)
        self.data.mkdir()
        write_settings(
            self.data / "settings.toml",
            "[agent]\nmax_steps = 4\n\n[approvals]\ntimeout_s = 120\n\n[plugins.mcp]\nretry_max_s = 2\n\n"
            + provider_toml(mock, "mock"),
        )


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[SessionKernel]:
    k = SessionKernel(tmp_path_factory.mktemp("session-mcp"), mock)
    k.start()
    k.wait_ready("mcp")
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


def script_call(mock: MockLLM, call_id: str, text: str) -> None:
    arguments = json.dumps({"text": text})
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": call_id, "name": TOOL, "arguments": arguments}]},
            {"reasoning_content": "r", "content": "done"},
        ],
        append=True,
    )


def offered(body: dict[str, Any]) -> str:
    """Every tool name a request offers, with ``tools_load``'s description (the deferred ones it names)."""
    return " ".join(t["function"]["name"] + " " + t["function"]["description"] for t in body.get("tools", []))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_an_editors_mcp_server_serves_its_session_alone_and_goes_with_the_editor(
    kernel: SessionKernel, mock: MockLLM
) -> None:
    editor = Editor("approve_once")
    calls, pids = kernel.root / "fixture-calls.log", kernel.root / "fixture.pid"
    server = McpServerStdio(
        name="fixture", command=sys.executable, args=[str(FIXTURE)],
        env=[EnvVariable(name="FIXTURE_LOG", value=str(calls)), EnvVariable(name="FIXTURE_PID_FILE", value=str(pids))],
    )  # fmt: skip

    async def go() -> tuple[Any, Any, str, str]:
        async with acp(kernel, editor) as (conn, _):  # type: ignore[arg-type]
            mine = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[server])).session_id
            other = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[])).session_id
            script_call(mock, "e1", "from the editor")
            first = await conn.prompt(session_id=mine, prompt=[text_block("echo it")])
            script_call(mock, "e2", "not yours")
            second = await conn.prompt(session_id=other, prompt=[text_block("echo it here")])
            return first, second, mine, other

    first, second, mine, other = asyncio.run(asyncio.wait_for(go(), 180))
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert len(editor.requests) == 1, "the session's own call was asked, the other session's never"
    [(asked, _)] = editor.requests
    assert TOOL in (asked.title or "") and asked.raw_input == {"text": "from the editor"}
    assert calls.read_text().splitlines() == ["echo from the editor"], "only the approved call reached the server"
    [result] = [e["data"] for e in kernel.events(mine)["events"] if e["kind"] == "tool_result"]
    assert (result["status"], result["content"]) == ("ok", "echo: from the editor")
    [refused] = [e["data"] for e in kernel.events(other)["events"] if e["kind"] == "tool_result"]
    assert refused["status"] != "ok" and TOOL in refused["content"] and "echo:" not in refused["content"]
    bodies = [r.body for r in mock.requests]
    assert TOOL in offered(bodies[0]), "the session's model was offered the tool (named in tools_load)"
    assert all(TOOL not in offered(body) for body in bodies[2:]), "the other session's model never saw it"
    assert mock.rejections == []
    server_pid = int(pids.read_text().split()[0])
    wait_until(lambda: alive(server_pid), accept=lambda up: not up, timeout=30, what="the editor's server stopped")


def test_after_a_kernel_restart_the_next_prompt_connects_the_editors_server_again(
    kernel: SessionKernel, mock: MockLLM
) -> None:
    """The kernel restarted under an open `hologram acp` (it forgot the session's servers, their process went with
    its mcp plugin): the next prompt reconnects and sends ``sessions/mcp`` again first, so the tool is there.
    Mutation check (done): `prompt` not reconnecting the servers turns this red (the call is an unknown tool)."""
    editor = Editor("approve_once")
    calls, pids = kernel.root / "restart-calls.log", kernel.root / "restart.pid"
    server = McpServerStdio(
        name="fixture", command=sys.executable, args=[str(FIXTURE)],
        env=[EnvVariable(name="FIXTURE_LOG", value=str(calls)), EnvVariable(name="FIXTURE_PID_FILE", value=str(pids))],
    )  # fmt: skip

    async def go() -> tuple[Any, int, str]:
        async with acp(kernel, editor) as (conn, _):  # type: ignore[arg-type]
            session = (await conn.new_session(cwd=str(kernel.root), mcp_servers=[server])).session_id
            before = int(pids.read_text().split()[0])
            await asyncio.to_thread(kernel.stop)
            await asyncio.to_thread(kernel.start)
            await asyncio.to_thread(kernel.wait_ready, "mcp")
            script_call(mock, "r1", "after the restart")
            return await conn.prompt(session_id=session, prompt=[text_block("echo it")]), before, session

    done, before, session = asyncio.run(asyncio.wait_for(go(), 240))
    assert done.stop_reason == "end_turn" and len(editor.requests) == 1
    assert calls.read_text().splitlines() == ["echo after the restart"]
    assert not alive(before) and int(pids.read_text().split()[0]) != before, "a new server process serves it"
    [result] = [e["data"] for e in kernel.events(session)["events"] if e["kind"] == "tool_result"]
    assert result["content"] == "echo: after the restart" and mock.rejections == []


def test_sessions_mcp_refuses_what_it_cannot_connect(kernel: SessionKernel) -> None:
    async def go() -> list[str]:
        said = []
        async with await TurnClient.connect(kernel.data, client="tester") as client:
            session = await client.create_session()
            for target, servers in (
                ("no-such-session", [{"name": "a", "command": "true"}]),
                (session, [{"name": "a", "command": "true", "url": "http://127.0.0.1:9/mcp"}]),
                (session, [{"name": "a b", "command": "true"}]),
            ):
                try:
                    await client.mcp_servers(target, servers)
                except RpcError as exc:
                    said.append(exc.message)
            answer = await client.mcp_servers(session, [])
            assert answer == {"session": session, "servers": []}
        return said

    missing, both, name = asyncio.run(go())
    assert "no session 'no-such-session'" in missing
    assert "servers.0" in both and "exactly one" in both
    assert "servers.0.name" in name
