"""Memory: vectors on entry, relevance pruning of L1 history, dense/TF-IDF scoring (DESIGN.md "Memory").

Public API (the session/L2 layers build on these):

* :func:`make_event` / :class:`MemoryEvent` / :class:`Query` — the scoring view of an event;
* :func:`prune` → :class:`PruneResult` — keep pinned recent + best-scoring events within a token budget;
* :class:`HybridScorer` — dense + BM25 fusion with neighbour smoothing, the default scorer;
* :class:`TfidfIndex` / :class:`TermVector` — incremental IDF per store;
* :func:`load_embedder` / :class:`Embedder` — USE-multilingual (ONNX or numpy), or ``None`` → TF-IDF only;
* :class:`VectorIndex` / :class:`DenseVector` — fingerprinted vectors, exact top-k for cold search;
* :func:`estimate_tokens`, :func:`warm_up` (start jieba's background load).
"""

from hologram.memory.embed import Embedder, NumpyUSEEmbedder, OnnxUSEEmbedder, embed_async, load_embedder
from hologram.memory.events import MemoryEvent, Query, event_text, make_event
from hologram.memory.prune import DEFAULT_PINNED, PruneResult, pinned_count, prune
from hologram.memory.score import HybridScorer, Scorer
from hologram.memory.tfidf import TermVector, TfidfIndex
from hologram.memory.tokenize import warm_up
from hologram.memory.tokens import estimate_tokens
from hologram.memory.vectors import DenseVector, VectorIndex

__all__ = [
    "DEFAULT_PINNED",
    "DenseVector",
    "Embedder",
    "HybridScorer",
    "MemoryEvent",
    "NumpyUSEEmbedder",
    "OnnxUSEEmbedder",
    "PruneResult",
    "Query",
    "Scorer",
    "TermVector",
    "TfidfIndex",
    "VectorIndex",
    "embed_async",
    "estimate_tokens",
    "event_text",
    "load_embedder",
    "make_event",
    "pinned_count",
    "prune",
    "warm_up",
]
