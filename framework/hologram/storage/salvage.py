"""Reading what can still be read from a damaged SQLite file, in pure Python (the standard sqlite3 module).

Why not SQLite's own recovery: the ``.recover`` command of the ``sqlite3`` CLI is missing where the CLI is
not installed, and where it is — Debian 12's ``sqlite3`` 3.40.1, this project's reference machine — it
fails with "SQL logic error" on every database, healthy ones included, because the system library is built
without the ``sqlite_dbpage`` table it needs. Python's sqlite3 module does not expose the recovery API.
What every Python has is SQLite itself, which reads every intact page correctly (overflow chains, the
write-ahead log, encodings); the salvage lets it do so, one rowid range at a time:

1. **The header** of the working copy is repaired first: a smashed one is rebuilt (magic, a page size
   probed from the plausible ones by how many pages then start like b-tree pages, page count from the file
   size, UTF-8, no freelist); a truncated file gets the page count it really has (and loses a trailing
   partial page), so SQLite reports the missing pages as damaged instead of refusing the whole file.
2. **Each table** is read by ``rowid BETWEEN a AND b``: a range that fails is split in two until the
   failing part is single rowids, each counted as unreadable. A range that succeeds never touches a
   damaged page, so every row on an intact page is recovered even when its neighbour page is garbage.
   Text is read as bytes, so a value that is not UTF-8 is carried over byte for byte (the stores deal with
   such rows one by one); nothing is decoded or "cleaned" here.
3. **How many rows there were**, for the summary: ``count(*)`` (SQLite answers it from the smallest index,
   which is often intact when table pages are not), else for ``AUTOINCREMENT`` tables the highest rowid
   ever given out (``sqlite_sequence``), else unknown.

Only the working copy is touched; the damaged file itself is never opened for writing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hologram.storage.dbfile import HEADER_SIZE, MAGIC, Header, wal_pending

PAGE_SIZES = tuple(512 << i for i in range(8))  # 512 … 65536
BTREE_PAGE_TYPES = (2, 5, 10, 13)  # interior index, interior table, leaf index, leaf table
WINDOW = 256  # rowids read per range query; the gaps in a window are looked up one by one
GIVE_UP_AFTER = 64 * WINDOW  # with no known highest rowid: stop after this many rowids without a readable row
SQLITE_VERSION_NUMBER = 3_040_001


class Text(bytes):
    """A TEXT value read as bytes (``text_factory``), so it is written back as TEXT and not as a BLOB."""


@dataclass
class TableSalvage:
    name: str
    sql: str | None  # its CREATE statement, when the schema was readable
    columns: list[str]
    rows: list[tuple[Any, ...]] = field(default_factory=list)  # (rowid, *columns)
    unreadable: int = 0  # rowids whose lookup failed (an upper bound of the rows lost among them)
    expected: int | None = None  # rows the table held, when that can be told
    gave_up: bool = False  # no highest rowid was known and the reading stopped at a long unreadable stretch

    @property
    def lost(self) -> int | None:
        return None if self.expected is None else max(0, self.expected - len(self.rows))


@dataclass
class Salvage:
    tables: dict[str, TableSalvage] = field(default_factory=dict)
    other_sql: list[str] = field(default_factory=list)  # indexes, views, triggers (generic databases)
    sequence: dict[str, int] = field(default_factory=dict)  # sqlite_sequence
    notes: list[str] = field(default_factory=list)


def salvage(copy: Path) -> Salvage:
    """Every readable row of every table of ``copy`` (a working copy: its header may be rewritten)."""
    result = Salvage()
    repair_header(copy, result.notes)
    db = sqlite3.connect(str(copy), isolation_level=None)
    db.text_factory = Text
    try:
        try:
            schema = db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
        except sqlite3.DatabaseError as exc:
            result.notes.append(f"the schema (page 1) cannot be read ({exc}): no table could be found")
            return result
        entries = [(_str(kind), _str(name), None if sql is None else _str(sql)) for kind, name, sql in schema]
        if any(kind == "table" and name == "sqlite_sequence" for kind, name, _ in entries):
            result.sequence = _sequence(db)
        for kind, name, text in entries:
            if kind == "table" and not name.startswith("sqlite_"):
                result.tables[name] = _table(db, name, text, result.sequence.get(name))
            elif text is not None and kind in ("index", "view", "trigger"):
                result.other_sql.append(text)
    finally:
        db.close()
    for table in result.tables.values():
        if table.expected is None and table.name in result.sequence:
            table.expected = max(result.sequence[table.name], max((r[0] for r in table.rows), default=0))
    return result


# -- the header ------------------------------------------------------------------------------------------


def repair_header(path: Path, notes: list[str]) -> None:
    """Make the header of ``path`` one SQLite will open: rebuilt if smashed, page count = pages present."""
    size = path.stat().st_size
    with path.open("r+b") as handle:
        raw = handle.read(HEADER_SIZE)
        header = Header.parse(raw.ljust(HEADER_SIZE, b"\0"))
        intact = raw[:16] == MAGIC and header.page_size != 0 and header.fractions == (64, 32, 32)
        if intact:
            page_size = header.page_size
        else:
            page_size = probe_page_size(path)
            raw = build_header(page_size, size // page_size, wal=wal_pending(path))
            notes.append(f"the header was damaged and has been rebuilt (page size {page_size} probed)")
        pages = size // page_size
        if size % page_size:
            handle.truncate(pages * page_size)
            notes.append(f"a partial last page ({size % page_size} bytes) was cut off")
        if intact and header.page_count != pages:
            if header.page_count > pages:
                notes.append(f"the file holds {pages} of the {header.page_count} pages its header counts (truncated)")
            counter = raw[24:28]
            raw = raw[:28] + pages.to_bytes(4, "big") + raw[32:92] + counter + raw[96:]
        handle.seek(0)
        handle.write(raw)


def probe_page_size(path: Path) -> int:
    """The page size under which the most pages begin like b-tree pages (the smallest of those that do
    about as well as the best: every multiple of the real size scores as high on the pages it samples)."""
    data = path.read_bytes()
    scores: dict[int, float] = {}
    for size in PAGE_SIZES:
        offsets = range(size, len(data) - 8, size)
        if len(offsets) == 0:
            continue
        good = sum(1 for offset in offsets if _looks_like_btree_page(data, offset, size))
        scores[size] = good / len(offsets)
    if not scores:
        return 4096
    best = max(scores.values())
    return min(size for size, score in scores.items() if score >= 0.9 * best)


def _looks_like_btree_page(data: bytes, offset: int, size: int) -> bool:
    kind = data[offset]
    if kind not in BTREE_PAGE_TYPES:
        return False
    cells = int.from_bytes(data[offset + 3 : offset + 5], "big")
    content = int.from_bytes(data[offset + 5 : offset + 7], "big") or 65536
    header = 12 if kind in (2, 5) else 8
    return header + 2 * cells <= content <= size


def build_header(page_size: int, pages: int, *, wal: bool) -> bytes:
    """A fresh 100-byte header (file format, section 1.3): UTF-8, format 4, no freelist, no auto-vacuum."""
    version = 2 if wal else 1
    out = bytearray(HEADER_SIZE)
    out[0:16] = MAGIC
    out[16:18] = (1 if page_size == 65536 else page_size).to_bytes(2, "big")
    out[18], out[19], out[20] = version, version, 0
    out[21], out[22], out[23] = 64, 32, 32
    out[24:28] = (1).to_bytes(4, "big")  # change counter
    out[28:32] = pages.to_bytes(4, "big")
    out[40:44] = (1).to_bytes(4, "big")  # schema cookie
    out[44:48] = (4).to_bytes(4, "big")  # schema format
    out[56:60] = (1).to_bytes(4, "big")  # UTF-8
    out[92:96] = (1).to_bytes(4, "big")  # version-valid-for = change counter: the page count is valid
    out[96:100] = SQLITE_VERSION_NUMBER.to_bytes(4, "big")
    return bytes(out)


# -- the tables ------------------------------------------------------------------------------------------


def _table(db: sqlite3.Connection, name: str, sql: str | None, sequence: int | None) -> TableSalvage:
    quoted = _quote(name)
    try:
        columns = [_str(row[1]) for row in db.execute(f"PRAGMA table_info({quoted})")]
        indexes = [_str(row[1]) for row in db.execute(f"PRAGMA index_list({quoted})")]
    except sqlite3.DatabaseError:
        columns, indexes = [], []
    table = TableSalvage(name, sql, columns)
    if not columns:
        return table
    select = f"SELECT rowid, {', '.join(_quote(c) for c in columns)} FROM {quoted} WHERE rowid"
    low = _first(db, f"SELECT rowid FROM {quoted} ORDER BY rowid LIMIT 1") or 1
    high = _highest(db, quoted, indexes, sequence)
    rows: dict[int, tuple[Any, ...]] = {}
    start, last = low, low
    while high is None or start <= high:
        if high is None and start > last + GIVE_UP_AFTER:
            table.gave_up = True  # no bound known and nothing readable for a long stretch: the end, or a hole
            break
        end = start + WINDOW - 1 if high is None else min(start + WINDOW - 1, high)
        try:
            found = db.execute(f"{select} BETWEEN ? AND ? ORDER BY rowid", (start, end)).fetchall()
        except sqlite3.DatabaseError:
            found = []
        rows.update((row[0], row) for row in found if start <= row[0] <= end and row[0] not in rows)
        for rowid in range(start, end + 1):  # gaps: deleted rows, or rows a damaged page hid from the scan
            if rowid in rows:
                continue
            try:
                single = db.execute(f"{select} = ?", (rowid,)).fetchone()
            except sqlite3.DatabaseError:
                table.unreadable += 1
                continue
            if single is not None:
                rows[rowid] = single
        if rows:
            last = max(last, max(rows))
        start = end + 1
    table.rows = [rows[rowid] for rowid in sorted(rows)]
    table.expected = _first(db, f"SELECT count(*) FROM {quoted}")
    if table.expected is not None and table.expected < len(table.rows):
        table.expected = None  # an index that is damaged too undercounts: better no number than a wrong one
    return table


def _highest(db: sqlite3.Connection, quoted: str, indexes: list[str], sequence: int | None) -> int | None:
    """The highest rowid: read directly (a few pages), else from any intact index (every entry carries its
    rowid) or ``sqlite_sequence``; None when nothing tells."""
    found = [_first(db, f"SELECT rowid FROM {quoted} ORDER BY rowid DESC LIMIT 1")]
    if found[0] is None:
        found += [_first(db, f"SELECT max(rowid) FROM {quoted} INDEXED BY {_quote(i)}") for i in indexes]
        found.append(sequence)
    known = [value for value in found if value is not None]
    return max(known) if known else None


def _first(db: sqlite3.Connection, sql: str) -> int | None:
    """The integer the query answers, or None (no row, NULL, or SQLite could not read it)."""
    try:
        row = db.execute(sql).fetchone()
    except sqlite3.DatabaseError:
        return None
    return int(row[0]) if row is not None and isinstance(row[0], int) else None


def _sequence(db: sqlite3.Connection) -> dict[str, int]:
    try:
        return {_str(name): int(seq) for name, seq in db.execute("SELECT name, seq FROM sqlite_sequence")}
    except (sqlite3.DatabaseError, TypeError, ValueError):
        return {}


def _str(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
