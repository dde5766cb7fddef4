"""A damaged row of cold.db costs that event, not the L2 index load: it is moved aside with its bytes, the
rest loads and searches, and the event can be moved to L2 again.

Mutation checks (done): letting a row's decoding error propagate from `ColdStore._index_rows` turns
``test_a_row_that_does_not_decode_costs_only_its_event`` red (the store does not open); not deleting the
quarantined row from ``cold_events`` turns the same test red (putting the event again is refused as a
duplicate); making `peek` re-raise instead of `_peek_each` turns ``test_a_damaged_block_fails_only_its_event``
red.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from damaged_files import break_text, build_cold
from hologram.memory.blocks import build_event
from hologram.memory.cold import ColdStore
from hologram.memory.events import Query
from hologram.memory.tfidf import TermVector


def q(text: str) -> Query:
    return Query(text, TermVector.from_text(text), None)


@pytest.fixture
def cold(tmp_path: Path) -> Path:
    path = tmp_path / "cold.db"
    build_cold(path, events=60)
    return path


def test_a_row_that_does_not_decode_costs_only_its_event(cold: Path, caplog: pytest.LogCaptureFixture) -> None:
    with ColdStore(cold) as store:
        victim = store.ids()[10]
        record = store.peek([victim])[0]
        total = len(store)
    db = sqlite3.connect(cold)
    db.execute("UPDATE cold_events SET terms = CAST(X'7b226d61726bff' AS TEXT) WHERE id = ?", (victim,))
    db.commit()
    raw = db.execute("SELECT CAST(terms AS BLOB) FROM cold_events WHERE id = ?", (victim,)).fetchone()[0]
    db.close()
    with pytest.raises(sqlite3.OperationalError, match="Could not decode"):  # the path this test claims
        sqlite3.connect(cold).execute("SELECT terms FROM cold_events").fetchall()
    with caplog.at_level(logging.WARNING, logger="hologram.memory"), ColdStore(cold) as store:
        assert len(store) == total - 1 and victim not in store
        assert store.search(q("topic 3"), k=3)  # the rest searches as before
        kept = sqlite3.connect(cold).execute("SELECT CAST(terms AS BLOB), reason FROM cold_damaged_events").fetchall()
        assert kept == [(raw, "text that is not UTF-8")]  # the bytes, as they were
        store.put([record])  # back in L1 now, it can move to L2 again: no duplicate left behind
        assert victim in store and store.peek([victim])[0].blocks == record.blocks
    assert sum("is damaged" in r.getMessage() for r in caplog.records) == 1
    with ColdStore(cold) as store:  # and the next open is clean
        assert len(store) == total


def test_a_damaged_block_fails_only_its_event(cold: Path) -> None:
    with ColdStore(cold) as store:
        ids = store.ids()[:5]
        victim = next(i for i in ids if any("MARK-cold-2 " in b.text for b in store.peek([i])[0].blocks))
    break_text(cold, "MARK-cold-2 ")
    with ColdStore(cold) as store:
        assert victim in store  # the index load does not read blocks
        records = store.peek(ids)
        assert [r.id for r in records] == [i for i in ids if i != victim]
        assert victim not in store  # quarantined: reported missing, back in its session's L1
        assert sqlite3.connect(cold).execute("SELECT count(*) FROM cold_damaged_blocks").fetchone()[0] == 3


def test_a_healthy_store_makes_no_side_tables(tmp_path: Path) -> None:
    with ColdStore(tmp_path / "cold.db") as store:
        store.put([build_event(timestamp=1_700_000_000, input="hello", session="s")])
    names = {r[0] for r in sqlite3.connect(tmp_path / "cold.db").execute("SELECT name FROM sqlite_master")}
    assert not {n for n in names if "damaged" in n}
