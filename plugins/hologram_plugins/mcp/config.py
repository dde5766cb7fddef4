"""The ``mcp`` plugin's settings: the MCP servers whose tools Hologram offers (``[plugins.mcp.servers.NAME]``).

    [plugins.mcp.servers.fs]              # stdio: the plugin starts the command and speaks MCP on its pipes
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/docs"]
    env = { LOG_LEVEL = "warn" }

    [plugins.mcp.servers.search]          # streamable HTTP
    url = "https://mcp.example.com/mcp"
    token = "…"                           # sent as "Authorization: Bearer …" (or headers = { … })

Approval is not set here: it is the kernel's, from ``[approvals]`` (docs/channels.md, "MCP").
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, model_validator

ServerName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,40}$")]


class ServerConfig(BaseModel):
    """One MCP server: ``command`` (stdio) or ``url`` (streamable HTTP), exactly one of the two."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str | None = Field(None, description="stdio: the program to start (found on PATH)")
    args: list[str] = Field(default_factory=list, description="stdio: its arguments")
    env: dict[str, str] = Field(
        default_factory=dict, description="stdio: environment added to HOME, LOGNAME, PATH, SHELL, TERM, USER"
    )
    cwd: str | None = Field(None, description="stdio: working directory (default: the plugin's data directory)")
    url: str | None = Field(None, description="streamable HTTP: the server's endpoint, e.g. http://127.0.0.1:8000/mcp")
    headers: dict[str, str] = Field(default_factory=dict, description="streamable HTTP: headers sent with each request")
    token: SecretStr | None = Field(None, description='streamable HTTP: sent as "Authorization: Bearer TOKEN"')
    timeout_s: float = Field(120.0, gt=0, description="a tool call without an answer by then is an error")
    protocol: Literal["auto", "legacy"] = Field(
        "auto",
        description="auto: MCP 2026-07-28 when the server speaks it, else the initialize handshake; legacy: the "
        "handshake only (a server that mishandles the discovery request)",
    )
    enabled: bool = Field(True, description="false: not started, its tools not offered")

    @model_validator(mode="after")
    def _one_transport(self) -> ServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give command (a stdio server) or url (a streamable HTTP server), exactly one")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"url {self.url!r} is not http:// or https://")
        return self


class McpConfig(BaseModel):
    """``[plugins.mcp]``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[ServerName, ServerConfig] = Field(
        default_factory=dict, description="MCP servers by name (1-40 of A-Z a-z 0-9 _ -); tools are mcp_NAME_TOOL"
    )
    retry_max_s: float = Field(
        30.0, ge=1, description="a server that is down is retried after 1 s, 2 s, 3 s … at most this"
    )
    connect_timeout_s: float = Field(30.0, gt=0, description="start and handshake of a server, then it counts as down")
    poll_s: float = Field(
        10.0,
        gt=0,
        description="how often a server that cannot push changes (before MCP 2026-07-28) is asked for its tools",
    )
    serve_http: bool = Field(
        True, description="serve Hologram as an MCP server at /mcp on the web port (streamable HTTP, the web token)"
    )
    http_tools: bool = Field(
        False, description="/mcp also offers the plugins' tools (as `hologram mcp --tools`), under the approval policy"
    )
