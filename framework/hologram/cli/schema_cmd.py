"""`hologram schema manifest|turn-api`: the published JSON Schemas, printed from the models that define them."""

from __future__ import annotations

import argparse

from hologram.cli._common import command_parser

DETAILS = """\
manifest  a plugin manifest (TOML), for editors and plugin CI (the same as docs/manifest.schema.json)
turn-api  the turn API: every method's params and every event (the same as docs/turn-api.schema.json)

Both are generated from the pydantic models the kernel validates with, so they never drift from it.

examples:
  hologram schema manifest > manifest.schema.json
  hologram schema turn-api | jq '.methods | keys'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "schema", "print a published JSON Schema", DETAILS)
    parser.add_argument("which", choices=("manifest", "turn-api"), help="which schema")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.which == "manifest":
        from hologram.manifest import manifest_json_schema_text as text
    else:
        from hologram.api.schema import turn_api_json_schema_text as text
    print(text(), end="")
    return 0
