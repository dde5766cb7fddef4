"""A damaged row of cold.db costs that event, not the L2 index load: it is moved aside with its bytes, the
rest loads and searches, and the event can be moved to L2 again.

Mutation checks (done): not quarantining what `ColdStore._check_rows` (the check after open) finds turns
``test_a_row_that_does_not_decode_costs_only_its_event`` red; not deleting the quarantined row from
``cold_events`` turns the same test red (putting the event again is refused as a duplicate); letting a row's
decoding error propagate from `ColdStore._index_rows` turns
``test_a_row_only_the_index_build_rejects_is_quarantined_by_the_first_search`` red (the first search fails);
making `peek` re-raise instead of `_peek_each` turns ``test_a_damaged_block_fails_only_its_event`` red.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from damaged_files import break_text, build_cold
from hologram.memory.cold.blocks import build_event
from hologram.memory.cold.store import ColdStore
from hologram.memory.rank.events import Query
from hologram.memory.text.tfidf import TermVector


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


def test_a_row_only_the_index_build_rejects_is_quarantined_by_the_first_search(
    cold: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The open's check is SQL (UTF-8, a JSON object, the vector's length); terms whose values are not
    numbers pass it and are found when the first search builds the index — moved aside the same way."""
    with ColdStore(cold) as store:
        victim, total = store.ids()[20], len(store)
    db = sqlite3.connect(cold)
    db.execute("""UPDATE cold_events SET terms = '{"topic": "x"}' WHERE id = ?""", (victim,))
    db.commit()
    db.close()
    with caplog.at_level(logging.WARNING, logger="hologram.memory"), ColdStore(cold) as store:
        assert victim in store and not store.index_built  # open did not decode the terms
        assert store.search(q("topic 3"), k=3) and victim not in store and len(store) == total - 1
        reason = sqlite3.connect(cold).execute("SELECT reason FROM cold_damaged_events").fetchall()
        assert len(reason) == 1 and reason[0][0].startswith("values of the wrong shape (TypeError")
    assert sum("is damaged" in r.getMessage() for r in caplog.records) == 1


def test_a_vector_shorter_than_its_dimension_is_found_by_the_check_after_open(cold: Path) -> None:
    with ColdStore(cold) as store:
        victim = store.ids()[30]
    db = sqlite3.connect(cold)
    db.execute("UPDATE cold_events SET dense = X'00' WHERE id = ?", (victim,))  # 1 byte for 8 floats
    db.commit()
    db.close()
    with ColdStore(cold) as store:
        assert victim not in store and not store.index_built  # the answer waited for the check
        assert store._checker is not None and not store._checker.is_alive()
        reason = sqlite3.connect(cold).execute("SELECT reason FROM cold_damaged_events").fetchone()[0]
        assert reason.startswith("values of the wrong shape (ValueError")
