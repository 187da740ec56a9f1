"""Running under the LangGraph server (``langgraph dev``, LangGraph Platform): the ``langgraph.json`` factories.

``langgraph.json``:

    "store": {"path": "langgraph_memory.platform_store", "index": {...}, "ttl": {...}},
    "checkpointer": {"path": "langgraph_memory.platform_checkpointer"}

See `langgraph_memory.platform.factories` and ``docs/langgraph_app.md``.
"""

from __future__ import annotations

from langgraph_memory.platform.factories import (
    CHROMA_URL_ENV,
    INDEX_PROCESS_ENV,
    STORE_CONFIG_ENV,
    open_checkpointer,
    open_store,
    platform_checkpointer,
    platform_store,
    resolve_embed,
    store_config_from_env,
)

__all__ = [
    "CHROMA_URL_ENV",
    "INDEX_PROCESS_ENV",
    "STORE_CONFIG_ENV",
    "open_checkpointer",
    "open_store",
    "platform_checkpointer",
    "platform_store",
    "resolve_embed",
    "store_config_from_env",
]
