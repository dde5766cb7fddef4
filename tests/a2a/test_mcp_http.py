"""``/mcp`` on the web port: the ``mcp`` package's streamable HTTP client lists and calls Hologram with the web
token (the mcp plugin mounts `hologram mcp`'s server through ``http.routes``), through a real `hologram up`.
docs/channels.md's client (docs/examples/channels/mcp_http_client.py) and its JSON snippet are run here.

Mutation checks (run): the mcp plugin's ``plugin.mount("/mcp", …)`` removed turns
`test_an_mcp_client_lists_and_calls_hologram_over_http` red (404); a wrong token is refused before the plugin.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mock_llm import MockLLM
from tests.a2a.kernel import A2AKernel
from tests.kit.manifests import copy_shipped

DOCS = Path(__file__).resolve().parents[2] / "docs"


class McpHttpKernel(A2AKernel):
    def __init__(self, root: Path, mock: MockLLM) -> None:
        super().__init__(root, mock)
        copy_shipped("mcp", root / "manifests")
        self.hologram("build", "--no-discover", "-m", str(root / "manifests"), "-o", str(self.lock), check=True)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory, mock: MockLLM) -> Iterator[McpHttpKernel]:
    k = McpHttpKernel(tmp_path_factory.mktemp("mcp-http"), mock)
    k.start()
    yield k
    k.stop()


async def through_http(url: str, token: str) -> dict[str, Any]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        first = await client.call_tool("ask", {"text": "the word is quince"})
        session = first.structured_content["session"]
        second = await client.call_tool("ask", {"text": "which word?", "session": session})
        return {"tools": tools, "first": first, "second": second}


def test_an_mcp_client_lists_and_calls_hologram_over_http(kernel: McpHttpKernel, mock: MockLLM) -> None:
    mock.reset()
    mock.script([{"content": "noted: quince"}, {"content": "quince"}])
    out = asyncio.run(through_http(kernel.url, kernel.token))
    assert out["tools"] == ["ask", "memory_search"]
    assert out["first"].structured_content["answer"] == "noted: quince"
    assert out["second"].structured_content["answer"] == "quince"
    assert "the word is quince" in json.dumps(mock.requests[1].body["messages"])  # the same session
    assert mock.rejections == []


def test_a_wrong_token_is_refused_before_the_plugin(kernel: McpHttpKernel) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with httpx.Client(base_url=kernel.url, timeout=30) as anonymous:
        refused = anonymous.post("/mcp", json=body, headers={"authorization": "Bearer wrong"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "unauthorized"


def test_the_docs_client_and_snippet(kernel: McpHttpKernel, mock: MockLLM) -> None:
    spec = importlib.util.spec_from_file_location(
        "mcp_http_client", DOCS / "examples" / "channels" / "mcp_http_client.py"
    )
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    mock.reset()
    mock.script([{"content": "hello over http"}])
    assert asyncio.run(example.ask(kernel.url, kernel.token, "hi")) == "hello over http"
    # the JSON snippet for MCP clients that take a URL and headers: its url and header are what works here
    text = (DOCS / "channels.md").read_text()
    [block] = [b for b in re.findall(r"```json\n(.*?)```", text, re.S) if '"/mcp"' in b or '/mcp"' in b]
    server = json.loads(block)["mcpServers"]["hologram"]
    assert server["url"] == "http://127.0.0.1:8080/mcp" and server["type"] == "http"
    url = server["url"].replace("http://127.0.0.1:8080", kernel.url)
    token = server["headers"]["Authorization"].removeprefix("Bearer ")
    assert token == "TOKEN"

    async def listed() -> list[str]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {kernel.token}"}, timeout=60)
        async with http, Client(streamable_http_client(url, http_client=http)) as client:
            return sorted(t.name for t in (await client.list_tools()).tools)

    assert asyncio.run(listed()) == ["ask", "memory_search"]
