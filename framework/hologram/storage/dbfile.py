"""Opening the kernel's SQLite files: cheap checks that catch the common damage, and SQLite's own reports
of damage turned into one clear error that names the file and the fix.

Why here and not in each store: ``sessions.db``, ``cold.db`` (and `hologram doctor`, which reads any
database in the data directory) must say the same thing about the same damage. A damaged file gives a
`DamagedDatabaseError` — a `HologramError`, so the CLI prints it without a traceback — whose hint is
``hologram doctor --repair --data DIR``. Nothing here deletes, rewrites or "fixes" a damaged file: the
doctor recovers into a new file and keeps the damaged one.

What is checked at open (microseconds: one ``stat`` and one 100-byte read, no scan of the database — start-up
time is budgeted in milliseconds):

* the 16-byte magic, the page size and the fixed payload fractions of the header (a smashed header);
* a file that is not a whole number of pages, or shorter than the page count in its header says (a
  truncated file). The page count is only trusted when the header marks it valid and no write-ahead log is
  pending (a checkpoint in progress legitimately leaves the file shorter until the log is replayed).

Everything else is what SQLite reports when it reads a damaged page (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``):
at open (the stores read the schema and both ends of their main table), and whenever a later read reaches
a damaged page (`converting`).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hologram.base.errors import HologramError, Problem
from hologram.storage.sqlmem import limit_cache

MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
SQLITE_IOERR = 10
SQLITE_CORRUPT = 11
SQLITE_FULL = 13
SQLITE_NOTADB = 26
_DAMAGE_WORDS = ("malformed", "not a database", "database corruption")


class DamagedDatabaseError(HologramError):
    """An SQLite file of the data directory is damaged; the hint says how to recover it."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(Problem(f"damaged database: {reason}", file=str(path), hint=repair_hint(path.parent)))


class DiskFullError(HologramError):
    """A write to a file of the data directory failed for want of space. Nothing stored before is lost:
    SQLite rolls the statement back (WAL), a file written atomically keeps its old content."""

    def __init__(self, path: Path) -> None:
        self.path = path
        free = free_space(path)
        super().__init__(
            Problem(
                f"the disk is full ({free} free on its filesystem); nothing stored before was lost",
                file=str(path),
                hint="free some space there (or start with --data on another disk), then try again",
            )
        )


def free_space(path: Path) -> str:
    """The free space of ``path``'s filesystem, for a person ("312 KB"), or "no space" when unknown."""
    import shutil

    for where in (path, *path.parents):
        try:
            free = float(shutil.disk_usage(where).free)
        except OSError:
            continue
        for unit in ("bytes", "KB", "MB", "GB"):
            if free < 1024 or unit == "GB":
                return f"{free:.0f} {unit}" if unit == "bytes" else f"{free:.1f} {unit}"
            free /= 1024
    return "no space"


_NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
_LOW_SPACE = 1024 * 1024


def is_disk_full(exc: BaseException, path: Path | None = None) -> bool:
    """Whether an error reports a full disk: SQLITE_FULL; an OSError ENOSPC/EDQUOT/EFBIG; or SQLite's "disk
    I/O error" while ``path``'s filesystem has under 1 MiB free (SQLite reports a failed WAL-index or journal
    write on a full filesystem as an I/O error, not as SQLITE_FULL)."""
    if isinstance(exc, OSError):
        return exc.errno in _NO_SPACE_ERRNOS
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    text = str(exc).lower()
    if (isinstance(code, int) and code & 0xFF == SQLITE_FULL) or "disk is full" in text:
        return True
    if path is not None and ((isinstance(code, int) and code & 0xFF == SQLITE_IOERR) or "disk i/o error" in text):
        import shutil

        try:
            return shutil.disk_usage(path.parent).free < _LOW_SPACE
        except OSError:
            return False
    return False


def repair_hint(data_dir: Path) -> str:
    return (
        f"run `hologram doctor --repair --data {data_dir}`: it recovers what can be read into a new file "
        "and keeps the damaged one beside it"
    )


@dataclass(frozen=True)
class Header:
    """The fields of the 100-byte header the checks (and the doctor) need."""

    page_size: int  # 0 when the stored value is not a valid page size
    write_version: int
    read_version: int
    reserved: int
    fractions: tuple[int, int, int]
    change_counter: int
    page_count: int
    version_valid_for: int
    text_encoding: int

    @classmethod
    def parse(cls, raw: bytes) -> Header:
        size = int.from_bytes(raw[16:18], "big")
        size = 65536 if size == 1 else size
        valid_size = 512 <= size <= 65536 and size & (size - 1) == 0
        return cls(
            page_size=size if valid_size else 0,
            write_version=raw[18],
            read_version=raw[19],
            reserved=raw[20],
            fractions=(raw[21], raw[22], raw[23]),
            change_counter=int.from_bytes(raw[24:28], "big"),
            page_count=int.from_bytes(raw[28:32], "big"),
            version_valid_for=int.from_bytes(raw[92:96], "big"),
            text_encoding=int.from_bytes(raw[56:60], "big"),
        )

    @property
    def page_count_valid(self) -> bool:
        """SQLite trusts the in-header page count only when this holds (file format, section 1.3.7)."""
        return self.page_count > 0 and self.version_valid_for == self.change_counter


