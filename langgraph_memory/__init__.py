"""Durable, searchable memory for LangGraph agents.

One line gives a graph both kinds of memory::

    from langgraph_memory import Memory

    with Memory.open("./memory") as mem:
        graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)

The pieces, each usable alone:

* :class:`ChromaStore` - a LangGraph ``BaseStore`` over typed Chroma collections;
* :class:`HybridRanking`, :class:`TemporalConfig` - hybrid keyword + vector recall with decay and reinforcement;
* :class:`SqliteCheckpointer` - a ``BaseCheckpointSaver`` for sync and async graphs;
* :class:`Memory` - one data directory: store, checkpointer, typed research API (seven collections), lineage,
  retire/supersede/delete, stats, decay cleanup, archiver;
* :func:`recall_node`, :func:`store_node`, :func:`create_recall_tool`, :func:`create_store_tool` - memory in graphs;
* :class:`Archiver`, :func:`schedule_archival` - stale memories to compressed, searchable archives;
* :func:`export_bundle`, :func:`import_bundle` - share bundles between data directories and teammates;
* ``Memory.ingest`` / :class:`IngestConfig` - files and folders into memory, chunked and deduplicated;
* :class:`SessionMemory` (``mem.sessions``), :class:`SessionConfig`, :func:`conversation_node` - conversation
  sessions as short-term memory, their important turns promoted to episodic memory.

From outside a graph: the ``langgraph-memory`` command line (:mod:`langgraph_memory.cli`) and the MCP
server (:mod:`langgraph_memory.mcp_server`, ``langgraph-memory mcp``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Public names resolve on first use (PEP 562), so that ``langgraph-memory search`` or an
# ``import langgraph_memory.errors`` does not pay for every subsystem (langchain's tools,
# the archive, ingest) before doing anything. ``from langgraph_memory import X`` works as before.
_LAZY = {
    "ProceduralAPI": "langgraph_memory._procedural_api",
    "ResearchAPI": "langgraph_memory._research_api",
    "Archiver": "langgraph_memory.archive",
    "schedule_archival": "langgraph_memory.archive",
    "schedule_session_cleanup": "langgraph_memory.archive",
    "export_bundle": "langgraph_memory.bundle",
    "import_bundle": "langgraph_memory.bundle",
    "ItemStatus": "langgraph_memory.catalog.status",
    "SqliteCheckpointer": "langgraph_memory.checkpoint",
    "Settings": "langgraph_memory.config",
    "conversation_node": "langgraph_memory.conversation",
    "last_human_text": "langgraph_memory.conversation",
    "DecayReport": "langgraph_memory.decay",
    "CachedEmbeddings": "langgraph_memory.embeddings",
    "SentenceTransformerEmbeddings": "langgraph_memory.embeddings",
    "default_embeddings": "langgraph_memory.embeddings",
    "LangGraphMemoryError": "langgraph_memory.errors",
    "DeleteReport": "langgraph_memory.lifecycle",
    "ChunkHit": "langgraph_memory.ingest",
    "IngestConfig": "langgraph_memory.ingest",
    "IngestReport": "langgraph_memory.ingest",
    "Lineage": "langgraph_memory.lineage",
    "Hit": "langgraph_memory.memory",
    "Memory": "langgraph_memory.memory",
    "StrategyVersion": "langgraph_memory.memory",
    "recall_node": "langgraph_memory.nodes",
    "store_node": "langgraph_memory.nodes",
    "CollectionStats": "langgraph_memory.stats",
    "MemoryStats": "langgraph_memory.stats",
    "HybridRanking": "langgraph_memory.ranking",
    "TemporalConfig": "langgraph_memory.ranking",
    "CleanupReport": "langgraph_memory.sessions",
    "Session": "langgraph_memory.sessions",
    "SessionConfig": "langgraph_memory.sessions",
    "SessionMemory": "langgraph_memory.sessions",
    "SessionTurn": "langgraph_memory.sessions",
    "ChromaStore": "langgraph_memory.store",
    "create_recall_tool": "langgraph_memory.tools",
    "create_store_tool": "langgraph_memory.tools",
}

if TYPE_CHECKING:
    from langgraph_memory._procedural_api import ProceduralAPI
    from langgraph_memory._research_api import ResearchAPI
    from langgraph_memory.archive import Archiver, schedule_archival, schedule_session_cleanup
    from langgraph_memory.bundle import export_bundle, import_bundle
    from langgraph_memory.catalog.status import ItemStatus
    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.config import Settings
    from langgraph_memory.conversation import conversation_node, last_human_text
    from langgraph_memory.decay import DecayReport
    from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings, default_embeddings
    from langgraph_memory.errors import LangGraphMemoryError
    from langgraph_memory.lifecycle import DeleteReport
    from langgraph_memory.ingest import ChunkHit, IngestConfig, IngestReport
    from langgraph_memory.lineage import Lineage
    from langgraph_memory.memory import Hit, Memory, StrategyVersion
    from langgraph_memory.nodes import recall_node, store_node
    from langgraph_memory.stats import CollectionStats, MemoryStats
    from langgraph_memory.ranking import HybridRanking, TemporalConfig
    from langgraph_memory.sessions import CleanupReport, Session, SessionConfig, SessionMemory, SessionTurn
    from langgraph_memory.store import ChromaStore
    from langgraph_memory.tools import create_recall_tool, create_store_tool

__all__ = [
    "Memory",
    "ChromaStore",
    "HybridRanking",
    "TemporalConfig",
    "SqliteCheckpointer",
    "Archiver",
    "schedule_archival",
    "schedule_session_cleanup",
    "export_bundle",
    "import_bundle",
    "recall_node",
    "store_node",
    "create_recall_tool",
    "create_store_tool",
    "Hit",
    "StrategyVersion",
    "ResearchAPI",
    "ProceduralAPI",
    "Lineage",
    "ItemStatus",
    "DeleteReport",
    "MemoryStats",
    "CollectionStats",
    "DecayReport",
    "Settings",
    "SentenceTransformerEmbeddings",
    "CachedEmbeddings",
    "default_embeddings",
    "LangGraphMemoryError",
    "IngestConfig",
    "IngestReport",
    "ChunkHit",
    "SessionMemory",
    "SessionConfig",
    "Session",
    "SessionTurn",
    "CleanupReport",
    "conversation_node",
    "last_human_text",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
