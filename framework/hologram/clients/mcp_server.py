"""Hologram as an MCP server: the agent and memory as tools any MCP client (Claude Desktop, an editor) calls.

    hologram mcp [--data DIR]          stdio; the client starts it (docs/channels.md, "MCP")

Tools:

- ``ask`` {text, session?}: one turn of the agent (the turn API, as ``hologram ask``); the answer, and the
  session id to pass as ``session`` to continue the conversation (also as structured content).
- ``memory_search`` {text, limit?}: memory across sessions and layers, each hit labelled L1 (recent), L2
  (cold context) or L3 (the graph) as ``hologram memory search`` shows them.
- with ``--tools`` (opt-in), the plugins' tools under their own names and schemas, called through the turn
  API's ``tools/call`` (hologram/agent/direct_tools.py): a call the user's policy would ask about is refused.

Approvals: an MCP client has no way to answer Hologram's approval requests, so a turn run from here is one
whose client cannot approve: a tool call the user's policy would ask about is denied (the model reads why),
exactly as for ``hologram ask`` from a script. What the policy allows (``mode = "allow"``, the allow-list)
runs. To let the agent use such a tool from an MCP client, allow it in ``[approvals]``.

How it reaches the kernel is a `KernelAccess`: the turn API and ``kernel.memory`` ``search``, nothing else.
`hologram mcp` uses `ControlSocket`, a client of the running kernel like any other: each call connects to the
control socket of the data directory (`hologram.clients.TurnClient`), so a kernel restarted meanwhile is simply
found again; when none runs, the call answers with the fix (``hologram up --data DIR``) instead of starting one —
the MCP client starts and stops this process per conversation, and a kernel tied to it would take its plugins
down with it. ``/mcp`` on the web port is the same server in the ``mcp`` plugin, whose access is the plugin's
own ``kernel.turns`` and ``kernel.memory`` facilities (hologram_plugins/mcp/turns_access.py): a plugin does not
reach for the kernel's control socket.

Either way a turn's client is the ``ask`` call: when it goes (the MCP client closed stdin, dropped the HTTP
request), the turn is cancelled and the session stays valid (tests/a2a/test_mcp_disconnect.py).

`build_server` returns the `mcp` package's low-level ``Server``; `serve_stdio` runs it on stdin/stdout. Only
public modules are imported here (tests/guard/test_channel_imports.py): the turn API's client and contract,
never the kernel's own packages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import mcp_types as types
from mcp.server.lowlevel import Server

from hologram._version import __version__
from hologram.api import turn as api
from hologram.clients.control import TurnClient
from hologram.clients.errors import HologramError, RpcError

CLIENT_NAME = "mcp"
SEARCH_METHOD = "admin/search"  # kernel.memory search on the control socket (docs/protocol.md)
LAYERS = {"l1": "L1 recent", "l2": "L2 cold context", "l3": "L3 graph"}
TEXT_CHARS = 500

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "description": "what to ask or tell the agent"},
        "session": {"type": "string", "description": "continue this session (the id a previous answer gave)"},
    },
    "required": ["text"],
    "additionalProperties": False,
}
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "minLength": 1, "description": "the words to look for (any language)"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 10, "description": "at most this many"},
    },
    "required": ["text"],
    "additionalProperties": False,
}

TOOLS = [
    types.Tool(
        name="ask",
        description=(
            "Ask the Hologram agent (it has memory of earlier conversations and its own tools). Returns its "
            "answer and a session id; pass the id as session to continue the same conversation."
        ),
        input_schema=ASK_SCHEMA,
    ),
    types.Tool(
        name="memory_search",
        description=(
            "Search Hologram's memory across all sessions: L1 (recent), L2 (cold context) and L3 (the knowledge "
            "graph's facts), best first, each hit labelled with its layer and session."
        ),
        input_schema=SEARCH_SCHEMA,
    ),
]


def _text(text: str, *, error: bool = False, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=error, structured_content=structured
    )


@dataclass
class Answer:
    """What one ``ask`` turn came to."""

    session: str
    output: str = ""
    stop_reason: str = "error"
    errors: list[str] = field(default_factory=list)


class KernelAccess(Protocol):
    """The kernel as the MCP server uses it: the turn API and memory search (module docstring)."""

    where: str  # for a person: which kernel (an error says it went away)

    async def ask(self, text: str, session: str | None) -> Answer: ...

    async def tools_list(self) -> list[dict[str, Any]]: ...

    async def tools_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]: ...

    async def memory_search(self, text: str, limit: int) -> dict[str, Any]: ...


class ControlSocket:
    """`KernelAccess` over the control socket of ``data_dir``'s kernel, a connection per call (`hologram mcp`)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.where = f"the kernel of {data_dir}"

    async def _connect(self) -> TurnClient:
        return await TurnClient.connect(self.data_dir, client=CLIENT_NAME, approvals=False)

    async def ask(self, text: str, session: str | None) -> Answer:
        answer: list[str] = []
        errors: list[str] = []
        async with await self._connect() as client:  # closed when the call is cancelled: the kernel cancels the turn
            turn = await client.start(text, session=session)
            ended: api.TurnEnded | None = None
            async for event in turn:
                if isinstance(event, api.ContentDelta):
                    answer.append(event.text)
                elif isinstance(event, api.TurnFailed):
                    errors.append(event.message)
                elif isinstance(event, api.TurnEnded):
                    ended = event
                    break
        output = (ended.output if ended is not None and ended.output else "") or "".join(answer)
        stop = ended.stop_reason if ended is not None else "error"
        return Answer(turn.session or "", output, stop, errors)

    async def tools_list(self) -> list[dict[str, Any]]:
        async with await self._connect() as client:
            return list(await client.tools_list())

    async def tools_call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        async with await self._connect() as client:
            return dict(await client.tools_call(name, arguments))

    async def memory_search(self, text: str, limit: int) -> dict[str, Any]:
        async with await self._connect() as client:
            return dict(await client.connection.request(SEARCH_METHOD, {"text": text, "limit": limit}))


