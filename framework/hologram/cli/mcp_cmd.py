"""`hologram mcp`: Hologram as an MCP server on stdin/stdout, for Claude Desktop and any MCP client.

The server itself is `hologram.clients.mcp_server` (a client of the running kernel's control socket, built
with the `mcp` package's server API); this module is the command line around it.
"""

from __future__ import annotations

import argparse

from hologram.cli._common import add_data_option, command_parser

MCP_DETAILS = """\
Serves the Model Context Protocol on stdin/stdout: an MCP client (Claude Desktop, an editor, any MCP host)
starts this command and gets the tools ask {text, session?} (a turn of the agent; the answer and the session
id to continue) and memory_search {text, limit?} (memory across sessions, each hit labelled L1, L2 or L3).

It talks to the kernel running with --data (start it with `hologram up`); it never starts one. A tool call
made while no kernel runs answers with that fix. Tool calls of the agent that your approval policy would ask
about are denied (an MCP client cannot answer Hologram's approval requests): allow them in [approvals].
Nothing but MCP messages is written to stdout; problems go to stderr.

--tools also offers the plugins' tools (files, notes, an MCP server's …) under their names and schemas, under
the same policy: a call that would need a person's yes is refused, what [approvals] allows runs.

Claude Desktop (claude_desktop_config.json):
  {"mcpServers": {"hologram": {"command": "hologram", "args": ["mcp", "--data", "/home/me/.hologram"]}}}

examples:
  hologram mcp --data ~/.hologram
  hologram mcp --data ~/.hologram --tools
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "mcp", "serve Hologram to MCP clients on stdin/stdout", MCP_DETAILS)
    add_data_option(parser)
    parser.add_argument(
        "--tools",
        action="store_true",
        help="also offer the plugins' tools (calls the policy would ask about are refused)",
    )
    parser.set_defaults(run=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    import anyio

    from hologram.clients.mcp_server import serve_stdio

    anyio.run(serve_stdio, args.data.expanduser().resolve(), args.tools)
    return 0
