"""Memory: vectors on entry, relevance pruning of L1 history, dense/TF-IDF scoring (DESIGN.md "Memory").

Public API (the session/L2 layers build on these):

* :func:`make_event` / :class:`MemoryEvent` / :class:`Query` — the scoring view of an event;
* :func:`prune` → :class:`PruneResult` — keep pinned recent + best-scoring events within a token budget;
* :class:`HybridScorer` — dense + BM25 fusion with neighbour smoothing, the default scorer;
* :class:`TfidfIndex` / :class:`TermVector` — incremental IDF per store;
* :func:`load_embedder` / :class:`Embedder` — USE-multilingual (ONNX or numpy), or ``None`` → TF-IDF only;
* :class:`VectorIndex` / :class:`DenseVector` — fingerprinted vectors, exact top-k for cold search;
* :func:`estimate_tokens`, :func:`warm_up` (start loading the Chinese segmenter in the background);
* :class:`EventRecord` / :func:`build_event` / :func:`normalise_timestamp` — events with blocks and stable IDs;
* :class:`ColdStore` — durable L2 (SQLite WAL) with search, access bookkeeping, distillation eligibility;
* :func:`coldcontext_query` / :func:`auto_recall` / :func:`demote` / :func:`make_handler` — moves between L1/L2;
* :class:`OverflowGuard` / :func:`recover` / :func:`overflow_note` — overflow recovery before LLM requests.
"""

from hologram.memory.embed import Embedder, NumpyUSEEmbedder, OnnxUSEEmbedder, embed_async, load_embedder
from hologram.memory.events import MemoryEvent, Query, event_text, make_event
from hologram.memory.prune import DEFAULT_PINNED, PruneResult, pinned_count, prune
from hologram.memory.score import HybridScorer, Scorer
from hologram.memory.tfidf import TermVector, TfidfIndex
from hologram.memory.tokenize import warm_up
from hologram.memory.tokens import estimate_tokens
from hologram.memory.vectors import DenseVector, VectorIndex

# isort: split
# L2, blocks, recall and overflow (appended; the imports above are the scoring layer)
from hologram.memory.blocks import NO_TIME, Block, EventRecord, build_event, normalise_timestamp
from hologram.memory.cold import ColdHit, ColdStore, DuplicateBlockError
from hologram.memory.overflow import (
    MAX_RECOVERIES,
    OVERFLOW_THRESHOLD,
    ContextOverflowError,
    OverflowGuard,
    Recovery,
    history_budget,
    overflow_note,
    overflow_ratio,
    recover,
)
from hologram.memory.recall import (
    COLDCONTEXT_QUERY_DESCRIPTION,
    COLDCONTEXT_QUERY_NAME,
    COLDCONTEXT_QUERY_PARAMETERS,
    RecallError,
    RecallResult,
    Reinsert,
    auto_recall,
    coldcontext_query,
    demote,
    insert_in_time_order,
    make_handler,
    make_query,
)

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
# L2, blocks, recall, overflow
__all__ += [
    "COLDCONTEXT_QUERY_DESCRIPTION",
    "COLDCONTEXT_QUERY_NAME",
    "COLDCONTEXT_QUERY_PARAMETERS",
    "MAX_RECOVERIES",
    "NO_TIME",
    "OVERFLOW_THRESHOLD",
    "Block",
    "ColdHit",
    "ColdStore",
    "ContextOverflowError",
    "DuplicateBlockError",
    "EventRecord",
    "OverflowGuard",
    "RecallError",
    "RecallResult",
    "Recovery",
    "Reinsert",
    "auto_recall",
    "build_event",
    "coldcontext_query",
    "demote",
    "history_budget",
    "insert_in_time_order",
    "make_handler",
    "make_query",
    "normalise_timestamp",
    "overflow_note",
    "overflow_ratio",
    "recover",
]
