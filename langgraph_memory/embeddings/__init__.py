"""The embedding model and its cache.

    from langgraph_memory.embeddings import default_embeddings

    emb = default_embeddings()            # nothing loaded yet
    vec = emb.embed_query("rising rates hurt growth stocks")
    assert len(vec) == 384

`model` holds the default offline model (all-MiniLM-L6-v2 on ONNX Runtime), `cache`
[`CachedEmbeddings`][langgraph_memory.CachedEmbeddings], which never sends a text the
same model has already embedded; the ``_onnx_*`` modules export and run the ONNX file.
"""

from langgraph_memory.embeddings.cache import CachedEmbeddings, embeddings_model_id
from langgraph_memory.embeddings.model import (
    BACKEND_ENV,
    DEFAULT_DIMS,
    INT8_EMBEDDING_MODEL,
    SentenceTransformerEmbeddings,
    default_embeddings,
)

__all__ = [
    "SentenceTransformerEmbeddings",
    "CachedEmbeddings",
    "default_embeddings",
    "embeddings_model_id",
    "DEFAULT_DIMS",
    "INT8_EMBEDDING_MODEL",
    "BACKEND_ENV",
]
