"""A real MCP server for the tests, built with the `mcp` package's server API (`MCPServer`).

    python fixture_server.py                      stdio
    python fixture_server.py --http PORT          streamable HTTP on 127.0.0.1:PORT/mcp

Tools: ``echo`` (text back), ``picture`` (a 1x1 PNG as an image block), ``fail`` (an error result),
``grow`` / ``shrink`` (add or remove the tool ``extra`` and announce it: ``notifications/tools/list_changed`` on
a handshake-era connection, the subscription bus on a 2026-07-28 one). With ``FIXTURE_PID_FILE`` set it starts a child
that leaves its session (``sleep``) and writes both pids there, "SERVER CHILD" (a test kills the server by
its pid, and checks the child dies with the plugin), and with ``FIXTURE_LOG`` it appends each call.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

server = MCPServer("fixture", version="1.0")


def record(line: str) -> None:
    path = os.environ.get("FIXTURE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    record(f"echo {text}")
    return f"echo: {text}"


@server.tool()
def picture() -> Image:
    """A tiny picture."""
    record("picture")
    return Image(data=PNG, format="png")


@server.tool()
def fail(why: str) -> str:
    """Always fails."""
    record(f"fail {why}")
    raise ToolError(f"failed on purpose: {why}")


async def extra(n: int) -> str:
    """An extra tool, there after grow."""
    record(f"extra {n}")
    return f"extra {n}"


async def announce(ctx: Context) -> None:
    await ctx.notify_tools_changed()  # 2026-07-28: subscriptions/listen
    await ctx.session.send_tool_list_changed()  # earlier: the notification (dropped on a 2026-07-28 connection)


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool extra."""
    record("grow")
    server.add_tool(extra, name="extra")
    await announce(ctx)
    return "grown"


@server.tool()
async def shrink(ctx: Context) -> str:
    """Remove the tool extra."""
    record("shrink")
    server.remove_tool("extra")
    await announce(ctx)
    return "shrunk"


if __name__ == "__main__":
    pid_file = os.environ.get("FIXTURE_PID_FILE")
    if pid_file:
        # a child that left the server's session and ignores stdin: only a guardian of the whole tree ends it
        child = subprocess.Popen(["sleep", "600"], start_new_session=True, stdin=subprocess.DEVNULL)
        with open(pid_file, "w", encoding="utf-8") as f:
            f.write(f"{os.getpid()} {child.pid}")
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
