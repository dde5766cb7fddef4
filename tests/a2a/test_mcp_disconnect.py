"""Hologram as an MCP server, its client gone mid-``ask``: the session's history stays valid.

A real `hologram up` (http, a2a, mcp and a plugin with a slow tool), the strict mock as the model. An MCP client
(the `mcp` package's) calls ``ask``; the scripted model makes two parallel calls, one of them slow; while it
runs the client goes:

- ``hologram mcp`` (stdio) SIGKILLed — the MCP client's process gone takes it, or it dies itself: either way
  its control connection drops without a word;
- ``/mcp`` on the web port (streamable HTTP): the client drops its HTTP connection mid-request.

Then the kernel ends the turn (the slow call answered "cancelled", the other's result kept), and the session's
next turn is accepted by the strict mock: every assistant call paired with one tool message, reasoning passed
back. Mutation check (done): the MCP server's ``ask`` starting its turn with ``on_disconnect="continue"`` turns
both red (the turn runs to its end: stop reason ``answer``, not ``cancelled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from hologram.api import turn as api
from hologram.clients import TurnClient
from mock_llm import MockLLM
from tests.e2e.kernel import HOLOGRAM, env
from tests.kit.wait import wait_until

from .test_mcp_http import McpHttpKernel

pytestmark = pytest.mark.slow
WAIT_S = 60  # a failure bound, never an expected duration


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[McpHttpKernel]:
    k = McpHttpKernel(tmp_path_factory.mktemp("mcp-gone"), mock)
    k.start()
    yield k
    k.stop()


def script_parallel_slow(mock: MockLLM) -> None:
    calls = [
        {"id": "p1", "name": "weather", "arguments": json.dumps({"city": "Oslo"})},
        {"id": "p2", "name": "slow", "arguments": json.dumps({"seconds": 300})},  # cancelled long before
    ]
    mock.script([{"reasoning_content": "both at once", "tool_calls": calls}, {"content": "never asked for"}])


def children_running(needle: str) -> list[int]:
    """Pids of this process's descendants whose command line contains ``needle``."""
    parents: dict[int, int] = {}
    lines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            lines[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")

    def descends(pid: int) -> bool:
        seen = set()
        while pid in parents and pid not in seen:
            seen.add(pid)
            pid = parents[pid]
            if pid == os.getpid():
                return True
        return False

    return [pid for pid, line in lines.items() if needle in line and descends(pid)]


async def newest_mcp_session(kernel: McpHttpKernel, known: set[str]) -> str:
    async with await TurnClient.connect(kernel.data, client="look") as client:
        [session] = [s["id"] for s in await client.sessions() if s["id"] not in known and s["channel"] == "mcp"]
        return session


async def sessions_now(kernel: McpHttpKernel) -> set[str]:
    async with await TurnClient.connect(kernel.data, client="look") as client:
        return {s["id"] for s in await client.sessions()}


async def ask_until_gone(kernel: McpHttpKernel, transport: str) -> None:
    """``ask`` through ``transport``; once the slow call runs, the client goes as the module docstring says."""
    if transport == "stdio":
        argv = [*HOLOGRAM, "mcp", "--data", str(kernel.data)]
        server = StdioServerParameters(command=argv[0], args=argv[1:], env=env())
        client = Client(server)
        http = None
    else:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {kernel.token}"}, timeout=300)
        client = Client(streamable_http_client(f"{kernel.url}/mcp", http_client=http))
    asking: asyncio.Future[Any] | None = None
    try:
        async with client:
            asking = asyncio.ensure_future(client.call_tool("ask", {"text": "weather, and take your time"}))
            while not kernel.slow_mark.exists():
                await asyncio.wait({asking}, timeout=0.05)
                assert not asking.done(), f"ask ended before the slow call ran: {asking.result()}"
            if transport == "stdio":
                [pid] = children_running(f"mcp --data {kernel.data}")
                os.kill(pid, signal.SIGKILL)
            asking.cancel()  # stdio: its answer can never come; HTTP: the request's connection is dropped
            with contextlib.suppress(BaseException):
                await asking
    except Exception:  # the stdio client's transport fails once its server was killed
        pass
    finally:
        if http is not None:
            await http.aclose()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_mcp_client_gone_mid_ask_leaves_the_session_valid(
    kernel: McpHttpKernel, mock: MockLLM, transport: str
) -> None:
    mock.reset()
    kernel.slow_mark.unlink(missing_ok=True)
    known = asyncio.run(sessions_now(kernel))
    script_parallel_slow(mock)
    asyncio.run(asyncio.wait_for(ask_until_gone(kernel, transport), 120))
    session = asyncio.run(newest_mcp_session(kernel, known))

    def stored() -> list[dict[str, Any]]:
        return list(kernel.events(session)["events"])

    turn = next(e["turn"] for e in stored() if e["kind"] == "input")

    async def read_turn() -> dict[str, Any]:
        async with await TurnClient.connect(kernel.data, client="look") as client:
            return await client.read_turn(session, turn)

    ended = wait_until(
        lambda: asyncio.run(read_turn()), accept=lambda t: t["status"] == "ended", timeout=WAIT_S,
        what=f"the kernel to end the turn of the {transport} MCP client that went",
    )  # fmt: skip
    assert ended["stop_reason"] == "cancelled", ended
    results = {e["call_id"]: e["data"] for e in stored() if e["kind"] == "tool_result"}
    assert results["p1"]["content"] == "sunny in Oslo", "the finished call kept its result"
    assert results["p2"]["is_error"] and "cancelled" in results["p2"]["content"], "the slow call did not run out"
    assert len(mock.requests) == 1, "the model was not asked again after the client went"

    async def next_turn() -> api.TurnEnded:
        async with await TurnClient.connect(kernel.data, client="after") as client:
            mock.script([{"reasoning_content": "r", "content": "still here"}])
            started = await client.start("are you there?", session=session)
            return await started.result()

    after = asyncio.run(asyncio.wait_for(next_turn(), 120))
    assert after.stop_reason == "answer" and mock.rejections == [], "the strict mock accepted the next turn"
    messages = kernel.events(session)["messages"]
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answers = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(answers) == ["p1", "p2"], "every call paired with one result"
