"""The `hologram` command line.

Each sub-command lives in its own module with two functions, `register(subparsers)` and `run(args)`, so
adding a command never touches the others. Errors a user can fix are `HologramError`s: printed to stderr
with their location and fix, exit code 1, no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hologram.base._unused_imports import refuse_unused_imports

refuse_unused_imports()  # before the commands import httpx (hologram/base/_unused_imports.py: ~6 MB per process)

from hologram._version import __version__  # noqa: E402
from hologram.base.errors import HologramError  # noqa: E402
from hologram.cli import (  # noqa: E402
    acp_cmd,
    ask_cmd,
    build_cmd,
    check_cmd,
    doctor_cmd,
    inspect_cmd,
    mcp_cmd,
    memory_cmd,
    new_cmd,
    open_cmd,
    plugin_cmd,
    schema_cmd,
    service_cmd,
    status_cmd,
    up_cmd,
)
from hologram.cli._common import apply_user  # noqa: E402

COMMANDS = (
    build_cmd,
    up_cmd,
    status_cmd,
    plugin_cmd,
    open_cmd,
    ask_cmd,
    acp_cmd,
    inspect_cmd,
    memory_cmd,
    mcp_cmd,
    check_cmd,
    new_cmd,
    doctor_cmd,
    schema_cmd,
    service_cmd,
)

DESCRIPTION = """\
Hologram is an agent kernel built from plugins. Plugins declare in TOML manifests the facilities they
provide and require; `hologram build` resolves them into a locked start-up graph (hologram.lock), and
`hologram up` launches every plugin the moment what it needs is ready.

First steps:
  hologram build                 resolve manifests into ./hologram.lock
  hologram up                    start the kernel and the plugins (Ctrl-C stops)
  hologram status                what runs, what waits, and why
  hologram plugin add ./acme     install a plugin and start it in the running graph (list, remove)
  hologram open                  the web UI's link (opens a browser when there is one)
  hologram ask "hello"           one turn against the running kernel (hologram chat: interactive)
  hologram acp                   the agent an editor spawns (Zed, any ACP client): docs/channels.md
  hologram graph --format text   see what starts after what
  hologram why notes.store       who provides a facility, who needs it
  hologram memory stats          what memory holds per layer (search, graph ENTITY, distill, scenes)
  hologram new plugin acme       start a plugin repository (tests with the conformance kit, CI)
  hologram mcp                   serve the agent and memory to MCP clients (Claude Desktop) on stdio
  hologram check path/to/repo    lint a plugin's manifest (for plugin CI)
  hologram doctor                check the data files; --repair recovers damaged databases
  hologram schema turn-api       the JSON Schema of the turn API (or of a manifest)
  hologram service install       run the agent as a systemd user service (after login)
"""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hologram",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `hologram COMMAND --help` for a command's options and examples. Docs: docs/",
    )
    parser.add_argument("--version", action="version", version=f"hologram {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    apply_user(args)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        code: int = args.run(args)
    except HologramError as exc:
        _say(exc.render())
        return 1
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except Exception as exc:  # only a full disk is handled here; the rest is re-raised
        from pathlib import Path

        from hologram.storage.dbfile import DiskFullError, is_disk_full

        where = Path(getattr(exc, "filename", None) or getattr(args, "data", None) or ".")
        if not is_disk_full(exc, where / "x"):
            raise
        print(DiskFullError(where).render(), file=sys.stderr)  # one line and its fix, not a traceback
        return 1
    finally:
        _settle_background_loads()
    return code


def _say(text: str) -> None:
    """A last line on stderr, which may have lost its reader (`hologram up | tee`, then Ctrl-C): no traceback."""
    from hologram.cli.terminal import say

    say(text, sys.stderr)


def _settle_background_loads() -> None:
    """Let `hologram up`'s start-up loads finish before exit (hologram/kernel/preload.py `settle`); a command that
    never started them does not import the module."""
    preload = sys.modules.get("hologram.kernel.preload")
    if preload is not None:
        sys.stderr.flush()
        preload.settle()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
