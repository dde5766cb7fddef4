"""`hologram doctor`'s checks: every data file of a directory, each ok, damaged (with why) or a warning.

Unlike the open checks of `hologram.storage.dbfile` (which must cost microseconds), these read everything: SQLite's
``integrity_check`` over each database, and every row of the kernel's own stores decoded as the stores
decode it, so rows that would be skipped at run time are listed here. Databases are opened read-only
(``mode=ro``): a check never writes, not even a checkpoint of a pending log.

What is checked: ``sessions.db``, ``cold.db`` and any other SQLite file (by its header, or a ``.db`` /
``.sqlite`` name), ``settings.toml`` (UTF-8, TOML, the settings themselves), the memory graph ``graph.kz``
(opened read-only in a child process, since the database library can crash on a damaged file:
``hologram.doctor.graph``), and the JSON and TOML files plugins keep (``plugins/NAME/…``). Not checked:
``logs/``, ``workspace/`` folders (the user's own files), and the copies a repair kept (``*.damaged-*``).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli

from hologram.base.errors import HologramError
from hologram.config.settings import SETTINGS_NAME, load_settings, read_text
from hologram.doctor.graph import GRAPH_NAME, check_graph
from hologram.kernel.control import socket_path
from hologram.storage.caches import CACHES
from hologram.storage.dbfile import MAGIC, header_problem

SKIP_DIRS = frozenset({"logs", "workspace"})
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
COMPANION_SUFFIXES = ("-wal", "-shm", "-journal")
LISTED = 5  # damaged rows named in a report; the rest are counted


@dataclass
class FileReport:
    path: Path
    kind: str  # sqlite | graph | settings | json | toml
    state: str = "ok"  # ok | damaged | warning | repaired
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    repair: dict[str, Any] | None = None

    def damaged(self, reason: str) -> FileReport:
        self.state, self.reason = "damaged", reason
        return self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": str(self.path), "kind": self.kind, "state": self.state}
        out.update({"reason": self.reason, "notes": self.notes})
        if self.repair is not None:
            out["repair"] = self.repair
        return out


def kernel_running(data_dir: Path) -> bool:
    """Whether a kernel answers on the data directory's control socket (then its files are in use)."""
    path = socket_path(data_dir)
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


def data_files(data_dir: Path) -> Iterator[tuple[Path, str]]:
    """(path, kind) of every file the doctor checks, in a stable order."""
    for root, dirs, files in os.walk(data_dir):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".doctor-"))
        for name in sorted(files):
            path = Path(root) / name
            if ".damaged-" in name or name.endswith(COMPANION_SUFFIXES) or not path.is_file():
                continue
            kind = _kind(path, top=Path(root) == data_dir)
            if kind is not None:
                yield path, kind


def _kind(path: Path, *, top: bool) -> str | None:
    if top and path.name == SETTINGS_NAME:
        return "settings"
    if top and path.name == GRAPH_NAME:
        return "graph"
    if path.suffix in SQLITE_SUFFIXES:
        return "sqlite"
    try:
        with path.open("rb") as handle:
            if handle.read(16) == MAGIC:
                return "sqlite"
    except OSError:
        return None
    return {".json": "json", ".toml": "toml"}.get(path.suffix)


def check_data_dir(data_dir: Path) -> list[FileReport]:
    return [check_file(path, kind, data_dir) for path, kind in data_files(data_dir)]


def check_file(path: Path, kind: str, data_dir: Path) -> FileReport:
    report = FileReport(path, kind)
    checks: dict[str, Callable[[FileReport, Path], None]] = {
        "sqlite": _check_sqlite,
        "graph": _check_graph,
        "settings": _check_settings,
        "json": _check_json,
        "toml": _check_toml,
    }
    checks[kind](report, data_dir)
    if kind == "sqlite" and report.state != "ok" and path.parent == data_dir and path.name in CACHES:
        what = CACHES[path.name]
        report.notes.insert(0, f"a cache: `hologram up` sets it aside when damaged and starts a new one ({what})")
    return report


# -- SQLite ----------------------------------------------------------------------------------------------


