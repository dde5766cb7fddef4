"""`hologram acp`: the agent an editor (Zed, any ACP client) spawns, over stdio (docs/channels.md)."""

from __future__ import annotations

import argparse

from hologram.cli._common import add_data_option, add_lock_option, command_parser, require_kernel

DETAILS = """\
Speaks the Agent Client Protocol (JSON-RPC 2.0) on stdin/stdout, as editors spawn their agents, and runs
every prompt as a turn of the kernel for --data: streamed answers, reasoning, tool calls with their status,
approvals asked in the editor (allow once, always allow, reject). Not for typing at: use `hologram chat`.

When no kernel runs with --data, it starts one (`hologram up --data DIR --lock FILE`) and stops it when the
editor closes the connection; a kernel already running is used and left running. Its log goes to stderr.

Zed (settings.json; absolute paths, as Zed does not start it in this directory):
  "agent_servers": {
    "Hologram": {
      "type": "custom",
      "command": "/path/to/hologram/.venv/bin/hologram",
      "args": ["acp", "--data", "/path/to/hologram/.hologram", "--lock", "/path/to/hologram/hologram.lock"]
    }
  }
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "acp", "serve an editor (Zed, any ACP client) over stdio", DETAILS)
    add_data_option(parser)
    add_lock_option(parser)
    parser.add_argument("--no-start", action="store_true", help="never start a kernel: fail when none runs with --data")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    require_kernel("acp")  # ACP's library and, when none runs, the kernel it starts
    import asyncio

    from hologram.channels.acp import serve

    return asyncio.run(serve(args.data.resolve(), args.lock.resolve(), start=not args.no_start))
