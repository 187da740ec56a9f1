"""The embedding model langgraph.json's ``store.index.embed`` names (``./embeddings.py:embeddings``).

The packaged all-MiniLM-L6-v2 (384 dimensions), loaded offline on the first
embedding, not at import. ``EMBEDDING_MODEL`` picks another local model (then
change ``dims`` in langgraph.json to match).
"""

from __future__ import annotations

from langgraph_memory.embeddings import default_embeddings

embeddings = default_embeddings()
