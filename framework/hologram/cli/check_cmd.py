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

A plugin that declares Plugin(config=Model) publishes the model's JSON Schema in the file its manifest names
(`config_schema = "NAME.config.schema.json"` under [plugin]); check fails when the file is missing or out of
date, and --write (re)writes it. `hologram build` copies it into the lock, for the web UI's plugins tab.

examples:
  hologram check manifests/notes.toml
  hologram check .                       in a plugin repository's CI
  hologram check --write .               after changing the config model: rewrite its schema file
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "check", "lint a manifest or a plugin repository", DETAILS)
    parser.add_argument("path", nargs="?", type=Path, default=Path("."), metavar="PATH")
    parser.add_argument(
        "--write", action="store_true", help="write each config model's JSON Schema to its manifest's file"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hologram.plan.check import check  # imported when it runs: the parser must stay cheap

    report = check(args.path, write=args.write)
    for written in report.written:
        print(f"{written}: written")
    for problem in report.errors:
        print(problem.render(), file=sys.stderr)
    for problem in report.warnings:
        print(problem.render().replace("error:", "warning:", 1), file=sys.stderr)
    summary = (
        f"checked {len(report.checked)} manifest(s): {len(report.errors)} error(s), {len(report.warnings)} warning(s)"
    )
    print(summary, file=sys.stderr if report.errors else sys.stdout)
    return 1 if report.errors else 0
