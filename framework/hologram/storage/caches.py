"""The derived caches of a data directory: SQLite files computed from the durable stores, which `hologram up`
checks at start and rebuilds when damaged (`hologram.doctor.caches`: set aside, a new one started), and which
`hologram doctor` names as such.

Why more than the header check every store does at open (`dbfile.open_checked`): that check and the open's
``count(*)`` probes read the header and the tables' B-tree pages, not the overflow pages where a passage
vector lives, nor indexes; a page damaged there was read at run time — the embedding of a session failing at
every turn, scene lookups failing — and nothing said so until `hologram doctor` ran (issue 42). So at start
each cache also gets SQLite's ``PRAGMA quick_check`` (every page, without the index-to-table cross-check of
``integrity_check``): ~4 ms a MB on one core, run beside the kernel's imports. A cache over
`QUICK_CHECK_MAX_BYTES` gets the header check only (its damage is found when read, and by the doctor).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hologram.storage.dbfile import header_problem

__all__ = ["CACHES", "QUICK_CHECK_MAX_BYTES", "cache_files", "cache_problem"]

#: name in the data directory → what a damaged file costs (a new one fills again as it is used)
CACHES = {
    "vectors.db": "vectors will be computed again",
    "scenes.db": "scenes will be learned again",
    "across.db": "what sessions said is filled again from the session log (memory across sessions)",
}
QUICK_CHECK_MAX_BYTES = 256 * 1024 * 1024  # ~1 s of quick_check; larger: the header only at start


def cache_files(data_dir: Path) -> list[Path]:
    """The derived caches present in `data_dir`."""
    return [path for name in CACHES if (path := data_dir / name).is_file()]


def cache_problem(path: Path) -> str | None:
    """What is wrong with the cache at `path` (its header, then SQLite's quick_check), or None. Opens it
    read-only: a check never writes."""
    problem = header_problem(path)
    if problem is not None or path.stat().st_size > QUICK_CHECK_MAX_BYTES:
        return problem
    try:
        db = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return f"cannot be opened: {exc}"
    try:
        found = [str(row[0]) for row in db.execute("PRAGMA quick_check(3)")]
    except sqlite3.DatabaseError as exc:
        return f'SQLite\'s quick check fails: "{exc}"'
    finally:
        db.close()
    lines = [x for row in found for x in row.splitlines() if x and not x.startswith("*** in database")]
    return None if lines == ["ok"] else "SQLite's quick check fails: " + "; ".join(lines)
