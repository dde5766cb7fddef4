"""Opening a damaged sessions.db or cold.db: one error naming the file, what is wrong and the fix — and the
damaged file is left exactly as it was.

Mutation checks (done): removing `check_file` from `SessionStore.__init__` turns
``test_each_damage_names_the_file_and_the_fix[sessions-*]`` red for the truncated file (SQLite then says only
"malformed", not "truncated"); making `SessionStore._raise` re-raise every error unchanged turns
``test_a_damaged_schema_page_is_reported_by_sqlite_and_converted`` red (a bare sqlite3.DatabaseError).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from damaged_files import build_cold, build_sessions, smash_header, truncate_half
from hologram.memory.cold.store import ColdStore
from hologram.sessions import SessionStore
from hologram.storage.dbfile import DamagedDatabaseError, header_problem

DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "truncated": (truncate_half, "truncated"),
    "header": (smash_header, "does not start with the SQLite header"),
}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def opener(kind: str) -> Callable[[Path], object]:
    return SessionStore if kind == "sessions" else ColdStore


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pristine")
    build_sessions(root / "sessions.db", turns=120)
    build_cold(root / "cold.db", events=150)
    return {"sessions": root / "sessions.db", "cold": root / "cold.db"}


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("kind", ["sessions", "cold"])
def test_each_damage_names_the_file_and_the_fix(
    pristine: dict[str, Path], tmp_path: Path, kind: str, damage: str
) -> None:
    path = tmp_path / pristine[kind].name
    path.write_bytes(pristine[kind].read_bytes())
    apply, reason = DAMAGES[damage]
    apply(path)
    with pytest.raises(sqlite3.DatabaseError):  # the path this test claims: SQLite itself refuses the file
        sqlite3.connect(path).execute("SELECT count(*) FROM sqlite_master").fetchall()
    before = digest(path)
    with pytest.raises(DamagedDatabaseError) as info:
        opener(kind)(path)
    text = info.value.render()
    assert text.startswith(f"{path}: error: damaged database: ")
    assert reason in text
    assert f"hint: run `hologram doctor --repair --data {tmp_path}`" in text
    assert digest(path) == before, "the damaged file must not be touched"
    assert not Path(f"{path}-wal").exists() or os.path.getsize(f"{path}-wal") == 0


def test_a_damaged_schema_page_is_reported_by_sqlite_and_converted(pristine: dict[str, Path], tmp_path: Path) -> None:
    """The header is intact (the cheap checks pass), the schema on page 1 is not: SQLite's own report,
    turned into the same error."""
    path = tmp_path / "sessions.db"
    path.write_bytes(pristine["sessions"].read_bytes())
    with path.open("r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff" * 400)
    assert header_problem(path) is None
    with pytest.raises(DamagedDatabaseError, match=r'SQLite reports "(malformed|database disk image)'):
        SessionStore(path)


def test_healthy_empty_and_missing_files_open(tmp_path: Path, pristine: dict[str, Path]) -> None:
    assert header_problem(tmp_path / "missing.db") is None
    (tmp_path / "empty.db").touch()
    assert header_problem(tmp_path / "empty.db") is None
    SessionStore(tmp_path / "empty.db").close()
    assert header_problem(pristine["sessions"]) is None and header_problem(pristine["cold"]) is None


def test_header_checks(tmp_path: Path, pristine: dict[str, Path]) -> None:
    good = pristine["sessions"].read_bytes()
    cases = {
        "short": (good[:60], "shorter than an SQLite header"),
        "page size": (good[:16] + b"\x03\x00" + good[18:], "page size"),
        "fractions": (good[:21] + b"\x00" + good[22:], "fixed in every SQLite file"),
        "partial page": (good[:-100], "not a whole number of 4096-byte pages"),
        "short by pages": (good[: len(good) - 4096], "header counts"),
    }
    for name, (data, reason) in cases.items():
        path = tmp_path / f"{name}.db"
        path.write_bytes(data)
        problem = header_problem(path)
        assert problem is not None and reason in problem, name
    # a pending write-ahead log may legitimately extend the file: the page count is not held against it
    path = tmp_path / "short by pages.db"
    Path(f"{path}-wal").write_bytes(b"x" * 32)
    assert header_problem(path) is None
