"""Options and helpers shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from hologram.base._defaults import DEFAULT_DATA_DIR, DEFAULT_LOCK


def add_lock_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lock",
        "-o",
        type=Path,
        default=DEFAULT_LOCK,
        metavar="FILE",
        help="the lock file (default: ./hologram.lock)",
    )


def add_data_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA_DIR, metavar="DIR", help="data directory (default: ./.hologram)"
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
