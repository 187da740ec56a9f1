"""ChromaStore: a LangGraph ``BaseStore`` over a crash-safe catalog, with Chroma as its vector index.

    from langgraph_memory.store import ChromaStore

    store = ChromaStore(index=ChromaStore.default_index())   # ./memory, offline model
    store.put(("research",), "f1", {"content": "Carry trades unwind when volatility spikes"})
    print(store.search(("research",), query="currency crash risk", limit=3))

The pieces: `base` (the store), `planner` (how a search runs),
`index` (Chroma, derived from the catalog and rebuilt from it),
`items` (raw item access for the archive), `view` (a read-only
Chroma/LangChain view), `access` (reads that count).
"""

from langgraph_memory.catalog import StoredItem
from langgraph_memory.index.chroma import RebuildReport
from langgraph_memory.registry import (
    GENERAL,
    PLAIN,
    CollectionRegistry,
    CollectionSpec,
    RetentionPolicy,
    default_collections,
    set_default_collections,
)
from langgraph_memory.search.planner import Plan
from langgraph_memory.store.as_of import AsOfStore
from langgraph_memory.store.base import ChromaStore
from langgraph_memory.store.history import Version
from langgraph_memory.store.searching import SearchAllOp

__all__ = [
    "ChromaStore",
    "SearchAllOp",
    "AsOfStore",
    "Version",
    "StoredItem",
    "Plan",
    "RebuildReport",
    "CollectionRegistry",
    "CollectionSpec",
    "RetentionPolicy",
    "GENERAL",
    "PLAIN",
    "default_collections",
    "set_default_collections",
]