def _check_sqlite(report: FileReport, data_dir: Path) -> None:
    path = report.path
    problem = header_problem(path)
    if problem is not None:
        report.damaged(problem)
        return
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)  # as_uri: escapes ? and #
    except sqlite3.Error as exc:
        report.damaged(f"cannot be opened: {exc}")
        return
    try:
        found = "\n".join(str(row[0]) for row in db.execute("PRAGMA integrity_check(20)"))
        if found != "ok":
            lines = [line for line in found.splitlines() if line and not line.startswith("*** in database")]
            more = f" (and {len(lines) - 3} more)" if len(lines) > 3 else ""
            report.damaged("SQLite's integrity check fails: " + "; ".join(lines[:3]) + more)
            return
        db.text_factory = bytes
        scan = {"sessions.db": _scan_sessions, "cold.db": _scan_cold}.get(path.name)
        if path.parent == data_dir and scan is not None:
            scan(db, report)
    except sqlite3.DatabaseError as exc:
        report.damaged(f'SQLite reports "{exc}"')
    finally:
        db.close()


def _scan_sessions(db: sqlite3.Connection, report: FileReport) -> None:
    from hologram.sessions.store import ALL_EVENTS, row_problem

    bad = []
    for row in db.execute(ALL_EVENTS):
        reason = row_problem(row)
        if reason is not None:
            session = row[1].decode("utf-8", "replace") if isinstance(row[1], bytes) else row[1]
            bad.append(f"event {row[0]} of session {session}: {reason}")
    _warn_rows(report, bad, "row(s) of events do not decode; each costs that one event (the row is kept as is)")


def _scan_cold(db: sqlite3.Connection, report: FileReport) -> None:
    from hologram.memory.cold.store import BLOCKS_SQL, LOAD_SQL, block_row_problem, event_row_problem

    bad = [f"event rid {row[0]}: {r}" for row in db.execute(LOAD_SQL) if (r := event_row_problem(row)) is not None]
    bad += [
        f"block of event {row[1]!r}: {r}" for row in db.execute(BLOCKS_SQL) if (r := block_row_problem(row)) is not None
    ]
    _warn_rows(report, bad, "row(s) do not decode; each event is moved aside at the next start and back in L1")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if b"cold_damaged_events" in tables:
        kept = int(db.execute("SELECT count(*) FROM cold_damaged_events").fetchone()[0])
        if kept:
            report.notes.append(f"{kept} damaged event(s) kept aside in cold_damaged_events (bytes as found)")


def _warn_rows(report: FileReport, bad: list[str], what: str) -> None:
    if not bad:
        return
    report.state = "warning"
    report.reason = f"{len(bad)} {what}"
    report.notes += bad[:LISTED] + ([f"… and {len(bad) - LISTED} more"] if len(bad) > LISTED else [])


# -- the memory graph ------------------------------------------------------------------------------------


def _check_graph(report: FileReport, data_dir: Path) -> None:
    try:
        backend = load_settings(data_dir, create=False).memory.graph.backend
    except HologramError:  # settings.toml is reported on its own line; the default backend opens the file
        backend = "kuzu"
    found = check_graph(report.path, backend=backend)
    report.state, report.reason = found.state, found.reason
    if found.counts is not None:
        c = found.counts
        report.notes.append(
            f"{c.get('triples', 0):,} triples, {c.get('blocks', 0):,} blocks, {c.get('entities', 0):,} entities "
            "(opened read-only in a child process)"
        )
    if found.state == "damaged":
        report.notes.append(
            "--repair sets it aside (kept beside it); the events it held go back to their sessions' history and "
            "cool again"
        )


# -- text files ------------------------------------------------------------------------------------------


def _check_settings(report: FileReport, data_dir: Path) -> None:
    try:
        load_settings(data_dir, create=False)
    except HologramError as exc:
        first = exc.problems[0]
        where = f"line {first.line}: " if first.line else ""
        report.damaged(where + (f"{first.key}: " if first.key else "") + first.message)
        report.notes += [p.render() for p in exc.problems[1:]]


def _check_json(report: FileReport, data_dir: Path) -> None:
    try:
        json.loads(read_text(report.path))
    except HologramError as exc:
        report.damaged(_line(exc))
    except json.JSONDecodeError as exc:
        report.damaged(f"line {exc.lineno}: not valid JSON: {exc.msg}")


def _check_toml(report: FileReport, data_dir: Path) -> None:
    try:
        tomli.loads(read_text(report.path))
    except HologramError as exc:
        report.damaged(_line(exc))
    except tomli.TOMLDecodeError as exc:
        report.damaged(f"line {exc.lineno}: not valid TOML: {exc.msg}")


def _line(exc: HologramError) -> str:
    first = exc.problems[0]
    return (f"line {first.line}: " if first.line else "") + first.message
