"""`hologram graph` and `hologram why`: explain the lock."""

from __future__ import annotations

import argparse

from hologram.base._defaults import GRAPH_FORMATS as FORMATS
from hologram.cli._common import add_lock_option, command_parser

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).

GRAPH_DETAILS = """\
Prints the start-up graph from the lock: an edge A → B means B waits for a facility of A (dashed:
ordering only, from after_if_present).

examples:
  hologram graph                         numbered start order with every edge
  hologram graph --format dot | dot -Tsvg > graph.svg
  hologram graph --format mermaid        paste into Markdown (GitHub renders it)
"""

WHY_DETAILS = """\
For a plugin: what it waits for, the longest chain before it, and who waits for it.
For a facility: who provides it, who needs it, and through which chain its provider starts.

examples:
  hologram why notes              why notes starts where it starts
  hologram why notes.store        who provides and who needs notes.store
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    graph = command_parser(subparsers, "graph", "print the start-up graph from the lock", GRAPH_DETAILS)
    graph.add_argument("--format", "-f", choices=FORMATS, default="text", help="output format (default: text)")
    add_lock_option(graph)
    graph.set_defaults(run=run_graph)

    why = command_parser(subparsers, "why", "explain where a plugin or facility sits in the graph", WHY_DETAILS)
    why.add_argument("name", metavar="NAME", help="a plugin name or a facility name")
    add_lock_option(why)
    why.set_defaults(run=run_why)


def run_graph(args: argparse.Namespace) -> int:
    from hologram.plan.diagnostics import render_graph
    from hologram.plan.lock import read_lock

    print(render_graph(read_lock(args.lock), args.format), end="")
    return 0


def run_why(args: argparse.Namespace) -> int:
    from hologram.plan.diagnostics import explain
    from hologram.plan.lock import read_lock

    print(explain(read_lock(args.lock), args.name), end="")
    return 0
