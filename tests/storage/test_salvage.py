"""`hologram doctor --repair`'s recovery (pure Python: the sqlite3 CLI's `.recover` is not used, see
storage/salvage.py): per damage, the share of rows recovered byte for byte, never a row that was not there,
the new file built by its store, the damaged one kept as it was.

The floors are below what tools/bench/salvage.py measures (docs/memory.md, "Damaged files") so a change of
layout does not make them flaky, and well above what a naive reader gets: a plain ``SELECT *`` recovers
nothing from the truncated and the smashed files, and stops at the damaged page of the scribbled one.

Mutation checks (done): `repair_header` not rebuilding a smashed header turns ``[sessions.db-header]`` and
``[cold.db-header]`` red (nothing recovered); `_table` reading only whole ranges, without the single-rowid
lookups of the gaps, turns ``[sessions.db-scribble]`` red (a range scan stops early at a garbage cell: 1,549
of 1,805 rows); `repair` never opening the new file through the owning store (`_owner` returning None) turns
``test_an_older_layout_is_migrated_by_its_store_rows_included`` red (no ``call_of`` column, results not
linked to their calls).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from damaged_files import (
    Rows,
    break_text,
    build_cold,
    build_sessions,
    recovered_share,
    scribble,
    smash_header,
    table_rows,
    truncate_half,
)
from hologram.doctor.repair import repair
from hologram.memory.cold.store import ColdStore
from hologram.sessions import SessionStore, pairing_problems
from hologram.storage.salvage import probe_page_size

DAMAGE: dict[str, Callable[[Path], object]] = {"truncated": truncate_half, "header": smash_header, "scribble": scribble}
FLOOR = {"truncated": 0.4, "header": 1.0, "scribble": 0.97}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Rows]]:
    root = tmp_path_factory.mktemp("pristine")
    build_sessions(root / "sessions.db")
    build_cold(root / "cold.db", cooled_every=10)  # l3_events rows too
    return {name: (root / name, table_rows(root / name)) for name in ("sessions.db", "cold.db")}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("name", ["sessions.db", "cold.db"])
def test_recovers_what_is_left_and_keeps_the_damaged_file(
    pristine: dict[str, tuple[Path, Rows]], tmp_path: Path, name: str, damage: str
) -> None:
    source, before = pristine[name]
    path = tmp_path / name
    shutil.copyfile(source, path)
    DAMAGE[damage](path)
    damaged = path.read_bytes()
    naive = _plain_select(path)
    result = repair(path)
    same, total, extra = recovered_share(before, table_rows(path))
    assert same / total >= FLOOR[damage], f"{same} of {total}"
    assert naive < same, "the damage defeats a plain read; the repair does better"
    assert extra == 0, "a row that never existed was recovered"
    assert result.kept.read_bytes() == damaged and result.kept.name.startswith(f"{name}.damaged-")
    summary = result.tables["events" if name == "sessions.db" else "cold_events"]
    assert summary.recovered == len(table_rows(path)["events" if name == "sessions.db" else "cold_events"])
    if damage == "header":
        assert any("rebuilt" in note for note in result.notes)
    (SessionStore if name == "sessions.db" else ColdStore)(path).close()  # the kernel opens it


def _plain_select(path: Path) -> int:
    """Rows a plain reader gets: each table's SELECT * until the first error."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.text_factory = bytes
    got = 0
    try:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            try:
                for _ in db.execute(f'SELECT * FROM "{table.decode()}"'):
                    got += 1
            except sqlite3.DatabaseError:
                pass
    except sqlite3.DatabaseError:
        pass
    finally:
        db.close()
    return got


def test_the_new_file_is_built_by_its_store(pristine: dict[str, tuple[Path, Rows]], tmp_path: Path) -> None:
    source, _ = pristine["sessions.db"]
    path = tmp_path / "sessions.db"
    shutil.copyfile(source, path)
    break_text(path, "MARK-res-7-1 ")  # a row-level damage survives the repair as it was
    truncate_half(path)
    repair(path)
    db = sqlite3.connect(path)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    assert {"events_by_session", "one_result_per_call"} <= names
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    assert db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'events'").fetchone()[0] == 1800
    damaged_row = "SELECT typeof(data) FROM events WHERE instr(CAST(data AS BLOB), X'ff524b2d7265732d372d3120') > 0"
    assert db.execute(damaged_row).fetchall() == [("text",)]  # M\xffRK-res-7-1: same bytes, still TEXT
    db.close()
    store = SessionStore(path)
    events = store.events("s2")
    assert events and pairing_problems(events) == []
    assert store.append("s2", "input", {"text": "after the repair"}) > 1800  # seqs are never handed out twice


