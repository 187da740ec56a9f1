"""ChromaStore: a LangGraph ``BaseStore`` over typed Chroma collections.

    from langgraph_memory.store import ChromaStore

    store = ChromaStore(index=ChromaStore.default_index())   # ./memory, offline model
    store.put(("research",), "f1", {"content": "Carry trades unwind when volatility spikes"})
    print(store.search(("research",), query="currency crash risk", limit=3))
"""

from langgraph_memory.store.base import ChromaStore
from langgraph_memory.store.records import StoredItem

__all__ = ["ChromaStore", "StoredItem"]
