"""Sparse term vectors and incrementally maintained IDF, one index per store.

An event's lexical vector is stored as raw term counts (plus its length), not as TF-IDF weights: IDF changes
with every event that enters the store, and weights frozen at entry time would drift apart from each other.
Weights are applied at query time from the store's current document frequencies, which :class:`TfidfIndex`
keeps up to date in O(terms) per added or removed event.

Weighting is BM25 (saturating term frequency, length normalisation, the non-negative Robertson-Sparck Jones
IDF), the best-understood member of the TF-IDF family for short conversational turns; k1 and b are the
textbook defaults, not tuned.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hologram.memory.text.bounds import MAX_INDEX_CHARS as MAX_INDEX_CHARS
from hologram.memory.text.bounds import indexed
from hologram.memory.text.tokenizer import ANALYZER_JIEBA, tokenize_tagged

__all__ = ["TermVector", "TfidfIndex"]


# What of one text is indexed for BM25: its start (hologram/memory/text/bounds.py). A pasted document or a tool's
# 5 MB result is segmented in full otherwise (jieba's DAG and HMM over every character, a term list as long as
# the text) for a record whose length normalisation already ranks it as one long passage; the whole text stays
# stored and is what the model is shown when the record is recalled.


@dataclass(frozen=True, slots=True)
class TermVector:
    """Term counts of one text (an event or a query) and the analyzer that produced them."""

    counts: Mapping[str, int]
    length: int
    analyzer: str = ANALYZER_JIEBA

    @classmethod
    def from_text(cls, text: str) -> TermVector:
        terms, analyzer = tokenize_tagged(indexed(text))
        return cls(counts=dict(Counter(terms)), length=len(terms), analyzer=analyzer)

    @classmethod
    def from_terms(cls, terms: Iterable[str], analyzer: str = ANALYZER_JIEBA) -> TermVector:
        counts = Counter(terms)
        return cls(counts=dict(counts), length=sum(counts.values()), analyzer=analyzer)


@dataclass(slots=True)
class TfidfIndex:
    """Document frequencies of one store, updated as events enter and leave it."""

    k1: float = 1.2
    b: float = 0.75
    docs: int = 0
    total_length: int = 0
    df: Counter[str] = field(default_factory=Counter)

    def add(self, vec: TermVector) -> None:
        self.docs += 1
        self.total_length += vec.length
        self.df.update(vec.counts.keys())

    def remove(self, vec: TermVector) -> None:
        """Forget a vector previously added (an event moved to another store)."""
        self.docs = max(0, self.docs - 1)
        self.total_length = max(0, self.total_length - vec.length)
        self.df.subtract(vec.counts.keys())
        for term in vec.counts:
            if self.df[term] <= 0:
                del self.df[term]

    def idf(self, term: str) -> float:
        """Non-negative BM25 IDF; an unseen term gets the highest value (it is maximally specific)."""
        n = self.df.get(term, 0)
        return math.log(1.0 + (self.docs - n + 0.5) / (n + 0.5))

    def score(self, query: TermVector, docs: Sequence[TermVector | None]) -> np.ndarray:
        """BM25 score of every doc against `query` (0 for a doc without a lexical vector)."""
        out = np.zeros(len(docs), dtype=np.float32)
        if not query.counts or not docs:
            return out
        weights = {t: self.idf(t) for t in query.counts}
        avg = max(self.total_length / self.docs if self.docs else 1.0, 1.0)
        k1, b = self.k1, self.b
        keys = weights.keys()
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            # Most events share no term with the query: the C-level key intersection skips them cheaply.
            common = keys & doc.counts.keys()
            if not common:
                continue
            counts = doc.counts
            norm = k1 * (1.0 - b + b * doc.length / avg)
            s = 0.0
            for term in common:
                tf = counts[term]
                s += weights[term] * tf * (k1 + 1.0) / (tf + norm)
            out[i] = s
        return out
