"""Real SQLite files of the kernel's stores, damaged on disk the way disks, copies and people damage them.

Used by the storage tests (tests/storage, tests/e2e/test_damaged_storage.py) and by tools/bench/salvage.py.
Each damage works on the bytes of a closed file (its log checkpointed), never through SQLite:

* `truncate_half` — the second half of the file is gone (an interrupted copy, a full disk);
* `smash_header` — the first 100 bytes are random (the SQLite header);
* `scribble` — random bytes in the middle of a table page halfway through the file;
* `break_text` — one byte of one stored value (found by a marker it contains) becomes 0xFF, so that
  value is no longer UTF-8 while every SQLite structure stays intact.
"""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from hologram.memory.cold.blocks import build_event
from hologram.memory.cold.store import ColdStore
from hologram.memory.embed.vectors import DenseVector
from hologram.sessions import SessionStore

Rows = dict[str, dict[int, tuple[Any, ...]]]
LEAF_TABLE_PAGE = 13


def build_sessions(path: Path, turns: int = 300, sessions: int = 5) -> SessionStore:
    """A sessions.db like a kernel writes: per turn an input, a response with two tool calls, their results
    (every tenth one 6 KB long, so some rows use overflow pages), the answer and the output. Returns the
    store, closed."""
    store = SessionStore(path)
    for i in range(turns):
        sid = store.create_session("cli", f"s{i % sessions}")
        turn = f"t{i}"
        store.append(sid, "input", {"text": f"question {i}: MARK-in-{i} " + "lorem ipsum " * 8}, turn=turn)
        calls = [{"id": f"c{i}-{k}", "name": "lookup", "arguments": f'{{"x": {k}}}'} for k in range(2)]
        seq = store.append(sid, "response", {"content": None, "reasoning": f"plan {i}", "tool_calls": calls}, turn=turn)
        for k, call in enumerate(calls):
            body = ("long result " * 500) if (i + k) % 10 == 0 else f"value {i}.{k}"
            store.add_result(sid, seq, call["id"], {"name": "lookup", "content": f"MARK-res-{i}-{k} {body}"}, turn=turn)
        store.append(sid, "response", {"content": f"answer {i}", "reasoning": "done", "tool_calls": []}, turn=turn)
        store.append(sid, "output", {"text": f"answer {i}", "ended_by": "answer", "errors": []}, turn=turn)
    store.close()
    return store


def build_cold(path: Path, events: int = 400, *, cooled_every: int = 0) -> None:
    """A cold.db with ``events`` events (input, reasoning, response blocks; an 8-d vector each); with
    `cooled_every`, every such event is then recorded as moved into L3 (an ``l3_events`` row)."""
    rng = np.random.default_rng(7)
    records = []
    for i in range(events):
        values = rng.standard_normal(8).astype(np.float32)
        records.append(
            build_event(
                timestamp=1_700_000_000 + i,
                input=f"MARK-cold-{i} what about topic {i % 17}? " + "filler words " * 10,
                reasoning=f"thinking about {i}",
                response=f"answer number {i}",
                session=f"s{i % 4}",
                origin=f"s{i % 4}:{i:012d}",
                dense=DenseVector("test/8", values / np.linalg.norm(values)),
            )
        )
    with ColdStore(path) as store:
        for start in range(0, events, 50):
            store.put(records[start : start + 50])
        if cooled_every:  # some events cooled into the memory graph: their l3_events rows must survive too
            store.remove([r.id for r in records[::cooled_every]], into_l3=True)


def table_rows(path: Path) -> Rows:
    """Every row of every table (rowid first), read from a healthy file, for comparing after a repair."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    db.text_factory = bytes
    try:
        names = [r[0].decode() for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            name: {row[0]: row for row in db.execute(f'SELECT rowid, * FROM "{name}"')}
            for name in names
            if name != "sqlite_sequence"
        }
    finally:
        db.close()


def recovered_share(before: Rows, after: Rows) -> tuple[int, int, int]:
    """(rows recovered identical, rows before, rows after that were not there before: garbage)."""
    same = sum(1 for t, rows in before.items() for rowid, row in rows.items() if after.get(t, {}).get(rowid) == row)
    total = sum(len(rows) for rows in before.values())
    extra = sum(1 for t, rows in after.items() for rowid in rows if rowid not in before.get(t, {}))
    return same, total, extra


# -- damage ----------------------------------------------------------------------------------------------


def truncate_half(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def smash_header(path: Path, seed: int = 1) -> None:
    with path.open("r+b") as handle:
        handle.write(random.Random(seed).randbytes(100))


def page_size(path: Path) -> int:
    raw = path.read_bytes()[16:18]
    size = int.from_bytes(raw, "big")
    return 65536 if size == 1 else size


def middle_leaf_page(path: Path) -> int:
    """The 1-based number of the table leaf page nearest the middle of the file."""
    size = page_size(path)
    data = path.read_bytes()
    pages = len(data) // size
    for distance in range(pages):
        for page in (pages // 2 + distance, pages // 2 - distance):
            if 2 <= page <= pages and data[(page - 1) * size] == LEAF_TABLE_PAGE:
                return page
    raise AssertionError("no table leaf page")


def scribble(path: Path, seed: int = 1, length: int = 512) -> int:
    """Random bytes in the middle of the table leaf page nearest the file's middle; returns the page."""
    page = middle_leaf_page(path)
    size = page_size(path)
    with path.open("r+b") as handle:
        handle.seek((page - 1) * size + size // 2 - length // 2)
        handle.write(random.Random(seed).randbytes(length))
    return page


def break_text(path: Path, marker: str) -> None:
    """Make the stored value containing ``marker`` invalid UTF-8 (one byte of the marker becomes 0xFF)."""
    data = path.read_bytes()
    at = data.find(marker.encode())
    assert at >= 0, f"{marker} is not in {path} (checkpointed?)"
    assert data.find(marker.encode(), at + 1) < 0, f"{marker} is in {path} more than once"
    with path.open("r+b") as handle:
        handle.seek(at + 1)
        handle.write(b"\xff")
