"""What a request reads of a long session's index, and that what it keeps between reads stays exact (issue 39 item 7).

Real segments on disk. Mutation-checked: keying the sealed document frequencies by anything that a seal does not
change (a constant) turns ``test_document_frequency_is_exact_across_seals_and_merges`` red.
"""

from __future__ import annotations

from pathlib import Path

from hologram.memory.index.session_index import SessionIndex
from hologram.memory.text.tfidf import TermVector


def _term(word: str) -> str:
    (term,) = TermVector.from_text(word).counts
    return term


def test_document_frequency_is_exact_across_seals_and_merges(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "ix", seal_events=4)
    alpha, odd = _term("alpha"), _term("walrus")
    for k in range(60):
        text = f"alpha walrus {k}" if k % 2 else f"alpha {k}"
        index.add(k + 1, f"e{k}", "input", text, 5, group=None, ts=float(k))
        assert index.document_frequency(alpha) == k + 1  # asked before and after every seal: kept, then renewed
        assert index.document_frequency(odd) == (k + 1) // 2
        if index.seal(vectors=False):
            while group := index.merge_plan():
                assert index.merge(group)
            assert index.document_frequency(alpha) == k + 1 and index.document_frequency(odd) == (k + 1) // 2
    assert index.segments < 15 and index.sealed == 60
    again = SessionIndex(tmp_path / "ix", seal_events=4)  # read back from disk: the same counts
    assert again.document_frequency(alpha) == 60 and again.document_frequency(odd) == 30


def test_roles_are_computed_once_per_request_and_equal_the_columns(tmp_path: Path) -> None:
    index = SessionIndex(tmp_path / "ix", seal_events=4)
    for k in range(20):
        index.add(2 * k + 1, f"i{k}", "input", f"question {k}", 5, group=None, ts=float(k))
        index.add(2 * k + 2, f"r{k}", "response", f"answer {k}", 5, group=None, ts=float(k))
        index.seal(vectors=False)
    with index.reading():
        first = index.roles
        assert index.roles is first, "one pass over the session per request"
        assert first.tolist() == [1, 2] * 20
    with index.reading():
        assert index.roles is not first, "a new request computes them again"
