"""Durable, searchable memory for LangGraph agents.

One line gives a graph both kinds of memory:

    from langgraph_memory import Memory

    with Memory.open("./memory") as mem:
        graph = builder.compile(checkpointer=mem.checkpointer, store=mem.store)

The pieces, each usable alone:

* [`ChromaStore`][langgraph_memory.ChromaStore] - a LangGraph ``BaseStore`` over typed Chroma collections;
* [`HybridRanking`][langgraph_memory.HybridRanking], [`TemporalConfig`][langgraph_memory.TemporalConfig] - hybrid
  keyword + vector recall with decay and reinforcement;
* [`SqliteCheckpointer`][langgraph_memory.SqliteCheckpointer] - a ``BaseCheckpointSaver`` for sync and async graphs;
* [`Memory`][langgraph_memory.Memory] - one data directory: store, checkpointer, typed research API (seven
  collections), lineage, retire/supersede/delete, stats, decay cleanup, archiver;
* [`recall_node()`][langgraph_memory.recall_node], [`store_node()`][langgraph_memory.store_node],
  [`create_recall_tool()`][langgraph_memory.create_recall_tool],
  [`create_store_tool()`][langgraph_memory.create_store_tool] - memory in graphs;
* [`Archiver`][langgraph_memory.Archiver], [`schedule_archival()`][langgraph_memory.schedule_archival] - stale
  memories to compressed, searchable archives;
* [`export_bundle()`][langgraph_memory.export_bundle], [`import_bundle()`][langgraph_memory.import_bundle] - share
  bundles between data directories and teammates;
* ``Memory.ingest`` / [`IngestConfig`][langgraph_memory.IngestConfig] - files and folders into memory, chunked and
  deduplicated;
* [`SessionMemory`][langgraph_memory.SessionMemory] (``mem.sessions``),
  [`SessionConfig`][langgraph_memory.SessionConfig], [`conversation_node()`][langgraph_memory.conversation_node] -
  conversation sessions as short-term memory, their important turns promoted to episodic memory.

In ``langgraph.json`` (``langgraph dev``, LangGraph Platform): [`platform_store()`][langgraph_memory.platform_store]
and [`platform_checkpointer()`][langgraph_memory.platform_checkpointer] (`langgraph_memory.platform`).

From outside a graph: the ``langgraph-memory`` command line (`langgraph_memory.cli`) and the MCP
server (`langgraph_memory.mcp.server`, ``langgraph-memory mcp``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langgraph_memory._version import __version__ as __version__

# The LangGraph server looks factories up in the module's namespace, not through __getattr__: import them now
# (the factories module itself imports the store and checkpointer only when a factory opens one).
from langgraph_memory.platform import platform_checkpointer, platform_store
from langgraph_memory.registry import set_default_collections
from langgraph_memory.research.collections import RESEARCH

# The store knows no domain: the package hands it the research collections as the default of a store opened
# without ``collections=`` (about 10 ms of import: pydantic models, nothing of Chroma or the model).
set_default_collections(RESEARCH)

# Public names resolve on first use (PEP 562), so that ``langgraph-memory search`` or an
# ``import langgraph_memory.errors`` does not pay for every subsystem (langchain's tools,
# the archive, ingest) before doing anything. ``from langgraph_memory import X`` works as before.
_LAZY = {
    "Memory": "langgraph_memory.memory",
    "ChromaStore": "langgraph_memory.store",
    "CollectionRegistry": "langgraph_memory.registry",
    "CollectionSpec": "langgraph_memory.registry",
    "HybridRanking": "langgraph_memory.search.ranking",
    "TemporalConfig": "langgraph_memory.search.ranking",
    "SqliteCheckpointer": "langgraph_memory.checkpoint",
    "Archiver": "langgraph_memory.archive",
    "schedule_archival": "langgraph_memory.archive",
    "schedule_session_cleanup": "langgraph_memory.archive",
    "export_bundle": "langgraph_memory.bundle",
    "import_bundle": "langgraph_memory.bundle",
    "recall_node": "langgraph_memory.graph.nodes",
    "store_node": "langgraph_memory.graph.nodes",
    "create_recall_tool": "langgraph_memory.graph.tools",
    "create_store_tool": "langgraph_memory.graph.tools",
    "Hit": "langgraph_memory.memory",
    "StrategyVersion": "langgraph_memory.memory",
    "ResearchAPI": "langgraph_memory.research.api",
    "ProceduralAPI": "langgraph_memory.research.procedures",
    "Lineage": "langgraph_memory.research.lineage",
    "ItemStatus": "langgraph_memory.catalog.status",
    "DeleteReport": "langgraph_memory.lifecycle.items",
    "MemoryStats": "langgraph_memory.lifecycle.stats",
    "CollectionStats": "langgraph_memory.lifecycle.stats",
    "DecayReport": "langgraph_memory.lifecycle.decay",
    "Settings": "langgraph_memory.config",
    "SentenceTransformerEmbeddings": "langgraph_memory.embeddings",
    "CachedEmbeddings": "langgraph_memory.embeddings",
    "default_embeddings": "langgraph_memory.embeddings",
    "LangGraphMemoryError": "langgraph_memory.errors",
    "IngestConfig": "langgraph_memory.ingest",
    "IngestReport": "langgraph_memory.ingest",
    "ChunkHit": "langgraph_memory.ingest",
    "SessionMemory": "langgraph_memory.sessions",
    "SessionConfig": "langgraph_memory.sessions",
    "Session": "langgraph_memory.sessions",
    "SessionTurn": "langgraph_memory.sessions",
    "CleanupReport": "langgraph_memory.sessions",
    "conversation_node": "langgraph_memory.graph.conversation",
    "last_human_text": "langgraph_memory.graph.conversation",
}

if TYPE_CHECKING:
    from langgraph_memory.archive import Archiver, schedule_archival, schedule_session_cleanup
    from langgraph_memory.bundle import export_bundle, import_bundle
    from langgraph_memory.catalog.status import ItemStatus
    from langgraph_memory.checkpoint import SqliteCheckpointer
    from langgraph_memory.config import Settings
    from langgraph_memory.embeddings import CachedEmbeddings, SentenceTransformerEmbeddings, default_embeddings
    from langgraph_memory.errors import LangGraphMemoryError
    from langgraph_memory.graph.conversation import conversation_node, last_human_text
    from langgraph_memory.graph.nodes import recall_node, store_node
    from langgraph_memory.graph.tools import create_recall_tool, create_store_tool
    from langgraph_memory.ingest import ChunkHit, IngestConfig, IngestReport
    from langgraph_memory.lifecycle.decay import DecayReport
    from langgraph_memory.lifecycle.items import DeleteReport
    from langgraph_memory.lifecycle.stats import CollectionStats, MemoryStats
    from langgraph_memory.memory import Hit, Memory, StrategyVersion
    from langgraph_memory.platform import platform_checkpointer, platform_store
    from langgraph_memory.registry import CollectionRegistry, CollectionSpec
    from langgraph_memory.research.api import ResearchAPI
    from langgraph_memory.research.lineage import Lineage
    from langgraph_memory.research.procedures import ProceduralAPI
    from langgraph_memory.search.ranking import HybridRanking, TemporalConfig
    from langgraph_memory.sessions import CleanupReport, Session, SessionConfig, SessionMemory, SessionTurn
    from langgraph_memory.store import ChromaStore

__all__ = [
    "Memory",
    "platform_store",
    "platform_checkpointer",
    "ChromaStore",
    "CollectionRegistry",
    "CollectionSpec",
    "RESEARCH",
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