def wal_pending(path: Path) -> bool:
    """A non-empty ``-wal`` file: commits that are not in the main file yet."""
    try:
        return os.path.getsize(f"{path}-wal") > 0
    except OSError:
        return False


def header_problem(path: Path) -> str | None:
    """What is wrong with the file's header or size, or None (also for a missing or empty file: SQLite
    makes a new database of it). Costs one ``stat`` and one 100-byte read."""
    try:
        size = path.stat().st_size
        if size == 0:
            return None
        with path.open("rb") as handle:
            raw = handle.read(HEADER_SIZE)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be read: {exc.strerror or exc}"
    if len(raw) < HEADER_SIZE:
        return f"the file is {size} bytes, shorter than an SQLite header (truncated)"
    if raw[:16] != MAGIC:
        return "the file does not start with the SQLite header (its first bytes are damaged, or it is not a database)"
    header = Header.parse(raw)
    if header.page_size == 0:
        return "the header is damaged (its page size is not a valid one)"
    if header.write_version not in (1, 2) or header.read_version not in (1, 2) or header.fractions != (64, 32, 32):
        return "the header is damaged (fields that are fixed in every SQLite file have other values)"
    if size % header.page_size:
        return f"the file is {size} bytes, not a whole number of {header.page_size}-byte pages (truncated)"
    pages = size // header.page_size
    if header.page_count_valid and header.page_count > pages and not wal_pending(path):
        return f"the file holds {pages} pages but its header counts {header.page_count} (truncated)"
    return None


def is_damage(exc: BaseException) -> bool:
    """Whether an sqlite3 error reports a damaged file (as opposed to a lock, a full disk, a bug)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if isinstance(code, int):
        return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)
    text = str(exc).lower()
    return any(word in text for word in _DAMAGE_WORDS)


def check_file(path: Path) -> None:
    """Raise `DamagedDatabaseError` when the cheap checks find damage (before SQLite opens the file)."""
    problem = header_problem(path)
    if problem is not None:
        raise DamagedDatabaseError(path, problem)


def open_checked(path: Path, schema: str, *, synchronous: str, probe: tuple[str, ...]) -> sqlite3.Connection:
    """Open (creating) a kernel-owned SQLite file the way the side stores do (``vectors.db``, ``scenes.db``):
    the cheap checks first, then WAL, `synchronous`, a busy timeout and `schema`, and one ``count(*)`` of each
    table in `probe`, so damage is reported at open (`sqlite3.DatabaseError`; `is_damage` tells whether it is)
    rather than at the first read of a turn. Autocommit, usable from any thread (callers hold their own lock)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        check_file(path)
    db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        limit_cache(db)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(schema)
        for table in probe:
            db.execute(f'SELECT count(*) FROM "{table}"').fetchone()
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db


def kept_name(path: Path, when: float | None = None) -> Path:
    """``NAME.damaged-YYYYmmdd-HHMMSS`` beside ``path`` (with ``-2``, ``-3`` … if that exists already): where a
    damaged file is kept (by the doctor's repair, and when a rebuildable file is set aside)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if when is None else when))
    candidate = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 2
    while any(Path(f"{candidate}{suffix}").exists() for suffix in ("", "-wal", "-shm")):
        candidate = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
        n += 1
    return candidate


def set_aside(path: Path) -> Path:
    """Move a damaged rebuildable file to its `kept_name`, its write-ahead log and shared memory removed (they
    belong to the damaged file); returns where it went. Its store then starts a new one."""
    aside = kept_name(path)
    path.replace(aside)
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return aside


def open_or_set_aside(
    path: Path, opener: Callable[[Path], sqlite3.Connection], *, lost: str, log: logging.Logger
) -> sqlite3.Connection:
    """`opener(path)`, and for a file whose contents can be rebuilt (a cache, learned state) a damaged file is
    moved aside (``<name>.damaged-<time>``, its write-ahead log and shared memory removed) with a warning that
    says what is `lost`, and a new one opened — never a crash. Errors that are not damage propagate. The
    kernel's durable stores (``sessions.db``, ``cold.db``) never do this: their damage is the doctor's."""
    try:
        return opener(path)
    except (DamagedDatabaseError, sqlite3.DatabaseError) as exc:
        if isinstance(exc, sqlite3.DatabaseError) and not is_damage(exc):
            raise
        aside = set_aside(path)
        log.warning("%s was damaged (%s); moved to %s, %s", path, exc, aside.name, lost)
        return opener(path)


@contextlib.contextmanager
def converting(path: Path) -> Iterator[None]:
    """Inside: an sqlite3 error that reports damage leaves as `DamagedDatabaseError` naming ``path``."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        if not is_damage(exc):
            raise
        raise DamagedDatabaseError(path, f'SQLite reports "{exc}"') from None
