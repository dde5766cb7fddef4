"""`hologram build`: resolve the manifests into hologram.lock."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hologram.cli._common import add_lock_option, command_parser

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).
if TYPE_CHECKING:
    from hologram.plan.lock import Sources

DETAILS = """\
Reads every manifest (built-ins, installed plugin distributions, and -m directories), checks that each
required facility has exactly one provider and that there is no cycle, and writes the start-up order to
the lock. The file is rewritten only when its content changes. `hologram up` follows the lock and refuses
a stale one.

examples:
  hologram build                        built-ins + installed plugins → ./hologram.lock
  hologram build -m ./my-plugins        also the manifests in ./my-plugins
  hologram build --no-discover -m dir   only dir (and the kernel)
  hologram build --check                CI: exit 1 if the lock is missing or stale, write nothing
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "build", "resolve manifests into the locked start-up graph", DETAILS)
    parser.add_argument(
        "-m",
        "--manifests",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a directory of *.toml manifests to add (repeatable)",
    )
    parser.add_argument(
        "--no-discover",
        action="store_true",
        help="use only the -m directories and the kernel: no built-ins, no installed plugins",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if the lock is missing or stale")
    parser.add_argument(
        "--strict", action="store_true", help="a broken installed plugin is an error instead of a warning"
    )
    add_lock_option(parser)
    parser.set_defaults(run=run)


def sources_for(lock_path: Path, directories: list[Path], no_discover: bool) -> Sources:
    """Record -m directories relative to the lock, so the lock stays valid when the tree moves."""
    from hologram.plan.lock import Sources

    paths = tuple(Sources.entry(directory, lock_path.parent) for directory in directories)
    return Sources(builtins=not no_discover, installed=not no_discover, paths=paths)


def run(args: argparse.Namespace) -> int:
    from hologram.plan.lock import build, read_lock

    lock_path: Path = args.lock
    sources = sources_for(lock_path, args.manifests, args.no_discover)
    result = build(lock_path, sources, strict=args.strict, write=not args.check)
    for problem in result.discovery.skipped:
        print(problem.render().replace("error:", "warning:", 1), file=sys.stderr)
    plugins = len(result.graph.order)
    if args.check:
        if not lock_path.is_file():
            print(f"{lock_path}: missing; run `hologram build`", file=sys.stderr)
            return 1
        current = read_lock(lock_path)
        if current.content_hash != result.graph_hash:
            print(f"{lock_path}: stale (the manifests changed); run `hologram build`", file=sys.stderr)
            return 1
        print(f"{lock_path}: up to date ({plugins} plugins)")
        return 0
    state = "written" if result.written else "unchanged"
    print(f"{lock_path}: {state} ({plugins} plugins, {len(result.graph.stages)} stages hooked)")
    return 0
