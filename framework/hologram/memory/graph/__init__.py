"""Memory's L3: the graph that cold events are distilled into (issue 15).

``store.py`` is the interface the rest of memory uses (blocks moved here from L2, triples between entities);
``kuzu_store.py`` implements it on Kùzu or on its maintained fork LadybugDB (same Python API), chosen by
``backend``. Nothing outside this package imports the database module, so the backend is one setting.
"""

from hologram.memory.graph.store import (
    BACKENDS,
    GraphBlock,
    GraphCounts,
    GraphLockedError,
    GraphStore,
    MoveReport,
    Triple,
    entity_key,
    open_graph_store,
    triple_id,
)

__all__ = [
    "BACKENDS",
    "GraphBlock",
    "GraphCounts",
    "GraphLockedError",
    "GraphStore",
    "MoveReport",
    "Triple",
    "entity_key",
    "open_graph_store",
    "triple_id",
]
