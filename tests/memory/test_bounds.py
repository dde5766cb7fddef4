"""Every path into memory's tokeniser and embedder takes at most `MAX_INDEX_CHARS` of one text (bounds.py): the
session index's passages (the input's, a tool result's, a file's a tool read, an event recalled or moved to
L2 — all are records added there), the query, scenes' topic terms, L3's recall terms and both extractors.
Each test puts a marker word past the bound in a long text and checks the path never saw it, and what is
within the bound is still found (so a test cannot pass by indexing nothing).

Mutation checked (each red, then restored): `SessionIndex.add` without `indexed` — passages from the whole
text; `build_query` without it — the marker is a query term; `topic_keywords` without it — the marker is a
topic; `DeterministicExtractor.extract` without it — a triple from past the bound; `LLMExtractor.request`
without it — the request carries the marker.
"""

from __future__ import annotations

import time

from hologram.memory.cold.blocks import build_event
from hologram.memory.graph.extract import DeterministicExtractor
from hologram.memory.graph.llm_extract import LLMExtractor
from hologram.memory.graph.recall import terms, words
from hologram.memory.index.session_index import SessionIndex
from hologram.memory.rank.query import build_query
from hologram.memory.scenes.scene_features import topic_keywords
from hologram.memory.text.bounds import MAX_EMBEDDED_PASSAGES, MAX_INDEX_CHARS, indexed, not_indexed

FILLER = "The quarterly report lists revenue by region and by month. "
MARKER = "zebracorn"


def long_text(tail: str = f"Alice likes {MARKER}. ") -> str:
    """Filler to twice the bound, then `tail` (past the bound), as a tool's long result would be."""
    return FILLER * (2 * MAX_INDEX_CHARS // len(FILLER)) + tail * 50


def test_the_bound_itself() -> None:
    text = long_text()
    assert len(indexed(text)) == MAX_INDEX_CHARS and not_indexed(text) == len(text) - MAX_INDEX_CHARS
    assert indexed("short") == "short" and not_indexed("short") == 0


def test_the_session_index_splits_and_embeds_only_the_start() -> None:
    index = SessionIndex()
    text = long_text()
    index.add(1, "ev_1", "tool_result", text, 100, group=None, ts=time.time())
    assert MARKER not in index.postings and "quarter" in index.postings  # BM25: the start, not the tail
    assert 100 < index.passages < 300  # ~211 passages of 48 words: the first 50,000 characters
    assert len(index.pending(10_000)) == MAX_EMBEDDED_PASSAGES  # only these wait for a vector


def test_the_query_and_l3_recall_terms_read_only_the_start() -> None:
    index = SessionIndex()
    index.add(1, "ev_1", "input", "revenue by region", 10, group=None, ts=time.time())
    query = build_query(index, long_text(), now=time.time(), previous_text=long_text())
    assert MARKER not in query.terms and "revenu" in query.terms, sorted(query.terms)
    assert MARKER not in terms(long_text()) and MARKER not in words(long_text())


def test_scene_topics_read_only_the_start() -> None:
    assert MARKER not in topic_keywords(long_text(), limit=50)
    assert MARKER in topic_keywords(f"Alice likes {MARKER}. " + FILLER, limit=50)


def test_l3_extraction_reads_only_the_start_of_a_block() -> None:
    record = build_event(timestamp=1.0, tool_results=[{"call_id": "c", "name": "t", "content": long_text()}])
    near = build_event(timestamp=1.0, input=f"Alice likes {MARKER}.")
    rules = DeterministicExtractor()
    assert not any(MARKER in t.value for t in rules.extract(record))
    assert any(MARKER in t.value for t in rules.extract(near))  # the rule does find it where it is read
    request, _ = LLMExtractor(llm=None).request(record)  # type: ignore[arg-type]
    sent = "".join(str(m.content) for m in request.messages)
    assert MARKER not in sent and len(sent) < MAX_INDEX_CHARS + 5_000
