"""MCP both ways, end to end: a real `hologram up`, the strict mock as the model, real MCP servers built with the
`mcp` package's server API (fixture_server.py), and the `mcp` package's client driving `hologram mcp`.

What is proven:
- a turn calls a tool of a stdio MCP server and of a streamable-HTTP one through the mcp plugin; the kernel asks
  for approval (the tool is registered at run time, nobody declared it), and only an approved call reaches the
  server; the schema was deferred (named in ``tools_load``, not sent) until the call;
- the stdio server killed → its tools go and the status line says it is down → it is started again and its
  tools come back; the HTTP server killed and started again → the same;
- ``notifications/tools/list_changed`` (or its 2026-07-28 subscription) adds and removes a tool;
- ``hologram mcp`` as a real subprocess under the `mcp` client: it lists ``ask`` and ``memory_search``, ``ask``
  is answered through the strict mock and continues its session, ``memory_search`` finds the first answer with
  its layer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from hologram.agent.approvals import rule_for
from hologram.api import turn as api
from hologram.clients import TurnClient
from hologram.config.settings import load_settings
from hologram_plugins.mcp.config import McpConfig
from hologram_plugins.mcp.naming import tool_name
from mock_llm import MockLLM
from tests.kit.providers import write_settings
from tests.kit.wait import wait_until

from .kernel import HttpFixture, McpKernel, call, env, hologram_mcp_argv

pytestmark = pytest.mark.slow
FIX_TOOLS = ("mcp_fix_echo", "mcp_fix_fail", "mcp_fix_grow", "mcp_fix_picture", "mcp_fix_shrink")


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpFixture]:
    fixture = HttpFixture(tmp_path_factory.mktemp("web"))
    fixture.start()
    yield fixture
    fixture.kill()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM, web: HttpFixture) -> Iterator[McpKernel]:
    k = McpKernel(tmp_path_factory.mktemp("mcp"), mock, web)
    k.start()
    k.wait_tools(*FIX_TOOLS, "mcp_old_echo", "mcp_web_echo")
    yield k
    k.stop()


@pytest.fixture(autouse=True)
def fresh(mock: MockLLM) -> None:
    mock.reset()


def script_call(mock: MockLLM, tool: str, arguments: dict[str, Any], answer: str = "done") -> None:
    mock.script(
        [
            {"reasoning_content": "r", "tool_calls": [{"id": "m1", "name": tool, "arguments": json.dumps(arguments)}]},
            {"reasoning_content": "r", "content": answer},
        ]
    )


async def turn_with(kernel: McpKernel, approve: bool) -> list[Any]:
    """One turn; every approval request answered ``approve``."""
    async with await TurnClient.connect(kernel.data, client="tester", approvals=True) as client:
        turn = await client.start("use the tool")
        async with asyncio.timeout(90):
            async for event in turn:
                if isinstance(event, api.ApprovalRequested):
                    await client.approve(event, "approve_once" if approve else "deny", "test")
        return turn.events


def one(events: list[Any], kind: type[Any]) -> Any:
    [found] = [e for e in events if isinstance(e, kind)]
    return found


@pytest.mark.parametrize("server", ["fix", "web"])
def test_a_turn_calls_an_mcp_tool_after_approval(
    kernel: McpKernel, mock: MockLLM, web: HttpFixture, server: str
) -> None:
    tool = f"mcp_{server}_echo"
    script_call(mock, tool, {"text": f"hello {server}"})
    events = asyncio.run(turn_with(kernel, True))
    asked = one(events, api.ApprovalRequested)
    assert (asked.tool, asked.plugin) == (tool, "mcp")  # the kernel asked: the server's tool declared nothing
    result = one(events, api.ToolResult)
    assert (result.status, result.content) == ("ok", f"echo: hello {server}")
    calls = kernel.fix_calls() if server == "fix" else web.log.read_text().splitlines()
    assert f"echo hello {server}" in calls
    assert mock.rejections == []
    first, second = mock.requests[0].body, mock.requests[1].body
    sent = [t["function"]["name"] for t in first["tools"]]
    assert tool not in sent and "tools_load" in sent  # deferred: only named …
    [load] = [t for t in first["tools"] if t["function"]["name"] == "tools_load"]
    assert tool in load["function"]["description"]
    expected = {"role": "tool", "tool_call_id": "m1", "content": f"echo: hello {server}"}
    assert expected.items() <= second["messages"][-1].items()


def test_a_denied_call_never_reaches_the_server(kernel: McpKernel, mock: MockLLM) -> None:
    script_call(mock, "mcp_fix_echo", {"text": "must not run"})
    events = asyncio.run(turn_with(kernel, False))
    assert one(events, api.ToolResult).status == "denied"
    assert "echo must not run" not in kernel.fix_calls()


def test_errors_and_images_map_onto_the_tool_result(kernel: McpKernel, mock: MockLLM) -> None:
    script_call(mock, "mcp_fix_fail", {"why": "testing"})
    result = one(asyncio.run(turn_with(kernel, True)), api.ToolResult)
    assert result.is_error and result.content == "error: Error executing tool fail: failed on purpose: testing"
    mock.reset()
    script_call(mock, "mcp_fix_picture", {})
    result = one(asyncio.run(turn_with(kernel, True)), api.ToolResult)
    assert (result.is_error, result.content) == (False, "[image: image/png, 70 bytes]")
    [image] = result.images  # kept for the clients (the web page shows it), the model reading the text
    assert (image["mime"], image["bytes"], image["width"], image["height"]) == ("image/png", 70, 1, 1)


@pytest.mark.parametrize("server", ["fix", "old"])
def test_list_changed_adds_and_removes_a_tool(kernel: McpKernel, mock: MockLLM, server: str) -> None:
    """``fix`` speaks MCP 2026-07-28 (the change comes on its subscriptions/listen stream), ``old`` the initialize
    handshake (``notifications/tools/list_changed``)."""
    assert f"mcp_{server}_extra" not in kernel.mcp_plugin()["tools"]
    script_call(mock, f"mcp_{server}_grow", {})
    asyncio.run(turn_with(kernel, True))
    kernel.wait_tools(f"mcp_{server}_extra", timeout=10)  # well within poll_s (60 s): the announcement did it
    mock.reset()
    script_call(mock, f"mcp_{server}_shrink", {})
    asyncio.run(turn_with(kernel, True))
    kernel.wait_tools(f"mcp_{server}_extra", present=False, timeout=10)


def test_a_killed_stdio_server_is_down_then_back(kernel: McpKernel, mock: MockLLM) -> None:
    killed = kernel.kill_fix_server()
    kernel.wait_tools(*FIX_TOOLS, present=False, status="fix: down (retry in")
    kernel.wait_tools(*FIX_TOOLS, status="fix: 5 tools")
    assert kernel.fix_pids()[0] != killed  # a new server process
    script_call(mock, "mcp_fix_echo", {"text": "after restart"})
    assert one(asyncio.run(turn_with(kernel, True)), api.ToolResult).content == "echo: after restart"


def test_a_killed_http_server_is_down_then_back(kernel: McpKernel, web: HttpFixture) -> None:
    web.kill()
    kernel.wait_tools("mcp_web_echo", present=False, status="web: down (retry in")
    web.start()
    kernel.wait_tools("mcp_web_echo", status="web: 5 tools")


# -- hologram mcp ----------------------------------------------------------------------------------------


async def through_hologram_mcp(kernel: McpKernel) -> dict[str, Any]:
    argv = hologram_mcp_argv(kernel.data)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env(), cwd=str(kernel.root))
    out: dict[str, Any] = {}
    async with Client(params, cache=None) as client:
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)
        first = await client.call_tool("ask", {"text": "what is the secret word?"})
        out["first"] = first
        session = first.structured_content["session"]
        out["second"] = await client.call_tool("ask", {"text": "say it again", "session": session})
        out["search"] = await client.call_tool("memory_search", {"text": "marmalade"})
    return out


def test_an_mcp_client_asks_hologram_and_searches_its_memory(kernel: McpKernel, mock: MockLLM) -> None:
    mock.script([{"reasoning_content": "r", "content": "the secret word is marmalade"}, {"content": "marmalade"}])
    out = asyncio.run(through_hologram_mcp(kernel))
    assert out["tools"] == ["ask", "memory_search"]
    first, second, search = out["first"], out["second"], out["search"]
    assert not first.is_error and first.structured_content["answer"] == "the secret word is marmalade"
    assert first.structured_content["session"] == second.structured_content["session"]
    assert "the secret word is marmalade" in first.content[0].text and "session" in first.content[0].text
    later = mock.requests[1].body["messages"]  # the second ask continued the first's session
    assert {"role": "assistant", "content": "the secret word is marmalade"}.items() <= later[-2].items()
    assert not search.is_error and "[L1 recent]" in search.content[0].text
    assert "marmalade" in search.content[0].text
    assert mock.rejections == []


def test_hologram_mcp_tools_offers_the_graph_s_tools_under_the_policy(kernel: McpKernel) -> None:
    """``hologram mcp --tools``: the plugins' tools with their schemas; a call the policy allows runs (settings:
    mcp_fix_picture mode = allow), one it would ask about is refused without reaching the plugin.
    Mutation check (done): `DirectTools.call` without its approval step turns this red (the echo runs)."""
    kernel.wait_tools(*FIX_TOOLS)

    async def go() -> tuple[dict[str, Any], Any, Any]:
        argv = [*hologram_mcp_argv(kernel.data), "--tools"]
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env())
        async with Client(params, cache=None) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            allowed = await client.call_tool("mcp_fix_picture", {})
            refused = await client.call_tool("mcp_fix_echo", {"text": "direct call"})
            return listed, allowed, refused

    listed, allowed, refused = asyncio.run(go())
    assert {"ask", "memory_search", "mcp_fix_echo", "mcp_web_echo"} <= set(listed)
    assert listed["mcp_fix_echo"].input_schema["properties"]["text"]["type"] == "string"
    assert not allowed.is_error and allowed.content[0].text == "[image: image/png, 70 bytes]"
    assert allowed.content[1].type == "image" and allowed.content[1].mime_type == "image/png"  # passed through
    picture = base64.b64decode(allowed.content[1].data)  # the fixture's 1x1 PNG, back through both MCP hops
    assert picture.startswith(b"\x89PNG") and len(picture) == 70
    assert refused.is_error and "mcp_fix_echo needs approval under your policy" in refused.content[0].text
    assert "echo direct call" not in kernel.fix_calls()


def test_hologram_mcp_without_a_kernel_answers_with_the_fix(tmp_path: Path) -> None:
    async def go() -> Any:
        argv = hologram_mcp_argv(tmp_path / "nothing-here")
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env())
        async with Client(params, cache=None) as client:
            return await client.call_tool("ask", {"text": "hello"})

    result = asyncio.run(go())
    assert result.is_error and "hologram up" in result.content[0].text


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.parametrize("how", ["crash", "stop"])
def test_no_stdio_server_outlives_the_plugin(kernel: McpKernel, how: str) -> None:
    """The plugin killed (SIGKILL: no clean-up of its own ran) or stopped: its stdio server goes with it, and so
    does the child the server started in a session of its own, which ignores stdin's end (the guardian is a
    subreaper that kills the whole tree); started again, the tools come back.
    Mutation check (done): starting the server without its guardian (link.py) turns both cases red: the child
    outlives the plugin."""
    kernel.wait_tools(*FIX_TOOLS)
    server, child = kernel.fix_pids()
    assert alive(server) and alive(child)
    plugin = kernel.mcp_plugin()["pid"]
    if how == "crash":
        os.kill(plugin, signal.SIGKILL)
    else:
        call(kernel.data, "plugin/stop", {"name": "mcp"})
    wait_until(
        lambda: not alive(server) and not alive(child), timeout=30,
        what=f"MCP server {server} and its child {child} (another session) gone after the plugin's {how}",
    )  # fmt: skip
    if how == "stop":
        call(kernel.data, "plugin/start", {"name": "mcp"})
    wait_until(
        kernel.mcp_plugin, accept=lambda p: p["pid"] not in (None, plugin) and "fix: 5 tools" in p["status"],
        timeout=60, what="the mcp plugin running again (a new process) with the server's tools",
    )  # fmt: skip
    assert kernel.fix_pids()[0] != server


# -- docs/channels.md's snippets ---------------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "channels.md"


def mcp_section_blocks(language: str) -> list[str]:
    section = DOCS.read_text(encoding="utf-8").split("\n## MCP\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_the_documented_settings_configure_the_plugin_and_the_policy(tmp_path: Path) -> None:
    """The TOML snippet, as a user pastes it into settings.toml: read by the kernel's settings loader, the
    plugin's table accepted by its config model, the approvals rules applied as the text says."""
    [snippet] = mcp_section_blocks("toml")
    write_settings(tmp_path / "settings.toml", snippet)
    settings = load_settings(tmp_path)
    config = McpConfig.model_validate(settings.plugins["mcp"])
    assert config.servers["fs"].command == "npx" and config.servers["search"].url == "https://mcp.example.com/mcp"
    assert rule_for(settings.approvals, "mcp_fs_read_file").mode == "allow"
    assert rule_for(settings.approvals, "mcp_fs_write_file").mode == "ask"
    assert tool_name("git", "repo.status") in DOCS.read_text(encoding="utf-8")  # the naming example is true


def test_the_documented_client_config_starts_hologram_mcp(kernel: McpKernel, mock: MockLLM) -> None:
    """The JSON snippet's command and args, as Claude Desktop runs them: `hologram` is this install's (the
    snippet says to give the full path when it is not on PATH) and the data directory the kernel's."""
    [snippet] = [b for b in mcp_section_blocks("json") if '"command"' in b]  # the stdio one (/mcp has its own)
    server = json.loads(snippet)["mcpServers"]["hologram"]
    assert server["command"] == "hologram" and server["args"][:2] == ["mcp", "--data"]
    command = str(Path(sys.executable).parent / "hologram")
    args = [*server["args"][:2], str(kernel.data)]
    mock.script([{"reasoning_content": "r", "content": "hello from the docs"}])

    async def go() -> Any:
        async with Client(StdioServerParameters(command=command, args=args, env=env()), cache=None) as client:
            return await client.call_tool("ask", {"text": "hi"})

    result = asyncio.run(go())
    assert not result.is_error and result.structured_content["answer"] == "hello from the docs"
