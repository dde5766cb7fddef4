"""`hologram check`: lint manifests, for plugin repositories' CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hologram.cli._common import command_parser

DETAILS = """\
Validates a manifest file, or every manifest of a plugin repository (those its pyproject.toml declares in
the 'hologram.plugins' entry-point group, manifests/*.toml, and plugin.toml). Exit 1 on errors; warnings
(e.g. tool parameters without descriptions) are printed but do not fail.

examples:
  hologram check manifests/notes.toml
  hologram check .                       in a plugin repository's CI
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "check", "lint a manifest or a plugin repository", DETAILS)
    parser.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hologram.plan.check import check  # imported when it runs: the parser must stay cheap

    report = check(args.path)
    for problem in report.errors:
        print(problem.render(), file=sys.stderr)
    for problem in report.warnings:
        print(problem.render().replace("error:", "warning:", 1), file=sys.stderr)
    summary = (
        f"checked {len(report.checked)} manifest(s): {len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    )
    print(summary, file=sys.stderr if report.errors else sys.stdout)
    return 1 if report.errors else 0
