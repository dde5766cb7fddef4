"""Options and helpers shared by several commands."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from hologram.base._defaults import DEFAULT_DATA_DIR, DEFAULT_LOCK, LOCK_NAME, user_dir
from hologram.base.errors import HologramError, Problem

USER_HELP = "the per-user Hologram: lock and data in $XDG_DATA_HOME/hologram (default ~/.local/share/hologram)"


def add_lock_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock",
        "-o",
        type=Path,
        default=DEFAULT_LOCK,
        metavar="FILE",
        help="the lock file (default: ./hologram.lock; with --user, the per-user one)",
    )
    _add_user_option(parser)


def add_data_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA_DIR,
        metavar="DIR",
        help="data directory (default: ./.hologram; with --user, the per-user one)",
    )
    _add_user_option(parser)


def _add_user_option(parser: argparse.ArgumentParser) -> None:
    if "--user" not in parser._option_string_actions:  # a command with both a lock and a data directory
        parser.add_argument("--user", action="store_true", help=USER_HELP)


def apply_user(args: argparse.Namespace) -> None:
    """`--user`: the lock and the data directory a command did not name explicitly become the per-user ones
    (:func:`hologram.base._defaults.user_dir`). Each default is a module constant, so one the command line did
    not give is that very object (argparse converts only given values)."""
    if not getattr(args, "user", False):
        return
    if getattr(args, "data", None) is DEFAULT_DATA_DIR:
        args.data = user_dir()
    if getattr(args, "lock", None) is DEFAULT_LOCK:
        args.lock = user_dir() / LOCK_NAME


KERNEL_MODULES = ("numpy", "kuzu", "jieba", "httpx")
"""What the kernel runs on and hologram-sdk does not install (the distribution `hologram` brings them)."""


def require_kernel(command: str) -> None:
    """Refuse `command` in an install of hologram-sdk alone, which has the kernel's code but not what it runs
    on, in one line instead of an ImportError's traceback. The modules are located, not imported."""
    missing = [name for name in KERNEL_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise HologramError(
            Problem(
                f"`hologram {command}` runs the kernel, which this install does not have (no "
                f"{', '.join(missing)}): hologram-sdk alone writes, checks and builds plugins",
                hint="install the full Hologram: pip install hologram (or pipx install hologram)",
            )
        )


def command_parser(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str, details: str
) -> argparse.ArgumentParser:
    return subparsers.add_parser(
        name,
        help=summary,
        description=f"{summary}\n\n{details}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
