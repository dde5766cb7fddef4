"""Recovering a damaged SQLite file of the data directory into a new one, the damaged one kept beside it.

The steps, none of which writes to the damaged file:

1. copy it (and its write-ahead log, if any) into a working directory beside it;
2. salvage the copy's rows (`salvage.py`);
3. create the new file with the tables and indexes the damaged one had, insert the rows with their rowids
   (a session's seqs are referenced by its results and by the cold store's ids, so they must not change),
   then open it through the store that owns it — `SessionStore` for ``sessions.db``, `ColdStore` for
   ``cold.db`` — so its migrations run on the recovered rows exactly as they would have on the original
   (columns added, calls back-filled, indexes made); a table whose schema was unreadable is created by
   that store;
4. check the new file (``PRAGMA integrity_check``, and the store's open), then rename the damaged file to
   ``NAME.damaged-YYYYmmdd-HHMMSS`` (a ``-wal`` with commits in it follows it) and the new one to NAME.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hologram.storage.dbfile import kept_name, wal_pending
from hologram.storage.salvage import GIVE_UP_AFTER, Salvage, TableSalvage, Text, salvage

COMPANIONS = ("-wal", "-shm")


@dataclass
class TableSummary:
    recovered: int
    expected: int | None
    lost: int | None
    unreadable: int

    def render(self, name: str) -> str:
        if self.expected is None:
            lost = f", {self.unreadable} rowids unreadable" if self.unreadable else ""
            return f"{name}: {self.recovered} rows recovered (how many there were is unknown{lost})"
        return f"{name}: {self.recovered} of {self.expected} rows recovered ({self.lost} lost)"


@dataclass
class RepairResult:
    path: Path
    kept: Path
    tables: dict[str, TableSummary] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kept": str(self.kept),
            "tables": {name: vars(summary) for name, summary in self.tables.items()},
            "notes": self.notes,
        }


def repair(path: Path) -> RepairResult:
    """Recover ``path`` (a damaged SQLite file) in place, keeping the damaged file beside it."""
    work = Path(tempfile.mkdtemp(prefix=".doctor-", dir=path.parent))
    try:
        copy = work / "damaged.db"
        shutil.copyfile(path, copy)
        if Path(f"{path}-wal").exists():
            shutil.copyfile(f"{path}-wal", f"{copy}-wal")
        found = salvage(copy)
        fresh = work / "recovered.db"
        _create(path.name, fresh, found)
        _fill(fresh, found)
        _verify(path.name, fresh)
        kept = _swap(path, fresh)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = RepairResult(path, kept, notes=found.notes)
    for name, table in found.tables.items():
        result.tables[name] = TableSummary(len(table.rows), table.expected, table.lost, table.unreadable)
        if table.gave_up:
            stop = f"{name}: stopped after {GIVE_UP_AFTER} rowids without a readable row"
            result.notes.append(f"{stop}; rows past them, if any, are lost")
    return result


def _owner(name: str) -> Callable[[Path], None] | None:
    """A function creating an empty database the way its store does, for the files the kernel owns."""
    if name == "sessions.db":
        from hologram.sessions import SessionStore

        return lambda path: SessionStore(path).close()
    if name == "cold.db":
        from hologram.memory.cold.store import ColdStore

        return lambda path: ColdStore(path).close()
    return None


def _create(name: str, fresh: Path, found: Salvage) -> None:
    """The tables and indexes as the damaged file had them (an older layout stays older: its store
    migrates it in `_verify`, rows included, as it would have migrated the original); a table whose CREATE
    statement was unreadable is made by the owning store instead."""
    db = sqlite3.connect(str(fresh), isolation_level=None)
    made = set()
    try:
        for table in found.tables.values():
            with contextlib.suppress(sqlite3.DatabaseError):
                if table.sql:
                    db.execute(table.sql)
                    made.add(table.name)
        for sql in found.other_sql:  # indexes before the rows: INSERT OR IGNORE keeps a unique index's first row
            with contextlib.suppress(sqlite3.DatabaseError):
                db.execute(sql)
    finally:
        db.close()
    owner = _owner(name)
    if owner is not None and set(found.tables) - made:
        owner(fresh)


def _fill(fresh: Path, found: Salvage) -> None:
    db = sqlite3.connect(str(fresh), isolation_level=None)
    try:
        db.execute("BEGIN")
        for table in found.tables.values():
            _insert(db, table)
        for name, seq in found.sequence.items():  # seqs are never handed out twice, not even lost ones
            db.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?", (seq, name))
        db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()


def _insert(db: sqlite3.Connection, table: TableSalvage) -> None:
    target = list(db.execute(f"PRAGMA table_info({_quote(table.name)})"))
    names = {row[1] for row in target}
    alias = next((row[1] for row in target if row[5] == 1 and str(row[2]).upper() == "INTEGER"), None)
    wanted = [(i, c) for i, c in enumerate(table.columns, start=1) if c in names and c != alias]
    columns = ["rowid", *(c for _, c in wanted)]
    marks = ", ".join("?" * len(columns))
    sql = f"INSERT OR IGNORE INTO {_quote(table.name)} ({', '.join(_quote(c) for c in columns)}) VALUES ({marks})"
    for row in table.rows:
        bound = [_bind(value) for value in (row[0], *(row[i] for i, _ in wanted))]
        if not any(cast for _, cast in bound):
            db.execute(sql, [value for value, _ in bound])
            continue
        # a TEXT value that is not UTF-8 goes back as the same bytes, still TEXT: as a BLOB it would no longer
        # compare equal to the text it was (``WHERE session = ?``), and the stores read such rows one by one
        casts = ", ".join("CAST(? AS TEXT)" if cast else "?" for _, cast in bound)
        cols = ", ".join(_quote(c) for c in columns)
        db.execute(f"INSERT OR IGNORE INTO {_quote(table.name)} ({cols}) VALUES ({casts})", [v for v, _ in bound])


def _bind(value: Any) -> tuple[Any, bool]:
    """(what to bind, whether it must be cast back to TEXT): TEXT read as bytes is decoded when it is UTF-8;
    everything else is bound as read."""
    if isinstance(value, Text):
        try:
            return bytes(value).decode("utf-8"), False
        except UnicodeDecodeError:
            return bytes(value), True
    return value, False


def _verify(name: str, fresh: Path) -> None:
    db = sqlite3.connect(str(fresh))
    try:
        result = db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()
    if result != "ok":
        raise RuntimeError(f"the recovered database does not pass SQLite's integrity check: {result}")
    owner = _owner(name)
    if owner is not None:
        owner(fresh)  # opens, migrates (rows included), reads both ends: what `hologram up` will do


def _swap(path: Path, fresh: Path) -> Path:
    """Damaged file (and its -wal/-shm) → the kept name; the recovered file → ``path`` (mode 0600)."""
    kept = kept_name(path)
    os.chmod(fresh, 0o600)
    # before the new file arrives (SQLite would replay the old log into it): a log with commits in it goes
    # with the damaged file; an empty one and the shared-memory index hold no data
    pending = wal_pending(path)
    os.rename(path, kept)
    for suffix in COMPANIONS:
        with contextlib.suppress(FileNotFoundError):
            if pending:
                os.rename(f"{path}{suffix}", f"{kept}{suffix}")
            else:
                os.unlink(f"{path}{suffix}")
    try:
        os.replace(fresh, path)
    except OSError:  # the damaged file goes back where it was: never a data directory without the file
        os.rename(kept, path)
        for suffix in COMPANIONS if pending else ():
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{kept}{suffix}", f"{path}{suffix}")
        raise
    return kept


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
