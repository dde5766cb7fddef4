"""`hologram doctor [--repair]`: check the data directory's files, and recover damaged databases."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hologram.base.errors import HologramError, Problem
from hologram.cli._common import add_data_option, command_parser, require_kernel

# What the command runs is imported when it runs: building the parser (every command, `--version`) must stay
# cheap (hologram/cli/__init__.py).
if TYPE_CHECKING:
    from hologram.doctor.check import FileReport

DETAILS = """\
Checks every file of the data directory: sessions.db and cold.db (SQLite's integrity check, and every row
decoded as the kernel decodes it), any other database, the memory graph graph.kz (opened read-only in a child
process), settings.toml, and the JSON/TOML files of plugins.
Each is reported ok, damaged (with the reason) or warning (rows that do not decode: each costs only its
event, and is kept as found). Exit 1 when a file is damaged.

--repair recovers each damaged database into a new file, through the store that owns it, and keeps the
damaged one beside it as NAME.damaged-YYYYmmdd-HHMMSS; it prints the rows recovered and lost per table.
A damaged graph.kz is set aside the same way: the events it held go back to their sessions' history and
cool into a new graph (the session logs hold every event).
It refuses while a kernel runs with the directory (stop it first). settings.toml is never rewritten:
the report says which line to fix.

examples:
  hologram doctor                          check ./.hologram
  hologram doctor --repair --data ~/agent  recover the damaged databases of ~/agent
  hologram doctor --json | jq '.files[] | select(.state != "ok")'
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = command_parser(subparsers, "doctor", "check the data files; --repair recovers damaged ones", DETAILS)
    add_data_option(parser)
    parser.add_argument("--repair", action="store_true", help="recover damaged databases (the kernel must be stopped)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    require_kernel("doctor")  # it decodes rows with the stores' own classes
    from hologram.doctor.check import check_data_dir, kernel_running
    from hologram.kernel.control import socket_path

    data_dir: Path = args.data
    if not data_dir.is_dir():
        raise HologramError(
            Problem("no data directory here", file=str(data_dir), hint="pass the --data directory `hologram up` uses")
        )
    if args.repair and kernel_running(data_dir):
        raise HologramError(
            Problem(
                "a kernel is running with this data directory: its databases are in use and cannot be repaired",
                file=str(socket_path(data_dir)),
                hint=f"stop it (Ctrl-C in its terminal), then run `hologram doctor --repair --data {data_dir}` again",
            )
        )
    reports = check_data_dir(data_dir)
    if args.repair:
        for report in reports:
            if report.kind == "sqlite" and report.state == "damaged":
                _repair(report)
            elif report.kind == "graph" and report.state == "damaged":
                _set_graph_aside(report)
    failed = [r for r in reports if r.state == "damaged"]
    if args.json:
        print(json.dumps({"data_dir": str(data_dir), "ok": not failed, "files": [r.to_json() for r in reports]}))
    else:
        _print(reports, data_dir, repaired=args.repair)
    return 1 if failed else 0


def _repair(report: FileReport) -> None:
    from hologram.doctor.repair import repair

    try:
        result = repair(report.path)
    except Exception as exc:  # the damaged file is untouched: say what failed, go on with the next file
        report.notes.append(f"repair failed, the file is unchanged: {type(exc).__name__}: {exc}")
        return
    report.notes = [summary.render(name) for name, summary in result.tables.items()] + result.notes
    report.notes.append(f"the damaged file is kept as {result.kept.name}")
    report.repair = result.to_json()
    report.state = "repaired"


def _set_graph_aside(report: FileReport) -> None:
    from hologram.doctor.graph import set_graph_aside

    try:
        result = set_graph_aside(report.path)
    except OSError as exc:
        report.notes.append(f"setting it aside failed, the file is unchanged: {exc}")
        return
    report.notes = [
        f"set aside as {result.kept.name}; L3 starts again from what cools next",
        f"{result.returned:,} event(s) it held are back in their sessions' history (L1) and cool again",
    ] + ([result.note] if result.note else [])
    report.repair = {"kept": str(result.kept), "returned": result.returned}
    report.state = "repaired"


def _print(reports: list[FileReport], data_dir: Path, *, repaired: bool) -> None:
    if not reports:
        print(f"{data_dir}: no data files yet")
        return
    width = max(len(str(r.path)) for r in reports)
    for report in reports:
        line = f"{str(report.path).ljust(width)}  {report.state:8}"
        print(line + (f"  {report.reason}" if report.reason else ""))
        for note in report.notes:
            print(f"    {note}")
    _summary(reports, data_dir, repaired=repaired)


def _summary(reports: list[FileReport], data_dir: Path, *, repaired: bool) -> None:
    damaged = [r for r in reports if r.state == "damaged"]
    counts: dict[str, Any] = {}
    for report in reports:
        counts[report.state] = counts.get(report.state, 0) + 1
    print(", ".join(f"{n} {state}" for state, n in sorted(counts.items())))
    databases = [r for r in damaged if r.kind in ("sqlite", "graph")]
    if databases and not repaired:
        print(f"fix: `hologram doctor --repair --data {data_dir}` (stop the kernel first)")
    if any(r.kind not in ("sqlite", "graph") for r in damaged):
        print("fix: correct the damaged text files at the lines shown (the doctor never rewrites them)")
