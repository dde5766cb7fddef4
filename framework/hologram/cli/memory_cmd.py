"""`hologram memory stats|search|graph|distill|scenes`: look into memory — counts per layer, a search across
sessions and layers, an entity's neighbourhood in the L3 graph (text or Graphviz DOT), cooling on demand, the
scenes.

Where the answer comes from: the running kernel's control socket (``admin/<method>``, the same
``kernel.memory`` methods the web page calls) whenever a kernel runs on the data directory — only the kernel
may open the graph database, so a second process could not anyway. When none runs, the command opens the data
directory itself with the same classes (`MemoryInspector` over `SessionMemory`, `GraphMemory`, `SceneStore`),
so online and offline answers have one shape. A kernel that runs but fails the call is reported as such: the
command never falls back to offline then (the graph is locked, and a silent second answer would hide the
kernel's problem).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hologram.cli._common import add_data_option, command_parser, require_kernel

# What a sub-command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py; tests/guard/test_imports.py holds it to docs/guards.md).

DETAILS = """\
Memory has layers: L1 is the recent conversation a model is sent as is, L2 (cold context) the older events
recalled when they are relevant, L3 the knowledge graph that L2 events nobody used for a while are distilled
into (triples: subject, predicate, value — each with the block it was read from). Scenes are the recurring
situations (channel, partner, tools, topic, time of day) recall prefers memory from.

Each sub-command asks the running kernel of --data; when no kernel runs there, it opens the data directory
itself (the kernel must not run then: it holds the graph open).

examples:
  hologram memory stats                     counts per layer
  hologram memory stats --json              {"l1": 120, "l2": 40, "l3_triples": 310, "scenes": 2, ...}
  hologram memory search "pottery class"    where did I say that? (each hit with its layer)
  hologram memory graph Caroline            what memory knows about Caroline, with sources
  hologram memory graph Caroline --hops 2 --dot | dot -Tsvg > caroline.svg
  hologram memory distill --idle-hours 0    distil every L2 event into L3 now
  hologram memory scenes
"""

STATS = """\
Sessions, events per layer (L1 recent, L2 cold context, L3 distilled), the L3 graph's triples, blocks and
entities, and the scenes. --json is machine-readable: {"sessions", "l1", "l2", "l3_events", "l3_triples",
"l3_blocks", "l3_entities", "scenes"}.

examples:
  hologram memory stats
  hologram memory stats --json | jq .l3_triples
"""

SEARCH = """\
Searches every session's events (L1 and L2, ranked by the same scoring a request uses) and the L3 graph (its
triples and blocks), and says where each hit lives. Chinese and English alike.

examples:
  hologram memory search "pottery class"
  hologram memory search 小橘子 --limit 5 --json
"""

GRAPH = """\
The triples that touch ENTITY in the L3 graph (with --hops 2, also those of its neighbours), each with its
source: when it was said, in which session, and the text it was read from. --dot prints the neighbourhood as
a Graphviz graph (entities as nodes, predicates as edge labels).

examples:
  hologram memory graph Caroline
  hologram memory graph 小明 --hops 2
  hologram memory graph Caroline --dot | dot -Tpng > caroline.png
"""

DISTILL = """\
Runs cooling now instead of waiting for the background job: L2 events with at most --max-access accesses
and idle for --idle-hours hours ([memory.cooling] in settings.toml unless given) are distilled into triples
and move into L3. An event whose extraction fails stays in L2 (nothing is lost) and is retried later.

examples:
  hologram memory distill
  hologram memory distill --idle-hours 0 --max-access 1000    everything in L2, now
"""

SCENES = """\
The scenes memory has learnt from recurring situations, or that plugins declared (chan:qq/peer:group_1),
strongest first, with their features.

examples:
  hologram memory scenes
  hologram memory scenes --json
"""

# seconds the kernel may take: a distillation with a model extracting triples takes a while
TIMEOUT_S = {"distill": 3600.0}
DEFAULT_TIMEOUT_S = 120.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    memory = command_parser(subparsers, "memory", "inspect memory: layers, search, the L3 graph, scenes", DETAILS)
    sub = memory.add_subparsers(dest="memory_command", metavar="SUBCOMMAND", required=True)

    def command(name: str, summary: str, details: str) -> argparse.ArgumentParser:
        parser = command_parser(sub, name, summary, details)
        add_data_option(parser)
        parser.add_argument("--json", action="store_true", help="machine-readable output")
        parser.set_defaults(run=run, memory_command=name)
        return parser

    command("stats", "counts per layer and the scenes", STATS)
    search = command("search", "search across sessions and layers", SEARCH)
    search.add_argument("text", metavar="TEXT", help="the words to look for")
    search.add_argument("--limit", type=int, default=20, metavar="N", help="at most N hits (1-200, default 20)")
    graph = command("graph", "an entity's neighbourhood in the L3 graph", GRAPH)
    graph.add_argument("entity", metavar="ENTITY", help="a name, as a subject or value of triples")
    graph.add_argument(
        "--hops", type=int, choices=(1, 2), default=1, help="1: its own triples; 2: also its neighbours'"
    )
    graph.add_argument("--limit", type=int, default=50, metavar="N", help="at most N triples (1-200, default 50)")
    graph.add_argument("--dot", action="store_true", help="print Graphviz DOT instead of a table")
    distill = command("distill", "distil idle L2 events into L3 now", DISTILL)
    distill.add_argument("--idle-hours", type=float, metavar="H", help="idle at least H hours (0: all of L2)")
    distill.add_argument("--max-access", type=int, metavar="N", help="recalled at most N times")
    command("scenes", "the scenes memory knows", SCENES)


def params_of(args: argparse.Namespace) -> dict[str, Any]:
    """The ``kernel.memory`` params of a parsed sub-command (the same online and offline)."""
    name = args.memory_command
    if name == "search":
        return {"text": args.text, "limit": args.limit}
    if name == "graph":
        return {"entity": args.entity, "hops": args.hops, "limit": args.limit}
    if name == "distill":
        out: dict[str, Any] = {}
        if args.idle_hours is not None:
            out["idle_hours"] = args.idle_hours
        if args.max_access is not None:
            out["max_accesses"] = args.max_access
        return out
    return {}


def run(args: argparse.Namespace) -> int:
    require_kernel("memory")  # offline, it opens the stores with the kernel's own classes
    from hologram.cli import memory_render
    from hologram.cli.memory_source import answer

    name = args.memory_command
    result, where = answer(args.data, name, params_of(args), timeout=TIMEOUT_S.get(name, DEFAULT_TIMEOUT_S))
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, sort_keys=True))
        return 0
    if name == "graph" and args.dot:
        print(memory_render.dot(result), end="")
        return 0
    print(memory_render.render(name, result, where=where, data=Path(args.data)))
    return 0
