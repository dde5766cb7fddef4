"""`hologram new plugin NAME`: a ready plugin repository (docs/authoring.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hologram.cli._common import command_parser

DETAILS = """\
Writes a plugin repository that passes its own tests as it is: for Python a pyproject.toml with the
'hologram.plugins' entry point, the package with its manifest (plugin.toml), one tool, one facility, one typed
stage hook and a pydantic config model (its JSON Schema written by `hologram check --write`), tests with the
conformance kit (pytest fixtures that come with hologram), a README and a CI workflow (.github/workflows/ci.yml:
`hologram check .` and the tests). With --lang node: a plain Node.js plugin (no npm packages) speaking the
protocol itself, with the same tests and CI.

NAME is the plugin's name: lowercase letters, digits, '-' and '_', starting with a letter. The repository goes
to ./hologram-NAME unless --dir says otherwise; an existing directory must be empty.

examples:
  hologram new plugin acme
  hologram new plugin acme --dir ~/src/acme
  hologram new plugin acme --lang node
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "new", "start a plugin repository", DETAILS)
    parser.add_argument("kind", choices=("plugin",), help="what to make (a plugin)")
    parser.add_argument("name", metavar="NAME", help="the plugin's name, e.g. acme")
    parser.add_argument("--dir", type=Path, default=None, metavar="DIR", help="where (default: ./hologram-NAME)")
    parser.add_argument("--lang", choices=("python", "node"), default="python", help="the plugin's language")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hologram.scaffold import check_name, new_plugin

    check_name(args.name)  # before the default directory is named after it
    target: Path = args.dir if args.dir is not None else Path(f"hologram-{args.name}")
    written = new_plugin(args.name, target, args.lang)
    print(f"created {target}/ ({args.lang} plugin {args.name!r}):")
    for path in written:
        print(f"  {path.relative_to(target)}")
    install = "pip install -e '.[test]'" if args.lang == "python" else "pip install pytest   # hologram is here"
    build = "hologram build" if args.lang == "python" else "hologram build -m ."
    print(
        f"next:\n  cd {target}\n  {install}\n  pytest                  # the conformance kit and the plugin's tests\n"
        f"  hologram check .        # what its CI runs\n  {build} && hologram up"
    )
    return 0