class HologramTools:
    """What the tools do, through ``kernel`` (`KernelAccess`). ``graph_tools``: also offer the plugins' tools
    (``--tools``), called through ``tools/call`` under the user's approval policy."""

    def __init__(self, kernel: KernelAccess, *, graph_tools: bool = False) -> None:
        self.kernel = kernel
        self.graph_tools = graph_tools

    async def list(self) -> list[types.Tool]:
        if not self.graph_tools:
            return TOOLS
        try:
            found = await self.kernel.tools_list()
        except (HologramError, RpcError, OSError, ConnectionError):  # no kernel now: its tools come when it does
            return TOOLS
        own = {t.name for t in TOOLS}
        extra = [
            types.Tool(
                name=str(t["name"]),
                description=f"{t.get('description') or t['name']} (Hologram tool of {t.get('plugin')}"
                + ("; needs approval: refused unless your policy allows it)" if t.get("needs_approval") else ")"),
                input_schema=dict(t.get("parameters") or {"type": "object"}),
            )
            for t in found
            if str(t.get("name")) not in own
        ]
        return [*TOOLS, *extra]

    async def graph_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        answer = await self.kernel.tools_call(name, arguments)
        result = _text(str(answer.get("content", "")), error=bool(answer.get("is_error")))
        for image in answer.get("images") or []:  # a screenshot: MCP's image content, after the text
            result.content.append(types.ImageContent(type="image", data=image["data"], mime_type=image["mime"]))
        return result

    async def ask(self, text: str, session: str | None = None) -> types.CallToolResult:
        done = await self.kernel.ask(text, session or None)
        sid, output, stop, errors = done.session, done.output, done.stop_reason, done.errors
        structured = {"answer": output, "session": sid, "stop_reason": stop}
        if errors or stop == "error":
            why = "; ".join(errors) or "the turn ended without an answer"
            return _text(f"error: {why}\n\n(session: {sid})", error=True, structured={**structured, "error": why})
        return _text(f"{output}\n\n(session: {sid} — pass it as session to continue)", structured=structured)

    async def memory_search(self, text: str, limit: int = 10) -> types.CallToolResult:
        result = await self.kernel.memory_search(text, limit)
        hits = list(result.get("hits") or [])
        if not hits:
            return _text(f"no memory matches {text!r}", structured={"hits": []})
        lines = []
        for hit in hits:
            layer = LAYERS.get(str(hit.get("layer", "")).lower(), str(hit.get("layer")))
            body = " ".join(str(hit.get("text", "")).split())[:TEXT_CHARS]
            if hit.get("kind") == "triple" and hit.get("source_text"):
                body += f"  ← {' '.join(str(hit['source_text']).split())[:TEXT_CHARS]}"
            lines.append(f"[{layer}] {hit.get('kind', '')} (session {hit.get('session') or '-'}): {body}")
        return _text("\n".join(lines), structured={"hits": hits})

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """A tool call; a kernel that is not running, or an error of it, is an error result naming the fix."""
        try:
            if name == "ask":
                text = arguments.get("text")
                if not isinstance(text, str) or not text.strip():
                    return _text("error: ask needs text (a non-empty string)", error=True)
                session = arguments.get("session")
                return await self.ask(text, session if isinstance(session, str) else None)
            if name == "memory_search":
                text = arguments.get("text")
                if not isinstance(text, str) or not text.strip():
                    return _text("error: memory_search needs text (a non-empty string)", error=True)
                limit = arguments.get("limit", 10)
                return await self.memory_search(text, limit if isinstance(limit, int) and 0 < limit <= 200 else 10)
            if self.graph_tools:
                return await self.graph_tool(name, arguments)
        except RpcError as exc:  # the kernel refused the call (no such tool, bad arguments)
            return _text(f"error: {exc.message}", error=True)
        except HologramError as exc:  # no kernel runs here: say how to start one
            return _text(f"error: {exc.render()}", error=True)
        except (OSError, ConnectionError) as exc:
            return _text(f"error: {self.kernel.where} went away: {exc}", error=True)
        return _text(
            f"error: no tool named {name!r} (tools: ask, memory_search; hologram mcp --tools: the graph's)", error=True
        )


def build_server(kernel: Path | KernelAccess, *, graph_tools: bool = False) -> Server[Any]:
    """The MCP server object, reaching the kernel through ``kernel`` (a data directory: its control socket)."""
    tools = HologramTools(ControlSocket(kernel) if isinstance(kernel, Path) else kernel, graph_tools=graph_tools)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await tools.list())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await tools.call(params.name, dict(params.arguments or {}))

    return Server(
        "hologram",
        version=__version__,
        instructions="Hologram: a self-hosted agent with long-term memory. Use ask to talk to it.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve_stdio(data_dir: Path, graph_tools: bool = False) -> None:
    """Serve MCP on stdin/stdout until the client closes stdin."""
    from mcp.server.stdio import stdio_server

    server = build_server(data_dir, graph_tools=graph_tools)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
