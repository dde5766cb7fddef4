"""The MCP servers an editor passes in ``session/new`` and ``session/load``, as the turn API's ``sessions/mcp``.

ACP gives each server as ``McpServerStdio`` {name, command, args, env: [{name, value}]} or, when the agent says
it can (``mcpCapabilities.http``), ``HttpMcpServer`` {type: http, name, url, headers: [{name, value}]}; the
turn API takes ``{name, command, args, env: {NAME: value}, cwd}`` or ``{name, url, headers: {NAME: value}}``.
A stdio server runs in the session's ``cwd`` (the editor's project, as the editor would run it). Names become
1-40 of ``A-Z a-z 0-9 _ -`` (an editor may call one "GitHub (work)"), distinct, so its tools are
``mcp_<name>_<tool>``. SSE and MCP-over-ACP servers are not asked for (the capabilities say so) and, if sent,
left out with a line on stderr.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from acp.schema import HttpMcpServer, McpServerStdio

NAME_MAX = 40
_OTHER = re.compile(r"[^A-Za-z0-9_-]")


def server_name(name: str, taken: set[str]) -> str:
    """``name`` as the turn API accepts it, distinct from ``taken`` (a suffix ``-2``, ``-3`` … when needed)."""
    base = _OTHER.sub("_", name.strip())[:NAME_MAX] or "server"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base[: NAME_MAX - len(str(n)) - 1]}-{n}"
    return candidate


def server_specs(servers: list[Any], cwd: str) -> list[dict[str, Any]]:
    """The editor's servers as ``sessions/mcp``'s ``servers``."""
    specs: list[dict[str, Any]] = []
    taken: set[str] = set()
    for server in servers:
        if isinstance(server, McpServerStdio):
            name = server_name(server.name, taken)
            env = {v.name: v.value for v in server.env or []}
            specs.append({"name": name, "command": server.command, "args": list(server.args or []), "env": env,
                          "cwd": cwd})  # fmt: skip
        elif isinstance(server, HttpMcpServer):
            name = server_name(server.name, taken)
            headers = {h.name: h.value for h in server.headers or []}
            specs.append({"name": name, "url": server.url, "headers": headers})
        else:
            kind = getattr(server, "type", type(server).__name__)
            print(f"hologram acp: MCP server {getattr(server, 'name', '?')!r} ({kind}) left out: "
                  "only stdio and http servers are connected", file=sys.stderr)  # fmt: skip
            continue
        taken.add(name)
    return specs
