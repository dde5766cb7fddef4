"""An MCP client reaches Hologram at /mcp on the web port (streamable HTTP), with the `mcp` package."""

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def ask(url: str, token: str, text: str) -> str:
    """The agent's answer to ``text``; ``url`` is the web port's address, ``token`` its access token."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=300)
    async with http, Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        assert "ask" in tools, tools
        result = await client.call_tool("ask", {"text": text})
        return str(result.structured_content["answer"])
