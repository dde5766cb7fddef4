"""The doctor and the memory graph (``graph.kz``, L3): checked by opening it in a child process, set aside
when damaged (issue 39 item 8).

**Check.** The database library can crash on a damaged file (a segfault at open, for 4 KB of random bytes in
the middle of the file) — in the doctor's process that would end the doctor. So the check runs
``python -m hologram.memory.graph.worker --check`` (read-only: the graph is opened, counted and closed) and
reads its exit: 0 ok with the counts, a signal → damaged ("opening it crashed the library"), 2 → damaged
(the library refuses the file), 3 → in use by another process (the running kernel).

**Repair** cannot salvage a graph the library cannot open, and does not need to: what L3 holds was cooled
out of the session logs, which still hold every event. The file (and its ``.wal``) is renamed
``graph.kz.damaged-YYYYmmdd-HHMMSS``, and ``cold.db``'s record of which events L3 held is cleared in the
same step, so those events are back in their sessions' history (L1), pruned and cooled again like new
ones — the graph rebuilds from what cools next, and nothing the person said is lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hologram.storage.dbfile import kept_name

__all__ = ["CHECK_TIMEOUT_S", "GRAPH_NAME", "GraphCheck", "check_graph", "set_graph_aside"]

GRAPH_NAME = "graph.kz"
CHECK_TIMEOUT_S = 300.0
_COMPANIONS = (".wal",)
_LEFTOVERS = (".lock", ".copy")  # the store's lock file and its COPY directory: rebuilt at the next open


@dataclass(frozen=True, slots=True)
class GraphCheck:
    state: str  # ok | damaged | warning
    reason: str = ""
    counts: dict[str, int] | None = None


def check_graph(path: Path, *, backend: str = "kuzu") -> GraphCheck:
    """Open the graph at `path` read-only in a child process and say how that went (module docstring)."""
    from hologram.memory.graph.remote import WORKER_MODULE, describe_exit

    try:
        done = subprocess.run(
            [sys.executable, "-m", WORKER_MODULE, "--check", str(path), "--backend", backend],
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return GraphCheck("damaged", f"opening it did not finish in {CHECK_TIMEOUT_S:.0f} s")
    answer: dict[str, object] = {}
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    with contextlib.suppress(ValueError):
        found = json.loads(lines[-1]) if lines else {}
        answer = found if isinstance(found, dict) else {}
    if done.returncode == 0:
        counts = {k: int(v) for k, v in answer.items() if isinstance(v, int)}
        return GraphCheck("ok", counts=counts)
    if done.returncode == 3:
        return GraphCheck(
            "warning", "in use by another process (the running kernel: `hologram status` reports its graph)"
        )
    if done.returncode < 0:
        how = describe_exit(done.returncode)
        return GraphCheck("damaged", f"opening it crashed the graph database (the checking process {how})")
    said = answer.get("error")
    if not isinstance(said, str):
        said = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no reason given"])[-1]
    return GraphCheck("damaged", f"the graph database refuses it: {said}")


@dataclass(frozen=True, slots=True)
class SetAside:
    kept: Path
    returned: int
    """Events L3 held that are back in their sessions' history."""
    note: str = ""


def set_graph_aside(path: Path) -> SetAside:
    """Rename the damaged graph (and its log) to the kept name; clear ``cold.db``'s L3 records (module
    docstring). The kernel must be stopped (the doctor checks)."""
    kept = kept_name(path)
    os.rename(path, kept)
    for suffix in _COMPANIONS:
        with contextlib.suppress(FileNotFoundError):
            os.rename(f"{path}{suffix}", f"{kept}{suffix}")
    for suffix in _LEFTOVERS:
        leftover = Path(f"{path}{suffix}")
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    cold = path.parent / "cold.db"
    if not cold.exists():
        return SetAside(kept, 0)
    try:
        db = sqlite3.connect(str(cold), isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            returned = int(db.execute("SELECT count(*) FROM l3_events").fetchone()[0]) if "l3_events" in tables else 0
            if returned:
                db.execute("DELETE FROM l3_events")
            db.execute("COMMIT")
        finally:
            db.close()
    except sqlite3.Error as exc:
        return SetAside(
            kept,
            0,
            f"cold.db's record of the events L3 held could not be cleared ({exc}): those events stay out of the "
            "history; run `hologram doctor --repair` again once cold.db is repaired",
        )
    return SetAside(kept, returned)
