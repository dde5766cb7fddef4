"""Passages: the sentence windows an event is scored by.

One vector of a whole long message averages its topics away: a fact said in passing inside a many-topic
message is not found again by a query about that fact (issue 11 §2). So an event is cut into windows of whole
sentences, each scored on its own (BM25 and dense), and the event takes its best passage. Most turns are one
passage: splitting starts only past :data:`PASSAGE_WORDS` words, the length of a long paragraph, so a short
turn is scored exactly as before.

Length is counted in *words*: an English word, or two Han characters (a Chinese word is 1-2 characters,
which keeps a Chinese passage about as informative as an English one of the same count).
"""

from __future__ import annotations

import re

__all__ = ["PASSAGE_WORDS", "passages", "word_count"]

#: A passage holds at most this many words (a sentence longer than this is its own passage).
PASSAGE_WORDS = 48

_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；])\s+|(?<=[。！？；])|\n+")
_WORD = re.compile(r"[A-Za-z0-9_'’-]+")
_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def word_count(text: str) -> int:
    """Words as :data:`PASSAGE_WORDS` counts them (module docstring)."""
    return len(_WORD.findall(text)) + (len(_HAN.findall(text)) + 1) // 2


def passages(text: str, limit: int = PASSAGE_WORDS) -> list[str]:
    """`text` as consecutive windows of whole sentences of at most `limit` words (at least one passage; the
    text itself when it is short)."""
    if word_count(text) <= limit:
        return [text]
    out: list[str] = []
    current: list[str] = []
    words = 0
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        n = word_count(sentence)
        if current and words + n > limit:
            out.append(" ".join(current))
            current, words = [], 0
        current.append(sentence)
        words += n
    if current:
        out.append(" ".join(current))
    return out or [text]