def test_an_older_layout_is_migrated_by_its_store_rows_included(tmp_path: Path) -> None:
    """A sessions.db from before the call_of/call_id columns, header smashed: the recovered file is
    migrated by `SessionStore` as the original would have been — columns added, results linked to calls."""
    path = tmp_path / "sessions.db"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, kind TEXT NOT NULL, "
        "ts REAL NOT NULL, data TEXT NOT NULL DEFAULT '{}')"
    )
    rows = [
        ("old", "input", 1.0, json.dumps({"text": "hello"})),
        (
            "old",
            "response",
            2.0,
            json.dumps({"content": None, "tool_calls": [{"id": "k1", "name": "f", "arguments": "{}"}]}),
        ),
        ("old", "tool_result", 3.0, json.dumps({"call_id": "k1", "content": "42"})),
    ]
    db.executemany("INSERT INTO events (session, kind, ts, data) VALUES (?, ?, ?, ?)", rows)
    db.commit()
    db.close()
    smash_header(path)
    repair(path)
    db = sqlite3.connect(path)
    assert db.execute("SELECT call_of, call_id FROM events WHERE kind = 'tool_result'").fetchall() == [(2, "k1")]
    assert db.execute("SELECT 1 FROM sqlite_master WHERE name = 'one_result_per_call'").fetchone() == (1,)
    db.close()
    assert pairing_problems(SessionStore(path).events("old")) == []


def test_commits_still_in_the_write_ahead_log_are_recovered(tmp_path: Path) -> None:
    """The kernel was killed (its log not checkpointed), then the main file's header was smashed: the
    rebuilt header says WAL, so SQLite replays the log into the working copy."""
    path = tmp_path / "sessions.db"
    SessionStore(path).close()
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA wal_autocheckpoint=0")
    for i in range(50):
        db.execute(
            "INSERT INTO events (session, kind, ts, data) VALUES ('s', 'input', ?, ?)", (i, f'{{"text": "{i}"}}')
        )
    wal = Path(f"{path}-wal").read_bytes()
    shutil.copyfile(path, tmp_path / "main.db")  # what the killed kernel left: the main file and its log
    db.close()
    shutil.copyfile(tmp_path / "main.db", path)
    Path(f"{path}-wal").write_bytes(wal)
    smash_header(path)
    result = repair(path)
    assert result.tables["events"].recovered == 50
    assert Path(f"{result.kept}-wal").read_bytes() == wal  # the log goes with the damaged file
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


@pytest.mark.parametrize("size", [1024, 8192, 65536])
def test_the_page_size_is_probed(tmp_path: Path, size: int) -> None:
    path = tmp_path / "x.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA page_size={size}")
    db.execute("CREATE TABLE t (a TEXT)")
    db.executemany("INSERT INTO t VALUES (?)", [(f"row {i} " * 20,) for i in range(2000)])
    db.commit()
    db.close()
    smash_header(path)
    assert probe_page_size(path) == size
    assert repair(path).tables["t"].recovered == 2000


def test_a_repair_that_fails_at_the_swap_leaves_the_damaged_file_in_place(
    pristine: dict[str, tuple[Path, Rows]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutation check (done): dropping the rename back in `_swap` turns this red (no sessions.db left)."""
    path = tmp_path / "sessions.db"
    shutil.copyfile(pristine["sessions.db"][0], path)
    truncate_half(path)
    damaged = path.read_bytes()

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk says no")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk says no"):
        repair(path)
    assert path.read_bytes() == damaged
    assert not list(tmp_path.glob("sessions.db.damaged-*")) and not list(tmp_path.glob(".doctor-*"))
