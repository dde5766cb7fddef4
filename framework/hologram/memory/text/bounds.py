"""How much of one event memory works on: every path that tokenises or embeds a text — an input, a tool's
result, a file a tool read, an event recalled from L2 or moved there, the query, scenes' topics, L3's
extraction — takes at most this much of it, so the work per event is bounded whatever its length.

Why: a 5 MB tool result was cut into 22,094 passages, tokenised on the event loop (8 s) and then embedded one
passage after another (390 s of CPU in worker threads, 17.7 ms each) — and L3's extraction would have sent the
5 MB to the model (issue 42). What is beyond `MAX_INDEX_CHARS` is stored whole and shown whole to the model
when the event is in its context; it is only not searchable: a fact past the first 50,000 characters of a
pasted document is not found by recall or `hologram memory search`. That is said once per event in the log
(`SessionMemory`) and on each search hit of such an event (``indexed_chars``).

The first `MAX_INDEX_CHARS` are cut into passages (`passages.py`) that BM25 scores; the first
`MAX_EMBEDDED_PASSAGES` of them get a dense vector too (~1.1 s of one core at most an event), the rest are
scored by BM25 alone — which is what every passage is scored by before the model has loaded.
"""

from __future__ import annotations

__all__ = ["MAX_EMBEDDED_PASSAGES", "MAX_INDEX_CHARS", "indexed", "not_indexed"]

MAX_INDEX_CHARS = 50_000
"""Characters of one event's text (or of a query) that memory tokenises: its start."""
MAX_EMBEDDED_PASSAGES = 64
"""Passages of one event that get a dense vector (of the ~220 that 50,000 characters make at most)."""


def indexed(text: str) -> str:
    """The part of `text` memory indexes."""
    return text if len(text) <= MAX_INDEX_CHARS else text[:MAX_INDEX_CHARS]


def not_indexed(text: str) -> int:
    """Characters of `text` past what memory indexes (0: all of it is searchable)."""
    return max(0, len(text) - MAX_INDEX_CHARS)
